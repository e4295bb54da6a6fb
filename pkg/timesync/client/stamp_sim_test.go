package client_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
)

// sendLag is how long after the clock reading it carries a client's
// request leaves in TestSimSendLagNoBias: a loaded host's send path, the
// user-space stamp's lead over the kernel's (docs/benchmarks: 10-20 us on
// the lab's veths, more under load).
const sendLag = 40 * time.Microsecond

// maxMeanError bounds the mean error of TestSimSendLagNoBias: over 30
// seeds its largest |mean| was 1.0 us (the 10 us jitter's residue); with
// T1 taken from the bytes it is +20 us.
const maxMeanError = 3 * time.Microsecond

// TestSimSendLagNoBias: a request leaves sendLag after the clock reading
// written into it (its transmit timestamp, which the server echoes as the
// origin), and the daemon reports the kernel's transmit stamp, sendLag
// later, to the core. On a symmetric path (100 us each way, 10 us of
// jitter) the client's mean error stays within maxMeanError of zero: its T1 is the departure, not the earlier reading.
// Taking T1 from the bytes instead makes every exchange look sendLag/2
// more behind the server, and the clock settles sendLag/2 = +20 us ahead
// of true time: the constant bias of issue 34's accuracy row.
func TestSimSendLagNoBias(t *testing.T) {
	sim.Seeds(t, 8, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 34))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 10 * time.Microsecond}})
		addServer(s, 2, clock.SimConfig{})
		addClient(t, s, clientID, testConfig(2), startClock(rng))
		s.SetSendLag(clientID, sendLag)
		o := &oracle{t: t, s: s, id: clientID}
		if took := runUntilWithin(s, clientID, 100*time.Microsecond, 2*time.Minute, o); took < 0 {
			t.Fatalf("not within 100 us after 2 min\n%s", report(s))
		}
		run(s, 2*time.Minute, o)
		// The signed error once a second for five minutes.
		var sum time.Duration
		const n = 300
		for range n {
			run(s, time.Second, o)
			sum += s.Clock(clientID).TrueOffset()
		}
		if mean := sum / n; mean.Abs() > maxMeanError {
			t.Fatalf("mean true offset %v over %d s on a symmetric path with a %v send lag: want |mean| <= %v (T1 taken before the send?)\n%s",
				mean, n, sendLag, maxMeanError, report(s))
		}
	})
}
