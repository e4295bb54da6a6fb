package clock_test

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

func ExampleSim() {
	// A virtual true-time source, as the simulator provides.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	trueNow := func() time.Time { return now }

	c := clock.NewSim(clock.SimConfig{Offset: 2 * time.Millisecond, DriftPPM: 50}, trueNow)
	now = now.Add(10 * time.Second)
	fmt.Println("error after 10 s:", c.TrueOffset())

	// A servo decides; the driver applies.
	_ = clock.Apply(c, clock.Adjustment{Kind: clock.AdjustFrequency, PPM: -50})
	_ = clock.Apply(c, clock.Adjustment{Kind: clock.AdjustSlew, Offset: -c.TrueOffset()})
	now = now.Add(time.Second)
	fmt.Println("error a second later:", c.TrueOffset())
	// Output:
	// error after 10 s: 2.5ms
	// error a second later: 0s
}

func ExampleLamport() {
	var p1, p2 clock.Lamport
	p1.Tick()          // an internal event: 1
	m := p1.Send()     // send: 2
	p2.Tick()          // 1
	r := p2.Receive(m) // max(1, 2) + 1
	fmt.Println(m, r)
	// Equal stamps are ordered by member ID.
	fmt.Println(clock.LamportLess(5, 1, 5, 2))
	// Output:
	// 2 3
	// true
}

func ExampleCompare() {
	var a, b clock.Vector
	a.Tick(1)
	stamp := a.Clone() // what 1 sends
	b.Tick(2)
	fmt.Println(clock.Compare(stamp, b)) // nothing links them yet
	b.Receive(2, stamp)
	fmt.Println(clock.Compare(stamp, b), b)
	// Output:
	// concurrent
	// before {1:1 2:2}
}
