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
	// State is the durable state the parts were restored from
	// (DecodeState): the composite writes it back with every part's
	// newest, so a part that did not change keeps what it saved.
	State State
}

// Part is what each part is: a core that says when it next needs Tick, so
// the composite's deadline is the earliest of theirs.
type Part interface {
	core.Core
	core.Scheduler
}

// systemRefresh bounds the age of the system variables the server
// advertises (root dispersion grows with the time since the last update):
// they are refreshed from the client on every Tick and, between ticks,
// on a request that comes this long after the last refresh.
const systemRefresh = 10 * time.Millisecond

// ErrConfig is returned by New without any part, or with a part that does
// not schedule its ticks (not a Part).
var ErrConfig = errors.New("timedcore: invalid parts")

// Core is the composite. Not safe for concurrent use, like its parts.
type Core struct {
	cfg    Config
	server core.Core // cfg.Server as a core.Core, nil when absent (not a typed nil)
	parts  []Part
	names  []Section // parts[i]'s state section ("" for the server)
	state  State     // every part's newest state

	ticked    bool
	systemAt  time.Time // the server's system variables were last set for this time
	sys       systemer  // the client, when it can say what the server advertises
	group     grouper   // the cluster part, when the server serves its group's time (server.Config.Group)
	badStates uint64    // parts' states too large to keep (a bug in the part)
}

// New returns the composite of cfg's parts.
func New(cfg Config) (*Core, error) {
	c := &Core{cfg: cfg, state: State{parts: map[Section][]byte{}}}
	for s, b := range cfg.State.parts {
		c.state.parts[s] = b
	}
	if cfg.Server != nil {
		c.server = cfg.Server
		c.sys, _ = cfg.Client.(systemer)
		if cfg.Server.Config().Group {
			c.group, _ = cfg.Cluster.(grouper)
		}
	}
	// In Ready's order: the cluster's, then the server's, then the
	// client's.
	for i, p := range []core.Core{cfg.Cluster, c.server, cfg.Client} {
		if p == nil {
			continue
		}
		part, ok := p.(Part)
		if !ok {
			return nil, fmt.Errorf("%w: the %s part (%T) does not say when it needs Tick (core.Scheduler)", ErrConfig, [...]string{"cluster", "server", "client"}[i], p)
		}
		c.parts = append(c.parts, part)
		c.names = append(c.names, [...]Section{SectionCluster, "", SectionClient}[i])
	}
	if len(c.parts) == 0 {
		return nil, fmt.Errorf("%w: a Cluster, Server or Client core is required", ErrConfig)
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
		if p == c.server {
			c.refreshSystem(d.Time)
		}
		return p.StepDatagram(d)
	}
	p := c.route(d)
	if p == c.server {
		c.refreshSystem(d.Time)
	}
	return p.StepDatagram(d)
}

// refreshSystem hands the server the client's system variables as of now
// (or, in Berkeley mode, this member's bound relative to the group),
// unless they were set less than systemRefresh before.
func (c *Core) refreshSystem(now time.Time) {
	if c.sys == nil && c.group == nil || c.cfg.Server == nil {
		return
	}
	if d := now.Sub(c.systemAt); d >= 0 && d < systemRefresh {
		return
	}
	c.setSystem(now)
}

// setSystem tells the server what to advertise as of now: the client's
// system variables, or the bound of a cluster part that keeps a group's
// time (server.Server.SetGroupError).
func (c *Core) setSystem(now time.Time) {
	if c.sys != nil {
		c.cfg.Server.SetSystem(c.sys.System(now))
	}
	if c.group != nil {
		lo, hi := c.group.Bound(now)
		c.cfg.Server.SetGroupError(max(hi.Sub(now), now.Sub(lo)), !lo.IsZero())
	}
	c.systemAt = now
}

// grouper is a cluster part that keeps a group's time (the Berkeley
// core): its bound is relative to the group's time (zero times: none).
type grouper interface {
	Bound(now time.Time) (earliest, latest time.Time)
}

var _ core.Answerer = (*Core)(nil)

var _ core.AnswerStamper = (*Core)(nil)

// AnswerSent passes the departure of one of the server's answers on to it
// (core.AnswerStamper: its interleaved mode).
func (c *Core) AnswerSent(ans core.Datagram) {
	if c.cfg.Server != nil {
		c.cfg.Server.AnswerSent(ans)
	}
}

// Answer lets the server answer its requests on the daemon's fast path
// (core.Answerer): NTP mode-3 requests and Cristian's time requests, when
// there is a server; everything else is StepDatagram's.
func (c *Core) Answer(d core.Datagram, buf []byte) (core.Datagram, bool, error) {
	if c.cfg.Server == nil || d.Local {
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
	c.refreshSystem(d.Time)
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
	if d.Local {
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
	if d.Local {
		// Our replies and our broadcasts (the server's); our requests
		// (the client's).
		toServer = mode == wire.ModeServer || mode == wire.ModeBroadcast
	}
	switch {
	case c.server == nil:
		return c.cfg.Client
	case c.cfg.Client == nil || toServer:
		return c.server
	}
	return c.cfg.Client
}

// Tick advances every part (whichever part's deadline it is for: a part
// is correct when ticked at any time).
func (c *Core) Tick(now time.Time) {
	c.ticked = true
	if c.cfg.Cluster != nil {
		c.cfg.Cluster.Tick(now)
	}
	if c.server != nil {
		c.server.Tick(now)
	}
	if c.cfg.Client != nil {
		c.cfg.Client.Tick(now)
	}
	// The server advertises what the discipline knows: stratum, root
	// delay and dispersion, leap, reference. (Unsynchronised, it falls
	// back to its local stratum, if any; in Berkeley mode with the
	// member's bound relative to the group.)
	if c.cfg.Server != nil && (c.sys != nil || c.group != nil) {
		c.setSystem(now)
	}
}

var _ core.Scheduler = (*Core)(nil)

// Deadline is the earliest of the parts' deadlines (core.Scheduler). Zero
// before the first Tick (the driver ticks first at its own phase) and when
// no part has anything scheduled.
func (c *Core) Deadline() time.Time {
	if !c.ticked {
		return time.Time{}
	}
	var dl time.Time
	for _, p := range c.parts {
		dl = core.Earliest(dl, p.Deadline())
	}
	return dl
}

// systemer is the client's view of the system variables (RFC 5905 11.2.3).
type systemer interface {
	System(now time.Time) ntp.System
}

// Ready merges the parts' outputs: the cluster's, then the server's, then
// the client's. A part's state (the Berkeley core's term and frequency,
// the client's frequency) goes into its section of timed's state (State):
// when any part hands its state over, Ready.State carries every part's
// newest, and Promise is set when a part's is a promise.
func (c *Core) Ready() core.Ready {
	var rd core.Ready
	changed := false
	for i, p := range c.parts {
		r := p.Ready()
		if r.State != nil {
			if c.names[i] == "" || !c.state.set(c.names[i], r.State) {
				// A part without a section, or a state too large for
				// one: a bug in the part, counted (Status), not fatal.
				c.badStates++
			} else {
				changed = true
				rd.Promise = rd.Promise || r.Promise
			}
		}
		rd.Adjustments = append(rd.Adjustments, r.Adjustments...)
		rd.Messages = append(rd.Messages, r.Messages...)
		rd.Datagrams = append(rd.Datagrams, r.Datagrams...)
		rd.Events = append(rd.Events, r.Events...)
	}
	if changed {
		rd.State = c.state.encode()
	}
	return rd
}

// Advance hands the driver's report on the last Ready (core.Advancer) to
// every part that keeps durable state: the file holds every part's
// newest state, so a write confirms whatever each part handed over.
func (c *Core) Advance(saved bool) {
	for _, p := range []core.Core{c.cfg.Cluster, c.server, c.cfg.Client} {
		if a, ok := p.(core.Advancer); ok && p != nil {
			a.Advance(saved)
		}
	}
}

var _ core.Adjuster = (*Core)(nil)

// Adjusted hands the time the clock took the last Ready's adjustments
// (core.Adjuster) to every part that disciplines it: the client's servo,
// or the Berkeley core's.
func (c *Core) Adjusted(at time.Time) {
	for _, p := range []core.Core{c.cfg.Cluster, c.server, c.cfg.Client} {
		if a, ok := p.(core.Adjuster); ok && p != nil {
			a.Adjusted(at)
		}
	}
}

// Status is timed's core status: each part's, under its own key.
type Status struct {
	// Sync sums up the parts: is the clock synchronised, to what, within
	// which bound.
	Sync    Sync           `json:"sync"`
	Cluster any            `json:"cluster,omitempty"` // nil outside any cluster
	Server  *server.Status `json:"server,omitempty"`
	Client  any            `json:"client,omitempty"`
	// StatesRefused counts parts' states too large to persist: a bug in
	// the part, never expected.
	StatesRefused uint64 `json:"states_refused,omitempty"`
}

// Status implements core.Core.
func (c *Core) Status() any {
	st := Status{StatesRefused: c.badStates}
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
	st.Sync = SyncOf(st)
	return st
}
