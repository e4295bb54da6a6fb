package ntp

import (
	"fmt"
	"time"
)

// Poll limits and defaults (RFC 5905 uses 6 and 17; synclab defaults to a
// LAN-friendly 4..10 and allows sub-second polls for tests).
const (
	// MinPollLimit is the lowest poll exponent accepted: 2^-4 s = 62.5 ms.
	MinPollLimit = -4
	// MaxPollLimit is the highest: 2^17 s, about 36 h (RFC MAXPOLL).
	MaxPollLimit = 17
	// DefaultMinPoll is 2^4 = 16 s.
	DefaultMinPoll = 4
	// DefaultMaxPoll is 2^10 = 1024 s.
	DefaultMaxPoll = 10
	// DefaultBurst is the number of requests of the initial burst: eight,
	// like ntpd's iburst, so that the 8-stage clock filter is full (and
	// its dispersion small enough for the selection to tell truechimers
	// from falsetickers) about 16 s after start.
	DefaultBurst = NStage
	// DefaultBurstInterval is the spacing of burst requests (ntpd/chrony
	// iburst: 2 s).
	DefaultBurstInterval = 2 * time.Second

	// pollGate is PGATE: the poll interval grows while |offset| stays
	// below pollGate × jitter (the offset is lost in the noise, so
	// averaging longer costs nothing) and shrinks otherwise.
	pollGate = 4
	// pollLimit is LIMIT: the hysteresis counter's bound.
	pollLimit = 30
	// unreachPolls is how many unanswered polls in a row make a source
	// unreachable (the reach register's width).
	unreachPolls = 8
)

// PollConfig configures a Poller. The zero value gets the defaults.
type PollConfig struct {
	// MinPoll and MaxPoll bound the poll exponent, log2 seconds (allowed
	// range -4..17). Both zero means the defaults, 4 and 10, unless
	// PollRangeSet says they were given: then 0..0 is a poll every second.
	MinPoll, MaxPoll int8
	// PollRangeSet takes MinPoll and MaxPoll as given, even both zero.
	PollRangeSet bool
	// Burst is the number of requests sent BurstInterval apart when the
	// source is first polled and when it becomes reachable again (default
	// 8; negative disables the burst).
	Burst int
	// BurstInterval spaces the burst (default 2 s).
	BurstInterval time.Duration
}

// Validate fills defaults and rejects impossible values.
func (c *PollConfig) Validate() error {
	if c.MinPoll == 0 && c.MaxPoll == 0 && !c.PollRangeSet {
		c.MinPoll, c.MaxPoll = DefaultMinPoll, DefaultMaxPoll
	}
	c.PollRangeSet = true
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Burst < 0 {
		c.Burst = 0
	}
	if c.BurstInterval == 0 {
		c.BurstInterval = DefaultBurstInterval
	}
	switch {
	case c.MinPoll < MinPollLimit || c.MaxPoll > MaxPollLimit:
		return fmt.Errorf("ntp: poll range %d..%d is outside %d..%d", c.MinPoll, c.MaxPoll, MinPollLimit, MaxPollLimit)
	case c.MinPoll > c.MaxPoll:
		return fmt.Errorf("ntp: min poll %d is above max poll %d", c.MinPoll, c.MaxPoll)
	case c.BurstInterval < 0:
		return fmt.Errorf("ntp: burst interval %v is negative", c.BurstInterval)
	}
	return nil
}

// PollInterval converts a poll exponent to a duration (2^poll seconds).
func PollInterval(poll int8) time.Duration {
	if poll >= 0 {
		return time.Second << uint(poll)
	}
	return time.Second >> uint(-poll)
}

// Poller decides when to poll one source (RFC 5905 A.5.7 poll() and the
// poll-adjust part of A.5.5.6): an initial burst, then an interval of 2^poll
// seconds that grows while the offsets stay in the noise and shrinks when
// they do not, and a reach register that tracks the last eight polls. It is
// pure state: the daemon asks Interval after each request it sends, and
// reports replies and estimates. Not safe for concurrent use.
type Poller struct {
	cfg       PollConfig
	poll      int8
	count     int   // hysteresis counter, ±pollLimit
	burstLeft int   // burst requests still to send
	reach     uint8 // bit 0: the last poll was answered
	pending   bool  // the latest request is still unanswered
	unanswer  int   // consecutive unanswered requests
}

// NewPoller returns a poller at the minimum poll with a burst pending.
func NewPoller(cfg PollConfig) (*Poller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Poller{cfg: cfg, poll: cfg.MinPoll, burstLeft: cfg.Burst}, nil
}

// Poll returns the current poll exponent (log2 seconds): what goes into the
// Poll field of our packets.
func (p *Poller) Poll() int8 { return p.poll }

// Reach returns the reach register: bit i set means the poll i polls ago
// was answered.
func (p *Poller) Reach() uint8 { return p.reach }

// Reachable reports whether any of the last eight polls was answered.
func (p *Poller) Reachable() bool { return p.reach != 0 }

// Bursting reports whether burst requests remain to be sent.
func (p *Poller) Bursting() bool { return p.burstLeft > 0 }

// Sent records that a request went out and returns how long to wait before
// the next one: BurstInterval while the burst lasts, else 2^poll s. It
// shifts the reach register (the new poll is unanswered until Received).
func (p *Poller) Sent() time.Duration {
	p.reach <<= 1
	if p.pending { // the previous request got its chance and missed it
		p.unanswer++
	}
	p.pending = true
	if p.unanswer >= unreachPolls && p.poll < p.cfg.MaxPoll {
		// Unreachable: back off (RFC: poll++ after the reach register
		// empties) rather than keep knocking at the minimum rate.
		p.poll++
	}
	if p.burstLeft > 0 {
		p.burstLeft--
		if p.burstLeft > 0 {
			return p.cfg.BurstInterval
		}
	}
	return PollInterval(p.poll)
}

// Received records a valid reply to the latest request. A source that was
// unreachable gets a new burst, so it is usable again quickly.
func (p *Poller) Received() {
	if !p.pending {
		return // a duplicate or late reply: the poll was already counted
	}
	if p.unanswer >= unreachPolls {
		p.burstLeft = p.cfg.Burst
		p.poll = p.cfg.MinPoll
		p.count = 0
	}
	p.reach |= 1
	p.pending = false
	p.unanswer = 0
}

// Update adjusts the poll exponent after the clock filter produced a new
// estimate: offset is the system offset acted on and jitter the jitter it
// comes with. While |offset| < 4 × jitter the measurements are consistent
// with noise and the interval may grow; otherwise the clock is moving and
// it shrinks. A counter with hysteresis (±30, stepping by the poll exponent
// like the RFC, at least 1 for sub-second polls) keeps it from dancing.
func (p *Poller) Update(offset, jitter time.Duration) {
	if offset < 0 {
		offset = -offset
	}
	step := max(int(p.poll), 1)
	if offset < pollGate*jitter {
		p.count += step
		if p.count > pollLimit {
			p.count = pollLimit
			if p.poll < p.cfg.MaxPoll {
				p.count = 0
				p.poll++
			}
		}
		return
	}
	p.count -= 2 * step
	if p.count < -pollLimit {
		p.count = -pollLimit
		if p.poll > p.cfg.MinPoll {
			p.count = 0
			p.poll--
		}
	}
}
