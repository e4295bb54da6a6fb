package timedcore

import (
	"errors"
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// Config names the parts; at least one is required. Without Cluster,
// frames are refused (timed keeping time over NTP alone, outside any
// cluster); without both Server and Client, datagrams are.
type Config struct {
	// Cluster handles synclab frames (Step): the liveness detector, or
	// the Berkeley core (pkg/timesync/berkeley) in Berkeley mode.
	Cluster core.Core
	// Server answers NTP client requests (timed run --serve).
	Server *server.Server
	// Client is the NTP client and symmetric-peer core, if any.
	Client core.Core
}

// ErrConfig is returned by New without any part.
var ErrConfig = errors.New("timedcore: no parts: a Cluster, Server or Client core is required")

// Core is the composite. Not safe for concurrent use, like its parts.
type Core struct {
	cfg    Config
	server core.Core // cfg.Server as a core.Core, nil when absent (not a typed nil)
	parts  []core.Core
}

// New returns the composite of cfg's parts.
func New(cfg Config) (*Core, error) {
	c := &Core{cfg: cfg}
	if cfg.Server != nil {
		c.server = cfg.Server
	}
	// In Ready's order: the cluster's, then the server's, then the
	// client's.
	for _, p := range []core.Core{cfg.Cluster, c.server, cfg.Client} {
		if p != nil {
			c.parts = append(c.parts, p)
		}
	}
	if len(c.parts) == 0 {
		return nil, ErrConfig
	}
	return c, nil
}

// Server returns the NTP server part, nil if there is none: the discipline
// tells it what to advertise (SetSystem).
func (c *Core) Server() *server.Server { return c.cfg.Server }

// Step hands a synclab frame to the cluster core; without one, there is
// no member to hear from.
func (c *Core) Step(m core.Message) error {
	if c.cfg.Cluster == nil {
		return fmt.Errorf("%w: %v: no cluster", core.ErrUnexpectedKind, m.Kind)
	}
	return c.cfg.Cluster.Step(m)
}

// StepDatagram routes an NTP packet by its mode (see the package comment).
func (c *Core) StepDatagram(d core.Datagram) error {
	if c.server == nil && c.cfg.Client == nil {
		return core.ErrUnexpectedDatagram
	}
	if wire.IsFrame(d.Data) {
		p := c.routeFrame(d)
		if p == nil {
			return core.ErrUnexpectedDatagram
		}
		return p.StepDatagram(d)
	}
	return c.route(d).StepDatagram(d)
}

var _ core.Answerer = (*Core)(nil)

// Answer lets the server answer its requests on the daemon's fast path
// (core.Answerer): NTP mode-3 requests and Cristian's time requests, when
// there is a server; everything else is StepDatagram's.
func (c *Core) Answer(d core.Datagram, buf []byte) (core.Datagram, bool, error) {
	if c.cfg.Server == nil || d.Sent {
		return core.Datagram{}, false, nil
	}
	var p core.Core
	if wire.IsFrame(d.Data) {
		p = c.routeFrame(d)
	} else {
		p = c.route(d)
	}
	if p != c.server {
		return core.Datagram{}, false, nil
	}
	return c.cfg.Server.Answer(d, buf)
}

// routeFrame routes Cristian's frames: requests (and reports of replies we
// sent) to the server, replies (and reports of our requests) to the client.
// Anything else, or a part that is absent, gets nil.
func (c *Core) routeFrame(d core.Datagram) core.Core {
	kind := wire.KindInvalid
	if len(d.Data) >= wire.HeaderLen {
		kind = wire.Kind(d.Data[3]) // the header's kind byte (pkg/wire frame layout)
	}
	toServer := kind == wire.KindTimeRequest
	if d.Sent {
		toServer = kind == wire.KindTimeReply
	}
	switch {
	case kind != wire.KindTimeRequest && kind != wire.KindTimeReply:
		return nil
	case toServer:
		return c.server
	}
	return c.cfg.Client
}

func (c *Core) route(d core.Datagram) core.Core {
	mode := uint8(0xff)
	if len(d.Data) > 0 {
		mode = d.Data[0] & 7
	}
	toServer := mode == wire.ModeClient
	if d.Sent {
		toServer = mode == wire.ModeServer
	}
	switch {
	case c.server == nil:
		return c.cfg.Client
	case c.cfg.Client == nil || toServer:
		return c.server
	}
	return c.cfg.Client
}

// Tick advances every part.
func (c *Core) Tick(now time.Time) {
	if c.cfg.Cluster != nil {
		c.cfg.Cluster.Tick(now)
	}
	if c.server != nil {
		c.server.Tick(now)
	}
	if c.cfg.Client != nil {
		c.cfg.Client.Tick(now)
		// The server advertises what the discipline knows: stratum, root
		// delay and dispersion, leap, reference. (Unsynchronised, it falls
		// back to its local stratum, if any.)
		if s, ok := c.cfg.Client.(systemer); ok && c.cfg.Server != nil {
			c.cfg.Server.SetSystem(s.System(now))
		}
	}
}

// systemer is the client's view of the system variables (RFC 5905 11.2.3).
type systemer interface {
	System(now time.Time) ntp.System
}

// Ready merges the parts' outputs: the cluster's, then the server's, then
// the client's. At most one part may persist state (the client's frequency,
// or the Berkeley core's term and frequency, never both: timed refuses
// --server and --peer in Berkeley mode; the liveness detector and the
// server have none): two parts
// handing over state at once cannot be persisted in one file, and is a
// programming error that panics.
func (c *Core) Ready() core.Ready {
	var rd core.Ready
	for _, p := range c.parts {
		r := p.Ready()
		if r.State != nil {
			if rd.State != nil {
				panic("timedcore: two parts persist state in the same Ready")
			}
			rd.State = r.State
		}
		rd.Adjustments = append(rd.Adjustments, r.Adjustments...)
		rd.Messages = append(rd.Messages, r.Messages...)
		rd.Datagrams = append(rd.Datagrams, r.Datagrams...)
		rd.Events = append(rd.Events, r.Events...)
	}
	return rd
}

// Advance hands the driver's report on the last Ready (core.Advancer) to
// every part that keeps durable state: only the one whose State the Ready
// carried has anything to confirm.
func (c *Core) Advance(saved bool) {
	for _, p := range []core.Core{c.cfg.Cluster, c.server, c.cfg.Client} {
		if a, ok := p.(core.Advancer); ok && p != nil {
			a.Advance(saved)
		}
	}
}

// Status is timed's core status: each part's, under its own key.
type Status struct {
	Cluster any            `json:"cluster,omitempty"` // nil outside any cluster
	Server  *server.Status `json:"server,omitempty"`
	Client  any            `json:"client,omitempty"`
}

// Status implements core.Core.
func (c *Core) Status() any {
	var st Status
	if c.cfg.Cluster != nil {
		st.Cluster = c.cfg.Cluster.Status()
	}
	if c.cfg.Server != nil {
		r := c.cfg.Server.Report()
		st.Server = &r
	}
	if c.cfg.Client != nil {
		st.Client = c.cfg.Client.Status()
	}
	return st
}
