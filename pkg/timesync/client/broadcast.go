package client

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// Broadcast client defaults (BroadcastConfig).
const (
	// DefaultCalibration is the number of client/server exchanges of a
	// calibration: the smallest round trip of four, halved, is the
	// one-way delay.
	DefaultCalibration = 4
	// DefaultCalibrationSpacing spaces them: within timed's server rate
	// limit (bursts of 8), done in 2 s.
	DefaultCalibrationSpacing = 500 * time.Millisecond
	// DefaultCalibrationRetry is how long a calibration that got no answer
	// waits before the next try.
	DefaultCalibrationRetry = 10 * time.Second
	// DefaultBroadcastTimeout is how long without a broadcast before the
	// client warns (and a broadcaster stops counting as reachable): four
	// of timed's default 16 s broadcast intervals.
	DefaultBroadcastTimeout = time.Minute
	// DefaultDelayJump is the least change of the apparent delay that
	// says the path changed; DefaultJumpCount packets in a row must show
	// it (one late packet is a queue, not a path).
	DefaultDelayJump = 500 * time.Microsecond
	DefaultJumpCount = 3
	// DefaultMaxBroadcasters bounds the broadcasters followed at once:
	// the first ones heard; packets from more are refused and counted.
	DefaultMaxBroadcasters = 4
)

// BroadcastConfig makes the client an RFC 5905 broadcast client: it
// follows the mode-5 packets of broadcast servers it hears (the daemon's
// socket listens to a broadcast address or joins a multicast group).
// Each broadcaster heard becomes a source; before its packets are used,
// a few client/server exchanges with it calibrate the one-way delay (as
// ntpd's broadcast client does), and again when the apparent delay
// jumps (the path changed). Its samples then go through the clock filter,
// the selection and the servo like a server's, with
//
//	offset = T3 + delay - T4   (reference minus local)
//
// where T3 is the packet's transmit time and T4 its arrival.
type BroadcastConfig struct {
	// Enabled turns the broadcast client on.
	Enabled bool
	// Listen names where broadcasts are heard, for messages ("group
	// 239.77.0.5:123 on eth0", "broadcasts to port 123").
	Listen string
	// Keys authenticate the broadcasts (and sign the calibration
	// requests, with the key the broadcaster used). Required unless
	// Insecure: RFC 8633 deprecates unauthenticated broadcast.
	Keys []wire.NTPKey
	// Insecure also follows unsigned broadcasts (chronyd's): anyone on
	// the LAN can then set this clock. Status says so.
	Insecure bool
	// Calibration is the number of exchanges per calibration (default 4),
	// CalibrationSpacing their spacing (default 500 ms),
	// CalibrationRetry the wait after a calibration nobody answered
	// (default 10 s).
	Calibration        int
	CalibrationSpacing time.Duration
	CalibrationRetry   time.Duration
	// Timeout: no broadcast for this long is a WARN event (default 1 min).
	Timeout time.Duration
	// DelayJump and JumpCount: JumpCount packets in a row whose apparent
	// delay differs from the calibrated one by more than DelayJump (and
	// four times the source's jitter) start a new calibration; they are
	// not used meanwhile (defaults 500 us and 3).
	DelayJump time.Duration
	JumpCount int
	// MaxBroadcasters bounds the broadcasters followed (default 4).
	MaxBroadcasters int
}

func (b *BroadcastConfig) validate(tick time.Duration) error {
	if !b.Enabled {
		return nil
	}
	if len(b.Keys) == 0 && !b.Insecure {
		return fmt.Errorf("%w: a broadcast client needs the broadcasters' keys (RFC 8633: unauthenticated broadcast is deprecated), or Insecure to follow unsigned broadcasts", ErrConfig)
	}
	def := BroadcastConfig{Calibration: DefaultCalibration, CalibrationSpacing: DefaultCalibrationSpacing,
		CalibrationRetry: DefaultCalibrationRetry, Timeout: DefaultBroadcastTimeout,
		DelayJump: DefaultDelayJump, JumpCount: DefaultJumpCount, MaxBroadcasters: DefaultMaxBroadcasters}
	fill := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&b.CalibrationSpacing, def.CalibrationSpacing)
	fill(&b.CalibrationRetry, def.CalibrationRetry)
	fill(&b.Timeout, def.Timeout)
	fill(&b.DelayJump, def.DelayJump)
	if b.Calibration == 0 {
		b.Calibration = def.Calibration
	}
	if b.JumpCount == 0 {
		b.JumpCount = def.JumpCount
	}
	if b.MaxBroadcasters == 0 {
		b.MaxBroadcasters = def.MaxBroadcasters
	}
	switch {
	case b.Calibration < 1 || b.Calibration > ntp.NStage:
		return fmt.Errorf("%w: %d calibration exchanges: want 1..%d", ErrConfig, b.Calibration, ntp.NStage)
	case b.CalibrationSpacing < 2*tick || b.CalibrationRetry < b.CalibrationSpacing:
		return fmt.Errorf("%w: calibration spacing %v (at least two ticks) and retry %v (at least the spacing)", ErrConfig, b.CalibrationSpacing, b.CalibrationRetry)
	case b.Timeout < time.Second:
		return fmt.Errorf("%w: broadcast timeout %v: at least 1 s", ErrConfig, b.Timeout)
	case b.DelayJump < 0 || b.JumpCount < 1:
		return fmt.Errorf("%w: delay jump %v and count %d must be positive", ErrConfig, b.DelayJump, b.JumpCount)
	case b.MaxBroadcasters < 1 || b.MaxBroadcasters > 64:
		return fmt.Errorf("%w: %d broadcasters: want 1..64", ErrConfig, b.MaxBroadcasters)
	}
	return nil
}

// Broadcast event names (core.Event.Name).
const (
	// EventBroadcaster: a new broadcaster was heard and is being
	// calibrated.
	EventBroadcaster = "broadcaster_heard"
	// EventCalibrated: a calibration measured the one-way delay.
	EventCalibrated = "broadcast_calibrated"
	// EventCalibrationFailed: no calibration request was answered (WARN).
	EventCalibrationFailed = "broadcast_calibration_failed"
	// EventPathChanged: the apparent delay jumped; recalibrating.
	EventPathChanged = "broadcast_path_changed"
	// EventBroadcastSilent: no broadcast for Timeout (WARN);
	// EventBroadcastHeard: broadcasts again after that.
	EventBroadcastSilent = "broadcast_silent"
	EventBroadcastHeard  = "broadcast_heard_again"
)

// Broadcast refusals (Status.Counters, "broadcast_" + the reason).
var (
	// ErrUnauthenticated: an unsigned broadcast without Insecure.
	ErrUnauthenticated = errors.New("unauthenticated broadcast (no MAC; RFC 8633): sign the broadcasts with a key from the key file, or follow unsigned broadcasts with --broadcast-insecure")
	// ErrReplay: a broadcast whose transmit time is not after the last
	// one's: the same packet again, or an old one replayed.
	ErrReplay = errors.New("replayed broadcast: its transmit time is not after the last one's")
	// ErrTooManyBroadcasters: more broadcasters than MaxBroadcasters.
	ErrTooManyBroadcasters = errors.New("too many broadcasters: this one is not followed")
	// ErrDelayJump: a packet held back because its apparent delay jumped.
	ErrDelayJump = errors.New("apparent delay jumped: packet held back")
)

// bcast is a broadcaster's state (source.bcast).
type bcast struct {
	peer    ntp.Peer // from its last valid broadcast
	hasPeer bool
	lastXmt wire.NTPTime
	heard   time.Time // local time of its last valid broadcast
	keyID   uint32    // the key its broadcasts carry (0: unsigned)
	signer  *wire.NTPSigner

	// Calibration: calLeft requests still to send, calEnd when the
	// calibration ends (zero: none in progress); minDelay the smallest
	// round trip of its answers (replies of them).
	calLeft  int
	calEnd   time.Time
	minDelay time.Duration
	maxDelay time.Duration
	replies  int
	failed   bool // the last calibration got no answer

	delay        time.Duration // the calibrated one-way delay
	spread       time.Duration // half the calibration's range of round trips
	calibrated   bool
	calibrations uint64
	calibratedAt time.Time
	why          string // why the current calibration runs

	apparent    time.Duration // the last packet's apparent delay
	hasApparent bool
	jumps       int // packets in a row with a jumped apparent delay
	silent      bool
}

// reachable says whether s counts as answering at the last tick: a
// broadcaster heard within the timeout, any other source by its reach
// register.
func (c *Client) reachable(s *source) bool {
	if s.bcast != nil {
		return !s.bcast.heard.IsZero() && c.now.Sub(s.bcast.heard) < c.cfg.Broadcast.Timeout
	}
	return s.poller.Reachable()
}

// broadcastPacket takes a mode-5 packet (p, decoded from d.Data).
func (c *Client) broadcastPacket(d core.Datagram, p *wire.NTPPacket) error {
	bc := &c.cfg.Broadcast
	keyID, err := c.broadcastAuth(d.Data)
	s := c.byAddr[unmap(d.Addr)]
	if s != nil && s.bcast == nil {
		// A configured server or peer broadcasting too: its broadcasts
		// are not what we follow it by.
		c.counters[cntMode]++
		return fmt.Errorf("%w: mode 5 from %s %v", ErrUnexpectedMode, s.kind(), s.addr)
	}
	if err == nil {
		err = checkBroadcast(p)
	}
	if err == nil && s != nil && int64(uint64(p.Transmit)-uint64(s.bcast.lastXmt)) <= 0 {
		err = ErrReplay
	}
	if err == nil && s == nil && c.broadcasters >= bc.MaxBroadcasters {
		err = ErrTooManyBroadcasters
	}
	if err != nil {
		c.counters["broadcast_"+broadcastReason(err)]++
		if s != nil {
			s.received++
			s.lastErr = err.Error()
		} else {
			c.bcastLastErr = fmt.Sprintf("%v: %v", d.Addr, err)
		}
		return fmt.Errorf("client: broadcast from %v: %w", d.Addr, err)
	}
	if s == nil {
		s = c.addBroadcaster(unmap(d.Addr), d.Time)
	}
	b := s.bcast
	s.received++
	c.counters[cntBroadcasts]++
	if b.silent {
		b.silent = false
		c.event(EventBroadcastHeard, fmt.Sprintf("broadcasts from %v heard again", s.addr), "source", s.addr.String())
	}
	if c.bcastSilent {
		c.bcastSilent = false
	}
	dst := d.Time
	b.lastXmt, b.heard = p.Transmit, dst
	c.bcastHeard = dst
	b.peer, b.hasPeer = ntp.Peer{
		Leap: p.Leap, Version: p.Version, Stratum: p.Stratum, Poll: p.Poll, Precision: p.Precision,
		RootDelay: p.RootDelay.Duration(), RootDispersion: p.RootDispersion.Duration(),
		ReferenceID: p.ReferenceID, Reference: p.Reference.TimeNear(dst),
	}, true
	if keyID != b.keyID {
		b.keyID, b.signer = keyID, nil
		if k, ok := c.broadcastKey(keyID); ok {
			b.signer = &wire.NTPSigner{Key: k}
		}
	}
	if !b.calibrated {
		if b.calEnd.IsZero() && !b.failed {
			c.calibrate(s, dst, "first broadcast heard")
		}
		c.counters["broadcast_held_calibrating"]++
		s.lastErr = ""
		return nil
	}
	// The exchange a broadcast stands for: sent at T3 - delay, answered
	// at once, received at T4, so that the offset is T3 + delay - T4 and
	// the round trip twice the delay.
	t3 := p.Transmit.TimeNear(dst)
	smp := ntp.MakeSample(dst.Add(-2*b.delay), t3, t3, dst, max(ntp.Precision(c.cfg.Precision), 1), ntp.Precision(p.Precision))
	// The path's variability as the calibration saw it: how much later
	// than the fastest a packet may come and nothing show it.
	smp.Dispersion = min(smp.Dispersion+b.spread, ntp.MaxDispersion)
	if predicted, ok := c.servo.Offset(dst); ok {
		// What the path took this time, if the clock is where the servo
		// thinks it is.
		b.apparent, b.hasApparent = b.delay+predicted-smp.Offset, true
		limit := bc.DelayJump
		if est, ok := s.filter.Estimate(); ok {
			limit = max(limit, 4*est.Jitter)
		}
		if (b.apparent - b.delay).Abs() > limit {
			b.jumps++
			c.counters["broadcast_delay_jump"]++
			if b.jumps >= bc.JumpCount {
				c.event(EventPathChanged, fmt.Sprintf("broadcasts from %v: apparent delay %v against the calibrated %v in %d packets in a row: the path changed, calibrating again",
					s.addr, b.apparent, b.delay, b.jumps), "source", s.addr.String(), "apparent", b.apparent, "delay", b.delay)
				c.calibrate(s, dst, fmt.Sprintf("apparent delay %v against the calibrated %v", b.apparent, b.delay))
			}
			s.lastErr = fmt.Sprintf("%v: %v against the calibrated %v", ErrDelayJump, b.apparent, b.delay)
			return fmt.Errorf("client: broadcast from %v: %w", s.addr, ErrDelayJump)
		}
	}
	b.jumps = 0
	if b.hasApparent && b.apparent > b.delay {
		// A broadcast that took longer than the calibrated delay is off
		// by what it took beyond it, and no round trip shows it: that
		// lateness (as far as the servo's prediction tells) is part of
		// the sample's error, so the error bound covers a late packet.
		// (Not of its delay: the filter's choice by delay would then
		// cling to the calibration's samples while a frequency not yet
		// learnt makes every broadcast look late.)
		smp.Dispersion = min(smp.Dispersion+b.apparent-b.delay, ntp.MaxDispersion)
	}
	if !c.stepFence.IsZero() && smp.Time.Add(-smp.Delay).Before(c.stepFence) {
		c.counters[cntStepped]++
		s.lastErr = ErrClockStepped.Error()
		return fmt.Errorf("%v: %w", s.addr, ErrClockStepped)
	}
	c.accept(s, smp)
	return nil
}

// cnt* of the broadcast client.
const cntBroadcasts = "broadcasts" // valid broadcasts heard

// checkBroadcast applies unicast's checks that a broadcast can take
// (ntp.Association.Receive's, without the origin: nothing is answered).
func checkBroadcast(p *wire.NTPPacket) error {
	switch {
	case p.Version < 1 || p.Version > wire.NTPVersion:
		return fmt.Errorf("%w: version %d", ntp.ErrVersion, p.Version)
	case p.Transmit.IsZero():
		return ntp.ErrZeroTransmit
	case p.Leap == wire.LeapNotInSync:
		return ntp.ErrUnsynchronized
	case p.Stratum == 0 || p.Stratum >= ntp.MaxStratum:
		return fmt.Errorf("%w: %d", ntp.ErrStratum, p.Stratum)
	}
	if d := p.RootDelay.Duration()/2 + p.RootDispersion.Duration(); d > ntp.MaxDistance {
		return fmt.Errorf("%w: the broadcaster's root distance is %v", ntp.ErrDistance, d)
	}
	return nil
}

// broadcastAuth checks a broadcast's MAC: a MAC must verify with one of
// the keys; no MAC is refused unless Insecure. It returns the key ID (0:
// unsigned, or signed with a key we lack while Insecure).
func (c *Client) broadcastAuth(b []byte) (uint32, error) {
	bc := &c.cfg.Broadcast
	pkt, keyID, digest, err := wire.SplitNTPMAC(b)
	switch {
	case err != nil:
		return 0, err
	case digest == nil:
		if !bc.Insecure {
			return 0, ErrUnauthenticated
		}
		return 0, nil
	case keyID == 0:
		return 0, fmt.Errorf("%w: a crypto-NAK is no broadcast", wire.ErrNTPBadMAC)
	case len(bc.Keys) == 0:
		return 0, nil // Insecure, and no keys to check a MAC with
	}
	if err := wire.VerifyNTPMAC(pkt, keyID, digest, bc.Keys); err != nil {
		return 0, err
	}
	return keyID, nil
}

func (c *Client) broadcastKey(id uint32) (wire.NTPKey, bool) {
	for _, k := range c.cfg.Broadcast.Keys {
		if id != 0 && k.ID == id {
			return k, true
		}
	}
	return wire.NTPKey{}, false
}

// broadcastReason is the counter label of a refused broadcast.
func broadcastReason(err error) string {
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return "unauthenticated"
	case errors.Is(err, wire.ErrNTPUnknownKey):
		return "unknown_key"
	case errors.Is(err, wire.ErrNTPBadMAC):
		return "bad_mac"
	case errors.Is(err, ErrReplay):
		return "replay"
	case errors.Is(err, ErrTooManyBroadcasters):
		return "too_many_broadcasters"
	}
	var de *wire.DecodeError
	if errors.As(err, &de) {
		return "malformed"
	}
	return rejectLabels.Of(err, "other")
}

// addBroadcaster mobilises a source for a broadcaster heard at now.
func (c *Client) addBroadcaster(addr netip.AddrPort, now time.Time) *source {
	prec := ntp.Precision(c.cfg.Precision)
	assoc, _ := ntp.NewAssociation(wire.ModeClient, prec) // a valid mode: cannot fail
	poller, _ := ntp.NewPoller(ntp.PollConfig{MinPoll: c.cfg.MinPoll, MaxPoll: c.cfg.MaxPoll, PollRangeSet: true, Burst: -1})
	s := &source{addr: addr, assoc: assoc, filter: ntp.NewFilter(prec), poller: poller, bcast: &bcast{}}
	c.srcs = append(c.srcs, s)
	c.byAddr[addr] = s
	c.broadcasters++
	c.dirty = true
	c.event(EventBroadcaster, fmt.Sprintf("broadcaster %v heard: calibrating the delay with %d client/server exchanges", addr, c.cfg.Broadcast.Calibration),
		"source", addr.String())
	return s
}

// calibrate starts a calibration of s at now: Calibration client
// requests, the first at the next tick.
func (c *Client) calibrate(s *source, now time.Time, why string) {
	b, bc := s.bcast, &c.cfg.Broadcast
	b.calLeft, b.replies, b.minDelay, b.maxDelay, b.jumps, b.why = bc.Calibration, 0, 0, 0, 0, why
	b.calEnd = now.Add(time.Duration(bc.Calibration) * bc.CalibrationSpacing)
	s.next = now
}

// broadcastTick sends the calibration request that is due, ends a
// calibration whose time is up, and notices silence.
func (c *Client) broadcastTick(s *source, now time.Time) {
	b, bc := s.bcast, &c.cfg.Broadcast
	if !b.calEnd.IsZero() {
		if b.calLeft > 0 && !now.Before(s.next) {
			c.calibrationRequest(s, now)
		}
		if b.calLeft == 0 && (!now.Before(b.calEnd) || b.replies == bc.Calibration) {
			c.endCalibration(s, now)
		}
	} else if b.failed && !now.Before(s.next) && c.reachable(s) {
		c.calibrate(s, now, "retrying: the last calibration got no answer")
	}
	if !b.heard.IsZero() && !b.silent && now.Sub(b.heard) >= bc.Timeout {
		b.silent = true
		c.event(EventBroadcastSilent, fmt.Sprintf("no broadcast from %v for %v (last at %v): is it still broadcasting, and still on this path?", s.addr, bc.Timeout, b.heard.Format(time.RFC3339)),
			"source", s.addr.String())
		c.rd.Events[len(c.rd.Events)-1].Warn = true
	}
}

// broadcastSilence warns once per episode when no broadcast at all has
// been heard for the timeout (since the start, or since the last one).
func (c *Client) broadcastSilence(now time.Time) {
	bc := &c.cfg.Broadcast
	since := c.bcastHeard
	if since.IsZero() {
		since = c.started0
	}
	if c.bcastSilent || now.Sub(since) < bc.Timeout {
		return
	}
	c.bcastSilent = true
	what := "since the start"
	if !c.bcastHeard.IsZero() {
		what = "since " + c.bcastHeard.Format(time.RFC3339)
	}
	msg := fmt.Sprintf("no broadcast heard on %s for %v (%s): check the broadcaster (timed --broadcast, chronyd's broadcast directive), the group or port, and the interface", bc.Listen, bc.Timeout, what)
	if c.bcastLastErr != "" {
		msg += "; the last packet was refused: " + c.bcastLastErr
	}
	c.event(EventBroadcastSilent, msg, "listen", bc.Listen)
	c.rd.Events[len(c.rd.Events)-1].Warn = true
}

// calibrationRequest sends one client request of s's calibration, signed
// with the key of its broadcasts.
func (c *Client) calibrationRequest(s *source, now time.Time) {
	b := s.bcast
	pkt := s.assoc.Request(now, s.pollExp(), c.sysAt(now))
	if out, ok := c.bugs.Encode(&c.rd.Events, "request", &pkt, make([]byte, 0, wire.NTPHeaderLen+4+64)); ok {
		c.rd.Datagrams = append(c.rd.Datagrams, core.Datagram{Addr: s.addr, Data: out, NTPStamp: true, NTPSign: b.signer})
		c.counters[cntRequests]++
		c.counters["broadcast_calibration_requests"]++
	}
	s.sentAt = now
	b.calLeft--
	s.next = now.Add(c.cfg.Broadcast.CalibrationSpacing)
}

// calibrated takes the sample of a calibration reply of s.
func (c *Client) calibrationReply(s *source, smp ntp.Sample) {
	b := s.bcast
	if b.calEnd.IsZero() {
		return
	}
	if b.replies == 0 || smp.Delay < b.minDelay {
		b.minDelay = smp.Delay
	}
	b.maxDelay = max(b.maxDelay, smp.Delay)
	b.replies++
}

// endCalibration sets the delay from the calibration's answers, or
// schedules another try.
func (c *Client) endCalibration(s *source, now time.Time) {
	b, bc := s.bcast, &c.cfg.Broadcast
	b.calEnd, b.calLeft = time.Time{}, 0
	if b.replies == 0 {
		s.next = now.Add(bc.CalibrationRetry)
		if !b.failed {
			c.event(EventCalibrationFailed, fmt.Sprintf("broadcaster %v did not answer any of %d client requests: its broadcasts are not used until it does (it must answer NTP requests too: timed --serve, chronyd's allow; with keys, the same key)", s.addr, bc.Calibration),
				"source", s.addr.String())
			c.rd.Events[len(c.rd.Events)-1].Warn = true
		}
		b.failed = true
		s.lastErr = fmt.Sprintf("calibration: no answer to %d client requests; next try in %v", bc.Calibration, bc.CalibrationRetry)
		return
	}
	old, had := b.delay, b.calibrated
	b.failed, b.calibrated, b.calibratedAt = false, true, now
	b.delay = b.minDelay / 2
	b.spread = (b.maxDelay - b.minDelay) / 2
	b.calibrations++
	b.hasApparent = false
	msg := fmt.Sprintf("broadcaster %v: one-way delay %v (the smallest of %d round trips, halved)", s.addr, b.delay, b.replies)
	if had {
		msg += fmt.Sprintf(", was %v", old)
	}
	c.event(EventCalibrated, msg, "source", s.addr.String(), "delay", b.delay)
}

// BroadcastStatus is a broadcaster's part of SourceStatus.
type BroadcastStatus struct {
	// State: "calibrating" (its packets are held until the delay is
	// known), "following", or "silent" (none for the timeout).
	State string `json:"state"`
	// DelayNS is the calibrated one-way delay; ApparentDelayNS what the
	// last packet's took, if the clock is where the servo predicts it.
	DelayNS         int64     `json:"delay_ns"`
	ApparentDelayNS int64     `json:"apparent_delay_ns,omitempty"`
	Calibrations    uint64    `json:"calibrations"`
	CalibratedAt    time.Time `json:"calibrated_at,omitzero"`
	Why             string    `json:"why,omitempty"`
	LastHeard       time.Time `json:"last_heard,omitzero"`
	// KeyID is the key its broadcasts carry; 0: unsigned (followed only
	// with Insecure).
	KeyID uint32 `json:"key_id"`
}

// BroadcastClientStatus is the broadcast client's part of Status.
type BroadcastClientStatus struct {
	Listen string `json:"listen"`
	// Authenticated: only signed broadcasts are followed. Otherwise
	// Warning says what that exposes.
	Authenticated bool      `json:"authenticated"`
	Warning       string    `json:"warning,omitempty"`
	Broadcasters  int       `json:"broadcasters"`
	LastHeard     time.Time `json:"last_heard,omitzero"`
	// Refused counts refused broadcasts by reason (the counters
	// "broadcast_*" without the prefix); LastRefused is the last refused
	// from an address that is not a source.
	Refused     map[string]uint64 `json:"refused,omitempty"`
	LastRefused string            `json:"last_refused,omitempty"`
}

// InsecureWarning is what status says of a broadcast client that follows
// unsigned broadcasts.
const InsecureWarning = "following UNAUTHENTICATED broadcasts (--broadcast-insecure): any host on this LAN can forge them and set this clock; RFC 8633 deprecates unauthenticated broadcast: give the broadcaster and this client a key (--ntp-key-file)"

func (c *Client) broadcastStatus() *BroadcastClientStatus {
	bc := &c.cfg.Broadcast
	if !bc.Enabled {
		return nil
	}
	st := &BroadcastClientStatus{Listen: bc.Listen, Authenticated: !bc.Insecure, Broadcasters: c.broadcasters, LastHeard: c.bcastHeard, LastRefused: c.bcastLastErr}
	if bc.Insecure {
		st.Warning = InsecureWarning
	}
	for k, n := range c.counters {
		if r, ok := strings.CutPrefix(k, "broadcast_"); ok && n > 0 && !nonRefusal[r] {
			if st.Refused == nil {
				st.Refused = map[string]uint64{}
			}
			st.Refused[r] = n
		}
	}
	return st
}

// nonRefusal are the "broadcast_*" counters that count something else.
var nonRefusal = map[string]bool{"held_calibrating": true, "calibration_requests": true}

func (c *Client) sourceBroadcast(s *source) *BroadcastStatus {
	b := s.bcast
	st := &BroadcastStatus{DelayNS: int64(b.delay), Calibrations: b.calibrations, CalibratedAt: b.calibratedAt, LastHeard: b.heard, KeyID: b.keyID}
	switch {
	case b.silent:
		st.State = "silent"
	case !b.calEnd.IsZero() || !b.calibrated:
		st.State, st.Why = "calibrating", b.why
	default:
		st.State = "following"
	}
	if b.hasApparent {
		st.ApparentDelayNS = int64(b.apparent)
	}
	return st
}

// broadcastDeadline is when s next needs a tick: its next calibration
// request, the end of its calibration, its retry, its silence.
func (c *Client) broadcastDeadline(s *source) time.Time {
	b := s.bcast
	var dl time.Time
	switch {
	case !b.calEnd.IsZero() && b.calLeft > 0:
		dl = core.Earliest(s.next, b.calEnd)
	case !b.calEnd.IsZero():
		if b.replies == c.cfg.Broadcast.Calibration {
			return c.now.Add(1)
		}
		dl = b.calEnd
	case b.failed:
		dl = s.next
	}
	if !b.heard.IsZero() && !b.silent {
		dl = core.Earliest(dl, b.heard.Add(c.cfg.Broadcast.Timeout))
	}
	return dl
}
