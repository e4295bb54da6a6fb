//go:build linux

package clock

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How System drives the kernel (see doc.go for the picture):
//
//   - frequency: ADJ_FREQUENCY (±500 ppm, in 2^-16 ppm units) plus, beyond
//     that, ADJ_TICK (the length of a USER_HZ tick in µs, ±10%): the kernel
//     adds the two, each µs of a 10000 µs tick being 100 ppm;
//   - step: ADJ_SETOFFSET|ADJ_NANO;
//   - slew: offsets up to singleShotMax go to the kernel's own adjtime-style
//     slew (ADJ_OFFSET_SINGLESHOT, 500 µs/s, ended by the kernel). Larger
//     ones run a bulk phase at base+MaxSlewPPM through tick+frequency, ended
//     by a timer in user space, whose exact effect is measured and whose
//     remainder (typically tens of µs either way) is handed to the kernel's
//     single-shot slew.
const (
	// nominalTickUS is the nominal tick length, µs: USER_HZ is 100 on every
	// architecture Go supports, so the kernel's tick is 10000 µs.
	nominalTickUS = 10000
	// freqScale is the unit of Timex.Freq: ppm with a 16-bit fraction.
	freqScale = 1 << 16
	// kernelMaxFreqPPM is the kernel's ADJ_FREQUENCY limit (MAXFREQ).
	kernelMaxFreqPPM = 500.0
	// singleShotMax is the largest offset slewed by the kernel alone: at
	// its 500 µs/s a single-shot slew of 500 µs is over within a second,
	// while a bulk phase for it would last 6 ms, shorter than the timer
	// precision that ends it.
	singleShotMax = 500 * time.Microsecond
	// bulkTail is left to the single-shot slew at the end of a bulk phase,
	// so that a timer firing up to ~2 ms late (at 83333 ppm) still
	// undershoots and the clock never slews back.
	bulkTail = 200 * time.Microsecond
	// minBulkPPM is the slowest bulk phase worth running: below it (a base
	// frequency already near the tick limit) the kernel's single shot is
	// used for the whole offset.
	minBulkPPM = 5000.0
	// maxKernelErr is the largest est/max error the kernel accepts before
	// it declares the clock unsynchronised (NTP_PHASE_LIMIT).
	maxKernelErr = 16 * time.Second
)

// setInt stores v in a Timex field whose width depends on the architecture
// (int64 on 64-bit Linux, int32 on 32-bit).
func setInt[T ~int32 | ~int64](dst *T, v int64) { *dst = T(v) }

// tickSpan is how far the kernel lets the tick move either way: it accepts
// 900000/USER_HZ <= tick <= 1100000/USER_HZ.
func tickSpan(nominalTick int64) int64 { return nominalTick / 10 }

// maxFrequencyPPM is the largest |correction| tick and frequency reach.
func maxFrequencyPPM(nominalTick int64) float64 {
	return float64(tickSpan(nominalTick))*1e6/float64(nominalTick) + kernelMaxFreqPPM
}

// frequencyRequest builds the request that makes the clock run ppm fast.
// Within ±500 ppm the tick stays nominal (other tools reading the kernel see
// a plain PLL frequency); beyond, the tick takes the nearest whole µs and
// ADJ_FREQUENCY the residual (|residual| <= 50 ppm at the nominal tick,
// <= 500 at the tick's limits). Both fields are always written, so any
// frequency change also resets a tick a crashed slew left behind.
func frequencyRequest(ppm float64, nominalTick int64) (unix.Timex, error) {
	var tx unix.Timex
	if nominalTick <= 0 {
		return tx, fmt.Errorf("clock: nominal tick %d µs is not positive", nominalTick)
	}
	limit := maxFrequencyPPM(nominalTick)
	if !finite(ppm) || math.Abs(ppm) > limit {
		return tx, fmt.Errorf("%w: %g ppm is beyond ±%g ppm", ErrFrequencyRange, ppm, limit)
	}
	ppmPerUS := 1e6 / float64(nominalTick)
	var dt int64
	if math.Abs(ppm) > kernelMaxFreqPPM {
		span := tickSpan(nominalTick)
		dt = max(-span, min(span, int64(math.Round(ppm/ppmPerUS))))
	}
	resid := ppm - float64(dt)*ppmPerUS
	scaled := int64(math.Round(resid * freqScale))
	scaled = max(-kernelMaxFreqPPM*freqScale, min(kernelMaxFreqPPM*freqScale, scaled))
	tx.Modes = unix.ADJ_FREQUENCY | unix.ADJ_TICK
	setInt(&tx.Freq, scaled)
	setInt(&tx.Tick, nominalTick+dt)
	return tx, nil
}

// timexPPM is the frequency correction tick and freq of tx produce, ppm:
// the kernel adds them (second length = tick·USER_HZ·1000 ns + freq).
func timexPPM(tx *unix.Timex, nominalTick int64) float64 {
	return float64(int64(tx.Tick)-nominalTick)*1e6/float64(nominalTick) + float64(tx.Freq)/freqScale
}

// stepRequest builds the request that jumps the clock by offset. The kernel
// wants a normalised timespec: tv_sec may be negative, tv_nsec (in the
// tv_usec field under ADJ_NANO) in [0, 1e9). Whether a backward step is
// allowed is the caller's decision.
func stepRequest(offset time.Duration) unix.Timex {
	sec := int64(offset / time.Second)
	nsec := int64(offset % time.Second)
	if nsec < 0 {
		sec--
		nsec += int64(time.Second)
	}
	var tx unix.Timex
	tx.Modes = unix.ADJ_SETOFFSET | unix.ADJ_NANO
	setInt(&tx.Time.Sec, sec)
	setInt(&tx.Time.Usec, nsec)
	return tx
}

// singleShotRequest hands offset to the kernel's adjtime-style slew, which
// runs at 500 µs/s and stops by itself; it replaces any single shot still
// running (0 cancels it). The kernel takes µs; the sub-µs rest is below
// what this clock can be disciplined to anyway. ADJ_OFFSET_SINGLESHOT must
// be alone in its request: the kernel ignores every other mode with it.
func singleShotRequest(offset time.Duration) unix.Timex {
	var tx unix.Timex
	tx.Modes = unix.ADJ_OFFSET_SINGLESHOT
	setInt(&tx.Offset, int64(math.Round(float64(offset)/float64(time.Microsecond))))
	return tx
}

// errorUS converts an error bound to the kernel's µs, rounding up (an
// error bound must not shrink) and clamping to [0, 16 s].
func errorUS(d time.Duration) int64 {
	d = max(0, min(maxKernelErr, d))
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// syncRequest builds the request SetSync writes. ADJ_STATUS replaces the
// whole status word, so it starts from the current one (status) and only
// flips STA_UNSYNC. Clearing STA_UNSYNC also lets the kernel copy the clock
// to the RTC every 11 minutes, as under any NTP daemon.
func syncRequest(status int32, synced bool, estErr, maxErr time.Duration) unix.Timex {
	var tx unix.Timex
	tx.Modes = unix.ADJ_STATUS | unix.ADJ_ESTERROR | unix.ADJ_MAXERROR
	if synced {
		status &^= unix.STA_UNSYNC
	} else {
		status |= unix.STA_UNSYNC
	}
	tx.Status = status
	setInt(&tx.Esterror, errorUS(estErr))
	setInt(&tx.Maxerror, errorUS(maxErr))
	return tx
}

// stateFromTimex maps a kernel read (Modes=0) to a State. SlewLeft is not
// in it: the System knows its own slew.
func stateFromTimex(tx *unix.Timex, nominalTick int64) State {
	return State{
		Synchronized: tx.Status&unix.STA_UNSYNC == 0,
		Frequency:    timexPPM(tx, nominalTick),
		EstError:     time.Duration(tx.Esterror) * time.Microsecond,
		MaxError:     time.Duration(tx.Maxerror) * time.Microsecond,
	}
}

// slewPlan is how System slews one offset.
type slewPlan struct {
	Offset time.Duration // the whole slew
	Bulk   time.Duration // planned for the fast phase; 0: single shot only
	Tail   time.Duration // planned for the kernel's single-shot slew

	Fast     unix.Timex    // starts the fast phase: base + slew rate
	Base     unix.Timex    // ends it: base rate
	FastPPM  float64       // what Fast really produces (after rounding)
	BasePPM  float64       // what Base really produces
	Duration time.Duration // CLOCK_MONOTONIC length of the fast phase
}

// planSlew plans a slew of offset at up to maxPPM on top of the base
// frequency basePPM.
//
// The fast phase's length is measured on CLOCK_MONOTONIC (timers and the
// measurement use it), which the kernel runs at the same disciplined rate
// as CLOCK_REALTIME. If the fast phase lasts m on that clock, the clock
// would have advanced m·(1+base)/(1+fast) at the base rate, so the phase
// absorbs m·(fast-base)/(1+fast), about 8% less than m·(fast-base) at
// 83333 ppm: the reason for the division.
func planSlew(offset time.Duration, maxPPM, basePPM float64, nominalTick int64) (slewPlan, error) {
	p := slewPlan{Offset: offset}
	base, err := frequencyRequest(basePPM, nominalTick)
	if err != nil {
		return p, err
	}
	if !finite(maxPPM) || maxPPM <= 0 {
		return p, fmt.Errorf("clock: slew rate %g ppm is not positive", maxPPM)
	}
	p.Base, p.BasePPM = base, timexPPM(&base, nominalTick)
	if offset.Abs() <= singleShotMax {
		p.Tail = offset
		return p, nil
	}
	sign := 1.0
	if offset < 0 {
		sign = -1
	}
	limit := maxFrequencyPPM(nominalTick)
	target := max(-limit, min(limit, basePPM+sign*maxPPM))
	if math.Abs(target-basePPM) < minBulkPPM {
		p.Tail = offset
		return p, nil
	}
	fast, err := frequencyRequest(target, nominalTick)
	if err != nil {
		return p, err
	}
	p.Fast, p.FastPPM = fast, timexPPM(&fast, nominalTick)
	p.Tail = time.Duration(sign) * bulkTail
	p.Bulk = offset - p.Tail
	rate := (p.FastPPM - p.BasePPM) * 1e-6
	p.Duration = round(float64(p.Bulk) * (1 + p.FastPPM*1e-6) / rate)
	return p, nil
}

// absorbed is what a fast phase of monotonic length elapsed moved the
// clock, relative to the base rate.
func (p *slewPlan) absorbed(elapsed time.Duration) time.Duration {
	if p.Bulk == 0 {
		return 0
	}
	rate := (p.FastPPM - p.BasePPM) * 1e-6
	return round(float64(elapsed) * rate / (1 + p.FastPPM*1e-6))
}

// System is the host's real clock, CLOCK_REALTIME, disciplined through
// clock_adjtime(2). Reading needs no privilege; adjusting needs
// CAP_SYS_TIME (ErrPermission otherwise) and a System built without
// ReadOnly. Call Close before exiting so that a slew in its fast phase does
// not leave the clock running 8% fast.
//
// A System is safe for concurrent use.
type System struct {
	opts        SystemOptions
	nominalTick int64

	// The kernel, CLOCK_MONOTONIC and timers; replaced by fakes in the
	// tests of the slew logic, so that no test ever writes the clock.
	adjtime   func(*unix.Timex) (int, error)
	monotonic func() time.Duration
	afterFunc func(time.Duration, func()) (stop func() bool)

	mu         sync.Mutex
	basePPM    float64    // the frequency correction last set
	bulk       *bulkPhase // the fast phase in force, if any
	gen        uint64     // identifies bulk phases, so a stale timer is ignored
	singleShot bool       // a kernel single-shot slew may be running
	asyncErr   error      // a failure of the timer-driven end of a bulk phase
}

var _ Clock = (*System)(nil)

// bulkPhase is a running fast phase.
type bulkPhase struct {
	plan  slewPlan
	start time.Duration // CLOCK_MONOTONIC instant the fast rate took effect
	stop  func() bool
	gen   uint64
}

// kernelAdjtime is clock_adjtime(2) on CLOCK_REALTIME, as a raw syscall:
// the kernel takes a spinlock and never sleeps in it, so the scheduler
// need not hear of it. Through unix.ClockAdjtime every call entered and
// left the scheduler's syscall state, which wakes the runtime's monitor
// thread whenever it sleeps (every P idle, as a daemon is between frames)
// and sets it polling at 20 µs for as long as the daemon then runs: the
// daemon's loop reads the clock's state on every tick (Daemon.tick), so
// an idle electd or orderd paid that on every heartbeat (rawNow's reason,
// measured in docs/benchmarks/2026-12-06-idle.md).
func kernelAdjtime(tx *unix.Timex) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_CLOCK_ADJTIME, unix.CLOCK_REALTIME, uintptr(unsafe.Pointer(tx)), 0)
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}

// kernelMonotonic reads CLOCK_MONOTONIC, raw for the same reason.
func kernelMonotonic() time.Duration {
	var ts unix.Timespec
	if _, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		// CLOCK_MONOTONIC always exists on Linux; failing to read it
		// means the process is broken beyond what an error can report.
		panic(fmt.Sprintf("clock: reading CLOCK_MONOTONIC: %v", e))
	}
	return time.Duration(ts.Nano())
}

func realAfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// NewSystem returns the host's real clock. It reads the kernel's state
// (unprivileged) to learn the current frequency correction, which becomes
// the base rate slews run on top of.
func NewSystem(opts SystemOptions) (*System, error) {
	return newSystem(opts, kernelAdjtime, kernelMonotonic, realAfterFunc)
}

func newSystem(opts SystemOptions, adj func(*unix.Timex) (int, error), mono func() time.Duration,
	after func(time.Duration, func()) func() bool) (*System, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &System{opts: opts, nominalTick: nominalTickUS, adjtime: adj, monotonic: mono, afterFunc: after}
	tx, err := s.read()
	if err != nil {
		return nil, err
	}
	if span := tickSpan(nominalTickUS); int64(tx.Tick) < nominalTickUS-span || int64(tx.Tick) > nominalTickUS+span {
		return nil, fmt.Errorf("clock: kernel tick %d µs is not within 10%% of %d µs: USER_HZ is not 100", tx.Tick, nominalTickUS)
	}
	s.basePPM = timexPPM(&tx, s.nominalTick)
	return s, nil
}

// kernelError wraps a failed clock_adjtime. EPERM gets the advice to run
// without adjusting.
func kernelError(op string, err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w (%s: clock_adjtime: %w)", ErrPermission, op, err)
	}
	return fmt.Errorf("clock: %s: clock_adjtime: %w", op, err)
}

// read returns the kernel's state (Modes=0: no privilege needed, no change).
func (s *System) read() (unix.Timex, error) {
	var tx unix.Timex
	if _, err := s.adjtime(&tx); err != nil {
		return tx, kernelError("read", err)
	}
	return tx, nil
}

// write submits a request. Callers have checked ReadOnly.
func (s *System) write(op string, tx unix.Timex) error {
	if _, err := s.adjtime(&tx); err != nil {
		return kernelError(op, err)
	}
	return nil
}

// timedWrite submits a request and returns the monotonic instant it took
// effect: the midpoint of readings taken just before and after the call.
func (s *System) timedWrite(op string, tx unix.Timex) (time.Duration, error) {
	t0 := s.monotonic()
	err := s.write(op, tx)
	t1 := s.monotonic()
	return t0 + (t1-t0)/2, err
}

// Now reads CLOCK_REALTIME. Like Sim, the result carries no monotonic
// reading: it is a wall reading that Step and Slew move.
func (s *System) Now() time.Time { return time.Now().Round(0) }

// FromKernel returns t: kernel stamps are already on this clock's scale.
func (s *System) FromKernel(t time.Time) time.Time { return t }

// endBulkLocked ends the fast phase in force, if any, restoring the base
// rate, and returns the part of its slew not yet absorbed (negative after
// an overshoot).
func (s *System) endBulkLocked() (time.Duration, error) {
	b := s.bulk
	if b == nil {
		return 0, nil
	}
	b.stop()
	end, err := s.timedWrite("end slew", b.plan.Base)
	if err != nil {
		// The fast rate may still be in force: keep the phase so that
		// State reports it and Close or a later call retries.
		return 0, err
	}
	s.bulk = nil
	return b.plan.Offset - b.plan.absorbed(end-b.start), nil
}

// slewLocked starts slewing offset; no fast phase is in force.
func (s *System) slewLocked(offset time.Duration) error {
	p, err := planSlew(offset, s.opts.MaxSlewPPM, s.basePPM, s.nominalTick)
	if err != nil {
		return err
	}
	if p.Bulk == 0 {
		if offset == 0 && !s.singleShot {
			return nil
		}
		if err := s.write("slew", singleShotRequest(p.Tail)); err != nil {
			return err
		}
		s.singleShot = offset != 0
		return nil
	}
	if s.singleShot { // a new slew replaces the rest of the previous one
		if err := s.write("cancel slew", singleShotRequest(0)); err != nil {
			return err
		}
		s.singleShot = false
	}
	start, err := s.timedWrite("slew", p.Fast)
	if err != nil {
		return err
	}
	s.gen++
	gen := s.gen
	s.bulk = &bulkPhase{plan: p, start: start, gen: gen}
	s.bulk.stop = s.afterFunc(p.Duration, func() { s.bulkDone(gen) })
	return nil
}

// bulkDone ends fast phase gen when its timer fires and slews what is left.
func (s *System) bulkDone(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bulk == nil || s.bulk.gen != gen {
		return // replaced or ended meanwhile
	}
	rest, err := s.endBulkLocked()
	if err == nil {
		err = s.slewLocked(rest)
	}
	if err != nil && s.asyncErr == nil {
		s.asyncErr = err
	}
}

// Slew moves the clock by offset gradually, replacing what is left of the
// previous slew: small offsets through the kernel's single-shot slew
// (500 µs/s), larger ones at MaxSlewPPM then the single shot for the last
// few hundred µs.
func (s *System) Slew(offset time.Duration) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.endBulkLocked(); err != nil { // the rest is replaced
		return err
	}
	return s.slewLocked(offset)
}

// Step jumps the clock by offset (ADJ_SETOFFSET); a negative offset is
// refused with ErrBackwardStep unless SystemOptions.AllowBackwardStep. A
// slew in progress goes on.
func (s *System) Step(offset time.Duration) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	if offset < 0 && !s.opts.AllowBackwardStep {
		return ErrBackwardStep
	}
	if offset == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write("step", stepRequest(offset))
}

// SetFrequency sets the frequency correction, ppm (within about ±100500
// ppm: ±10% of tick plus ±500 ppm of PLL frequency). A slew in its fast
// phase is re-planned on the new base rate.
func (s *System) SetFrequency(ppm float64) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	req, err := frequencyRequest(ppm, s.nominalTick)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slewing := s.bulk != nil
	rest, err := s.endBulkLocked()
	if err != nil {
		return err
	}
	if err := s.write("set frequency", req); err != nil {
		return err
	}
	s.basePPM = ppm
	if slewing {
		return s.slewLocked(rest)
	}
	return nil
}

// SetSync sets or clears STA_UNSYNC and the kernel's estimated and maximum
// error (µs, at most 16 s; the kernel grows the maximum by 500 µs/s).
func (s *System) SetSync(synced bool, estErr, maxErr time.Duration) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.read()
	if err != nil {
		return err
	}
	return s.write("set sync", syncRequest(tx.Status, synced, estErr, maxErr))
}

// State reads the kernel (Modes=0, and ADJ_OFFSET_SS_READ when a
// single-shot slew of ours may be running: both unprivileged). It also
// returns, once, an error from the timer-driven end of a slew.
func (s *System) State() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.read()
	if err != nil {
		return State{}, err
	}
	st := stateFromTimex(&tx, s.nominalTick)
	switch {
	case s.bulk != nil:
		st.Frequency = s.basePPM // not the temporary fast rate
		st.SlewLeft = s.bulk.plan.Offset - s.bulk.plan.absorbed(s.monotonic()-s.bulk.start)
	case s.singleShot:
		ss := unix.Timex{Modes: unix.ADJ_OFFSET_SS_READ}
		if _, err := s.adjtime(&ss); err != nil {
			return st, kernelError("read slew", err)
		}
		st.SlewLeft = time.Duration(ss.Offset) * time.Microsecond
	}
	err, s.asyncErr = s.asyncErr, nil
	return st, err
}

// Close ends a slew's fast phase, handing the rest to the kernel's
// single-shot slew (which completes on its own after the process exits).
// The System remains usable.
func (s *System) Close() error {
	if s.opts.ReadOnly {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bulk == nil {
		return nil
	}
	rest, err := s.endBulkLocked()
	if err != nil {
		return err
	}
	if err := s.write("slew", singleShotRequest(rest)); err != nil {
		return err
	}
	s.singleShot = rest != 0
	return nil
}
