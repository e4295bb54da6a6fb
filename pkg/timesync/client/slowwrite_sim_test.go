package client_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
)

// TestSimSlowWritesBoundHolds: a client whose state writes (its
// frequency, handed over in the Ready of the update that moved it) take
// 20-200 ms, as on a slow disk, keeps the truth inside its bound and
// inside the root distance it would serve at every instant, during the
// writes too. The update's slew goes with that Ready: a driver that
// applied it only after the write left the clock running the old plan
// while the servo counted the new one as made (seed 9 of the calm LAN
// scenario: a true offset of -235 us outside +-216 us, mid-write). The
// client must write (the test would prove nothing otherwise) and still
// reach the calm LAN's accuracy.
func TestSimSlowWritesBoundHolds(t *testing.T) {
	sim.Seeds(t, 24, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 35))
		s := sim.New(sim.Config{Seed: seed})
		const server = 2
		addServer(s, server, clock.SimConfig{})
		calm := lanNoise{calm: 4 * time.Microsecond}
		cfg := testConfig(server)
		cfg.MinPoll, cfg.MaxPoll, cfg.PollRangeSet = 0, 0, true
		addClient(t, s, clientID, cfg, startClock(rng))
		s.SetWriteLatency(clientID, 20*time.Millisecond, 200*time.Millisecond)
		o := &oracle{t: t, s: s, id: clientID}
		for range 90 {
			calm.set(s, rng, server)
			run(s, time.Second, o)
		}
		c := s.Counters(clientID)
		if c.SlowWrites == 0 {
			t.Fatalf("the client wrote nothing in %v: the test proves nothing", s.Elapsed())
		}
		if off := s.Clock(clientID).TrueOffset().Abs(); off > 20*time.Microsecond {
			t.Fatalf("after %v (%d writes, %v blocked in them): true offset %v, want within 20 us", s.Elapsed(), c.SlowWrites, c.WriteWait, off)
		}
	})
}
