package tokenring_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// TestTicksOnlyAtDeadlines drives rings whose members are ticked only at
// their Deadline (and stepped when a frame arrives), never on a fixed
// tick, over a network that delays and loses frames, with every member's
// client taking and releasing one lock over and over. If Deadline missed a
// timer (an ack timeout, a probe, a loss, a hold, a lease), a lost token
// would be looked for late or never: so members are also ticked early, at
// random, and such a Tick must change nothing. Every request must be
// granted, and no two grants may overlap.
func TestTicksOnlyAtDeadlines(t *testing.T) {
	for seed := range 6 {
		deadlineRun(t, uint64(seed))
	}
}

type frame struct {
	at time.Time
	to uint32
	m  core.Message
	tf scenario.Frame // the scenario tracer's copy (scenario_test.go)
}

type ringClient struct {
	req     mutex.RequestID
	waiting bool
	holdTil time.Time
	nextAt  time.Time
	grants  int
}

func deadlineRun(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 99))
	ids := []uint32{1, 2, 3}
	loss := 0.05 * float64(seed%3)
	cores := map[uint32]*tokenring.Core{}
	for _, id := range ids {
		cfg := tokenring.DefaultLANConfig()
		cfg.ID, cfg.Members, cfg.Rand = id, ids, rand.New(rand.NewPCG(seed, uint64(id)))
		c, err := tokenring.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cores[id] = c
	}
	now := t0
	var net []frame
	clients := map[uint32]*ringClient{}
	for _, id := range ids {
		clients[id] = &ringClient{nextAt: now.Add(time.Duration(rnd.IntN(300)) * time.Millisecond)}
	}
	var holder uint32
	var heldUntil time.Time
	lastFence := uint64(0)
	ticks := 0
	flush := func(id uint32) {
		c := cores[id]
		rd := c.Ready()
		c.Advance(true)
		for _, m := range rd.Messages {
			m.From = id
			for _, to := range ids {
				if to == id || m.To != core.Broadcast && m.To != to {
					continue
				}
				if rnd.Float64() < loss && (!m.Stream || rnd.IntN(4) == 0) { // a stream frame is lost only when its link breaks
					continue
				}
				net = append(net, frame{at: now.Add(time.Duration(200+rnd.IntN(800)) * time.Microsecond), to: to, m: m})
			}
		}
		cl := clients[id]
		for _, o := range c.Outcomes() {
			switch o := o.(type) {
			case mutex.Granted:
				if holder != 0 && now.Before(heldUntil) {
					t.Fatalf("seed %d: member %d granted %s at %v while member %d holds it", seed, id, o.Lock, now.Sub(t0), holder)
				}
				if o.Fence <= lastFence {
					t.Fatalf("seed %d: fence %d after %d", seed, o.Fence, lastFence)
				}
				lastFence, holder = o.Fence, id
				hold := time.Duration(20+rnd.IntN(80)) * time.Millisecond
				heldUntil, cl.holdTil = now.Add(hold), now.Add(hold)
				cl.waiting = false
				cl.grants++
			case mutex.Lost:
				t.Fatalf("seed %d: member %d lost its lock: %v", seed, id, o.Reason)
			}
		}
	}
	end := t0.Add(20 * time.Second)
	for now.Before(end) {
		// The next thing that happens: a frame, a deadline, a client.
		next := end
		for _, f := range net {
			if f.at.Before(next) {
				next = f.at
			}
		}
		for _, id := range ids {
			if d := cores[id].Deadline(); !d.IsZero() && d.Before(next) {
				next = d
			}
			cl := clients[id]
			for _, at := range []time.Time{cl.nextAt, cl.holdTil} {
				if !at.IsZero() && at.Before(next) {
					next = at
				}
			}
		}
		if next.After(now) {
			now = next
		}
		slices.SortStableFunc(net, func(a, b frame) int { return a.at.Compare(b.at) })
		for len(net) > 0 && !net[0].at.After(now) {
			f := net[0]
			net = net[1:]
			f.m.Time = now
			cores[f.to].Step(f.m)
			flush(f.to)
		}
		for _, id := range ids {
			c, cl := cores[id], clients[id]
			if d := c.Deadline(); d.After(now) && rnd.IntN(4) == 0 {
				// Early: a Tick before the deadline must change nothing.
				before := c.Report()
				c.Tick(now)
				if rd := c.Ready(); !rd.Empty() || len(c.Outcomes()) != 0 || c.Deadline() != d {
					t.Fatalf("seed %d: member %d ticked at %v, before its deadline %v, and did something: %+v\nbefore %+v", seed, id, now.Sub(t0), d.Sub(t0), rd, before)
				}
			}
			if d := c.Deadline(); !d.IsZero() && !d.After(now) {
				c.Tick(now)
				ticks++
				flush(id)
				if d := c.Deadline(); !d.IsZero() && !d.After(now) {
					t.Fatalf("seed %d: member %d: deadline %v is not after the Tick at %v that was due\n%+v", seed, id, d.Sub(t0), now.Sub(t0), c.Report())
				}
			}
			if !cl.holdTil.IsZero() && !cl.holdTil.After(now) {
				if err := c.Release(now, cl.req); err != nil {
					t.Fatalf("seed %d: member %d release: %v", seed, id, err)
				}
				holder, cl.holdTil = 0, time.Time{}
				cl.nextAt = now.Add(time.Duration(rnd.IntN(200)) * time.Millisecond)
				flush(id)
			}
			if !cl.waiting && cl.holdTil.IsZero() && !cl.nextAt.IsZero() && !cl.nextAt.After(now) {
				req, err := c.Acquire(now, mutex.Request{Lock: "x", Lease: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				cl.req, cl.waiting, cl.nextAt = req, true, time.Time{}
				flush(id)
			}
		}
	}
	for _, id := range ids {
		if cl := clients[id]; cl.grants < 5 {
			t.Errorf("seed %d (loss %.0f%%): member %d granted only %d times in 20 s (%d ticks in all)\n%+v", seed, loss*100, id, cl.grants, ticks, cores[id].Report())
		}
	}
	// An idle ring ticks for heartbeats only: far fewer ticks than a 10 ms
	// ticker's 2000 per member in 20 s.
	if ticks > 3*2000 {
		t.Errorf("seed %d: %d ticks for 3 members in 20 s", seed, ticks)
	}
}
