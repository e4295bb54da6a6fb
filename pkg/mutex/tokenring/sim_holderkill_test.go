package tokenring_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// ask queues a request for lock x at member id with lease (0: the
// default, MaxLease) and returns its ID.
func (r *ring) ask(id uint32, lease time.Duration) mutex.RequestID {
	var req mutex.RequestID
	r.s.Do(id, func(cc core.Core) {
		var err error
		if req, err = cc.(*tokenring.Core).Acquire(r.s.Clock(id).Now(), mutex.Request{Lock: "x", Lease: lease, Client: "trial"}); err != nil {
			r.t.Fatal(err)
		}
	})
	return req
}

// holds says whether member id's request req holds its lock.
func (r *ring) holds(id uint32, req mutex.RequestID) bool {
	st, ok := r.core(id).Lookup(req)
	return ok && st.Granted
}

// runUntil runs the ring (no client of its own asking) until pred holds,
// at most limit, and says whether it did.
func (r *ring) runUntil(pred func() bool, limit time.Duration) bool {
	end := r.s.Elapsed() + limit
	for r.s.Elapsed() < end {
		if pred() {
			return true
		}
		r.run(time.Millisecond, false)
	}
	return pred()
}

// lastGrant is member id's last grant of lock x, as the oracle saw it.
func (r *ring) lastGrant(id uint32) *interval {
	ivs := r.grants["x"]
	for i := len(ivs) - 1; i >= 0; i-- {
		if ivs[i].node == id {
			return ivs[i]
		}
	}
	return nil
}

// TestSimHolderKilledGrantsAtItsLeaseEnd: the bench's recovery trial in
// simulation. Five members with the LAN defaults (3 s lease); a client
// holds the lock with the default lease and renews it every second as
// mutexd lock does, a client at another member waits, and the holder's
// daemon is killed at a uniform phase of its renewals. The waiter's grant
// must come after the dead holder's lease ends (the oracle) and no more
// than a few tens of milliseconds after it: the new token waits MaxLease
// (padded twice for the clocks' rates, 6 ms each, and HoldMargin, 20 ms)
// from the last check a promiser answered, and that renewal's lease was
// counted from the check's sending. Main's build waited a confirm window
// (250 ms) more, for a renewal it could have made on a check that old:
// 281 ms after the lease ended, as the lab's 0.28-0.34 s.
//
// Busy: every member's loop up to 50 ms late (sim.SetLate). The new
// token's first check goes out two probe timeouts before its Hold ends,
// so the grant waits for a late loop or two, not for a check's round trip
// through late loops after the Hold: a median of 124 ms after the lease's
// end over 20 seeds, 204 ms with the check sent at the Hold's end.
//
// One slow member: a member other than the holder and the waiter runs its
// loop up to 400 ms late, so it answers the holder's checks late and
// counts its confirmation from its answer. Any majority of the promisers
// meets every check the holder passed, so the new token waits only for the
// majority whose confirmations end first: the slow one does not hold it
// back (waiting for every promiser's, seed 3 granted 198 ms after the
// lease's end, against 29 ms now).
//
// Harsh: the same with the holder's clock 450 ppm slow and every other
// member's 450 ppm fast (900 ppm apart, MaxDriftPPM is 1000: the dead
// holder's lease lasts longest in real time while the others count the
// shortest wait). Only the oracle holds there: the grant may come later,
// never before the lease ends.
func TestSimHolderKilledGrantsAtItsLeaseEnd(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	for _, host := range []killHost{
		{name: "quiet", limit: 2*cfg.HoldMargin + 40*time.Millisecond},
		{name: "one slow member", slow: 400 * time.Millisecond, limit: 2*cfg.HoldMargin + 40*time.Millisecond},
		{name: "busy", late: 50 * time.Millisecond, median: 150 * time.Millisecond},
		{name: "harsh", late: 50 * time.Millisecond, harsh: true},
	} {
		t.Run(host.name, func(t *testing.T) {
			var pasts []time.Duration
			sim.Seeds(t, 20, func(t *testing.T, seed int64) {
				past := holderKilledPast(t, seed, host)
				pasts = append(pasts, past)
				if host.limit != 0 && past > host.limit {
					t.Errorf("the waiter was granted %v after the dead holder's lease ended (want <= %v): %s", past, host.limit, lastTail)
				}
			})
			if len(pasts) == 0 {
				return
			}
			slices.Sort(pasts)
			t.Logf("grant after the dead holder's lease ended: median %v, range %v to %v (%d seeds)", pasts[len(pasts)/2], pasts[0], pasts[len(pasts)-1], len(pasts))
			if host.median != 0 && pasts[len(pasts)/2] > host.median {
				t.Errorf("%s: the waiter was granted a median %v after the dead holder's lease ended (want <= %v)", host.name, pasts[len(pasts)/2], host.median)
			}
		})
	}
}

// killHost is how a host runs TestSimHolderKilledGrantsAtItsLeaseEnd's
// trial: every loop up to late behind, or one member other than the holder
// and the waiter up to slow behind; harsh, clocks 900 ppm apart against
// the wait. median and limit bound the grant's delay after the lease's
// end (0: the oracle only).
type killHost struct {
	name          string
	late, slow    time.Duration
	harsh         bool
	median, limit time.Duration
}

// holderKilledPast runs one trial of TestSimHolderKilledGrantsAtItsLeaseEnd
// and returns how long after the dead holder's lease ended (real time) the
// waiter was granted.
func holderKilledPast(t *testing.T, seed int64, host killHost) time.Duration {
	cfg := tokenring.DefaultLANConfig()
	r := newLANRing(t, seed, 5)
	ids := slices.Clone(r.ids)
	r.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	holder, waiter := ids[0], ids[1]
	r.s.SetLate(ids[2], host.slow)
	for _, id := range r.ids {
		if host.late != 0 {
			r.s.SetLate(id, host.late)
		}
		if host.harsh {
			want := 450.0
			if id == holder {
				want = -450
			}
			r.s.Clock(id).ChangeDrift(want - r.drift[id])
			r.drift[id] = want
		}
	}
	r.run(time.Second, false)
	held := r.ask(holder, 0)
	if !r.runUntil(func() bool { return r.holds(holder, held) }, 5*time.Second) {
		t.Fatalf("member %d never granted\n%s", holder, r.tail())
	}
	waiting := r.ask(waiter, 0)
	renewals := 1 + r.rng.IntN(2)
	for range renewals {
		r.run(cfg.MaxLease/3, false)
		r.s.Do(holder, func(cc core.Core) { cc.(*tokenring.Core).Renew(r.s.Clock(holder).Now(), held, 0) })
	}
	r.run(time.Duration(r.rng.Int64N(int64(cfg.MaxLease/3))), false)
	if !r.holds(holder, held) {
		t.Fatalf("member %d lost its lock before the kill\n%s", holder, r.tail())
	}
	r.s.Crash(holder)
	killed := r.s.Elapsed()
	if !r.runUntil(func() bool { return r.holds(waiter, waiting) }, 8*time.Second) {
		t.Fatalf("member %d not granted within 8 s of the holder's kill\n%s", waiter, r.tail())
	}
	old, next := r.lastGrant(holder), r.lastGrant(waiter)
	lastTail = fmt.Sprintf("holder %d killed at %v after %d renewals, its lease ending at %v; member %d granted at %v", holder, killed, renewals, old.end, waiter, next.start)
	r.run(time.Second, false)
	r.checkExclusion()
	return next.start - old.end
}

// TestSimGrantOnAnOldCheckEndsWithIt: a holder grants a second client on
// a check passed ConfirmWindow ago, nearly (no new check: none is due),
// then dies. The regenerated token waits only MaxLease, padded, from the
// last check its promisers answered, so that grant's lease must end
// within MaxLease of the check's sending, not of the grant: it is
// shorter than asked by the check's age (a lease counted from the grant
// overlaps the next holder's by about that much: the oracle fails).
func TestSimGrantOnAnOldCheckEndsWithIt(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		r := newLANRing(t, seed, 5)
		r.run(time.Second, false)
		ids := slices.Clone(r.ids)
		r.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		holder, waiter := ids[0], ids[1]
		first := r.ask(holder, 0)
		if !r.runUntil(func() bool { return r.holds(holder, first) }, 5*time.Second) {
			t.Fatalf("member %d never granted\n%s", holder, r.tail())
		}
		r.s.Do(holder, func(cc core.Core) { cc.(*tokenring.Core).Release(r.s.Clock(holder).Now(), first) })
		// The second client asks within the confirm window of the first
		// grant's check, late in it.
		r.run(cfg.ConfirmWindow-time.Duration(10+r.rng.IntN(40))*time.Millisecond-(r.s.Elapsed()-r.lastGrant(holder).start), false)
		r.collect()
		firstAt := r.lastGrant(holder).start
		probes := r.s.Sent(wire.KindRingProbe)
		second := r.ask(holder, 0)
		if !r.holds(holder, second) {
			t.Fatalf("the second client was not granted at once on the recent check\n%s", r.tail())
		}
		if r.s.Sent(wire.KindRingProbe) != probes {
			t.Fatalf("the second grant sent a check: the trial needs a grant on an old one")
		}
		r.collect()
		iv := r.lastGrant(holder)
		if got := iv.end - iv.start; got > cfg.MaxLease-cfg.ConfirmWindow/2 {
			t.Errorf("a grant on a check %v old has a lease of %v (want it counted from the check: <= %v)", r.s.Elapsed()-firstAt, got, cfg.MaxLease-cfg.ConfirmWindow/2)
		}
		r.s.Crash(holder)
		waiting := r.ask(waiter, 0)
		if !r.runUntil(func() bool { return r.holds(waiter, waiting) }, 8*time.Second) {
			t.Fatalf("member %d not granted within 8 s of the holder's kill\n%s", waiter, r.tail())
		}
		r.run(time.Second, false)
		r.checkExclusion()
	})
}

// TestSimBareMajorityHolderKilled: the holder's checks reach a bare
// majority only (itself and (n-1)/2 others; the waiter and as many more
// are cut from it both ways), then it dies and the links heal. The
// regenerated token waits out the promisers whose confirmations end
// first, a majority of them: any majority meets the holder's, so one of
// them answered its last check, and the wait covers it. Waiting on one
// promiser fewer overlaps the dead holder's lease (the oracle fails at
// the first seeds); no other test here tells.
func TestSimBareMajorityHolderKilled(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	for _, n := range []int{5, 7} {
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			sim.Seeds(t, 20, func(t *testing.T, seed int64) {
				r := newLANRing(t, seed, n)
				r.run(time.Second, false)
				ids := slices.Clone(r.ids)
				r.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				holder, waiter := ids[0], ids[1]
				held := r.ask(holder, 0)
				if !r.runUntil(func() bool { return r.holds(holder, held) }, 5*time.Second) {
					t.Fatalf("member %d never granted\n%s", holder, r.tail())
				}
				for _, id := range ids[1 : 1+(n-1)/2] {
					r.s.Cut(holder, id)
					r.s.Cut(id, holder)
				}
				waiting := r.ask(waiter, 0)
				for range 1 + r.rng.IntN(2) {
					r.run(cfg.MaxLease/3, false)
					r.s.Do(holder, func(cc core.Core) { cc.(*tokenring.Core).Renew(r.s.Clock(holder).Now(), held, 0) })
				}
				r.run(time.Duration(r.rng.Int64N(int64(cfg.MaxLease/3))), false)
				if !r.holds(holder, held) {
					t.Fatalf("member %d lost its lock before the kill, its checks reaching a bare majority\n%s", holder, r.tail())
				}
				r.s.Crash(holder)
				r.s.Heal()
				if !r.runUntil(func() bool { return r.holds(waiter, waiting) }, 10*time.Second) {
					t.Fatalf("member %d not granted within 10 s of the holder's kill\n%s", waiter, r.tail())
				}
				r.run(time.Second, false)
				r.checkExclusion()
			})
		})
	}
}
