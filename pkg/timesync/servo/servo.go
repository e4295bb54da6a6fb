package servo

import (
	"math"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

// Measurement is one filtered estimate of the local clock's offset from the
// reference, as the NTP selection (or Cristian) delivers it.
type Measurement struct {
	// Time is the local time the offset refers to (the chosen sample's
	// arrival time, on the local clock; for NTP, the system peer's
	// estimate time). It must increase from one update to the next: like
	// RFC 5905's clock_update, call Update only when the system peer's
	// filter produced a new sample.
	Time time.Time
	// Offset is the reference minus the local clock at Time (positive:
	// the local clock is behind) as if every correction the servo has
	// commanded had already taken effect: the raw offset minus
	// Pending(Time) (the part of a slew still running when the sample was
	// taken), minus every Correction commanded after Time. A daemon
	// normalises each sample with Pending before ntp.Filter.Add, and
	// ntp.Filter.Shift applies the later Corrections to stored samples;
	// the register then holds offsets that are comparable with each
	// other even while a large slew runs.
	Offset time.Duration
	// RootDistance is the maximum error of Offset (λ: half the round trip
	// plus dispersions plus jitter, up to the primary reference); for an
	// NTP system offset, ntp.Selection.Distance(). The servo's error
	// bound is only as truthful as this value.
	RootDistance time.Duration
	// Jitter is the expected (RMS) error of Offset; it only feeds the
	// clock's estimated-error field (AdjustSync EstError). Zero is fine.
	Jitter time.Duration
}

// Action says how an update corrected the phase.
type Action uint8

const (
	// ActionSlew: the offset is being slewed at up to MaxSlewPPM.
	ActionSlew Action = iota + 1
	// ActionStep: the clock was stepped forward (makestep window).
	ActionStep
	// ActionNone: nothing was commanded (Config.MeasureOnly).
	ActionNone
)

func (a Action) String() string {
	switch a {
	case ActionSlew:
		return "slew"
	case ActionStep:
		return "step"
	case ActionNone:
		return "none"
	}
	return "unknown"
}

// Result is what one update decided.
type Result struct {
	// Adjustments are to be applied to the clock in order, right away
	// (clock.Apply), and then the time the clock took them reported with
	// Applied. A slew is computed for the instant now given to Update:
	// the previous slew runs on until the clock takes the new one, so a
	// driver that applies it late takes off what the clock absorbed since
	// now (the daemon's slewPlan), and Applied moves the servo's model
	// of the slew to when the clock began it.
	Adjustments []clock.Adjustment
	// Action is how the phase was corrected.
	Action Action
	// Correction is the phase correction newly commanded (positive:
	// forward). Every stored sample of every source now overstates its
	// offset by this much: pass it to ntp.Filter.Shift for each source.
	Correction time.Duration
	// Offset is the offset the update acted on: the measurement
	// projected to now.
	Offset time.Duration
	// Frequency is the frequency correction after the update, ppm.
	Frequency float64
}

// State is the servo's view for status reporting.
type State struct {
	Updates        int           // measurements used
	Smoothed       int           // of which the regression line gave the phase
	Frequency      float64       // frequency correction, ppm
	FrequencyError float64       // bound on the residual frequency error, ppm (MaxDriftPPM excluded)
	LastOffset     time.Duration // offset acted on at the last update
	LastUpdate     time.Time     // local time of the last update's measurement
	RootDistance   time.Duration // λ of the last measurement
}

// Servo is a clock discipline: a pure state machine that turns offset
// measurements into clock adjustments (pkg/clock Adjustment values), and
// keeps a TrueTime-style bound on the clock's error. It never reads a clock
// and is not safe for concurrent use.
//
// Phase: every update slews the measured offset (times PhaseGain) on top of
// what is left of the previous slew; a forward step is made only when
// enabled and only during the first StepLimit updates. A backward step is
// never made.
//
// Frequency: the servo removes its own corrections from each measurement
// to reconstruct the free-running clock's phase
//
//	y_k = -offset_k - (phase commanded) + (slew still pending at t_k)
//	      - ∫ frequency correction dt                      (ns)
//
// which is a straight line e0 + drift·t. A least-squares fit over the last
// FrequencyWindow measurements, each weighted by 1/λ², gives the drift; the
// correction is its negative, bounded by ±MaxFrequencyPPM. Since each
// measurement's error is at most its root distance, the slope's error is
// bounded by Σ|c_i|·λ_i (c_i the regression coefficients): that worst case,
// not a statistical guess, goes into the error bound.
//
// Bound: after an update at t_k with root distance λ the true time lies in
//
//	now + predicted offset ± (λ + (MaxDriftPPM + frequency error)·(now - t_k))
//
// where the predicted offset is what is left of the measured offset once the
// pending slew has run.
type Servo struct {
	cfg Config

	updates  int
	smoothed int     // updates whose phase came from the regression line
	freq     float64 // current frequency correction, ppm
	freqErr  float64 // worst-case residual frequency error, ppm
	// priorErr is the restored frequency's error (Config.FrequencyError
	// plus RestoredWanderPPM) until a regression beats it, then +Inf.
	priorErr float64
	resid    float64 // residual frequency predicted after the update, ppm (non-zero when clamped)
	phiCmd   float64 // total phase commanded so far, ns

	epoch  time.Time
	points []point // regression window, oldest first
	slews  []slewCmd
	freqs  []freqSeg

	last lastUpdate
}

type point struct {
	x      float64 // seconds since epoch
	y      float64 // free-running phase error, ns
	lambda float64 // max error of y, ns
}

// slewCmd is a slew decided at local time decided and taken by the clock
// at local time at (decided until Applied says otherwise): amt ns from
// at, absorbed at the configured rate, until the next command replaces
// it. corr is the correction it added to what was pending when decided:
// between decided and at the previous slew runs on, and corr waits.
type slewCmd struct {
	decided time.Time
	at      time.Time
	amt     float64
	corr    float64
	applied bool // Applied has placed it
}

// freqSeg records that the frequency correction became ppm at local time at,
// when the integral of all corrections so far was integral ns.
type freqSeg struct {
	at       time.Time
	ppm      float64
	integral float64
}

type lastUpdate struct {
	valid  bool
	t      time.Time // measurement time t_k
	now    time.Time // decision time
	lambda float64   // ns
	offset float64   // actual offset at now, after a step, before the slew, ns
	acted  time.Duration
}

// ledgerMax bounds the slew and frequency histories. They are only looked
// up at the time of the measurement being added, which is at most a few
// updates old (a clock filter holds 8 samples), and each update adds at most
// one entry to each ledger.
const ledgerMax = 64

// RestoredWanderPPM is added to a restored frequency's saved error: the
// oscillator may have moved since the save (a quartz crystal shifts by about
// a tenth of a ppm per degree, and a machine that was off for a while has
// cooled).
const RestoredWanderPPM = 1.0

// unsyncLimit is the half-width beyond which the clock is reported
// unsynchronised: the kernel's NTP_PHASE_LIMIT.
const unsyncLimit = 16 * time.Second

// New returns a servo for cfg, or the error Validate reports.
func New(cfg Config) (*Servo, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	prior := math.Inf(1)
	if cfg.FrequencyError > 0 {
		prior = cfg.FrequencyError + RestoredWanderPPM
	}
	return &Servo{
		cfg:      cfg,
		freq:     cfg.Frequency,
		freqErr:  cfg.MaxFrequencyPPM + math.Abs(cfg.Frequency),
		priorErr: prior,
	}, nil
}

// Config returns the configuration, defaults filled in.
func (s *Servo) Config() Config { return s.cfg }

// Frequency returns the current frequency correction, ppm. The daemon
// persists it and restores it through Config.Frequency.
func (s *Servo) Frequency() float64 { return s.freq }

// Synchronized reports whether the servo has used a measurement, and so
// has an error bound.
func (s *Servo) Synchronized() bool { return s.last.valid }

// State returns the servo's state for status reporting.
func (s *Servo) State() State {
	return State{
		Updates:        s.updates,
		Smoothed:       s.smoothed,
		Frequency:      s.freq,
		FrequencyError: s.freqErr,
		LastOffset:     s.last.acted,
		LastUpdate:     s.last.t,
		RootDistance:   time.Duration(s.last.lambda),
	}
}

// slewed returns how much of a slew of amt ns has been absorbed after the
// local clock advanced by elapsed ns. The slew rate r is relative to true
// time, and the local clock runs at 1+r (or 1-r) while slewing, so over a
// local interval the slew absorbs elapsed·r/(1±r): 8% less than elapsed·r
// when slowing the clock at 83,333 ppm, which is not negligible.
func (s *Servo) slewed(amt, elapsed float64) float64 {
	r := s.cfg.MaxSlewPPM * 1e-6
	if amt < 0 {
		return elapsed * r / (1 - r)
	}
	return elapsed * r / (1 + r)
}

// pendingAt returns the part of the slews commanded before t that is
// still to be applied at t, ns (signed like the slew): the last one's
// remainder, or, decided but not yet taken by the clock, the previous
// one's remainder plus the correction waiting.
func (s *Servo) pendingAt(t time.Time) float64 {
	for i := len(s.slews) - 1; i >= 0; i-- {
		c := s.slews[i]
		if t.Before(c.decided) {
			continue
		}
		if t.Before(c.at) {
			return s.leftOf(i-1, t) + c.corr
		}
		return s.leftOf(i, t)
	}
	return 0
}

// leftOf returns what is left at t of slew command i (none for i < 0),
// ns, counting from when the clock took it.
func (s *Servo) leftOf(i int, t time.Time) float64 {
	if i < 0 {
		return 0
	}
	c := s.slews[i]
	return remaining(c.amt, s.slewed(c.amt, math.Max(0, float64(t.Sub(c.at)))))
}

// Applied tells the servo the local time at which the clock took the
// adjustments of the last Update (the clock's reading right after the
// driver applied them; core.Adjusted). The driver applies them after the
// tick that decided them, on a busy host milliseconds later, and the
// servo counted the slew as starting at the tick: the previous slew ran
// on meanwhile (the driver takes what it absorbed off the new one, as the
// daemon's slewPlan does), and the new one starts at. Without this the
// servo's bound is off centre by what the clock had not absorbed (83 us
// per millisecond late at the fastest slew) until the slew ends. A time
// before the decision, or with no slew waiting, changes nothing.
func (s *Servo) Applied(at time.Time) {
	n := len(s.slews)
	if n == 0 || s.slews[n-1].applied {
		return
	}
	for i := n - 1; i >= 0 && !s.slews[i].applied; i-- {
		s.slews[i].applied = true
	}
	c := &s.slews[n-1]
	if !at.After(c.at) {
		return
	}
	// What the previous slew absorbed between the decision and at, by
	// the servo's model: the clock takes the new slew less that.
	absorbed := s.leftOf(n-2, c.at) - s.leftOf(n-2, at)
	c.amt -= absorbed
	c.at = at
}

// Slewed returns how far the servo's slews moved the clock between local
// times from and to (positive: forward), from its recent history of slew
// commands (the last 64). A measurement whose exchange spans a slew sees
// the clock at both ends: the symmetric NTP mode's samples span a whole
// poll interval, and the first slews are fast (100 ms in 1.2 s), so such a
// sample carries half the slew made meanwhile as error (see
// client.Client, which takes it out).
func (s *Servo) Slewed(from, to time.Time) time.Duration {
	if !to.After(from) {
		return 0
	}
	return time.Duration(math.Round(s.appliedAt(to) - s.appliedAt(from)))
}

// appliedAt returns the phase the recorded slews had applied by local time
// t, ns, counted from the oldest recorded command.
func (s *Servo) appliedAt(t time.Time) float64 {
	var sum float64
	for i, c := range s.slews {
		if !t.After(c.at) {
			break
		}
		end := t
		if i+1 < len(s.slews) && s.slews[i+1].at.Before(t) {
			end = s.slews[i+1].at
		}
		sum += c.amt - remaining(c.amt, s.slewed(c.amt, float64(end.Sub(c.at))))
	}
	return sum
}

// Pending returns the part of the commanded phase correction that has not
// yet been applied at local time t (positive: the clock still has to move
// forward by that much), assuming the clock slews at Config.MaxSlewPPM.
// Subtract it from an offset measured at t to get the Measurement.Offset
// convention. t may be in the past (a sample's time): the servo keeps the
// recent history of its slews.
func (s *Servo) Pending(t time.Time) time.Duration {
	return time.Duration(math.Round(s.pendingAt(t)))
}

// CommandedAfter returns the phase corrections (slews' Result.Correction)
// commanded after local time t, from the recent history of slew commands
// (the last 64). Measurement.Offset excludes them; ntp.Filter.Shift takes
// them out of the samples stored when they are commanded, but a sample
// taken at t and added only later (an interleaved NTP answer completes the
// exchange of the poll before, after an update) missed those Shifts:
// subtract this too. Steps are not counted: a sample across a step is
// dropped.
func (s *Servo) CommandedAfter(t time.Time) time.Duration {
	var sum float64
	for i := len(s.slews) - 1; i >= 0 && s.slews[i].decided.After(t); i-- {
		sum += s.slews[i].corr
	}
	return time.Duration(math.Round(sum))
}

// remaining returns what is left of a slew of amt ns after applying up to
// done ns of it.
func remaining(amt, done float64) float64 {
	left := math.Abs(amt) - done
	if left <= 0 {
		return 0
	}
	return math.Copysign(left, amt)
}

// freqIntegral returns ∫ frequency correction dt from the first update to t,
// ns. Before the first recorded segment it extrapolates that segment.
func (s *Servo) freqIntegral(t time.Time) float64 {
	if len(s.freqs) == 0 {
		return 0
	}
	seg := s.freqs[0]
	for i := len(s.freqs) - 1; i >= 0; i-- {
		if !t.Before(s.freqs[i].at) {
			seg = s.freqs[i]
			break
		}
	}
	return seg.integral + seg.ppm*1e-6*float64(t.Sub(seg.at))
}

// Update feeds one measurement, taken at m.Time, to the servo at local time
// now (the local clock's reading when the adjustments will be applied) and
// returns what to do. On error nothing changes.
func (s *Servo) Update(now time.Time, m Measurement) (Result, error) {
	if err := s.check(now, m); err != nil {
		return Result{}, err
	}
	first := !s.last.valid
	if first {
		s.epoch = m.Time
		// Open loop no frequency is ever in force: no segments, so
		// freqIntegral stays 0.
		if !s.cfg.MeasureOnly {
			s.freqs = []freqSeg{{at: m.Time, ppm: s.freq}}
		}
	}
	s.observe(m)
	oldFreq := s.freq
	e := s.estimate(m)
	proj := s.project(now, m.Time, e)
	if s.cfg.MeasureOnly {
		s.updates++
		s.last = lastUpdate{valid: true, t: m.Time, now: now, lambda: e.lambda, offset: proj, acted: time.Duration(math.Round(proj))}
		return Result{Action: ActionNone, Offset: s.last.acted, Frequency: s.freq}, nil
	}
	res, actual, pending := s.command(now, proj)
	if first || s.freq != oldFreq {
		res.Adjustments = append(res.Adjustments, clock.Adjustment{Kind: clock.AdjustFrequency, PPM: s.freq})
		s.freqs = appendBounded(s.freqs, freqSeg{at: now, ppm: s.freq, integral: s.freqIntegral(now)})
	}
	s.updates++
	s.last = lastUpdate{
		valid:  true,
		t:      m.Time,
		now:    now,
		lambda: e.lambda,
		offset: actual,
		acted:  res.Offset,
	}
	res.Adjustments = append(res.Adjustments, s.syncAdjustment(now, m.Jitter, actual, pending))
	res.Frequency = s.freq
	return res, nil
}

// check refuses a measurement the servo cannot use: malformed, from the
// future, or not after the last one.
func (s *Servo) check(now time.Time, m Measurement) error {
	switch {
	case m.Time.IsZero() || now.IsZero() || m.RootDistance < 0 || m.Jitter < 0:
		return ErrBadMeasurement
	case m.Time.After(now):
		return ErrFutureMeasurement
	case s.last.valid && !m.Time.After(s.last.t):
		return ErrOutOfOrder
	}
	return nil
}

// observe adds m to the regression's points as the free-running phase at
// t_k: the clock's error with every correction the servo ever made taken
// back out (θ as if every correction commanded so far had fully taken
// effect, see Measurement.Offset), keeping the last FrequencyWindow.
func (s *Servo) observe(m Measurement) {
	y := -float64(m.Offset) - s.phiCmd - s.freqIntegral(m.Time)
	s.points = append(s.points, point{x: m.Time.Sub(s.epoch).Seconds(), y: y, lambda: float64(m.RootDistance)})
	if len(s.points) > s.cfg.FrequencyWindow {
		s.points = append(s.points[:0], s.points[len(s.points)-s.cfg.FrequencyWindow:]...)
	}
}

// estimation is what the regression makes of a measurement.
type estimation struct {
	theta  float64 // the phase at t_k, ns: the measurement's, or the line's (smoothed)
	lambda float64 // its error bound, ns
	drift  float64 // the clock's drift, ppm, when ok
	ok     bool    // the drift is known (the frequency follows it)
}

// estimate fits the drift to the points (trimNonlinear, fit) and sets the
// frequency correction from it when it is known better than the kernel's
// limit (and better than a restored one), else widens the frequency error
// to everything the kernel tolerates. The phase is where the line puts the
// clock at t_k, rather than the one measurement, whose noise (jitter, a
// delayed packet) would go straight into the clock (chrony's estimate
// comes from its regression the same way), but only when the two agree
// within the measurement's own error: a larger difference is a real change
// the line has not seen yet, and the measurement wins. The error bound
// grows by the difference, so it stays truthful.
func (s *Servo) estimate(m Measurement) estimation {
	e := estimation{theta: float64(m.Offset), lambda: float64(m.RootDistance)}
	s.points = trimNonlinear(s.points)
	fitted, drift, driftErr, ok := fit(s.points)
	if ok && driftErr >= s.priorErr {
		// The restored frequency is still the better estimate: keep it,
		// and the bound as wide as before any regression.
		ok = false
	}
	if ok && driftErr < s.cfg.MaxFrequencyPPM && len(s.points) >= smoothMinPoints {
		thf := -fitted.at(s.points[len(s.points)-1].x) - s.phiCmd - s.freqIntegral(m.Time)
		if d := math.Abs(thf - e.theta); d < e.lambda {
			e.theta = thf
			e.lambda += d
			s.smoothed++
		}
	}
	if ok && driftErr < s.cfg.MaxFrequencyPPM {
		s.priorErr = math.Inf(1)
		s.freq = math.Max(-s.cfg.MaxFrequencyPPM, math.Min(s.cfg.MaxFrequencyPPM, -drift))
		s.freqErr = driftErr
		s.resid = drift + s.freq // non-zero only when clamped
		if s.cfg.MeasureOnly {
			s.resid = drift // the correction is not applied: the clock drifts on
		}
		e.drift, e.ok = drift, true
	} else {
		// Too little data to know the drift: it may be anything the
		// kernel tolerates.
		s.freqErr = s.cfg.MaxFrequencyPPM + math.Abs(s.freq)
		s.resid = 0
	}
	return e
}

// project carries the estimated offset from t_k to now: the clock kept
// drifting at drift + correction meanwhile.
func (s *Servo) project(now, at time.Time, e estimation) float64 {
	proj := e.theta
	if e.ok {
		proj -= e.drift*1e-6*float64(now.Sub(at)) + (s.freqIntegral(now) - s.freqIntegral(at))
	}
	return proj
}

// command decides the correction of the projected offset proj: a forward
// step in the makestep window, else a slew of PhaseGain×proj on top of
// what is still pending. It returns the result so far, what the clock is
// really off by now once the correction is counted (actual), and the slew
// pending after it, ns.
func (s *Servo) command(now time.Time, proj float64) (res Result, actual, pending float64) {
	pendingNow := s.pendingAt(now)
	actual = proj + pendingNow // what the clock is really off by now
	res.Offset = time.Duration(math.Round(proj))
	pending = pendingNow
	if s.cfg.StepThreshold > 0 && s.updates < s.cfg.StepLimit && proj > float64(s.cfg.StepThreshold) {
		// A forward step, only in the makestep window. The slew in
		// progress (if any) goes on: Step and Slew are independent.
		step := time.Duration(math.Round(proj))
		res.Adjustments = append(res.Adjustments, clock.Adjustment{Kind: clock.AdjustStep, Offset: step})
		res.Action = ActionStep
		res.Correction = step
		actual -= float64(step)
		s.phiCmd += float64(step)
		return res, actual, pending
	}
	corr := math.Round(s.cfg.PhaseGain * proj)
	pending = math.Round(pendingNow + corr)
	res.Adjustments = append(res.Adjustments, clock.Adjustment{Kind: clock.AdjustSlew, Offset: time.Duration(pending)})
	s.slews = appendBounded(s.slews, slewCmd{decided: now, at: now, amt: pending, corr: corr})
	res.Action = ActionSlew
	res.Correction = time.Duration(corr)
	s.phiCmd += corr
	return res, actual, pending
}

// syncAdjustment is the update's report to the kernel: estimated error
// (the jitter, or what remains to slew), maximum error (the offset left and
// the bound's half-width).
func (s *Servo) syncAdjustment(now time.Time, jitter time.Duration, actual, pending float64) clock.Adjustment {
	est := max(jitter, time.Duration(math.Abs(actual-pending)))
	return clock.Adjustment{
		Kind:     clock.AdjustSync,
		Synced:   true,
		EstError: est,
		MaxError: time.Duration(math.Ceil(math.Abs(actual) + s.halfWidth(now))),
	}
}

// appendBounded appends v, dropping the oldest entries beyond ledgerMax.
func appendBounded[T any](list []T, v T) []T {
	list = append(list, v)
	if len(list) > ledgerMax {
		list = append(list[:0], list[len(list)-ledgerMax:]...)
	}
	return list
}

// halfWidth is the half-width of the error bound at local time t, ns.
func (s *Servo) halfWidth(t time.Time) float64 {
	age := math.Max(0, float64(t.Sub(s.last.t)))
	return s.last.lambda + (s.cfg.MaxDriftPPM+s.freqErr)*1e-6*age
}

// SyncAdjustment returns the AdjustSync adjustment describing the clock at
// local time now, for the daemon to apply between updates (the kernel's
// maximum error otherwise grows at its own 500 ppm, not at the servo's
// rate). It reports the clock unsynchronised before the first update and
// once the bound's half-width has grown past 16 s (the kernel's phase
// limit) without a measurement.
func (s *Servo) SyncAdjustment(now time.Time) clock.Adjustment {
	if !s.last.valid {
		return clock.Adjustment{Kind: clock.AdjustSync, EstError: unsyncLimit, MaxError: unsyncLimit}
	}
	half := s.halfWidth(now)
	off := math.Abs(s.offsetAt(now))
	maxErr := time.Duration(math.Min(math.Ceil(off+half), float64(unsyncLimit)))
	return clock.Adjustment{
		Kind:     clock.AdjustSync,
		Synced:   half <= float64(unsyncLimit),
		EstError: min(time.Duration(math.Ceil(off)), unsyncLimit),
		MaxError: maxErr,
	}
}

// Offset predicts the clock's offset from the reference at local time t
// (reference minus local; what a perfect measurement would return), and
// whether the servo has any idea.
func (s *Servo) Offset(t time.Time) (time.Duration, bool) {
	if !s.last.valid {
		return 0, false
	}
	return time.Duration(math.Round(s.offsetAt(t))), true
}

// offsetAt is the offset at the last update less what the slews applied
// since (when the clock took each: Applied) and the residual frequency.
func (s *Servo) offsetAt(t time.Time) float64 {
	dt := math.Max(0, float64(t.Sub(s.last.now)))
	applied := 0.0
	if t.After(s.last.now) {
		applied = s.appliedAt(t) - s.appliedAt(s.last.now)
	}
	return s.last.offset - applied - s.resid*1e-6*dt
}

// GrowthPPM returns how fast, at most, the bound's centre and half-width
// together move away from a clock reading between updates, ppm, leaving
// out the slew in progress (Pending bounds that part): the half-width's
// own growth (MaxDriftPPM plus the frequency estimate's worst-case error)
// plus the residual frequency the centre follows when the correction is
// clamped. A reader that holds Bound(t) still contains the true time at
// a later reading t' if it widens both sides by GrowthPPM·(t' - t) and
// by what is left of the slew at t (pkg/truetime).
func (s *Servo) GrowthPPM() float64 {
	return s.cfg.MaxDriftPPM + s.freqErr + math.Abs(s.resid)
}

// Bound returns the interval that contains the true (reference) time when
// the local clock reads now, TrueTime style: it is centred on now plus the
// predicted offset and widens from the last measurement's root distance at
// MaxDriftPPM plus the frequency estimate's worst-case error. Before the
// first update nothing is known and both times are zero.
func (s *Servo) Bound(now time.Time) (earliest, latest time.Time) {
	if !s.last.valid {
		return time.Time{}, time.Time{}
	}
	off := s.offsetAt(now)
	half := s.halfWidth(now)
	const maxNs = float64(1 << 62)
	lo := math.Max(-maxNs, math.Floor(off-half))
	hi := math.Min(maxNs, math.Ceil(off+half))
	return now.Add(time.Duration(lo)), now.Add(time.Duration(hi))
}

// fit returns the weighted least-squares line through the points, its
// slope in ppm (1 ns/s is 1e-3 ppm), and the worst-case error of that slope
// given that each y_i is off by at most lambda_i. Each point weighs 1/λ²: a measurement
// taken while the clock filter was still nearly empty (λ near a second)
// must not drown the precise ones. The slope is Σ c_i·y_i with c_i =
// w_i(x_i - x̄)/Σ w_j(x_j - x̄)², so its error is at most Σ |c_i|·λ_i.
// ok is false with fewer than two distinct times.
func fit(pts []point) (l line, slopePPM, errPPM float64, ok bool) {
	if len(pts) < 2 {
		return line{}, 0, 0, false
	}
	if l, ok = weightedLine(pts); !ok {
		return line{}, 0, 0, false
	}
	var worst float64
	for _, p := range pts {
		worst += weight(p) * math.Abs(p.x-l.mx) / l.sxx * p.lambda
	}
	return l, l.slope * 1e-3, worst * 1e-3, true
}

// line is the weighted least-squares line through a set of points: it
// passes through their weighted centroid (mx, my) with slope ns per s;
// sxx is Σ w(x - mx)².
type line struct {
	mx, my, sxx, slope float64
}

// at is the line's y at x.
func (l line) at(x float64) float64 { return l.my + l.slope*(x-l.mx) }

// weightedLine fits the line through pts, each weighing 1/λ². ok is false
// when the points do not determine a slope (fewer than two distinct times).
func weightedLine(pts []point) (l line, ok bool) {
	var sw float64
	for _, p := range pts {
		w := weight(p)
		sw += w
		l.mx += w * p.x
		l.my += w * p.y
	}
	l.mx /= sw
	l.my /= sw
	var sxy float64
	for _, p := range pts {
		w, dx := weight(p), p.x-l.mx
		l.sxx += w * dx * dx
		sxy += w * dx * (p.y - l.my)
	}
	if !(l.sxx > 0) || !finite(l.sxx) || !finite(sxy) {
		return line{}, false
	}
	l.slope = sxy / l.sxx
	return l, true
}

// smoothMinPoints is how many points the regression needs before its line
// replaces a measurement's phase. Fewer than the runs test of
// trimNonlinear needs (8) on purpose: after that test has cut the window
// to its recent half, the line through those 4-7 points is still the best
// phase there is, and the agreement check in Update guards it. (8 was
// tried, in one run of scripts/bench.sh timesync: p99 6.1 us on the clean
// LAN and 53.6 us through the switch, against 4.0-4.4 and 35.7-39.2 us
// with 4.)
const smoothMinPoints = 4

// weight is a point's regression weight, 1/λ² (λ floored at 1 ns).
func weight(p point) float64 {
	l := math.Max(p.lambda, 1)
	return 1 / (l * l)
}

// trimNonlinear drops the older half of the regression window while the
// residuals of a straight-line fit fail a runs test: a random scatter about
// the line changes sign often, while a line through points that bend (the
// oscillator's frequency changed: temperature, wander) leaves long runs of
// one sign. chrony shortens its window the same way. It keeps at least
// four points.
func trimNonlinear(pts []point) []point {
	for len(pts) >= 8 {
		l, ok := weightedLine(pts)
		if !ok {
			return pts
		}
		runs, pos, neg := 0, 0, 0
		prev := 0
		for _, p := range pts {
			sign := 1
			if p.y-l.at(p.x) < 0 {
				sign = -1
			}
			if sign > 0 {
				pos++
			} else {
				neg++
			}
			if sign != prev {
				runs++
				prev = sign
			}
		}
		if pos == 0 || neg == 0 {
			return pts
		}
		// Wald-Wolfowitz: under randomness runs has mean mu and
		// variance v; fewer than mu - 2σ runs is a trend (about 2.5%
		// false alarms, which only cost a shorter window).
		n := float64(len(pts))
		mu := 2*float64(pos)*float64(neg)/n + 1
		v := (mu - 1) * (mu - 2) / (n - 1)
		if float64(runs) >= mu-2*math.Sqrt(v) {
			return pts
		}
		pts = append(pts[:0], pts[len(pts)/2:]...)
	}
	return pts
}
