// Package servo is timed's clock discipline: a pure state machine that
// turns offset measurements (from NTP selection or Cristian) into clock
// adjustments, and keeps a TrueTime-style bound on how wrong the clock can
// be at any instant.
//
// It decides; it does not act. Update returns clock.Adjustment values that
// the daemon applies with clock.Apply (adjtimex on Linux, or a simulated
// clock), so the same servo runs under the daemon, the simulator and the
// tests, and is tested in closed loop against clock.Sim in virtual time.
//
//	sample at t ──(θ - Pending(t))──► ntp.Filter ──► selection
//	                                      ▲                │
//	        Correction: Shift every filter │                ▼ (t_k, Θ, λ)
//	                                      └──── Update(now) ──► Slew / Step /
//	                                                            SetFrequency / SetSync
//
// The rules it keeps:
//
//   - The clock is never stepped backwards. A forward step is made only if
//     Config.StepThreshold is set (off by default) and only during the
//     first Config.StepLimit updates, like chrony's makestep; every other
//     correction is a slew at up to Config.MaxSlewPPM (default 83,333
//     ppm: 100 ms is absorbed in 1.2 s).
//   - The frequency correction is a least-squares estimate of the
//     oscillator's drift over the last Config.FrequencyWindow measurements,
//     with the servo's own slews, steps and frequency changes taken out; it
//     is bounded by ±Config.MaxFrequencyPPM (500 ppm). Frequency() is to be
//     saved in the state directory and restored through Config.Frequency,
//     so a restarted daemon does not re-learn its drift.
//   - Bound(now) is always truthful given truthful root distances: its
//     half-width is the last measurement's root distance plus
//     (MaxDriftPPM + the frequency estimate's worst-case error) × the time
//     since that measurement.
//
// A daemon loop, in outline:
//
//	s, err := servo.New(servo.Config{Frequency: saved})
//	...
//	res, err := s.Update(clk.Now(), servo.Measurement{
//		Time: est.Time, Offset: sel.Offset, RootDistance: lambda, Jitter: sel.Jitter,
//	})
//	for _, a := range res.Adjustments {
//		clock.Apply(clk, a)
//	}
//	s.Applied(clk.Now()) // when the clock took them: a slew runs from then
//	for _, f := range filters {
//		f.Shift(res.Correction)
//	}
//	...
//	smp.Offset -= s.Pending(smp.Time) // each new sample, before Filter.Add
//	save(s.Frequency())
//
// The offset convention matters: every offset the servo sees means "as if
// every correction commanded so far had already taken effect". A fresh
// sample taken while a slew runs still contains the part not yet slewed:
// subtract Pending(sample time) before storing it. A stored sample predates
// later corrections: Filter.Shift subtracts each Correction as it is
// commanded. The clock filter's register is then self-consistent, so its
// minimum-delay choice, jitter and spike gate work during large slews too.
//
// Config.MeasureOnly runs the servo open loop (timed run --no-adjust): it
// commands nothing, so the convention above reduces to the offsets as
// measured (Pending, Slewed and every Correction are zero), and Offset,
// Bound and Frequency describe the clock nobody corrects: its offset
// drifting at the estimated drift, and the correction that would cancel
// it. A daemon that merely dropped a closed-loop servo's adjustments
// would report offsets as if they had been applied.
package servo
