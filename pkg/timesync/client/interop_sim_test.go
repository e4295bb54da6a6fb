package client_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
)

// TestSimWithServerCore runs the client against timed's own server core
// (pkg/timesync/server, a local stratum-1 reference with its default rate
// limit): the client's burst and polls stay within the limit (no RATE
// kiss), and it converges as against the minimal test server.
func TestSimWithServerCore(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 9))
		s := sim.New(sim.Config{Seed: seed})
		for _, id := range []uint32{2, 3} {
			s.AddNode(id, addr(id), func(core.Env) core.Core {
				srv, err := server.New(server.Config{LocalStratum: 1})
				if err != nil {
					t.Fatal(err)
				}
				return srv
			}, clock.SimConfig{})
		}
		addClient(t, s, clientID, testConfig(2, 3), startClock(rng))
		o := &oracle{t: t, s: s, id: clientID}
		if took := runUntilWithin(s, clientID, time.Millisecond, 10*time.Second, o); took < 0 {
			t.Fatalf("not within 1 ms after 10 s\n%s", report(s))
		}
		run(s, 5*time.Minute, o)
		if n := len(s.EventsNamed(client.EventKiss)); n != 0 {
			t.Fatalf("%d kiss-o'-death from timed's server\n%s", n, report(s))
		}
		if off := s.Clock(clientID).TrueOffset().Abs(); off > 100*time.Microsecond {
			t.Fatalf("|offset| %v\n%s", off, report(s))
		}
	})
}

// TestSimRateLimitedByServerCore: a client configured to poll four times a
// second meets the server's limit (one per second on average): it gets
// RATE kisses, backs off to a poll the server accepts, stops being kissed,
// and still converges.
func TestSimRateLimitedByServerCore(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 10))
		s := sim.New(sim.Config{Seed: seed})
		s.AddNode(2, addr(2), func(core.Env) core.Core {
			srv, err := server.New(server.Config{LocalStratum: 1})
			if err != nil {
				t.Fatal(err)
			}
			return srv
		}, clock.SimConfig{})
		cfg := testConfig(2)
		cfg.MinPoll, cfg.MaxPoll, cfg.Burst = -2, -2, -1
		addClient(t, s, clientID, cfg, startClock(rng))
		o := &oracle{t: t, s: s, id: clientID}
		run(s, time.Minute, o)
		kisses := len(s.EventsNamed(client.EventKiss))
		if kisses == 0 {
			t.Fatalf("no RATE kiss at 4 polls a second\n%s", report(s))
		}
		st := s.Core(clientID).(*client.Client).Report()
		if st.Sources[0].Poll < 0 {
			t.Fatalf("poll %d after %d kisses", st.Sources[0].Poll, kisses)
		}
		run(s, 2*time.Minute, o)
		t.Logf("%d kisses, poll %d", kisses, st.Sources[0].Poll)
		if n := len(s.EventsNamed(client.EventKiss)); n != kisses {
			t.Fatalf("%d more kisses after backing off to poll %d\n%s", n-kisses, st.Sources[0].Poll, report(s))
		}
		if off := s.Clock(clientID).TrueOffset().Abs(); off > 100*time.Microsecond {
			t.Fatalf("|offset| %v\n%s", off, report(s))
		}
	})
}
