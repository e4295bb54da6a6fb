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

// TestSimTokenReadLate: a member's loop is paused (SIGSTOP, a debugger, a
// host that does not run it) with the frames that complete a grant or a
// renewal in its kernel, and reads them when it continues, each stamped
// with its arrival, from before the pause. Judged on those stamps, the
// grant (or renewal) was made and reported to the client with its lease
// already over by the member's clock: a lease counts from the check it is
// made on, at most MaxLease back, and the loop read the frames more than
// that late. It now waits for the next reading of the clock (Deadline
// asks for one at once) and is judged there: the check is too old by
// then, so the late grant is refused (grants_late, lock_grant_late) and
// the member checks its token again, granting on that check if the token
// is still the ring's; a late renewal is refused (renewals_late) and its
// lease, ended in the pause, is lost.
//
//   - check: the member holds the token and its client asks a confirm
//     window after the last check: the member sends a check and is paused
//     with the answers in its kernel.
//   - token: the token comes back to the member within a confirm window of
//     its last check there (no new check needed), and the member is paused
//     with the token's frame in its kernel: its arrival completes a grant.
//   - renewal: the member's client renews a confirm window after the last
//     check; the member is paused with the check's answers in its kernel.
//
// The simulator loses the datagrams sent to a paused member and stamps
// the stream frames it holds with the resume, so the trial keeps the
// frames sent to the paused member and steps them into its core with
// their arrival stamps, as the daemon's kernel would have them, then
// ticks it at its clock's reading.
func TestSimTokenReadLate(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	pause := cfg.MaxLease + 500*time.Millisecond
	for _, trust := range []bool{true, false} {
		name := map[bool]string{true: "keyed", false: "vouching"}[trust]
		t.Run("check/"+name, func(t *testing.T) {
			r, b := lateRing(t, trust)
			grantOnce(t, r, b)
			r.run(cfg.ConfirmWindow+50*time.Millisecond, false)
			held := holdFor(r, b, wire.KindRingProbeReply)
			second := r.ask(b, 0) // the check is too old: a new one goes out
			r.s.Pause(b)
			r.run(pause, false)
			readLate(t, r, b, *held, "grants_late", 1)
			r.s.Resume(b)
			if !r.runUntil(func() bool { return r.holds(b, second) }, 2*time.Second) {
				t.Fatalf("member %d not granted after its pause\n%s", b, r.tail())
			}
			r.run(time.Second, false)
			r.checkExclusion()
		})
		t.Run("token/"+name, func(t *testing.T) {
			r, b := lateRing(t, trust)
			a := r.ids[0]
			grantOnce(t, r, b)
			// Member a takes the token from b, and b asks for it back at
			// once: a passes it back as soon as its client releases, well
			// within a confirm window of b's check.
			other := r.ask(a, 0)
			if !r.runUntil(func() bool { return r.holds(a, other) }, time.Second) {
				t.Fatalf("member %d never granted\n%s", a, r.tail())
			}
			second := r.ask(b, 0)
			r.run(2*time.Millisecond, false) // its want reaches a
			held := holdFor(r, b, wire.KindToken)
			r.s.Pause(b)
			r.s.Do(a, func(cc core.Core) { cc.(*tokenring.Core).Release(r.s.Clock(a).Now(), other) })
			r.run(pause, false)
			if len(*held) == 0 {
				t.Fatalf("member %d passed no token to %d\n%s", a, b, r.tail())
			}
			// Its first pass (the others are copies). Without a key the
			// token grants only once the member it came from vouches for
			// it, and that round trip starts at the reading: nothing late.
			readLate(t, r, b, (*held)[:1], "grants_late", map[bool]uint64{true: 1, false: 0}[trust])
			r.s.Resume(b)
			if !r.runUntil(func() bool { return r.holds(b, second) }, 5*time.Second) {
				t.Fatalf("member %d not granted after its pause\n%+v\n%s", b, r.core(b).Report(), r.tail())
			}
			r.run(time.Second, false)
			r.checkExclusion()
		})
		t.Run("renewal/"+name, func(t *testing.T) {
			r, b := lateRing(t, trust)
			req := r.ask(b, 0)
			if !r.runUntil(func() bool { return r.holds(b, req) }, 5*time.Second) {
				t.Fatalf("member %d never granted\n%s", b, r.tail())
			}
			r.run(cfg.ConfirmWindow+50*time.Millisecond, false)
			held := holdFor(r, b, wire.KindRingProbeReply)
			r.s.Do(b, func(cc core.Core) {
				if err := cc.(*tokenring.Core).Renew(r.s.Clock(b).Now(), req, 0); err != nil {
					t.Fatal(err)
				}
			})
			r.s.Pause(b)
			r.run(pause, false)
			readLate(t, r, b, *held, "renewals_late", 1)
			if r.holds(b, req) {
				t.Fatalf("member %d still holds the lock after its lease ended in the pause", b)
			}
		})
		// The client renews 120 ms before its 1 s lease ends and the
		// check's answers come at once, but the member reads them after
		// that end: 200 ms late, the check still within its window, the
		// renewal is made as on time (judged at the answers' stamp); 400 ms
		// late, the check too old to renew on, it is refused and said
		// (renewals_late, lock_renewal_late), not lost without a word.
		for _, pause := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond} {
			renewed := pause < cfg.ConfirmWindow
			t.Run(fmt.Sprintf("renewal-past-end-%v/%s", pause, name), func(t *testing.T) {
				r, b := lateRing(t, trust)
				req := r.ask(b, time.Second)
				if !r.runUntil(func() bool { return r.holds(b, req) }, 5*time.Second) {
					t.Fatalf("member %d never granted\n%s", b, r.tail())
				}
				r.run(880*time.Millisecond, false) // granted within the last millisecond
				held := holdFor(r, b, wire.KindRingProbeReply)
				renewals := r.core(b).Report().Counters["renewals"]
				r.s.Do(b, func(cc core.Core) {
					if err := cc.(*tokenring.Core).Renew(r.s.Clock(b).Now(), req, 0); err != nil {
						t.Fatal(err)
					}
				})
				r.s.Pause(b)
				r.run(pause, false)
				readLate(t, r, b, *held, "renewals_late", 0)
				// The reading was late behind the member's timers: it put
				// that Tick off for the frames that may wait (lateTick),
				// and ticks again when it continues.
				seen := len(r.s.Events())
				r.s.Resume(b)
				r.run(50*time.Millisecond, false)
				said := 0
				for _, e := range r.s.Events()[seen:] {
					if e.Node == b && e.Name == mutex.EventRenewalLate {
						said++
					}
				}
				got := r.core(b).Report().Counters
				want := map[bool]uint64{true: 0, false: 1}[renewed]
				if r.holds(b, req) != renewed || got["renewals"]-renewals != 1-want || got["lost_expired"] != want ||
					got["renewals_late"] != want || uint64(said) != want {
					t.Fatalf("member %d read the answers %v late: holds %v, %d %s events, %v; want renewed %v",
						b, pause, r.holds(b, req), said, mutex.EventRenewalLate, got, renewed)
				}
				r.run(time.Second, false)
				r.checkExclusion()
			})
		}
	}
}

// TestSimTokenReadInTime: the check's answers read a little late are no
// late grant. Read 100 ms late, the check still within the confirm
// window, the grant is made at the reading right after their Step, its
// lease counted from that reading (capped by the check: grantFrom); read
// a second late, the check too old but the lease it gave not over, the
// member checks again without a word (grants_late stays 0) and grants on
// that check. The Tick 100 ms after the answers' stamps is late behind
// the grant made due at that stamp, not behind a timer: measured against
// the grant's deadline, lateTick put it off (and noted the loop late)
// instead of granting there.
func TestSimTokenReadInTime(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	for _, pause := range []time.Duration{100 * time.Millisecond, time.Second} {
		t.Run(pause.String(), func(t *testing.T) {
			r, b := lateRing(t, true)
			grantOnce(t, r, b)
			r.run(cfg.ConfirmWindow+50*time.Millisecond, false)
			held := holdFor(r, b, wire.KindRingProbeReply)
			second := r.ask(b, 0)
			r.s.Pause(b)
			r.run(pause, false)
			checks := r.core(b).Report().Counters["probes_check"]
			readLate(t, r, b, *held, "grants_late", 0)
			rechecked := r.core(b).Report().Counters["probes_check"] > checks
			if fresh := pause < cfg.ConfirmWindow; r.holds(b, second) != fresh || rechecked == fresh {
				t.Fatalf("read %v late: granted at the reading %v, checked again %v; want %v, %v", pause, r.holds(b, second), rechecked, fresh, !fresh)
			}
			r.s.Resume(b)
			if !r.runUntil(func() bool { return r.holds(b, second) }, 2*time.Second) {
				t.Fatalf("member %d not granted after its pause\n%s", b, r.tail())
			}
		})
	}
}

// TestSimTokenRecheckAfterRegeneration: as TestSimTokenReadLate's check
// trial, but another member asks for the lock while the member is paused
// with its check's answers unread, and the others make a new token
// meanwhile. At the reading the check is too old; the member checks its
// token again, that check fails (check_failed: a majority promised the
// newer generation), and it drops the token and waits: it is granted
// later, on the new token, after the other member's lease, and no two
// leases overlap.
func TestSimTokenRecheckAfterRegeneration(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	for _, pause := range []time.Duration{1500 * time.Millisecond, 4 * time.Second, 7 * time.Second} {
		t.Run(pause.String(), func(t *testing.T) {
			r, b := lateRing(t, true)
			a := r.ids[0]
			grantOnce(t, r, b)
			r.run(cfg.ConfirmWindow+50*time.Millisecond, false)
			held := holdFor(r, b, wire.KindRingProbeReply)
			second := r.ask(b, 0)
			r.s.Pause(b)
			other := r.ask(a, 0)
			r.run(pause, false)
			// The grant's lease, counted on the answers' stamps from the
			// check, ends MaxLease after it: read later, it is late too.
			readLate(t, r, b, *held, "grants_late", map[bool]uint64{true: 1, false: 0}[pause > cfg.MaxLease])
			r.s.Resume(b)
			// Granted on the new token, during the pause or after it (its
			// lease may run out before b continues: no client releases).
			if !r.runUntil(func() bool { return r.lastGrant(a) != nil }, 10*time.Second) {
				t.Fatalf("member %d never granted on the new token\n%s", a, r.tail())
			}
			if r.holds(b, second) {
				t.Fatalf("member %d granted on its old token", b)
			}
			if r.holds(a, other) {
				r.s.Do(a, func(cc core.Core) { cc.(*tokenring.Core).Release(r.s.Clock(a).Now(), other) })
			}
			if !r.runUntil(func() bool { return r.holds(b, second) }, 10*time.Second) {
				t.Fatalf("member %d not granted after the other's release\n%+v\n%s", b, r.core(b).Report(), r.tail())
			}
			if n := r.core(b).Report().Counters["check_failed"]; n != 1 {
				t.Errorf("member %d: check_failed = %d, want 1 (%v)", b, n, r.core(b).Report().Counters)
			}
			r.run(time.Second, false)
			r.checkExclusion()
		})
	}
}

// lateRing is a ring of three with the LAN defaults, settled, and the
// member the trials pause.
func lateRing(t *testing.T, trust bool) (*ring, uint32) {
	r := newLANRing(t, 1, 3)
	r.cfg.TrustSenders = trust
	r.run(time.Second, false)
	return r, r.ids[1]
}

// heldFrame is a frame sent to a paused member, and when it reached its
// kernel.
type heldFrame struct {
	m  core.Message
	at time.Duration
}

// holdFor keeps the frames of kind k sent to member id while it is
// paused, with their arrival.
func holdFor(r *ring, id uint32, k wire.Kind) *[]heldFrame {
	var held []heldFrame
	r.s.OnSend(func(f sim.SentFrame) {
		if f.Frame.Receiver == id && f.Frame.Kind == k && r.s.Paused(id) {
			held = append(held, heldFrame{core.Message{From: f.Frame.Sender, To: id, Kind: k, Term: f.Frame.Term,
				Lamport: f.Frame.Lamport, Payload: slices.Clone(f.Frame.Payload), Stream: k == wire.KindToken},
				r.s.Elapsed() + r.s.Link(f.Frame.Sender, id).Delay})
		}
	})
	return &held
}

// readLate steps member id's core, paused, with the frames held for it at
// their arrival stamps, then ticks it at its clock's reading when its
// Deadline asks, as the daemon's loop does when it continues. Neither
// may report a grant or a renewal whose lease is over by the clock; the
// reading refuses want of them, counted in counter.
func readLate(t *testing.T, r *ring, id uint32, held []heldFrame, counter string, want uint64) {
	t.Helper()
	if len(held) == 0 {
		t.Fatalf("nothing was sent to member %d while it was paused\n%s", id, r.tail())
	}
	c := r.core(id)
	start, clk := r.s.Config().Start, r.s.Clock(id)
	now := clk.Now()
	said := 0 // lock_grant_late or lock_renewal_late events, as counter
	late := map[string]string{"grants_late": mutex.EventGrantLate, "renewals_late": mutex.EventRenewalLate}[counter]
	lateOutcome := func(when string) {
		t.Helper()
		for _, e := range c.Ready().Events {
			if e.Name == late {
				said++
			}
			if e.Name != mutex.EventGranted && e.Name != mutex.EventRenewed {
				continue
			}
			exp, _ := (sim.Event{Event: e}).Arg("expires")
			if !now.Before(exp.(time.Time)) {
				t.Fatalf("member %d reported %s %s with its lease over: expires %v, the clock reads %v", id, e.Name, when,
					exp.(time.Time).Sub(start), now.Sub(start))
			}
		}
	}
	for _, h := range held {
		h.m.Time = clk.FromKernel(start.Add(h.at))
		if err := c.Step(h.m); err != nil {
			t.Fatalf("%v from %d: %v", h.m.Kind, h.m.From, err)
		}
	}
	lateOutcome("in the Step of frames stamped before its pause")
	if dl := c.Deadline(); dl.After(now) {
		t.Fatalf("deadline %v on: want a Tick at once", dl.Sub(now))
	}
	c.Tick(now)
	lateOutcome("at the clock's reading")
	if got := c.Report().Counters[counter]; got != want {
		t.Errorf("member %d: %s = %d, want %d (%v)", id, counter, got, want, c.Report().Counters)
	}
	if uint64(said) != want {
		t.Errorf("member %d: %d %s events, want %d", id, said, late, want)
	}
}

// grantOnce asks for the lock at member id, waits for the grant and
// releases it: the token is at id, with a check of it made.
func grantOnce(t *testing.T, r *ring, id uint32) {
	t.Helper()
	first := r.ask(id, 0)
	if !r.runUntil(func() bool { return r.holds(id, first) }, 5*time.Second) {
		t.Fatalf("member %d never granted\n%s", id, r.tail())
	}
	r.s.Do(id, func(cc core.Core) { cc.(*tokenring.Core).Release(r.s.Clock(id).Now(), first) })
}
