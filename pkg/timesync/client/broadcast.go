package client

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// Broadcast client defaults (BroadcastConfig).
const (
	// DefaultCalibration is the number of client/server exchanges of a
	// calibration: six, 500 ms apart, three before the broadcast expected
	// next and three after it, within timed's server rate limit (bursts
	// of 8).
	DefaultCalibration = 6
	// DefaultCalibrationSpacing spaces them.
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
	// DefaultRefine is how often a calibration runs again to refine the
	// delay (the median of the last calibrations'): a broadcaster's lag
	// before its broadcasts leave varies by tens of microseconds on a
	// busy host, and one calibration takes one broadcast's.
	DefaultRefine = 10 * time.Minute
	// refineKeep is how many calibrations the median is taken over.
	refineKeep = 5
	// calSlewLimit: a calibration during which the clock still had more
	// than this to slew is provisional (the slew's timing, not the path,
	// can be in it), and runs again after CalibrationRetry.
	calSlewLimit = 100 * time.Microsecond
	// DefaultMaxBroadcasters bounds the broadcasters followed at once:
	// the first ones heard; packets from more are refused and counted.
	DefaultMaxBroadcasters = 4
)

// BroadcastConfig makes the client an RFC 5905 broadcast client: it
// follows the mode-5 packets of broadcast servers it hears (the daemon's
// socket listens to a broadcast address or joins a multicast group).
// Each broadcaster heard becomes a source. Before its packets are used, a
// few client/server exchanges with it, around one of its broadcasts,
// calibrate the delay (as ntpd's broadcast client does: the difference
// between the offset the exchanges measure and the broadcast's T3 - T4),
// and again when the apparent delay jumps (the path changed). Its samples
// then go through the clock filter, the selection and the servo like a
// server's, with
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
	// Calibration is the number of exchanges per calibration (default 6,
	// half before the broadcast expected next and half after it),
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
	// Refine is how often a broadcaster is calibrated again, the delay
	// being the median of its last five calibrations' (default 10 min;
	// negative: never). A path change starts the median afresh.
	Refine time.Duration
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
	fill(&b.Refine, DefaultRefine)
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
	case b.Calibration < 2 || b.Calibration > ntp.NStage:
		return fmt.Errorf("%w: %d calibration exchanges: want 2..%d", ErrConfig, b.Calibration, ntp.NStage)
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
	// EventBroadcasterReset: a broadcaster sent only broadcasts older
	// than its last for the timeout; it is followed afresh (WARN).
	EventBroadcasterReset = "broadcaster_reset"
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
	// calibration ends (zero: none in progress); the exchanges' samples
	// (calUnicast, offsets and round trips) and the broadcasts heard
	// amid them (calBcast, T3 - T4); failed: the last one got no answer,
	// or no broadcast came amid its exchanges.
	calLeft    int
	calEnd     time.Time
	calUnicast []calPoint
	calBcast   []calPoint
	failed     bool
	interval   time.Duration // between its last two broadcasts

	delay        time.Duration   // the calibrated one-way delay (what T3 - T4 lacks): the median of history
	history      []time.Duration // the last calibrations' delays (not the provisional ones)
	provisional  bool            // the last calibration ran while the clock slewed
	refineAt     time.Time       // the next calibration is due (zero: none)
	rtt          time.Duration   // the calibration's smallest round trip
	calErr       time.Duration   // bound on the error of the offset the exchanges gave the calibration (calError)
	calibrated   bool
	calibrations uint64
	calibratedAt time.Time
	why          string // why the current calibration runs

	apparent    time.Duration // the last packet's apparent delay
	hasApparent bool
	// late is the most a packet followed since the calibration came
	// later than the calibrated delay (by its apparent delay); errs the
	// broadcast error (sampleError) of its recent samples, newest last,
	// at most ntp.NStage (the clock filter's register): update adds the
	// chosen sample's to the source's root distance.
	late time.Duration
	errs []sampleErr

	jumps  int // packets in a row with a jumped apparent delay
	silent bool
}

// sampleErr is the broadcast error of the sample taken at local time at.
type sampleErr struct {
	at  time.Time
	err time.Duration
}

// sampleError returns the error of the broadcast sample taken at t beyond
// what its Delay and Dispersion say (0: a calibration exchange's sample,
// or one gone from the register).
func (b *bcast) sampleError(t time.Time) time.Duration {
	for i := len(b.errs) - 1; i >= 0; i-- {
		if b.errs[i].at.Equal(t) {
			return b.errs[i].err
		}
	}
	return 0
}

// maxCalBroadcasts bounds the broadcasts a calibration keeps: a
// broadcaster sending faster than the exchanges (or a flood of valid
// ones) cannot grow it.
const maxCalBroadcasts = 16

// calPoint is one measurement of a calibration: at local time at, an
// offset (reference minus local, the servo's convention) and, for an
// exchange, its round trip.
type calPoint struct {
	at     time.Time
	offset time.Duration
	rtt    time.Duration
}

// shift accounts for a correction of the local clock in the points of a
// calibration in progress, as ntp.Filter.Shift does in the filter's.
func (b *bcast) shift(d time.Duration) {
	for _, pts := range [][]calPoint{b.calUnicast, b.calBcast} {
		for i := range pts {
			pts[i].offset -= d
		}
	}
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
		if d.Time.Sub(s.bcast.heard) >= bc.Timeout {
			// Nothing newer for the timeout, and still broadcasting: its
			// clock went back (set by hand, a restart with another
			// clock), or someone replays it while it is silent. Either
			// way it is followed afresh, calibrated again against its
			// answers, which a replay cannot give.
			c.forgetBroadcaster(s, d.Time)
			s, err = nil, nil
		}
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
	if !b.heard.IsZero() && dst.After(b.heard) {
		b.interval = dst.Sub(b.heard)
	}
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
	t3 := p.Transmit.TimeNear(dst)
	if !b.calEnd.IsZero() || !b.calibrated {
		// Held back: the delay is being measured, with this packet's
		// help if it came amid the exchanges (in the servo's
		// convention, as the exchanges' samples are).
		if b.calEnd.IsZero() && !b.failed {
			c.calibrate(s, dst, "first broadcast heard")
		}
		if b.calLeft < bc.Calibration && len(b.calBcast) < maxCalBroadcasts {
			b.calBcast = append(b.calBcast, calPoint{at: dst, offset: t3.Sub(dst) - c.servo.Pending(dst)})
		}
		c.counters["broadcast_held_calibrating"]++
		s.lastErr = ""
		return nil
	}
	// The exchange a broadcast stands for: the offset is T3 + delay -
	// T4, its delay the calibration's smallest round trip (so that the
	// filter orders broadcasts and exchanges alike), its dispersion the
	// precisions; its own error, asymmetric, is sampleError's, kept
	// beside the filter (bcast.errs) and added to the root distance.
	smp := ntp.Sample{
		Offset:     t3.Sub(dst) + b.delay,
		Delay:      max(b.rtt, ntp.Precision(c.cfg.Precision)),
		Dispersion: ntp.Precision(c.cfg.Precision) + ntp.Precision(p.Precision),
		Time:       dst,
		Header:     b.peer,
	}
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
				b.history = b.history[:0]
				c.calibrate(s, dst, fmt.Sprintf("apparent delay %v against the calibrated %v", b.apparent, b.delay))
			}
			s.lastErr = fmt.Sprintf("%v: %v against the calibrated %v", ErrDelayJump, b.apparent, b.delay)
			return fmt.Errorf("client: broadcast from %v: %w", s.addr, ErrDelayJump)
		}
	}
	b.jumps = 0
	if b.hasApparent {
		b.late = max(b.late, b.apparent-b.delay)
	}
	b.errs = append(b.errs, sampleErr{at: dst, err: b.broadcastError()})
	if len(b.errs) > ntp.NStage {
		b.errs = append(b.errs[:0], b.errs[len(b.errs)-ntp.NStage:]...)
	}
	if !c.stepFence.IsZero() && smp.Time.Add(-smp.Delay).Before(c.stepFence) {
		c.counters[cntStepped]++
		s.lastErr = ErrClockStepped.Error()
		return fmt.Errorf("%v: %w", s.addr, ErrClockStepped)
	}
	c.accept(s, smp)
	return nil
}

// broadcastError bounds how far a broadcast sample's offset (T3 + delay -
// T4, delay the calibrated one) is from the true offset, beyond the
// calibration's round trip, which the sample's Delay already carries. The
// true offset is T3 + δ - T4, δ what this broadcast really took from the
// broadcaster's reading of T3 to our T4 (its send path's lag, which
// varies with its load, and the wire): the sample is off by δ - delay, and
// that error is asymmetric.
//
//   - Early (δ < delay: the true offset below the sample's). A packet
//     cannot arrive before it was sent: δ ≥ 0, so the sample is at most
//     the calibrated delay too high, whatever lag the calibration's
//     broadcast happened to catch. A calibration on a broadcast that left
//     late (124 us on a loaded lab host, against the usual 20) puts every
//     later sample that much too high, and nothing the client sees
//     afterwards can tell: the servo follows the broadcasts, and their
//     apparent delay settles back on the calibrated one.
//   - Late (δ > delay). No bound but what is seen: the calibration's own
//     error (calErr: its exchanges' round trips through the line it
//     interpolates) plus the most any broadcast since the calibration came
//     later than the calibrated delay (the lag's jitter, seen in the
//     apparent delays: the servo's prediction against the broadcast).
//     A broadcast more than DelayJump late is held, not used.
//
// The servo's bound is symmetric: the sample's error is the larger side.
func (b *bcast) broadcastError() time.Duration {
	return min(max(b.delay, b.calErr+b.late, 0), ntp.MaxDispersion)
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

// forgetBroadcaster drops s, whose broadcasts have gone back in time.
func (c *Client) forgetBroadcaster(s *source, now time.Time) {
	c.srcs = slices.DeleteFunc(c.srcs, func(x *source) bool { return x == s })
	delete(c.byAddr, s.addr)
	c.broadcasters--
	c.dirty = true
	if c.sysPeer == s {
		c.setSysPeer(nil)
	}
	c.counters["broadcast_forgotten"]++
	c.event(EventBroadcasterReset, fmt.Sprintf("broadcaster %v: only broadcasts older than its last (%v) for %v: its clock went back, or it is being replayed; following it afresh, calibrated again",
		s.addr, s.bcast.heard.Format(time.RFC3339), now.Sub(s.bcast.heard).Round(time.Second)), "source", s.addr.String())
	c.rd.Events[len(c.rd.Events)-1].Warn = true
}

// calibrate starts a calibration of s at now: Calibration client
// requests, spaced so that half come before the broadcast expected next
// and half after it (at once if broadcasts come more often than that).
func (c *Client) calibrate(s *source, now time.Time, why string) {
	b, bc := s.bcast, &c.cfg.Broadcast
	b.calLeft, b.jumps, b.why = bc.Calibration, 0, why
	b.calUnicast, b.calBcast = b.calUnicast[:0], b.calBcast[:0]
	first := now
	iv := b.interval
	if iv == 0 && b.hasPeer {
		iv = ntp.PollInterval(min(max(b.peer.Poll, 0), ntp.MaxPollLimit))
	}
	if at := b.heard.Add(iv - time.Duration(bc.Calibration/2)*bc.CalibrationSpacing - bc.CalibrationSpacing/2); at.After(now) {
		first = at
	}
	s.next = first
	b.calEnd = first.Add(time.Duration(bc.Calibration) * bc.CalibrationSpacing)
}

// broadcastTick sends the calibration request that is due, ends a
// calibration whose time is up, and notices silence.
func (c *Client) broadcastTick(s *source, now time.Time) {
	b, bc := s.bcast, &c.cfg.Broadcast
	if !b.calEnd.IsZero() {
		if b.calLeft > 0 && !now.Before(s.next) {
			c.calibrationRequest(s, now)
		}
		if b.calLeft == 0 && !now.Before(b.calEnd) {
			c.endCalibration(s, now)
		}
	} else if b.failed && !now.Before(s.next) && c.reachable(s) {
		c.calibrate(s, now, "retrying: "+b.why)
	} else if b.calibrated && !b.refineAt.IsZero() && !now.Before(b.refineAt) && c.reachable(s) {
		why := "refining the delay"
		if b.provisional {
			why = "the last calibration ran while the clock slewed"
		}
		c.calibrate(s, now, why)
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

// calibrationReply takes the sample of a calibration reply of s (the
// client's own, already in its filter).
func (c *Client) calibrationReply(s *source, smp ntp.Sample) {
	if b := s.bcast; !b.calEnd.IsZero() {
		b.calUnicast = append(b.calUnicast, calPoint{at: smp.Time, offset: smp.Offset, rtt: smp.Delay})
	}
}

// endCalibration sets the delay from the calibration, or schedules
// another try. As ntpd's broadcast client does, the delay is what a
// broadcast's T3 - T4 lacks to give the offset the client/server
// exchanges measure at the same moment (interpolated between the
// exchanges around it, weighted by their round trips): it holds the
// path's one-way delay and whatever else makes a broadcast late or early
// (the broadcaster stamping its broadcasts earlier before they leave than
// its replies), so that broadcasts and exchanges agree.
func (c *Client) endCalibration(s *source, now time.Time) {
	b, bc := s.bcast, &c.cfg.Broadcast
	b.calEnd, b.calLeft = time.Time{}, 0
	if len(b.calUnicast) == 0 {
		s.next = now.Add(bc.CalibrationRetry)
		if !b.failed {
			c.event(EventCalibrationFailed, fmt.Sprintf("broadcaster %v did not answer any of %d client requests: its broadcasts are not used until it does (it must answer NTP requests too: timed --serve, chronyd's allow; with keys, the same key)", s.addr, bc.Calibration),
				"source", s.addr.String())
			c.rd.Events[len(c.rd.Events)-1].Warn = true
		}
		b.failed = true
		b.why = fmt.Sprintf("no answer to %d client requests", bc.Calibration)
		s.lastErr = fmt.Sprintf("calibration: no answer to %d client requests; next try in %v", bc.Calibration, bc.CalibrationRetry)
		return
	}
	var delays []time.Duration
	var calErr time.Duration
	for _, bp := range b.calBcast {
		if at, ok := interpolate(b.calUnicast, bp.at); ok {
			delays = append(delays, at-bp.offset)
			calErr = max(calErr, calError(b.calUnicast, bp.at))
		}
	}
	if len(delays) == 0 {
		// The broadcast amid the exchanges was lost, or came early or
		// late: again around the next one.
		c.counters["broadcast_calibration_missed"]++
		s.next, b.failed = now, true
		b.why = "no broadcast came amid the last calibration's exchanges"
		s.lastErr = "calibration: " + b.why + "; trying again around the next"
		return
	}
	slices.Sort(delays)
	rtts := make([]time.Duration, 0, len(b.calUnicast))
	for _, u := range b.calUnicast {
		rtts = append(rtts, u.rtt)
	}
	old, had := b.delay, b.calibrated
	b.failed, b.calibrated, b.calibratedAt = false, true, now
	d := delays[len(delays)/2]
	b.provisional = false
	for _, p := range slices.Concat(b.calUnicast, b.calBcast) {
		b.provisional = b.provisional || c.servo.Pending(p.at).Abs() > calSlewLimit
	}
	b.refineAt = time.Time{}
	switch {
	case b.provisional:
		// Again around the broadcast after the retry wait: a server's
		// rate limit (timed's: bursts of 8, one a second) has not
		// refilled for another six requests at once.
		b.refineAt = now.Add(bc.CalibrationRetry)
	case bc.Refine > 0:
		b.refineAt = now.Add(bc.Refine)
	}
	if !b.provisional {
		b.history = append(b.history, d)
		if len(b.history) > refineKeep {
			b.history = b.history[1:]
		}
	}
	b.delay = d
	if len(b.history) > 0 {
		sorted := slices.Sorted(slices.Values(b.history))
		b.delay = sorted[len(sorted)/2]
	}
	b.rtt = slices.Min(rtts)
	b.calErr = calErr
	b.calibrations++
	b.hasApparent, b.late = false, 0
	s.lastErr = ""
	msg := fmt.Sprintf("broadcaster %v: delay %v (its broadcasts against %d client/server exchanges, round trip %v", s.addr, d, len(b.calUnicast), b.rtt)
	switch {
	case b.provisional:
		msg += fmt.Sprintf("; the clock was slewing: again in %v)", bc.CalibrationRetry)
	case len(b.history) > 1:
		msg += fmt.Sprintf("; %v the median of the last %d)", b.delay, len(b.history))
	default:
		msg += ")"
	}
	if had {
		msg += fmt.Sprintf(", was %v", old)
	}
	c.event(EventCalibrated, msg, "source", s.addr.String(), "delay", b.delay)
}

// interpolate returns the offset at t on the weighted least-squares line
// through pts (weights 1/rtt², as the clock filter prefers short round
// trips), and false unless pts has a point before t and one after.
func interpolate(pts []calPoint, t time.Time) (time.Duration, bool) {
	var before, after bool
	for _, p := range pts {
		before = before || !p.at.After(t)
		after = after || !p.at.Before(t)
	}
	if !before || !after {
		return 0, false
	}
	var y float64
	for i, c := range lineCoefficients(pts, t) {
		y += c * float64(pts[i].offset)
	}
	return time.Duration(math.Round(y)), true
}

// calError bounds the error of interpolate(pts, t): each exchange's
// offset is within half its round trip of the truth, and the line's value
// at t is Σ c_i·offset_i, so it is within Σ |c_i|·rtt_i/2.
func calError(pts []calPoint, t time.Time) time.Duration {
	var e float64
	for i, c := range lineCoefficients(pts, t) {
		e += math.Abs(c) * float64(pts[i].rtt) / 2
	}
	return time.Duration(math.Ceil(e))
}

// lineCoefficients returns the c_i with which the weighted least-squares
// line through pts (weights 1/rtt²) takes the value Σ c_i·offset_i at t.
func lineCoefficients(pts []calPoint, t time.Time) []float64 {
	w := make([]float64, len(pts))
	var sw, sx float64
	for i, p := range pts {
		w[i] = 1 / math.Pow(math.Max(float64(p.rtt), 1), 2)
		sw += w[i]
		sx += w[i] * float64(p.at.Sub(t))
	}
	mx := sx / sw
	var sxx float64
	for i, p := range pts {
		dx := float64(p.at.Sub(t)) - mx
		sxx += w[i] * dx * dx
	}
	// At t (x = 0) the line is my - slope·mx, with my = Σ w_i y_i / sw
	// and slope = Σ w_i (x_i - mx) y_i / sxx.
	cs := make([]float64, len(pts))
	for i, p := range pts {
		cs[i] = w[i] / sw
		if sxx > 0 {
			cs[i] -= mx * w[i] * (float64(p.at.Sub(t)) - mx) / sxx
		}
	}
	return cs
}

// BroadcastStatus is a broadcaster's part of SourceStatus.
type BroadcastStatus struct {
	// State: "calibrating" (its packets are held until the delay is
	// known), "following", or "silent" (none for the timeout).
	State string `json:"state"`
	// DelayNS is the calibrated one-way delay; ApparentDelayNS what the
	// last packet's took, if the clock is where the servo predicts it.
	DelayNS         int64 `json:"delay_ns"`
	ApparentDelayNS int64 `json:"apparent_delay_ns,omitempty"`
	// ErrorNS is the last sample's own error (the larger of the
	// calibrated delay, a broadcast being at most that early, and the
	// calibration's error plus the most a broadcast came late since),
	// part of the source's root distance.
	ErrorNS int64 `json:"error_ns,omitempty"`
	// CalibrationErrorNS bounds the last calibration's error (each of its
	// exchanges' offsets within half its round trip, through the line
	// interpolated at the broadcast it measured).
	CalibrationErrorNS int64     `json:"calibration_error_ns,omitempty"`
	Calibrations       uint64    `json:"calibrations"`
	CalibratedAt       time.Time `json:"calibrated_at,omitzero"`
	Why                string    `json:"why,omitempty"`
	LastHeard          time.Time `json:"last_heard,omitzero"`
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
var nonRefusal = map[string]bool{"held_calibrating": true, "calibration_requests": true, "forgotten": true, "calibration_missed": true}

func (c *Client) sourceBroadcast(s *source) *BroadcastStatus {
	b := s.bcast
	st := &BroadcastStatus{DelayNS: int64(b.delay), CalibrationErrorNS: int64(b.calErr), Calibrations: b.calibrations, CalibratedAt: b.calibratedAt, LastHeard: b.heard, KeyID: b.keyID}
	switch {
	case b.silent:
		st.State = "silent"
	case !b.calEnd.IsZero() || !b.calibrated:
		st.State, st.Why = "calibrating", b.why
	default:
		st.State = "following"
		if b.provisional {
			st.Why = "calibrated while the clock slewed: again soon"
		}
	}
	if b.hasApparent {
		st.ApparentDelayNS = int64(b.apparent)
	}
	if n := len(b.errs); n > 0 {
		st.ErrorNS = int64(b.errs[n-1].err)
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
		dl = b.calEnd
	case b.failed:
		dl = s.next
	case b.calibrated:
		dl = b.refineAt
	}
	if !b.heard.IsZero() && !b.silent {
		dl = core.Earliest(dl, b.heard.Add(c.cfg.Broadcast.Timeout))
	}
	return dl
}
