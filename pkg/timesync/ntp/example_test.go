package ntp_test

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/timesync/ntp"
)

func ExampleOffsetDelay() {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(125 * time.Millisecond) // server clock, 100 ms ahead, 25 ms later
	t3 := t2.Add(time.Millisecond)       // the server holds the request 1 ms
	t4 := t1.Add(51 * time.Millisecond)  // back after 25 ms more
	offset, delay := ntp.OffsetDelay(t1, t2, t3, t4)
	fmt.Println(offset, delay)
	// Output: 100ms 50ms
}

func ExampleSelect() {
	c := func(off, lambda time.Duration) ntp.Candidate {
		return ntp.Candidate{Offset: off, RootDistance: lambda, Jitter: 50 * time.Microsecond, Stratum: 1, Reachable: true}
	}
	sel, err := ntp.Select([]ntp.Candidate{
		c(1*time.Millisecond, 5*time.Millisecond),
		c(2*time.Millisecond, 5*time.Millisecond),
		c(900*time.Millisecond, 5*time.Millisecond), // a falseticker
	}, ntp.SelectConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sel.Verdicts, sel.Offset)
	// Output: [sys_peer combined falseticker] 1.5ms
}

func ExampleFilter() {
	f := ntp.NewFilter(time.Microsecond)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range []struct{ off, delay time.Duration }{
		{300 * time.Microsecond, 900 * time.Microsecond}, // queued: high delay
		{100 * time.Microsecond, 200 * time.Microsecond},
		{400 * time.Microsecond, 800 * time.Microsecond},
	} {
		out := f.Add(ntp.Sample{Offset: s.off, Delay: s.delay, Dispersion: time.Microsecond,
			Time: start.Add(time.Duration(i) * 16 * time.Second)}, 16*time.Second)
		est, _ := f.Estimate()
		fmt.Println(out, est.Offset)
	}
	// Output:
	// updated 300µs
	// updated 100µs
	// stale 100µs
}

func ExampleCristian() {
	c := ntp.NewCristian(0)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, rtt := range []time.Duration{12 * time.Millisecond, 4 * time.Millisecond, 9 * time.Millisecond} {
		c.Add(ntp.CristianRound{Sent: start, Server: start.Add(time.Second), Received: start.Add(rtt)})
		start = start.Add(time.Second)
	}
	e, _ := c.Estimate()
	fmt.Println(e.RTT, e.Offset, e.Accuracy)
	// Output: 4ms 998ms 2ms
}
