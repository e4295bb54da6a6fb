package servo_test

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/timesync/servo"
)

// A simulated clock 50 ms behind and 20 ppm slow, disciplined by a servo
// fed exact measurements every 16 s of virtual time.
func Example() {
	trueNow := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sim := clock.NewSim(clock.SimConfig{Offset: -50 * time.Millisecond, DriftPPM: -20},
		func() time.Time { return trueNow })
	s, _ := servo.New(servo.Config{})
	for range 10 {
		now := sim.Now()
		res, _ := s.Update(now, servo.Measurement{
			Time:         now,
			Offset:       -sim.TrueOffset() - s.Pending(now), // a perfect measurement
			RootDistance: 100 * time.Microsecond,
		})
		for _, a := range res.Adjustments {
			clock.Apply(sim, a)
		}
		trueNow = trueNow.Add(16 * time.Second)
	}
	lo, hi := s.Bound(sim.Now())
	fmt.Printf("frequency %+.1f ppm\n", s.Frequency())
	fmt.Println("error below 1µs:", sim.TrueOffset().Abs() < time.Microsecond)
	fmt.Println("truth inside the bound:", !trueNow.Before(lo) && !trueNow.After(hi))
	// Output:
	// frequency +20.0 ppm
	// error below 1µs: true
	// truth inside the bound: true
}
