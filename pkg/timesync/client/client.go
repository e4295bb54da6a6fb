package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/cristian"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/timesync/servo"
	"github.com/synclab/synclab/pkg/wire"
)

// Event names (core.Event.Name): stable labels the daemon logs, counts and
// binds hooks to.
const (
	// EventSynchronized: the first clock update (or the first after the
	// bound grew past the kernel's phase limit).
	EventSynchronized = "clock_synchronized"
	// EventUnsynchronized: no update for so long that the error bound
	// passed 16 s.
	EventUnsynchronized = "clock_unsynchronized"
	// EventStepped: the clock was stepped forward (makestep window).
	EventStepped = "clock_stepped"
	// EventSysPeer: the system peer changed (or was lost).
	EventSysPeer = "sys_peer_changed"
	// EventFalseticker: a source was found to disagree with the majority.
	EventFalseticker = "falseticker"
	// EventReachable and EventUnreachable: a source's reach register
	// became non-zero, or zero.
	EventReachable   = "source_reachable"
	EventUnreachable = "source_unreachable"
	// EventKiss: a source sent a kiss-o'-death (RATE: polls slowed down;
	// DENY, RSTR: polling stopped).
	EventKiss = "kiss_of_death"
	// EventInterleaved: a server answered in interleaved mode
	// (Config.Interleaved), the first time or again after basic answers.
	EventInterleaved = "interleaved"
	// EventInterleavedBasic (WARN): a server answered xleaveBasicRun
	// interleaved requests in a row in basic mode: it does not speak the
	// mode, or has stopped (a restart, a full table).
	EventInterleavedBasic = "interleaved_basic"
	// EventPollSamplesSingle (WARN): a server answered only one request
	// of most multi-sample polls (Config.PollSamples; pollSingleOn of
	// the last 8): a rate limit that drops the rest. At most once per
	// pollSingleWarnEvery per source.
	EventPollSamplesSingle = "poll_samples_single"
	// EventPollSamplesAnswered: a server so reported answers several
	// requests of most polls again.
	EventPollSamplesAnswered = "poll_samples_answered"
)

// Counter names of Status.Counters: packets by what happened to them.
const (
	cntAccepted   = "accepted"       // replies that gave a sample
	cntStranger   = "stranger_peer"  // mode 1 from an address not in Peers
	cntUnknown    = "unknown_source" // other packets from unknown addresses
	cntMalformed  = "malformed"
	cntMode       = "unexpected_mode"
	cntStopped    = "stopped_source"
	cntStepped    = "clock_stepped"
	cntCrossed    = "peer_crossed" // a peer's packet that did not answer our latest: its timestamps are echoed, no sample
	cntRequests   = "requests"     // mode-1 and mode-3 polls sent
	cntUpdates    = "clock_updates"
	cntStaleSys   = "stale_sys_peer" // selection ran, the system peer's estimate was not new
	cntSelectFail = "selection_failed"
	// cntXleaveSampled counts interleaved answers about an exchange whose
	// basic answer was sampled (ntp.ErrInterleavedSampled): one after
	// each switch from basic to interleaved answers.
	cntXleaveSampled = "interleaved_resampled"
	// cntPollUnused counts the answers of multi-sample polls
	// (Config.PollSamples) that were not the poll's least delayed.
	cntPollUnused = "poll_samples_unused"
	// cntHeldAcrossStep counts held samples that reached a poll's end
	// older than a step: none while the step forgets them (a sample of
	// the old scale would step the clock twice).
	cntHeldAcrossStep = "poll_sample_across_step"
)

// source is one configured server or peer.
type source struct {
	addr netip.AddrPort
	peer bool // symmetric peer (mode 1) rather than a server (mode 3)

	assoc  *ntp.Association // mode 3 (server) or mode 1 (peer): our packets and theirs
	filter *ntp.Filter
	poller *ntp.Poller

	next     time.Time // local time the next poll is due
	sentAt   time.Time // local time of our last poll
	floor    int8      // poll exponent floor raised by RATE kisses
	hasFloor bool
	stopped  string // DENY/RSTR code: no more polls

	last      ntp.Sample // the last sample (offset normalised, see Servo.Pending)
	hasLast   bool
	lastOut   ntp.FilterOutcome
	lastErr   string // why the last packet was refused ("" after a good one)
	cand      ntp.Candidate
	hasCand   bool
	verdict   ntp.Verdict // from the last selection; 0 when not a candidate
	reachable bool        // reach register non-zero at the last tick

	received, accepted uint64

	// Interleaved mode (Config.Interleaved): the events said so.
	xlActive, xlBasic bool

	// A poll of several requests (Config.PollSamples > 1, servers only):
	// pollLeft requests still to send, each when the last is answered or
	// at next; the poll after this one is due at nextPoll. The least
	// delayed sample so far is held until the poll ends (every request
	// answered, or heldUntil), then given to the filter.
	pollLeft  int
	nextPoll  time.Time
	held      ntp.Sample
	hasHeld   bool
	heldUntil time.Time
	// The current poll's requests sent and answers taken; the answers
	// to the last answered poll that sent all its requests; which of the
	// last 8 such polls had one answer (a shift register, the latest in
	// bit 0); whether the status says the server drops the rest
	// (single), whether a warning said so (singleLogged), and when.
	pollSent, pollAnswers int
	lastAnswers           int
	singleReg             uint8
	single, singleLogged  bool
	singleWarned          time.Time

	// Cristian sources only (assoc and passive are nil):
	cristian  *cristian.Burst
	burstLeft int       // requests of the current burst still to send
	burstEnd  time.Time // the current burst ends; zero when none is in flight
	nextBurst time.Time // the poll after this burst is due
	cpeer     ntp.Peer  // the server's variables from the last good burst
	hasCPeer  bool
	lastRound ntp.CristianEstimate

	// Broadcasters only (Config.Broadcast): assoc sends the calibration
	// requests, poller is unused but for its reach register.
	bcast *bcast
}

// peerVars returns the source's variables as its last answer gave them.
func (s *source) peerVars() (ntp.Peer, bool) {
	if s.bcast != nil && s.bcast.hasPeer {
		return s.bcast.peer, true
	}
	if s.cristian != nil {
		return s.cpeer, s.hasCPeer
	}
	return s.assoc.Peer()
}

// estimate is the source's clock filter estimate, a broadcast sample's
// own error (bcast.broadcastError) added to its dispersion: the filter's
// dispersion weighs its register's samples, and a broadcast's error is
// its own, not to be averaged away.
func (s *source) estimate() (ntp.Estimate, bool) {
	est, ok := s.filter.Estimate()
	if ok && s.bcast != nil {
		est.Dispersion += s.bcast.sampleError(est.Time)
	}
	return est, ok
}

// pollExp is the poll exponent in force: the poller's, raised to a RATE
// floor.
func (s *source) pollExp() int8 {
	if s.bcast != nil && s.bcast.hasPeer {
		// The broadcaster's interval: a sample every 2^poll s.
		return min(max(s.bcast.peer.Poll, ntp.MinPollLimit), ntp.MaxPollLimit)
	}
	if s.hasFloor && s.floor > s.poller.Poll() {
		return s.floor
	}
	return s.poller.Poll()
}

// Client is timed's NTP client and symmetric-peer core: a sans-IO state
// machine (core.Core) that polls its sources, checks and filters their
// answers, selects the truechimers and disciplines the clock through a
// servo. See the package documentation for the walk-through. Not safe for
// concurrent use: the driver serialises Step, StepDatagram, Tick, Ready and
// Status.
type Client struct {
	cfg    Config
	servo  *servo.Servo
	srcs   []*source
	byAddr map[netip.AddrPort]*source
	selfID uint32

	started bool
	now     time.Time // local time of the last tick
	ticks   uint64

	dirty     bool      // an estimate or a reach changed since the last selection
	stepFence time.Time // polls sent before this local time predate the last step

	sel     ntp.Selection
	selErr  error
	hasSel  bool
	sysPeer *source
	sys     ntp.System
	synced  bool // as last reported by an event

	lastSync  time.Time // local time of the last AdjustSync
	savedFreq float64
	savedErr  float64 // the saved frequency's error, ppm; 0 if unknown
	savedAt   time.Time
	saved     bool

	counters map[string]uint64
	bugs     core.Bugs // our own encodings that failed (status counters "bug_*")
	rd       core.Ready

	validator *wire.Validator // Cristian's replies; nil without Cristian sources

	// The broadcast client (Config.Broadcast): broadcasters followed,
	// when any broadcast was last heard, whether its silence was
	// reported, the last refusal of a packet from a non-source, and the
	// first tick's time (silence before the first broadcast).
	broadcasters int
	bcastHeard   time.Time
	bcastSilent  bool
	bcastLastErr string
	started0     time.Time
}

var _ core.Core = (*Client)(nil)

// New returns a client for cfg, or an error wrapping ErrConfig.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sv, err := servo.New(cfg.servoConfig(savedFrequency{ppm: cfg.Frequency}))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c := &Client{
		cfg:      cfg,
		servo:    sv,
		byAddr:   make(map[netip.AddrPort]*source, len(cfg.Servers)+len(cfg.Peers)),
		counters: map[string]uint64{},
		sys:      ntp.Unsynchronized(cfg.Precision),
	}
	if cfg.Address.IsValid() {
		c.selfID = wire.RefIDFromAddr(cfg.Address)
	}
	prec := ntp.Precision(cfg.Precision)
	pc := ntp.PollConfig{MinPoll: cfg.MinPoll, MaxPoll: cfg.MaxPoll, PollRangeSet: true, Burst: cfg.Burst, BurstInterval: cfg.BurstInterval}
	add := func(a netip.AddrPort, peer bool) error {
		mode := wire.ModeClient
		if peer {
			mode = wire.ModeSymmetricActive
		}
		s := &source{addr: unmap(a), peer: peer, filter: ntp.NewFilter(prec)}
		var err error
		if s.assoc, err = ntp.NewAssociation(mode, prec); err != nil {
			return err
		}
		if s.poller, err = ntp.NewPoller(pc); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		c.srcs = append(c.srcs, s)
		c.byAddr[s.addr] = s
		return nil
	}
	for _, a := range cfg.Servers {
		if err := add(a, false); err != nil {
			return nil, err
		}
		if cfg.Interleaved {
			if err := c.srcs[len(c.srcs)-1].assoc.EnableInterleaved(cfg.Rand.Uint64); err != nil {
				return nil, err
			}
		}
		// Every request of a poll is waited for, not only the last: on
		// a link slower than sampleWait the next request leaves before
		// the last one's answer comes.
		if err := c.srcs[len(c.srcs)-1].assoc.SetMaxOutstanding(cfg.PollSamples); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	for _, a := range cfg.Peers {
		if err := add(a, true); err != nil {
			return nil, err
		}
	}
	for _, a := range cfg.CristianServers {
		s := &source{addr: unmap(a), filter: ntp.NewFilter(prec), cristian: cristian.NewBurst(cfg.CristianMinDelay, prec)}
		var err error
		if s.poller, err = ntp.NewPoller(pc); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		c.srcs = append(c.srcs, s)
		c.byAddr[s.addr] = s
	}
	if len(cfg.CristianServers) > 0 {
		c.validator = wire.NewValidator(cfg.Cluster, cfg.ID, cfg.Keys)
	}
	return c, nil
}

func (c Config) servoConfig(f savedFrequency) servo.Config {
	return servo.Config{
		MaxSlewPPM:     c.MaxSlewPPM,
		StepThreshold:  c.StepThreshold,
		StepLimit:      c.StepLimit,
		Frequency:      f.ppm,
		FrequencyError: f.errPPM,
		MeasureOnly:    c.NoAdjust,
	}
}

// Restore loads the state a previous run left in Ready.State (the frequency
// correction). Call it before the first Tick; ErrStarted after. Invalid
// state is refused with an error wrapping ErrState and changes nothing: the
// daemon logs it and starts from Config.Frequency.
func (c *Client) Restore(state []byte) error {
	if c.started {
		return ErrStarted
	}
	f, err := decodeState(state)
	if err != nil {
		return err
	}
	if c.cfg.NoAdjust {
		return nil // see Config.NoAdjust
	}
	sv, err := servo.New(c.cfg.servoConfig(f))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	c.servo = sv
	c.savedFreq, c.savedErr, c.saved, c.savedAt = f.ppm, f.errPPM, true, time.Time{}
	return nil
}

// Frequency returns the servo's frequency correction, ppm.
func (c *Client) Frequency() float64 { return c.servo.Frequency() }

// Synchronized reports whether the clock has been updated from a
// selection and its error bound is still within the kernel's phase limit
// at the last tick.
func (c *Client) Synchronized() bool {
	return !c.cfg.NoAdjust && c.servo.Synchronized() && c.servo.SyncAdjustment(c.now).Synced
}

// Bound returns the interval that holds true time when the local clock
// reads now (servo.Servo.Bound); zero times before the first update.
func (c *Client) Bound(now time.Time) (earliest, latest time.Time) { return c.servo.Bound(now) }

// BoundGrowthPPM is how fast Bound moves away from a clock reading
// between updates, the slew in progress aside (servo.Servo.GrowthPPM).
func (c *Client) BoundGrowthPPM() float64 { return c.servo.GrowthPPM() }

// Pending is the slew the servo counts on the clock still to make at
// local time now (servo.Servo.Pending).
func (c *Client) Pending(now time.Time) time.Duration { return c.servo.Pending(now) }

var _ core.Adjuster = (*Client)(nil)

// Adjusted is when the clock took the last Ready's adjustments
// (core.Adjuster): the servo counts the slew from then
// (servo.Servo.Applied).
func (c *Client) Adjusted(at time.Time) { c.servo.Applied(at) }

// Step refuses synclab frames: the client speaks NTP only.
func (c *Client) Step(m core.Message) error {
	return fmt.Errorf("%w: %v", core.ErrUnexpectedKind, m.Kind)
}

// Ready drains what the client wants done.
func (c *Client) Ready() core.Ready {
	rd := c.rd
	c.rd = core.Ready{}
	return rd
}

func (c *Client) event(name, msg string, args ...any) {
	c.rd.Events = append(c.rd.Events, core.Event{Name: name, Msg: msg, Args: args})
}

// warn is event at level WARN.
func (c *Client) warn(name, msg string, args ...any) {
	c.rd.Events = append(c.rd.Events, core.Event{Name: name, Msg: msg, Args: args, Warn: true})
}

// Tick advances the client to local time now: it sends the polls that are
// due, runs the selection and the servo when an estimate changed, refreshes
// the clock's error fields, and saves the frequency when it moved.
func (c *Client) Tick(now time.Time) {
	if !c.started {
		c.started, c.started0 = true, now
		for _, s := range c.srcs {
			// A random phase within a quarter of the first interval, so
			// that the sources (and the hosts) do not poll in lockstep.
			first := c.cfg.BurstInterval
			if c.cfg.Burst <= 0 {
				first = ntp.PollInterval(c.cfg.MinPoll)
			}
			s.next = now.Add(time.Duration(c.cfg.Rand.Int64N(int64(first)/4 + 1)))
		}
	}
	c.now = now
	c.ticks++
	for _, s := range c.srcs {
		switch {
		case s.bcast != nil:
			c.broadcastTick(s, now)
		case s.stopped == "" && !now.Before(s.next):
			c.poll(s, now)
		}
		if !s.heldUntil.IsZero() && !now.Before(s.heldUntil) {
			c.releaseHeld(s) // the poll's last answer is lost
		}
		if s.cristian != nil && !s.burstEnd.IsZero() &&
			(!now.Before(s.burstEnd) || s.burstLeft == 0 && s.cristian.Outstanding() == 0) {
			c.endBurst(s)
		}
		if r := c.reachable(s); r != s.reachable {
			s.reachable = r
			c.dirty = true
			if r {
				c.event(EventReachable, fmt.Sprintf("source %v is reachable", s.addr), "source", s.addr.String())
			} else {
				c.event(EventUnreachable, fmt.Sprintf("source %v stopped answering", s.addr), "source", s.addr.String())
			}
		}
	}
	if c.cfg.Broadcast.Enabled {
		c.broadcastSilence(now)
	}
	if c.dirty {
		c.update(now)
	}
	c.syncState(now)
	c.saveState(now)
}

// poll polls s: a request, or with Config.PollSamples several, one after
// the other's answer; and when the next poll is due.
func (c *Client) poll(s *source, now time.Time) {
	if s.cristian != nil {
		c.cristianPoll(s, now)
		return
	}
	multi := c.multiSample(s)
	if multi && s.pollLeft > 0 {
		// A further request of this poll: not a poll of its own for the
		// reach register or the interval.
		c.request(s, now)
		s.pollLeft--
		s.pollSent++
		if s.pollLeft == 0 {
			s.next, s.heldUntil = s.nextPoll, now.Add(c.sampleWait(s))
		} else {
			s.next = now.Add(c.sampleWait(s))
		}
		return
	}
	if multi {
		c.releaseHeld(s) // the last poll's answers are all in, or lost
		c.pollAnswered(s, now)
		s.assoc.Forget()
		s.pollSent, s.pollAnswers = 1, 0
	}
	c.request(s, now)
	wait := s.poller.Sent()
	if pp, ok := s.assoc.PeerPoll(); ok && s.peer && !s.poller.Bursting() {
		// A symmetric peer polls at the shorter of both intervals (RFC
		// 5905 poll_update: min(ppoll, hpoll)), never below our
		// MinPoll: each end's samples come from the other's packets.
		// (The peer's Poll is a byte off the wire: clamped before it
		// becomes a shift.)
		wait = min(wait, ntp.PollInterval(min(max(pp, c.cfg.MinPoll), ntp.MaxPollLimit)))
	}
	if s.hasFloor {
		wait = max(wait, ntp.PollInterval(s.floor))
	}
	// Up to 1/32 longer: hosts started together drift apart instead of
	// hitting the server in the same millisecond forever. Never shorter:
	// a server's rate limit (one request per 2^minpoll s on average, as
	// timed's own server allows) must never see us poll faster than we
	// say we do.
	wait += time.Duration(c.cfg.Rand.Int64N(int64(wait)/32 + 1))
	s.next = now.Add(max(wait, c.cfg.TickInterval))
	if multi {
		s.pollLeft, s.nextPoll = c.cfg.PollSamples-1, s.next
		s.next = now.Add(c.sampleWait(s))
	}
}

// request sends s a request (mode 3 to a server, mode 1 to a peer). The
// transmit timestamp is patched by the driver right before the write,
// and reported back through StepDatagram (Sent).
func (c *Client) request(s *source, now time.Time) {
	pkt := s.assoc.Request(now, s.pollExp(), c.sysAt(now))
	// A request that cannot be encoded is our bug, reported and counted;
	// the poll counts as sent (and unanswered), so polling goes on at
	// its interval instead of retrying at every tick.
	if b, ok := c.bugs.Encode(&c.rd.Events, "request", &pkt, make([]byte, 0, wire.NTPHeaderLen)); ok {
		c.rd.Datagrams = append(c.rd.Datagrams, core.Datagram{Addr: s.addr, Data: b, NTPStamp: true})
		c.counters[cntRequests]++
	}
	s.sentAt = now
}

// multiSample reports whether s's polls send Config.PollSamples requests.
func (c *Client) multiSample(s *source) bool {
	return c.cfg.PollSamples > 1 && !s.peer && s.bcast == nil && s.cristian == nil
}

// sampleWait is how long a request of a multi-sample poll may go
// unanswered before the next one goes (or the poll ends): the whole poll
// must end well before the next (half the shortest interval, a burst's
// included). A LAN server answers within a millisecond, but a loaded host
// schedules the daemons tens of milliseconds late; a lost answer, the
// only cost of waiting longer, is rare: 250 ms, or one and a half of the
// last sample's round trip if longer, so that on a slow link each
// request still goes on the last one's answer, within half the interval.
// An answer that comes after the wait is taken all the same while the
// poll is the latest (ntp.Association.SetMaxOutstanding): a late one after
// the poll ended is held and given to the filter as the next poll starts
// (the bound holds for it as for any).
func (c *Client) sampleWait(s *source) time.Duration {
	iv := ntp.PollInterval(s.pollExp())
	if c.cfg.Burst > 0 {
		iv = min(iv, c.cfg.BurstInterval)
	}
	most := iv / time.Duration(2*c.cfg.PollSamples)
	w := min(most, 250*time.Millisecond)
	if s.hasLast {
		w = max(w, min(most, s.last.Delay*3/2))
	}
	return max(w, c.cfg.TickInterval)
}

// hold keeps smp if it is the least delayed answer of s's current poll,
// and ends the poll when no request of it is left to send; else the
// next request goes at once (its path still warm from this exchange).
func (c *Client) hold(s *source, smp ntp.Sample) {
	s.poller.Received()
	s.pollAnswers++
	if s.hasHeld {
		c.counters[cntPollUnused]++
		if smp.Delay >= s.held.Delay {
			smp = s.held
		}
	}
	s.held, s.hasHeld = smp, true
	c.nextSample(s)
}

// nextSample moves s's poll on after an answer: the next request at once,
// or, after the poll's last, the held sample to the filter; but while the
// latest request is in flight (this answered an earlier one, on a slow
// link), that one's answer (or its wait's end) moves it on. An earlier
// request still unanswered after the latest one's answer is most likely
// lost: its answer, if it comes, is a sample of its own.
func (c *Client) nextSample(s *source) {
	if _, latest := s.assoc.Outstanding(); latest {
		return
	}
	if s.pollLeft > 0 {
		s.next = c.now.Add(1) // as soon as possible (node.NextTick)
		return
	}
	c.releaseHeld(s)
}

// A server is said to drop all but one request a poll when pollSingleOn
// of the last 8 whole polls had one answer, and no longer when at most
// pollSingleOff did: chronyd's rate limit lets a random share of the
// requests over it through (its leak), and the report must not come and
// go with each.
const (
	pollSingleOn  = 6
	pollSingleOff = 2
)

// pollSingleWarnEvery spaces the warnings of a server that comes and goes
// out of answering one request a poll.
const pollSingleWarnEvery = time.Hour

// pollAnswered looks at the answers to s's last poll, if it sent all its
// requests (a RATE kiss ends one early) and got any: a server that answers
// only one request of most polls drops the rest. Its one answer is the
// poll's sample, as with PollSamples 1; the administrator is told that the
// other requests only cost it.
func (c *Client) pollAnswered(s *source, now time.Time) {
	if s.pollSent < c.cfg.PollSamples || s.pollAnswers == 0 {
		return // a poll cut short, or lost: says nothing about the server
	}
	s.lastAnswers = s.pollAnswers
	s.singleReg <<= 1
	if s.pollAnswers == 1 {
		s.singleReg |= 1
	}
	n := bits.OnesCount8(s.singleReg)
	switch {
	case !s.single && n >= pollSingleOn:
		s.single = true
		if !s.singleWarned.IsZero() && now.Sub(s.singleWarned) < pollSingleWarnEvery {
			return
		}
		s.singleWarned, s.singleLogged = now, true
		c.warn(EventPollSamplesSingle, fmt.Sprintf("server %v answered only 1 of the %d requests in %d of the last 8 polls (--poll-samples %d): %s",
			s.addr, c.cfg.PollSamples, n, c.cfg.PollSamples, pollSingleWhy),
			"source", s.addr.String(), "poll_samples", c.cfg.PollSamples, "polls", n)
	case s.single && n <= pollSingleOff:
		s.single = false
		if s.singleLogged {
			s.singleLogged = false
			c.event(EventPollSamplesAnswered, fmt.Sprintf("server %v answers several of the %d requests a poll again (--poll-samples %d)",
				s.addr, c.cfg.PollSamples, c.cfg.PollSamples), "source", s.addr.String())
		}
	}
}

// pollSingleWhy says what a server that answers one request a poll means.
// A link that loses a fifth of the packets each way looks the same at N =
// 2 (a review: every seed of half an hour warned), so both are named, each
// with its remedy: the two are opposite. Against a rate limit the other
// requests are wasted; over a lossy link they are what gets a poll its
// answer, and --poll-samples 1 would lose whole polls. The reach register
// tells them apart: a limit answers every poll once (no gaps), a link
// that loses the answers to one request of a poll loses all of them now
// and then.
const pollSingleWhy = "it drops the rest (a rate limit that does not kiss, such as chronyd's ratelimit), " +
	"or the link loses packets; timed uses the one answer as with --poll-samples 1. " +
	"If the reach register in `timed status` has no gaps, it is a rate limit and the other requests only count against it: " +
	"give this client --poll-samples 1, or raise the server's rate limit to the poll interval divided by the samples. " +
	"If it has gaps, the link loses packets and the other requests are what get a poll its answer: " +
	"keep --poll-samples (raise it on a lossier link) and find the loss on the path (interface error and drop counters, a saturated link, Wi-Fi)"

// releaseHeld gives the filter the least delayed sample of s's last poll.
func (c *Client) releaseHeld(s *source) {
	s.heldUntil = time.Time{}
	if !s.hasHeld {
		return
	}
	smp := s.held
	s.held, s.hasHeld = ntp.Sample{}, false
	if !c.stepFence.IsZero() && smp.Sent.Before(c.stepFence) {
		// Another source's update stepped the clock while the sample
		// was held: its offset is of the scale before, and given to
		// the filter it stepped the clock a second time, past true
		// time (checked here as StepDatagram checks an answer). The
		// step forgets held samples; this is the check behind it.
		c.counters[cntHeldAcrossStep]++
		s.lastErr = ErrClockStepped.Error()
		return
	}
	c.accept(s, smp)
}

// StepDatagram feeds one NTP packet: an answer from a server, a packet of a
// symmetric peer, or the driver's report of a packet we sent (d.Local). A non-nil error says why the packet was not
// used; it has been counted and is shown by Status.
func (c *Client) StepDatagram(d core.Datagram) error {
	if d.Local {
		return c.sent(d)
	}
	if wire.IsFrame(d.Data) {
		return c.cristianReply(d)
	}
	var p wire.NTPPacket
	if err := p.UnmarshalBinary(d.Data); err != nil {
		c.counters[cntMalformed]++
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if p.Mode == wire.ModeBroadcast && c.cfg.Broadcast.Enabled {
		return c.broadcastPacket(d, &p)
	}
	s := c.byAddr[unmap(d.Addr)]
	if s == nil {
		if p.Mode == wire.ModeSymmetricActive {
			c.counters[cntStranger]++
		} else {
			c.counters[cntUnknown]++
		}
		return fmt.Errorf("%w: %v", ErrUnknownSource, d.Addr)
	}
	s.received++
	if s.stopped != "" {
		c.counters[cntStopped]++
		return fmt.Errorf("%w: %v said %s", ErrStopped, s.addr, s.stopped)
	}
	switch {
	case s.cristian != nil:
		// An NTP packet from a server we follow with Cristian's
		// algorithm: nothing we asked for.
	case s.bcast != nil && p.Mode == wire.ModeServer:
		// An answer to a calibration request: authenticated as the
		// broadcasts are.
		if _, err := c.broadcastAuth(d.Data); err != nil {
			c.counters["broadcast_"+broadcastReason(err)]++
			s.lastErr = "calibration reply: " + err.Error()
			return fmt.Errorf("client: %v: calibration reply: %w", s.addr, err)
		}
		if err := c.answer(s, &p, d.Time); err != nil {
			return err
		}
		c.calibrationReply(s, s.last)
		return nil
	case p.Mode == wire.ModeServer && !s.peer:
		return c.answer(s, &p, d.Time)
	case (p.Mode == wire.ModeSymmetricActive || p.Mode == wire.ModeSymmetricPassive) && s.peer:
		// A peer's packets are all alike (RFC 5905 symmetric mode):
		// its own polls in mode 1, or mode 2 from an ntpd-style passive
		// association; each may answer our latest packet.
		return c.answer(s, &p, d.Time)
	}
	c.counters[cntMode]++
	err := fmt.Errorf("%w: mode %d from %s %v", ErrUnexpectedMode, p.Mode, s.kind(), s.addr)
	s.lastErr = err.Error()
	return err
}

func (s *source) kind() string {
	if s.bcast != nil {
		return "broadcast"
	}
	if s.cristian != nil {
		return "cristian"
	}
	if s.peer {
		return "peer"
	}
	return "server"
}

// sent records the transmit timestamp the driver patched into one of our
// packets: the association must compare answers against it.
func (c *Client) sent(d core.Datagram) error {
	s := c.byAddr[unmap(d.Addr)]
	if s != nil && s.cristian != nil && wire.IsFrame(d.Data) && len(d.Data) >= wire.HeaderLen {
		s.cristian.Sent(wire.NTPTime(binary.BigEndian.Uint64(d.Data[wire.XmtOffset:])), d.Time)
		s.sentAt = d.Time
		return nil
	}
	if s == nil || len(d.Data) < wire.NTPHeaderLen {
		return fmt.Errorf("%w: report of a packet to %v", ErrUnknownSource, d.Addr)
	}
	xmt := wire.NTPTime(binary.BigEndian.Uint64(d.Data[wire.NTPXmtOffset:]))
	if mode := d.Data[0] & 7; s.assoc == nil || mode != s.assoc.Mode() {
		return fmt.Errorf("%w: report of a mode-%d packet to %s %v", ErrUnexpectedMode, mode, s.kind(), s.addr)
	}
	s.assoc.Sent(xmt, d.Time)
	s.sentAt = d.Time
	return nil
}

// answer runs an answer to our poll through the on-wire checks and the
// clock filter.
func (c *Client) answer(s *source, p *wire.NTPPacket, dst time.Time) error {
	smp, err := s.assoc.Receive(p, dst)
	c.interleavedEvents(s)
	if err != nil {
		var kiss *ntp.KissError
		switch {
		case errors.Is(err, ntp.ErrInterleavedSampled):
			// A good answer, the first interleaved one after a basic
			// one: its exchange was sampled already.
			s.poller.Received()
			c.counters[cntXleaveSampled]++
			if c.multiSample(s) {
				s.pollAnswers++
				c.nextSample(s)
			}
			return nil
		case errors.As(err, &kiss):
			c.kiss(s, kiss, p)
		case s.peer && (errors.Is(err, ntp.ErrBogus) || errors.Is(err, ntp.ErrZeroOrigin)):
			// Crossed packets are the normal course of symmetric mode
			// (both ends poll at will): this one's timestamps go back
			// to the peer in our next packet, which then answers it.
			c.counters[cntCrossed]++
			return fmt.Errorf("client: %v: %w", s.addr, err)
		}
		return c.reject(s, err)
	}
	// The request left before the clock was stepped and the answer came
	// after: T1 and T4 are on different scales. (An interleaved sample's
	// T1 and T4 are those of the exchange before: smp.Sent and Time.)
	if !c.stepFence.IsZero() && smp.Sent.Before(c.stepFence) {
		s.poller.Received() // the source did answer
		c.counters[cntStepped]++
		s.lastErr = ErrClockStepped.Error()
		if c.multiSample(s) {
			s.pollAnswers++
			c.nextSample(s)
		}
		return fmt.Errorf("%v: %w", s.addr, ErrClockStepped)
	}
	// A slew between T1 and T4 moved T4 but not T1, and the offset,
	// the mean of both ends, carries half of it: a symmetric peer's
	// packet can answer our poll a whole poll interval later, while the
	// first slew runs at 83,333 ppm (20 ms of error was seen against
	// chronyd). Take it out, so that the sample says what the clock was
	// off by at T4.
	smp.Offset -= c.servo.Slewed(smp.Sent, smp.Time) / 2
	if c.multiSample(s) {
		c.hold(s, smp)
		return nil
	}
	c.accept(s, smp)
	return nil
}

// accept runs a good sample of s through the clock filter.
func (c *Client) accept(s *source, smp ntp.Sample) {
	s.poller.Received()
	s.accepted++
	c.counters[cntAccepted]++
	// The servo's convention: offsets as if every commanded correction had
	// already been applied (servo package documentation): what was still
	// to slew at the sample's time, and what was commanded after it (an
	// interleaved sample is a poll old: the filter's Shift of the update
	// made meanwhile never reached it).
	smp.Offset -= c.servo.Pending(smp.Time) + c.servo.CommandedAfter(smp.Time)
	s.last, s.hasLast, s.lastErr = smp, true, ""
	s.lastOut = s.filter.Add(smp, ntp.PollInterval(s.pollExp()))
	// A new estimate goes to selection; so does a source whose filter
	// just became full enough to be a candidate, whatever the outcome.
	if s.lastOut == ntp.FilterUpdated || s.filter.Len() == c.cfg.MinSamples {
		c.dirty = true
	}
}

// reject counts a refused packet under its reason and wraps the error.
func (c *Client) reject(s *source, err error) error {
	c.counters["rejected_"+reason(err)]++
	s.lastErr = err.Error()
	return fmt.Errorf("client: %v: %w", s.addr, err)
}

// reason maps an on-wire error to a counter label.
func reason(err error) string {
	var kiss *ntp.KissError
	if errors.As(err, &kiss) {
		return "kiss"
	}
	if r := wire.Reason(err); rejectLabels.Of(err, "") == "" && r != "other" && r != "" {
		return "frame_" + r
	}
	return rejectLabels.Of(err, "other")
}

// rejectLabels are the counter labels of the on-wire checks' errors.
var rejectLabels = core.ErrorLabels{
	{Err: ntp.ErrMode, Label: "mode"},
	{Err: ntp.ErrVersion, Label: "version"},
	{Err: ntp.ErrZeroTransmit, Label: "zero_transmit"},
	{Err: ntp.ErrDuplicate, Label: "duplicate"},
	{Err: ntp.ErrZeroOrigin, Label: "zero_origin"},
	{Err: ntp.ErrBogus, Label: "bogus"},
	{Err: ntp.ErrZeroTimestamp, Label: "zero_timestamp"},
	{Err: ntp.ErrUnsynchronized, Label: "unsynchronized"},
	{Err: ntp.ErrStratum, Label: "stratum"},
	{Err: ntp.ErrDistance, Label: "distance"},
	{Err: ntp.ErrInterleavedStamp, Label: "interleaved_stamp"},
	{Err: cristian.ErrUnsolicited, Label: "unsolicited"},
	{Err: cristian.ErrUnsynchronized, Label: "unsynchronized"},
	{Err: cristian.ErrNotReply, Label: "kind"},
}

// kiss acts on an authenticated kiss-o'-death (it passed the origin check).
func (c *Client) kiss(s *source, k *ntp.KissError, p *wire.NTPPacket) {
	switch {
	case k.Stop():
		s.stopped = k.Code
		c.dirty = true
		c.event(EventKiss, fmt.Sprintf("%v refuses service (%s): polling stopped", s.addr, k.Code),
			"source", s.addr.String(), "code", k.Code)
	case k.Code == "RATE":
		// Poll at least twice as slowly as both our current interval and
		// the one the server says it wants (its Poll field): repeated
		// kisses back off exponentially. The server's limit wins over
		// our MaxPoll (it is its resource), up to the protocol's
		// MaxPollLimit; computed in int so a Poll of 127 cannot wrap.
		f := int8(min(int(max(s.pollExp(), p.Poll))+1, ntp.MaxPollLimit))
		// A multi-sample poll ends here: the rest of it would be
		// refused too.
		s.pollLeft = 0
		c.releaseHeld(s)
		if !s.hasFloor || f > s.floor {
			s.floor, s.hasFloor = f, true
		}
		if at := s.sentAt.Add(ntp.PollInterval(s.floor)); s.next.Before(at) {
			s.next = at
		}
		per := ""
		if c.multiSample(s) {
			per = fmt.Sprintf(" (--poll-samples %d: it counts %d requests a poll; lower it, or raise the server's rate limit)", c.cfg.PollSamples, c.cfg.PollSamples)
		}
		c.event(EventKiss, fmt.Sprintf("%v asks to poll less often (RATE): poll 2^%d s%s", s.addr, s.floor, per),
			"source", s.addr.String(), "code", k.Code, "poll", s.floor)
	}
}

// update runs the selection over every source with an estimate and, if the
// system peer's estimate is new, the servo (RFC 5905 clock_select and
// clock_update).
func (c *Client) update(now time.Time) {
	c.dirty = false
	freqErr := c.servo.State().FrequencyError
	var cands []ntp.Candidate
	var idx []*source
	collecting := 0
	for _, s := range c.srcs {
		s.verdict, s.hasCand = 0, false
		est, ok := s.estimate()
		peer, hp := s.peerVars()
		if s.stopped != "" {
			continue
		}
		if !ok || !hp || s.filter.Len() < c.cfg.MinSamples {
			if c.reachable(s) {
				collecting++
			}
			continue
		}
		s.cand = ntp.MakeCandidate(est, peer, c.reachable(s), c.selfID, freqErr, now)
		s.hasCand = true
		cands = append(cands, s.cand)
		idx = append(idx, s)
	}
	if len(cands) == 0 {
		c.sel, c.selErr, c.hasSel = ntp.Selection{SysPeer: -1}, ntp.ErrNoCandidates, true
		c.setSysPeer(nil)
		return
	}
	if n := len(cands) + collecting; len(cands) < n/2+1 {
		// The intersection algorithm is only as good as its majority:
		// with one candidate of three answering sources, that one could
		// be the falseticker, and nothing would say so. Wait until a
		// majority of the sources that answer have full enough filters
		// (they get there within a few polls); sources that do not
		// answer at all do not hold this up.
		c.sel, c.selErr, c.hasSel = ntp.Selection{SysPeer: -1}, fmt.Errorf("%w: %d of %d answering sources ready", errWaiting, len(cands), n), true
		return
	}
	sel, err := ntp.Select(cands, ntp.SelectConfig{MaxStratum: c.cfg.LocalStratum})
	for i, v := range sel.Verdicts {
		if v == ntp.VerdictFalseticker && idx[i].verdict != ntp.VerdictFalseticker {
			c.event(EventFalseticker, fmt.Sprintf("%v disagrees with the majority", idx[i].addr),
				"source", idx[i].addr.String(), "offset", idx[i].cand.Offset)
		}
		idx[i].verdict = v
	}
	c.sel, c.selErr, c.hasSel = sel, err, true
	if err != nil {
		c.counters[cntSelectFail]++
		c.setSysPeer(nil)
		return
	}
	sp := idx[sel.SysPeer]
	c.setSysPeer(sp)
	est, _ := sp.estimate()
	if c.servo.Synchronized() && !est.Time.After(c.servo.State().LastUpdate) {
		c.counters[cntStaleSys]++
		return // each sample once: the servo would refuse it (ErrOutOfOrder)
	}
	predicted, hasPrediction := c.servo.Offset(now)
	res, err := c.servo.Update(now, servo.Measurement{
		Time: est.Time, Offset: sel.Offset, RootDistance: sel.Distance(), Jitter: sel.Jitter,
	})
	if err != nil {
		// ErrFutureMeasurement: a receive stamp a hair ahead of the tick's
		// clock reading; try again at the next tick.
		c.dirty = errors.Is(err, servo.ErrFutureMeasurement)
		c.counters[servoLabels.Of(err, "servo_bad_measurement")]++
		return
	}
	c.counters[cntUpdates]++
	c.rd.Adjustments = append(c.rd.Adjustments, res.Adjustments...)
	c.lastSync = now
	// The poll interval grows while the offsets are noise. Disciplined,
	// the offset acted on is what is left to correct; measuring only, the
	// clock's offset is never corrected and what tells noise from news is
	// how far the measurement is from where the open-loop model (offset
	// and drift) put the clock.
	pollOffset := res.Offset
	if c.cfg.NoAdjust && hasPrediction {
		pollOffset -= predicted
	}
	for _, s := range c.srcs {
		s.filter.Shift(res.Correction)
		if s.bcast != nil {
			s.bcast.shift(res.Correction)
		}
		s.poller.Update(pollOffset, sel.Jitter)
	}
	if res.Action == servo.ActionStep {
		c.stepFence = now.Add(res.Correction)
		for _, s := range c.srcs {
			// A poll's held sample is of the scale before the step:
			// forgotten now, so that the poll's answers to come, on the
			// new scale, are not kept from the filter by a less delayed
			// one that would be dropped at the poll's end (a review
			// counted 55 such polls in 100 seeds).
			if s.hasHeld {
				s.held, s.hasHeld = ntp.Sample{}, false
				c.counters[cntStepped]++
			}
		}
		c.event(EventStepped, fmt.Sprintf("clock stepped forward by %v", res.Correction), "offset", res.Correction)
	}
	peer, _ := sp.peerVars()
	c.sys = ntp.NextSystem(peer, est, sel, wire.RefIDFromAddr(sp.addr.Addr()), c.cfg.Precision, c.servo.State().FrequencyError, now)
	if !c.synced && !c.cfg.NoAdjust {
		c.synced = true
		c.event(EventSynchronized, fmt.Sprintf("clock synchronised to %v, offset %v", sp.addr, res.Offset),
			"source", sp.addr.String(), "offset", res.Offset, "root_distance", sel.Distance())
	}
}

func (c *Client) setSysPeer(s *source) {
	if s == c.sysPeer {
		return
	}
	old := c.sysPeer
	c.sysPeer = s
	switch {
	case s == nil:
		why := "no selection"
		if c.selErr != nil {
			why = c.selErr.Error()
		}
		c.event(EventSysPeer, fmt.Sprintf("lost system peer %v: %s", old.addr, why), "old", old.addr.String())
	case old == nil:
		c.event(EventSysPeer, fmt.Sprintf("system peer %v", s.addr), "new", s.addr.String())
	default:
		c.event(EventSysPeer, fmt.Sprintf("system peer %v (was %v)", s.addr, old.addr),
			"new", s.addr.String(), "old", old.addr.String())
	}
}

// syncState refreshes the clock's error fields between updates, and notices
// when the bound has grown past the kernel's phase limit.
func (c *Client) syncState(now time.Time) {
	if c.cfg.NoAdjust || !c.servo.Synchronized() || now.Sub(c.lastSync) < c.cfg.SyncInterval {
		return
	}
	a := c.servo.SyncAdjustment(now)
	c.rd.Adjustments = append(c.rd.Adjustments, a)
	c.lastSync = now
	if c.synced && !a.Synced {
		c.synced = false
		c.event(EventUnsynchronized, "no clock update for too long: error bound beyond 16 s")
	}
}

// saveState puts the frequency and its error in Ready.State when the servo
// knows them (a regression succeeded) and the frequency moved by
// StateMinChangePPM or its error halved since the last save, at most once
// per StateInterval.
func (c *Client) saveState(now time.Time) {
	if at, ok := c.saveDue(); !ok || now.Before(at) {
		return
	}
	st := c.servo.State()
	f := c.servo.Frequency()
	c.rd.State = encodeState(savedFrequency{ppm: f, errPPM: st.FrequencyError})
	c.savedFreq, c.savedErr, c.savedAt, c.saved = f, st.FrequencyError, now, true
}

// saveDue says whether the frequency is worth saving (see saveState), and
// from when: the zero time means at once, else when StateInterval has
// passed since the last save.
func (c *Client) saveDue() (at time.Time, ok bool) {
	st := c.servo.State()
	if c.cfg.NoAdjust || st.Updates < 2 || st.FrequencyError >= c.servo.Config().MaxFrequencyPPM {
		return time.Time{}, false
	}
	moved := math.Abs(c.servo.Frequency()-c.savedFreq) >= c.cfg.StateMinChangePPM
	sharper := c.savedErr == 0 || st.FrequencyError < c.savedErr/2
	switch {
	case !c.saved:
		return time.Time{}, true
	case !moved && !sharper:
		return time.Time{}, false
	case c.savedAt.IsZero(): // restored, not saved by this run yet
		return time.Time{}, true
	}
	return c.savedAt.Add(c.cfg.StateInterval), true
}

var _ core.Scheduler = (*Client)(nil)

// Deadline is the earliest local time at which the client needs Tick
// (core.Scheduler): the next poll of a source, the end of a Cristian
// burst, the next refresh of the clock's error fields (SyncInterval) and
// the next save of a frequency worth saving; as soon as possible (just
// after the last Tick) when a received packet left work for Tick (a new
// estimate to select, a burst complete, a source's reach changed). Zero
// before the first Tick: the driver ticks a new client at its own phase.
func (c *Client) Deadline() time.Time {
	if !c.started {
		return time.Time{}
	}
	soon := c.now.Add(1)
	if c.dirty {
		return soon
	}
	var dl time.Time
	for _, s := range c.srcs {
		if c.reachable(s) != s.reachable {
			return soon
		}
		if s.bcast != nil {
			dl = core.Earliest(dl, c.broadcastDeadline(s))
			continue
		}
		if s.cristian != nil && !s.burstEnd.IsZero() {
			if s.burstLeft == 0 && s.cristian.Outstanding() == 0 {
				return soon
			}
			dl = core.Earliest(dl, s.burstEnd)
		}
		if s.stopped == "" {
			dl = core.Earliest(dl, s.next)
		}
		if !s.heldUntil.IsZero() {
			dl = core.Earliest(dl, s.heldUntil)
		}
	}
	if bc := &c.cfg.Broadcast; bc.Enabled && !c.bcastSilent {
		since := c.bcastHeard
		if since.IsZero() {
			since = c.started0
		}
		dl = core.Earliest(dl, since.Add(bc.Timeout))
	}
	if c.servo.Synchronized() && !c.cfg.NoAdjust {
		dl = core.Earliest(dl, c.lastSync.Add(c.cfg.SyncInterval))
	}
	if at, ok := c.saveDue(); ok {
		if at.IsZero() {
			at = soon
		}
		dl = core.Earliest(dl, at)
	}
	return dl
}

// System returns what this host says about its clock at local time now
// (leap, stratum, reference ID and time, root delay and dispersion): the
// daemon hands it to the server core (server.SetSystem) after each Ready,
// so that hosts downstream see this host's synchronisation state.
func (c *Client) System(now time.Time) ntp.System { return c.sysAt(now) }

// sysAt is what we say about our clock in packets sent at local time now:
// the system variables of the last update with the dispersion grown since,
// our local reference if configured, or "unsynchronised".
//
// A client downstream takes root delay / 2 + root dispersion as how far
// our clock may be from true time. RFC 5905's accumulation along the path
// is one statement of that; the servo's bound is another, ours, the one
// timed reports to its own readers (status, truetime), and it can be the
// wider: it carries the frequency error not learned yet and the offset
// not yet slewed out. We serve the wider of the two, so that no client is
// told our clock is better than we tell ourselves: the far side of the
// servo's bound, less the half root delay the client adds back.
func (c *Client) sysAt(now time.Time) ntp.System {
	if !c.cfg.NoAdjust && c.servo.Synchronized() && c.servo.SyncAdjustment(now).Synced {
		s := c.sys
		if age := now.Sub(s.Reference); age > 0 {
			s.RootDispersion += time.Duration(math.Ceil(float64(age) * ntp.MaxDriftPPM * 1e-6))
		}
		if lo, hi := c.servo.Bound(now); !lo.IsZero() {
			own := max(hi.Sub(now), now.Sub(lo))
			s.RootDispersion = max(s.RootDispersion, own-s.RootDelay/2)
		}
		return s
	}
	if c.cfg.LocalStratum > 0 {
		return ntp.System{
			Stratum:     c.cfg.LocalStratum,
			Precision:   c.cfg.Precision,
			ReferenceID: wire.RefIDFromText("LOCL"),
			Reference:   now,
		}
	}
	return ntp.Unsynchronized(c.cfg.Precision)
}

// errWaiting is the selection status while too few sources are candidates.
var errWaiting = errors.New("waiting for a majority of sources")

// servoLabels map a servo refusal to a counter label.
var servoLabels = core.ErrorLabels{
	{Err: servo.ErrFutureMeasurement, Label: "servo_future_measurement"},
	{Err: servo.ErrOutOfOrder, Label: "servo_out_of_order"},
}

// cristianPoll sends the next request of s's burst, starting a burst if
// none is in flight. The poller sees one poll per burst: reach and the
// poll interval count bursts, as NTP counts polls.
func (c *Client) cristianPoll(s *source, now time.Time) {
	if s.burstEnd.IsZero() {
		s.cristian.Reset()
		s.burstLeft = c.cfg.CristianBurst
		s.burstEnd = now.Add(c.cfg.CristianTimeout)
		wait := s.poller.Sent()
		wait += time.Duration(c.cfg.Rand.Int64N(int64(wait)/32 + 1)) // as poll: hosts drift apart
		s.nextBurst = now.Add(max(wait, c.cfg.CristianTimeout))
	}
	if s.burstLeft == 0 {
		s.next = s.nextBurst
		return
	}
	if req, err := cristian.RequestFrame(c.cfg.Cluster, c.cfg.ID); err != nil {
		c.bugs.Report(&c.rd.Events, "encode_time_request", err) // as poll: the burst goes on
	} else {
		c.rd.Datagrams = append(c.rd.Datagrams, core.Datagram{Addr: s.addr, Data: req, Frame: true})
		c.counters[cntRequests]++
	}
	s.burstLeft--
	if s.burstLeft > 0 {
		s.next = now.Add(c.cfg.CristianSpacing)
	} else {
		s.next = s.nextBurst
	}
}

// cristianReply takes a TimeReply frame: authenticated, from a Cristian
// source with a burst in flight, echoing one of its outstanding requests.
func (c *Client) cristianReply(d core.Datagram) error {
	s := c.byAddr[unmap(d.Addr)]
	if s == nil || s.cristian == nil {
		c.counters[cntUnknown]++
		return fmt.Errorf("%w: a synclab frame from %v", ErrUnknownSource, d.Addr)
	}
	s.received++
	var f wire.Frame
	if err := f.UnmarshalBinary(d.Data); err != nil {
		c.counters[cntMalformed]++
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := c.validator.Authenticate(&f, d.Data); err != nil {
		return c.reject(s, err)
	}
	if s.burstEnd.IsZero() {
		return c.reject(s, fmt.Errorf("%w: no burst in flight", cristian.ErrUnsolicited))
	}
	if err := s.cristian.Receive(&f, d.Time); err != nil {
		return c.reject(s, err)
	}
	s.lastErr = ""
	return nil
}

// endBurst turns the burst's best round into the source's sample.
func (c *Client) endBurst(s *source) {
	s.burstEnd, s.burstLeft = time.Time{}, 0
	r, ok := s.cristian.Result()
	if !ok {
		return // no good reply: the poller's reach register says so
	}
	if !c.stepFence.IsZero() && r.Sample.Time.Add(-r.Sample.Delay).Before(c.stepFence) {
		s.poller.Received()
		c.counters[cntStepped]++
		s.lastErr = ErrClockStepped.Error()
		return
	}
	s.cpeer, s.hasCPeer, s.lastRound = r.Peer, true, r.Estimate
	c.accept(s, r.Sample)
}

// xleaveBasicRun is how many basic answers in a row to interleaved
// requests make the status (and a warning) say that the server does not
// speak interleaved mode: the first one or two are always basic.
const xleaveBasicRun = 4

// interleavedEvents reports a server's switch between interleaved and
// basic answers (Config.Interleaved), once each way.
func (c *Client) interleavedEvents(s *source) {
	st, ok := s.assoc.Interleaved()
	if !ok {
		return
	}
	switch {
	case st.BasicRun >= xleaveBasicRun && !s.xlBasic:
		s.xlBasic = true
		c.warn(EventInterleavedBasic, "server "+s.addr.String()+" answers interleaved requests in basic mode: its samples carry its send path "+
			"(ntpd and timed's servers before 2026-12-06 do not speak interleaved mode; chronyd and timed do); timed keeps asking and uses the basic answers",
			"source", s.addr.String(), "basic_answers_in_a_row", st.BasicRun)
	case st.BasicRun == 0 && st.Answers > 0 && (s.xlBasic || !s.xlActive):
		s.xlBasic, s.xlActive = false, true
		c.event(EventInterleaved, "server "+s.addr.String()+" answers in interleaved mode: its transmit timestamps are its kernel's",
			"source", s.addr.String())
	}
}
