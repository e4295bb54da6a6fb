package clock

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Defaults and limits of a simulated clock.
const (
	// DefaultMaxSlewPPM is the fastest a clock slews, in ppm: chrony's
	// default maxslewrate, reached on Linux by moving the tick length.
	DefaultMaxSlewPPM = 83333.0
	// DefaultMaxFrequencyPPM bounds SetFrequency on a Sim, in ppm: the
	// kernel PLL's limit (MAXFREQ).
	DefaultMaxFrequencyPPM = 500.0

	// WanderStep is the virtual-time step of the frequency random walk: the
	// wander changes only at whole steps after the clock's creation, so
	// readings do not depend on how often the clock is read.
	WanderStep = time.Second

	// The limits below keep every combination of drift, wander, frequency
	// correction and slew above -1e6 ppm (a clock that stands still), so
	// readings never decrease while true time advances.
	maxSimDriftPPM     = 100000.0 // |SimConfig.DriftPPM|
	maxSimWanderPPM    = 1000.0   // SimConfig.WanderPPM
	maxSimSlewPPM      = 500000.0 // SimConfig.MaxSlewPPM
	maxSimFrequencyPPM = 200000.0 // SimConfig.MaxFrequencyPPM
	maxWanderExcursion = 100.0    // |accumulated wander|, ppm: a reflecting bound

	// simHistory is how many past rate segments a Sim keeps to convert
	// kernel time stamps that are slightly in the past exactly.
	simHistory = 64

	// kernelPhaseLimit is the kernel's NTP_PHASE_LIMIT: a maximum error
	// beyond it marks the clock unsynchronised.
	kernelPhaseLimit = 16 * time.Second
	// maxErrorGrowthPPM is how fast the kernel grows the maximum error
	// between SetSync calls (MAXFREQ, 500 µs per second).
	maxErrorGrowthPPM = 500.0
)

// SimConfig describes a simulated clock. Rates are in ppm (parts per
// million, µs per second); positive means the clock runs fast.
type SimConfig struct {
	// Offset is the clock's error at creation: its reading minus true time.
	Offset time.Duration
	// DriftPPM is the oscillator's constant frequency error, ppm
	// (|DriftPPM| <= 100000).
	DriftPPM float64
	// WanderPPM is the random-walk frequency noise: the standard deviation
	// of the frequency change per sqrt(second), ppm (0 disables it; at most
	// 1000). The accumulated wander is kept within ±100 ppm.
	WanderPPM float64
	// Seed seeds the wander; equal seeds give equal clocks.
	Seed int64
	// MaxSlewPPM is the slew rate, ppm (default 83333, at most 500000).
	MaxSlewPPM float64
	// MaxFrequencyPPM bounds SetFrequency, ppm (default 500, at most 200000).
	MaxFrequencyPPM float64
	// AllowBackwardStep lets Step move the clock backwards.
	AllowBackwardStep bool
}

// Validate fills defaults for zero fields and rejects impossible values.
// NewSim panics on a configuration Validate rejects, so code that builds a
// SimConfig from user input (flags) calls Validate first.
func (c *SimConfig) Validate() error {
	if c.MaxSlewPPM == 0 {
		c.MaxSlewPPM = DefaultMaxSlewPPM
	}
	if c.MaxFrequencyPPM == 0 {
		c.MaxFrequencyPPM = DefaultMaxFrequencyPPM
	}
	switch {
	case !finite(c.DriftPPM) || math.Abs(c.DriftPPM) > maxSimDriftPPM:
		return fmt.Errorf("clock: sim drift %g ppm: must be within ±%g ppm", c.DriftPPM, maxSimDriftPPM)
	case !finite(c.WanderPPM) || c.WanderPPM < 0 || c.WanderPPM > maxSimWanderPPM:
		return fmt.Errorf("clock: sim wander %g ppm/√s: must be within [0, %g]", c.WanderPPM, maxSimWanderPPM)
	case !finite(c.MaxSlewPPM) || c.MaxSlewPPM <= 0 || c.MaxSlewPPM > maxSimSlewPPM:
		return fmt.Errorf("clock: sim max slew %g ppm: must be within (0, %g]", c.MaxSlewPPM, maxSimSlewPPM)
	case !finite(c.MaxFrequencyPPM) || c.MaxFrequencyPPM <= 0 || c.MaxFrequencyPPM > maxSimFrequencyPPM:
		return fmt.Errorf("clock: sim max frequency %g ppm: must be within (0, %g]", c.MaxFrequencyPPM, maxSimFrequencyPPM)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Sim is a simulated clock driven by a true-time source. Its reading is
// true time plus an offset that changes at a piecewise-constant rate:
//
//	rate = drift + wander + frequency correction + slew rate   (ppm)
//
//	offset
//	  ^            slew ends exactly when the slewed amount is absorbed
//	  |           /
//	  |      ____/ <- rate = drift + freq + maxslew
//	  |  ___/      <- each kink is an anchor (true time, offset, rate)
//	  |_/
//	  +----------------------------------------------> true time
//
// Every change of rate (an adjustment, the end of a slew computed
// analytically, a wander step) starts a new segment anchored at the true
// instant of the change, so readings are continuous and exact. Nothing
// depends on the wall clock or on a global random source: under a virtual
// true-time source the clock is deterministic, and reading it more or less
// often never changes what it reads.
//
// The true-time source is time.Now in a daemon (the host's real clock is the
// ground truth every simulated host is measured against) and the
// simulator's virtual clock in simulation. It should not go backwards; if it
// does, reads follow the recorded segments backwards and adjustments take
// effect at the latest instant seen.
//
// A Sim is safe for concurrent use.
type Sim struct {
	cfg     SimConfig
	trueNow func() time.Time

	mu   sync.Mutex
	st   simState
	hist [simHistory]simSegment // ring of past segments, newest at hist[(next-1)%len]
	next int                    // count of segments ever recorded
}

var _ Clock = (*Sim)(nil)

// simSegment is one piece of the offset function: from start on, the offset
// grows from off at rate ppm (until the next segment starts).
type simSegment struct {
	start time.Time
	off   float64 // ns
	rate  float64 // ppm
}

// simState is the current segment plus everything that decides where the
// next ones start. It is a value: copying it (with its PCG) evaluates the
// future without disturbing the clock.
type simState struct {
	anchor time.Time // true time of the current segment's start
	off    float64   // offset at anchor, ns

	drift, wander, freq float64 // ppm

	slewRate float64   // ppm, signed; 0 when not slewing
	slewLeft float64   // ns still to absorb at anchor, same sign as slewRate
	slewEnd  time.Time // true instant the slew completes

	wanderPPM  float64   // per-step standard deviation; 0: no wander
	nextWander time.Time // next wander step
	pcg        rand.PCG

	synced bool
	estErr time.Duration
	maxErr time.Duration
	errAt  time.Time // when maxErr was set
}

// NewSim returns a simulated clock reading trueNow() + cfg.Offset at
// creation. It panics if cfg does not Validate or trueNow is nil.
func NewSim(cfg SimConfig, trueNow func() time.Time) *Sim {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if trueNow == nil {
		panic("clock: NewSim needs a true-time source")
	}
	t := trueNow().Round(0)
	s := &Sim{cfg: cfg, trueNow: trueNow}
	s.st = simState{
		anchor:    t,
		off:       float64(cfg.Offset),
		drift:     cfg.DriftPPM,
		wanderPPM: cfg.WanderPPM * math.Sqrt(WanderStep.Seconds()),
		maxErr:    kernelPhaseLimit,
		estErr:    kernelPhaseLimit,
		errAt:     t,
	}
	if cfg.WanderPPM > 0 {
		s.st.nextWander = t.Add(WanderStep)
		// Two words of PCG state from one seed; the constant only keeps
		// the second word distinct from the first.
		s.st.pcg = *rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Seed)^0x9e3779b97f4a7c15)
	}
	s.record()
	return s
}

// Config returns the clock's configuration, defaults filled in.
func (s *Sim) Config() SimConfig { return s.cfg }

// rate is the total rate of the current segment, ppm.
func (st *simState) rate() float64 { return st.drift + st.wander + st.freq + st.slewRate }

// moveTo re-anchors the current segment at t, which lies between the anchor
// and the next breakpoint (inclusive). Reaching slewEnd completes the slew
// with exactly the amount left, so a slew absorbs its offset to the
// nanosecond and not a rounding error more.
func (st *simState) moveTo(t time.Time) {
	dt := float64(t.Sub(st.anchor))
	st.off += (st.drift + st.wander + st.freq) * dt * 1e-6
	if st.slewRate != 0 {
		if !t.Before(st.slewEnd) {
			st.off += st.slewLeft
			st.slewRate, st.slewLeft = 0, 0
		} else {
			d := st.slewRate * dt * 1e-6
			st.off += d
			st.slewLeft -= d
			if st.slewLeft*st.slewRate < 0 { // float rounding, never more
				st.slewLeft = 0
			}
		}
	}
	st.anchor = t
}

// nextBreak returns the earliest future instant the rate changes by itself
// (slew end or wander step), or the zero time if it never does.
func (st *simState) nextBreak() time.Time {
	var next time.Time
	if st.slewRate != 0 {
		next = st.slewEnd
	}
	if st.wanderPPM > 0 && (next.IsZero() || st.nextWander.Before(next)) {
		next = st.nextWander
	}
	return next
}

// advance moves the state through every breakpoint up to and including t,
// calling rec after each one. It never moves the anchor past the last
// breakpoint <= t: the current segment then covers t.
func (st *simState) advance(t time.Time, rec func()) {
	for {
		next := st.nextBreak()
		if next.IsZero() || next.After(t) {
			return
		}
		st.moveTo(next)
		if st.wanderPPM > 0 && !next.Before(st.nextWander) {
			st.wander += st.wanderPPM * rand.New(&st.pcg).NormFloat64()
			// Reflect at the bound: a random walk is unbounded, an
			// oscillator's wander is not.
			if st.wander > maxWanderExcursion {
				st.wander = 2*maxWanderExcursion - st.wander
			} else if st.wander < -maxWanderExcursion {
				st.wander = -2*maxWanderExcursion - st.wander
			}
			st.nextWander = st.nextWander.Add(WanderStep)
		}
		if rec != nil {
			rec()
		}
	}
}

// offsetIn is the offset at t >= anchor within the current segment, ns.
func (st *simState) offsetIn(t time.Time) float64 {
	return st.off + st.rate()*float64(t.Sub(st.anchor))*1e-6
}

// record appends the current segment to the history ring.
func (s *Sim) record() {
	s.hist[s.next%simHistory] = simSegment{start: s.st.anchor, off: s.st.off, rate: s.st.rate()}
	s.next++
}

// catchUp brings the state up to the source's current time and returns it.
// Adjustments take effect at the returned instant, which never precedes the
// anchor even if the source went backwards.
func (s *Sim) catchUp() time.Time {
	t := s.trueNow().Round(0)
	s.st.advance(t, s.record)
	if t.Before(s.st.anchor) {
		return s.st.anchor
	}
	return t
}

// offsetAt evaluates the offset function at any true instant t after catchUp:
// the current segment for t at or after the anchor (walking a copy of the
// state through breakpoints still ahead), the recorded segments for t in
// the past, and the oldest recorded segment's rate extrapolated backwards
// for t older than the history.
func (s *Sim) offsetAt(t time.Time) float64 {
	if !t.Before(s.st.anchor) {
		if next := s.st.nextBreak(); !next.IsZero() && !next.After(t) {
			cp := s.st // value copy, PCG included: the clock is not disturbed
			cp.advance(t, nil)
			return cp.offsetIn(t)
		}
		return s.st.offsetIn(t)
	}
	n := min(s.next, simHistory)
	var seg simSegment
	for i := 1; i <= n; i++ {
		seg = s.hist[(s.next-i)%simHistory]
		if !t.Before(seg.start) {
			break
		}
	}
	return seg.off + seg.rate*float64(t.Sub(seg.start))*1e-6
}

// round converts a float offset in ns to a Duration, to the nearest ns.
func round(ns float64) time.Duration { return time.Duration(math.Round(ns)) }

// Now reads the clock: true time plus the current offset. The result
// carries no monotonic reading: it is a wall reading of a simulated clock.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trueNow().Round(0)
	s.st.advance(t, s.record)
	return t.Add(round(s.offsetAt(t)))
}

// TrueOffset returns the clock's exact error against true time (its reading
// minus true time, at the source's current instant): the ground truth a
// simulation or a lab test grades a synchronisation protocol against.
func (s *Sim) TrueOffset() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trueNow().Round(0)
	s.st.advance(t, s.record)
	return round(s.offsetAt(t))
}

// TrueFrequency returns the clock's current frequency error against true
// time, ppm: drift plus wander plus frequency correction, slew excluded. A
// perfect discipline drives it to zero.
func (s *Sim) TrueFrequency() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	return s.st.drift + s.st.wander + s.st.freq
}

// FromKernel converts a true time stamp t (a packet's kernel receive time:
// the kernel stamps with the real clock, which is true time for a Sim) into
// this clock's reading at that instant. t may be a little in the past: the
// offset function is evaluated on the segment that was in force at t.
func (s *Sim) FromKernel(t time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	t = t.Round(0)
	return t.Add(round(s.offsetAt(t)))
}

// Slew starts absorbing offset at ±MaxSlewPPM on top of the other rates,
// replacing what is left of a previous slew. The slew ends at the exact
// instant the whole offset has been absorbed. Slew(0) cancels a slew.
func (s *Sim) Slew(offset time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catchUp()
	s.st.moveTo(t)
	s.st.slewRate, s.st.slewLeft = 0, 0
	if offset != 0 {
		rate := s.cfg.MaxSlewPPM
		if offset < 0 {
			rate = -rate
		}
		// The first nanosecond at which rate has covered the offset.
		d := math.Ceil(math.Abs(float64(offset)) * 1e6 / s.cfg.MaxSlewPPM)
		s.st.slewRate, s.st.slewLeft = rate, float64(offset)
		s.st.slewEnd = t.Add(time.Duration(d))
	}
	s.record()
	return nil
}

// Step jumps the clock by offset at once. Backwards steps are refused with
// ErrBackwardStep unless SimConfig.AllowBackwardStep. A slew in progress
// continues: slewing and stepping are independent corrections.
func (s *Sim) Step(offset time.Duration) error {
	if offset < 0 && !s.cfg.AllowBackwardStep {
		return ErrBackwardStep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catchUp()
	s.st.moveTo(t)
	s.st.off += float64(offset)
	s.record()
	return nil
}

// SetFrequency sets the frequency correction, ppm, replacing the previous
// one. Values beyond ±MaxFrequencyPPM (or not finite) are refused with an
// error wrapping ErrFrequencyRange and change nothing.
func (s *Sim) SetFrequency(ppm float64) error {
	if !finite(ppm) || math.Abs(ppm) > s.cfg.MaxFrequencyPPM {
		return fmt.Errorf("%w: %g ppm is beyond ±%g ppm", ErrFrequencyRange, ppm, s.cfg.MaxFrequencyPPM)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catchUp()
	s.st.moveTo(t)
	s.st.freq = ppm
	s.record()
	return nil
}

// ChangeDrift changes the oscillator's own frequency error by ppm from
// now on, as a change of temperature does: the test of a discipline's
// answer to a frequency step. Nothing the discipline commands is touched.
func (s *Sim) ChangeDrift(ppm float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catchUp()
	s.st.moveTo(t)
	s.st.drift += ppm
	s.record()
}

// SetSync records the discipline's state, like ADJ_STATUS|ADJ_ESTERROR|
// ADJ_MAXERROR on Linux. As in the kernel, the maximum error then grows by
// 500 µs per second, and once it passes 16 s the clock reports itself
// unsynchronised.
func (s *Sim) SetSync(synced bool, estErr, maxErr time.Duration) error {
	if estErr < 0 || maxErr < 0 {
		return errors.New("clock: negative error estimate")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catchUp()
	s.st.synced = synced
	s.st.estErr = min(estErr, kernelPhaseLimit)
	s.st.maxErr = min(maxErr, kernelPhaseLimit)
	s.st.errAt = t
	return nil
}

// State reports the discipline state. Frequency is the correction set with
// SetFrequency (not the drift, which a real clock cannot know).
func (s *Sim) State() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catchUp()
	st := s.st
	maxErr := st.maxErr + round(maxErrorGrowthPPM*float64(t.Sub(st.errAt))*1e-6)
	left := 0.0
	if st.slewRate != 0 {
		left = st.slewLeft - st.slewRate*float64(t.Sub(st.anchor))*1e-6
		if left*st.slewRate < 0 {
			left = 0
		}
	}
	return State{
		Synchronized: st.synced && maxErr <= kernelPhaseLimit,
		Frequency:    st.freq,
		SlewLeft:     round(left),
		EstError:     st.estErr,
		MaxError:     min(maxErr, kernelPhaseLimit),
	}, nil
}
