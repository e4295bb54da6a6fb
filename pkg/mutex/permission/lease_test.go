package permission_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// TestRecoveryFromAnnouncedEnd: a holder that renewed its lease a while
// before it crashed is given up when the end it announced (and a majority
// acknowledged) has passed, with the margin and a probe round, not
// DeadAfter after its last heartbeat. Heartbeats of 500 ms and a 3 s lease
// keep the two apart: SuspectAfter 1.7 s, DeadAfter 3.5 s, the lease
// renewed 1 s before the crash ends 2 s after it. In Lamport's queue a
// member may enter on a frame of another that never took its request, so
// nobody vouches for an end and the holder is waited for DeadAfter, as
// before.
func TestRecoveryFromAnnouncedEnd(t *testing.T) {
	const slack = 30 * time.Millisecond // a tick, the links' delays and the probe round's
	opt := mutex.Options{Lease: 3 * time.Second, Heartbeat: 500 * time.Millisecond}
	for _, f := range factories {
		for _, sinceRenewal := range []time.Duration{time.Second, 2 * time.Second} {
			t.Run(fmt.Sprintf("%s/renewed %v before", f.Name, sinceRenewal), func(t *testing.T) {
				s := mutextest.NewLockSim(t, f, opt, 5, 1, sim.LinkConfig{Delay: 200 * time.Microsecond}, 0)
				tm := s.Core(1).(*permission.Core).Config()
				granted, acquire := s.Granted, s.Acquire
				var expires time.Time // member 1's lease, on its clock
				s.OnOutcome = func(node uint32, o mutex.Outcome) {
					switch o := o.(type) {
					case mutex.Granted:
						if node == 1 {
							expires = o.Expires
						}
					case mutex.Renewed:
						if node == 1 {
							expires = o.Expires
						}
					}
				}
				var lastAnn string
				s.OnSend(func(sf sim.SentFrame) {
					var h wire.PermHeartbeat
					if sf.From == 1 && sf.Frame.Kind == wire.KindPermHeartbeat && h.UnmarshalBinary(sf.Frame.Payload) == nil && h.Ext {
						lastAnn = fmt.Sprintf("%v %+v", s.Elapsed(), h)
					}
				})
				s.Run(3 * time.Second)
				r1 := acquire(1)
				s.Run(50 * time.Millisecond)
				if granted[1] != r1 {
					t.Fatal("member 1 not granted on an idle cluster")
				}
				r2 := acquire(2) // waits for member 1's deferred reply
				s.Run(time.Second)
				renewed := expires
				s.Do(1, func(cc core.Core) {
					if err := cc.(mutex.Algorithm).Renew(s.Clock(1).Now(), r1, 0); err != nil {
						t.Fatal(err)
					}
				})
				s.Run(sinceRenewal)
				if !expires.After(renewed) {
					t.Fatalf("member 1's renewal not confirmed: lease still ends at %v", expires)
				}
				left := expires.Sub(s.Clock(1).Now())
				s.Crash(1)
				crashed := s.Elapsed()
				for granted[2] != r2 {
					if s.Elapsed()-crashed > 10*time.Second {
						t.Fatal("member 2 not granted 10 s after member 1 crashed")
					}
					s.Run(time.Millisecond)
				}
				took := s.Elapsed() - crashed
				// From the end, padded for clock rates twice (the
				// announcement, the probe's answer), and the margin; never
				// before SuspectAfter after its last (busy) heartbeat.
				lo := max(left+tm.Margin, tm.SuspectAfter-tm.BusyHeartbeat())
				hi := max(left+tm.Margin+10*time.Millisecond, tm.SuspectAfter+tm.ConfirmSlack())
				if f.Name == "lamport" {
					lo, hi = tm.DeadAfter-tm.BusyHeartbeat(), tm.DeadAfter+tm.ConfirmSlack()
				}
				t.Logf("member 2 granted %v after member 1 crashed with %v of lease left (bound %v to %v; DeadAfter %v)", took, left, lo, hi, tm.DeadAfter)
				if took < lo || took > hi+slack {
					t.Errorf("granted %v after the crash, want %v to %v", took, lo, hi)
					for _, e := range s.Events() {
						if e.At > crashed {
							t.Log(e)
						}
					}
					t.Log("last announcement of member 1:", lastAnn)
					for _, id := range []uint32{2, 3} {
						t.Log(id, s.Core(id).(mutex.Algorithm).Report().Counters)
					}
				}
				if n := s.EventsNamed(permission.EventUnconfirmed); len(n) > 0 {
					t.Errorf("%d warnings that a silent member is still heard, the first %v: every member was as silent from the crashed one", len(n), n[0])
				}
				atEnd := s.Core(2).(mutex.Algorithm).Report().Counters["members_given_up_at_lease_end"]
				if want := f.Name != "lamport"; (atEnd > 0) != want {
					t.Errorf("member 2 gave member 1 up at its lease end %d times, want %v", atEnd, want)
				}
			})
		}
	}
}

// announcement returns the stamp and payload of the last heartbeat m sent
// to all (or to member to) that announces a lease end (ok false: none),
// and forgets what was sent.
func (m *member) announcement() (stamp uint64, hb wire.PermHeartbeat, ok bool) {
	for _, msg := range m.out {
		var h wire.PermHeartbeat
		if msg.Kind == wire.KindPermHeartbeat && msg.To == core.Broadcast && h.UnmarshalBinary(msg.Payload) == nil && h.Ext {
			stamp, hb, ok = msg.Lamport, h, true
		}
	}
	m.out = nil
	return stamp, hb, ok
}

// ack feeds from's acknowledgement of m's announcement stamped stamp.
func (m *member) ack(from uint32, stamp uint64) {
	m.t.Helper()
	if err := m.step(from, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Ext: true, Ack: stamp}, m.c.Config().Lamport.Now()+1); err != nil {
		m.t.Fatal(err)
	}
}

// renewed returns the renewals among m's outcomes.
func renewed(c *permission.Core) []mutex.Renewed {
	var out []mutex.Renewed
	for _, o := range c.Outcomes() {
		if r, ok := o.(mutex.Renewed); ok {
			out = append(out, r)
		}
	}
	return out
}

// grantedMember returns member 1 of ids, every member heard, granted lock
// x on every other member's reply.
func grantedMember(t *testing.T, ids []uint32) (*member, mutex.RequestID) {
	t.Helper()
	m, id := answeredMember(t, ids, 0)
	m.tick(0) // the grant is made at a reading of the clock
	if _, ok := m.c.Expires(id); !ok {
		t.Fatal("member 1 not granted")
	}
	return m, id
}

// answeredMember returns member 1 of ids, every member heard, its request
// for lock x (lease: 0 for the default) answered by every other member at
// its clock's reading, and not ticked since.
func answeredMember(t *testing.T, ids []uint32, lease time.Duration) (*member, mutex.RequestID) {
	t.Helper()
	m := newMember(t, 1, ids)
	for _, id := range ids[1:] {
		m.beat(id)
	}
	id, err := m.c.Acquire(m.now, mutex.Request{Lock: "x", Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	m.drain()
	var stamp uint64
	for _, msg := range m.out {
		if msg.Kind == wire.KindRARequest {
			stamp = msg.Lamport
		}
	}
	for _, from := range ids[1:] {
		if err := m.step(from, wire.KindRAReply, wire.PermReply{Name: "x", Incarnation: 1, Answers: 1, Stamp: stamp}, m.c.Config().Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	return m, id
}

// TestRenewalWaitsForMajorityAck: member 1 of five, holding, renews its
// lease only up to an end a majority acknowledged. Before a majority
// acknowledged any announcement it renews as before (an older majority
// would never acknowledge); after, a renewal is announced at once and
// waits: one acknowledgement (two of five with member 1's own) confirms
// nothing, though every member is heard; an acknowledgement of an
// announcement member 1 never made, or implausibly stamped, counts for
// nothing; the third confirms it, its lease ending no later than the end
// announced.
func TestRenewalWaitsForMajorityAck(t *testing.T) {
	ids := []uint32{1, 2, 3, 4, 5}
	m, id := grantedMember(t, ids)
	// Unbounded: a renewal is confirmed at once, as before.
	if err := m.c.Renew(m.now, id, 0); err != nil {
		t.Fatal(err)
	}
	if len(renewed(m.c)) != 1 {
		t.Fatal("an unbounded member's renewal not confirmed at once")
	}
	m.tick(200 * time.Millisecond) // a busy heartbeat asks for acknowledgements
	a, hb, ok := m.announcement()
	if !ok || !hb.AckWanted || hb.Bounded {
		t.Fatalf("busy heartbeat %+v (found %v): want an unbounded announcement asking for acknowledgements", hb, ok)
	}
	m.ack(2, a)
	m.ack(3, a)
	// Bounded now: the next renewal waits.
	m.tick(100 * time.Millisecond)
	m.out = nil
	if err := m.c.Renew(m.now, id, 0); err != nil {
		t.Fatal(err)
	}
	m.drain()
	a, hb, ok = m.announcement()
	if !ok || !hb.Bounded || !hb.AckWanted {
		t.Fatalf("renewal announced %+v (found %v): want a bounded announcement asking for acknowledgements", hb, ok)
	}
	end := m.now.Add(time.Duration(hb.EndMS) * time.Millisecond)
	if hb.EndMS < 2900 {
		t.Fatalf("renewal announced an end %d ms ahead, want the lease's 3 s", hb.EndMS)
	}
	if r := renewed(m.c); len(r) != 0 {
		t.Fatalf("renewal confirmed before any acknowledgement: %+v", r)
	}
	m.ack(2, a)
	for _, from := range ids[1:] {
		m.beat(from) // every member heard, a fresh majority: not enough
	}
	if err := m.step(3, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Ext: true, Ack: a + 1000}, a+2000); err != nil {
		t.Fatal(err) // an announcement member 1 never made: ignored
	}
	if err := m.step(4, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Ext: true, Ack: a}, a); err == nil {
		t.Fatal("an acknowledgement stamped at the announcement it acknowledges was taken")
	}
	m.tick(10 * time.Millisecond)
	if r := renewed(m.c); len(r) != 0 {
		t.Fatalf("renewal confirmed on two acknowledgements of five: %+v", r)
	}
	m.ack(4, a)
	m.tick(0) // confirmed at a reading of the clock
	r := renewed(m.c)
	if len(r) != 1 {
		t.Fatalf("renewal not confirmed on a majority's acknowledgements: %+v", r)
	}
	if r[0].Expires.After(end) {
		t.Errorf("renewed until %v, after the end announced, %v", r[0].Expires, end)
	}
	if counters := m.c.Report().Counters; counters["acks_stale"] != 1 || counters["leases_bounded"] != 1 {
		t.Errorf("counters %v: want one stale acknowledgement, bounded once", counters)
	}
}

// TestCoverage: what member 2 says, answering a probe, of member 1's lease
// end: covered by a bounded announcement with no request waiting, not by
// an unbounded one, one with a request waiting, or once a request of
// member 1 stamped after it came (a grant may follow that the end does not
// cover); only to a member that reads the extended answer. Nor while
// member 2 is cut off, rejoining, or, after its rejoin, unsure what 1
// was granted without it (lentBefore: 1 not heard idle since); again once
// 1 said it was idle and announced anew.
func TestCoverage(t *testing.T) {
	m := newMember(t, 2, []uint32{1, 2, 3})
	m.beat(1)
	m.beat(3)
	ask := func(v2 bool) wire.PermProbeReply {
		t.Helper()
		if v2 {
			if err := m.step(3, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Ext: true}, m.c.Config().Lamport.Now()+1); err != nil {
				t.Fatal(err)
			}
		} else {
			m.beat(3)
			if err := m.step(3, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 200, Busy: true}, m.c.Config().Lamport.Now()+1); err != nil {
				t.Fatal(err)
			}
		}
		m.out = nil
		if err := m.step(3, wire.KindPermProbe, wire.PermProbe{Member: 1}, m.c.Config().Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
		for _, msg := range m.out {
			var r wire.PermProbeReply
			if msg.Kind == wire.KindPermProbeReply && r.UnmarshalBinary(msg.Payload) == nil {
				if r.Ext != v2 {
					t.Fatalf("answer %+v to a member that reads the extended form: %v", r, v2)
				}
				return r
			}
		}
		t.Fatal("no answer to the probe")
		return wire.PermProbeReply{}
	}
	announce := func(h wire.PermHeartbeat) {
		t.Helper()
		h.Interval, h.Ext, h.Busy = 200, true, true
		if err := m.step(1, wire.KindPermHeartbeat, h, m.c.Config().Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	announce(wire.PermHeartbeat{EndMS: 2500})
	if r := ask(true); r.Covered {
		t.Errorf("unbounded announcement vouched for: %+v", r)
	}
	announce(wire.PermHeartbeat{EndMS: 2500, Bounded: true, Pending: true})
	if r := ask(true); r.Covered {
		t.Errorf("announcement with a request waiting vouched for: %+v", r)
	}
	announce(wire.PermHeartbeat{EndMS: 2500, Bounded: true})
	r := ask(true)
	if !r.Covered || r.EndMS < 2500 || r.EndMS > 2510 {
		t.Errorf("bounded announcement: answered %+v, want covered, about 2500 ms", r)
	}
	if r := ask(false); r.Ext || r.Covered {
		t.Errorf("answer to an older member: %+v, want the short form", r)
	}
	if err := m.step(1, wire.KindRARequest, wire.PermRequest{Name: "x", Incarnation: 1, Stamp: m.c.Config().Lamport.Now() + 1}, m.c.Config().Lamport.Now()+1); err != nil {
		t.Fatal(err)
	}
	if r := ask(true); r.Covered {
		t.Errorf("vouched for an end announced before a request of member 1: %+v", r)
	}
	announce(wire.PermHeartbeat{EndMS: 2000, Bounded: true})
	if r := ask(true); !r.Covered {
		t.Errorf("announcement after the request not vouched for: %+v", r)
	}
	// Member 2 hears nobody for RejoinAfter: cut off, it vouches for
	// nothing (member 1 may give it up and grant without it meanwhile).
	// ask steps 3's frames without a Tick, so 2 answers still cut off.
	tm := m.c.Config()
	for quiet := time.Duration(0); quiet <= tm.SuspectAfter-tm.HeartbeatInterval-tm.Margin; quiet += 100 * time.Millisecond {
		m.tick(100 * time.Millisecond)
	}
	if c := m.c.Report().Counters["cut_off"]; c != 1 {
		t.Fatalf("member 2 not cut off after hearing nobody (counters %v)", m.c.Report().Counters)
	}
	if r := ask(true); r.Covered {
		t.Errorf("vouched for an end while cut off: %+v", r)
	}
	// 3 heard: 2 rejoins, and is unsure what 1 was granted without it
	// (lentBefore, which the rejoin sets for every member, so this case
	// alone does not tell the two guards apart) until 1 says, after the
	// rejoin, that it is idle.
	rejoins := m.c.Report().Counters["rejoins_started"]
	m.tick(10 * time.Millisecond)
	if m.c.Report().Counters["rejoins_started"] != rejoins+1 {
		t.Fatalf("member 2 did not rejoin on hearing 3 again (counters %v)", m.c.Report().Counters)
	}
	if r := ask(true); r.Covered {
		t.Errorf("vouched for an end while rejoining: %+v", r)
	}
	// The rejoin ends SuspectAfter later (1 stays silent, 3 beats): 2 is
	// neither cut off nor rejoining, but 1's newest announcement it took
	// came before the cut, and a grant without 2 may have followed.
	for waited := time.Duration(0); waited <= tm.SuspectAfter; waited += 100 * time.Millisecond {
		m.beat(3)
		m.tick(100 * time.Millisecond)
	}
	if r := ask(true); r.Covered {
		t.Errorf("vouched, after the rejoin, for an end announced before it (member 1 not heard idle since): %+v", r)
	}
	// 1 says it is idle, then announces again: vouched for again.
	m.beat(1)
	announce(wire.PermHeartbeat{EndMS: 1500, Bounded: true})
	if r := ask(true); !r.Covered {
		t.Errorf("announcement after 1 said it was idle after the rejoin not vouched for: %+v", r)
	}
	if downs := m.events(liveness.EventMemberDown); len(downs) > 0 {
		t.Errorf("members given up: %v", downs)
	}
}

// TestFirstAnnouncementBounded: a member whose only busy time so far was
// back-to-back entries (each request counts as its heartbeat, so no
// heartbeat asked for acknowledgements) takes the lock and crashes. Its
// first busy heartbeat, 200 ms after its request, asks; once a majority
// acknowledged, it says at once that it is bounded, so a crash 250 ms
// after the grant is given up SuspectAfter after its last heartbeat, not
// DeadAfter (before, the bounded announcement waited for the next
// heartbeat, 400 ms after the request). A crash within a busy heartbeat of
// the grant, before any heartbeat announced the lease, is waited for
// DeadAfter as before.
func TestFirstAnnouncementBounded(t *testing.T) {
	const slack = 30 * time.Millisecond
	for _, after := range []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, 314 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			s := mutextest.NewLockSim(t, permission.RicartAgrawalaFactory, mutex.Options{}, 5, 1, sim.LinkConfig{Delay: 200 * time.Microsecond}, 5*time.Second)
			tm := s.Core(1).(*permission.Core).Config()
			for range 300 {
				r := s.Acquire(1)
				if !s.RunUntil(func() bool { return s.Granted[1] == r }, time.Second) {
					t.Fatal("member 1 not granted")
				}
				s.Do(1, func(c core.Core) { c.(mutex.Algorithm).Release(s.Clock(1).Now(), r) })
			}
			s.Run(5 * time.Second)
			r1 := s.Acquire(1)
			if !s.RunUntil(func() bool { return s.Granted[1] == r1 }, time.Second) {
				t.Fatal("member 1 not granted")
			}
			r2 := s.Acquire(2)
			s.Run(after)
			s.Crash(1)
			crashed := s.Elapsed()
			if !s.RunUntil(func() bool { return s.Granted[2] == r2 }, 10*time.Second) {
				t.Fatal("member 2 not granted 10 s after member 1 crashed")
			}
			took := s.Elapsed() - crashed
			lo, hi := tm.SuspectAfter-tm.BusyHeartbeat(), tm.SuspectAfter+tm.ConfirmSlack()
			if after < tm.BusyHeartbeat() {
				lo, hi = tm.DeadAfter-tm.BusyHeartbeat(), tm.DeadAfter+tm.ConfirmSlack()
			}
			t.Logf("crashed %v after its grant: member 2 granted %v after (bound %v to %v)", after, took, lo, hi)
			if took < lo || took > hi+slack {
				t.Errorf("granted %v after the crash, want %v to %v", took, lo, hi)
			}
		})
	}
}

// TestEndedLeaseNotRenewed: a bounded member's renewal asked while its
// lease ran and acknowledged by a majority only after it ended is lost,
// not confirmed. The daemon steps datagrams as they come, so the
// acknowledgements may be stepped before the Tick that would have expired
// the lease: confirmed then, an ended lease came back to life until the
// end acknowledged, while the others, who vouched for the old end, had
// given the member up (the lease-end argument's "a lease that ended cannot
// be renewed").
func TestEndedLeaseNotRenewed(t *testing.T) {
	ids := []uint32{1, 2, 3, 4, 5}
	m, id := grantedMember(t, ids)
	exp0, _ := m.c.Expires(id)
	m.tick(200 * time.Millisecond) // a busy heartbeat asks for acknowledgements
	a, _, ok := m.announcement()
	if !ok {
		t.Fatal("no announcement to acknowledge")
	}
	m.ack(2, a)
	m.ack(3, a)
	for m.now.Before(exp0.Add(-300 * time.Millisecond)) {
		for _, from := range ids[1:] {
			m.beat(from)
		}
		m.tick(100 * time.Millisecond)
	}
	m.out = nil
	if err := m.c.Renew(m.now, id, 0); err != nil {
		t.Fatal(err)
	}
	m.drain()
	a2, hb, ok := m.announcement()
	if !ok || !hb.Bounded || !hb.AckWanted {
		t.Fatalf("renewal announced %+v (found %v): want a bounded announcement asking for acknowledgements", hb, ok)
	}
	if r := renewed(m.c); len(r) != 0 {
		t.Fatalf("a bounded member's renewal confirmed before any acknowledgement: %+v", r)
	}
	m.now = exp0.Add(300 * time.Millisecond) // no Tick: the loop runs late
	m.ack(2, a2)
	m.ack(3, a2)
	m.ack(4, a2)
	m.tick(0) // the loop's next reading of the clock
	if r := renewed(m.c); len(r) != 0 {
		t.Fatalf("a lease that ended at %v renewed at %v: %+v", exp0, m.now, r)
	}
	if _, held := m.c.Expires(id); held {
		t.Fatal("member 1 still holds a lease that ended")
	}
}

// TestLeaseEndNeedsMajoritySilence: the SuspectAfter floor of the lease
// end rule, driven by hand on member 1 of three. Member 2 holds by 1's
// leave, having announced (bounded, no request waiting) that its leases
// end 1 s ahead, and falls silent here; 1 probes 3 SuspectAfter later,
// the end and the margin long past. 3 vouches for that end but heard 2
// later than 1 did, half of DeadAfter - SuspectAfter later (the link
// between 1 and 2 is broken, 3's works a while longer): 1 must not give
// 2 up, however long ago its leases ended, for a majority silent from 2
// over SuspectAfter is what shows that 2, if alive, took itself for cut
// off and rejoins before it acts again, so that it cannot give 1 up in
// turn (the package doc, "Lease ends"). 3's answer to the next probe,
// SuspectAfter after it last heard 2, shows that silence: 1 gives 2 up at
// its lease end, before DeadAfter.
func TestLeaseEndNeedsMajoritySilence(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3})
	tm := m.c.Config()
	m.beat(2)
	m.beat(3)
	if err := m.step(2, wire.KindRARequest, wire.PermRequest{Name: "x", Incarnation: 1, Stamp: m.c.Config().Lamport.Now() + 1}, m.c.Config().Lamport.Now()+1); err != nil {
		t.Fatal(err)
	}
	var replied bool
	for _, msg := range m.out {
		replied = replied || msg.To == 2 && msg.Kind == wire.KindRAReply
	}
	if !replied {
		t.Fatal("member 1 did not give 2 its leave")
	}
	if err := m.step(2, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 200, Busy: true, Ext: true, Bounded: true, EndMS: 1000}, m.c.Config().Lamport.Now()+1); err != nil {
		t.Fatal(err)
	}
	lastHeard := m.now
	answer := func(probe uint64, silent time.Duration) {
		t.Helper()
		r := wire.PermProbeReply{Member: 2, SilentMS: uint32(silent.Milliseconds()), Probe: probe, Ext: true, Covered: true,
			EndMS: int32(lastHeard.Add(time.Second).Sub(m.now).Milliseconds())}
		if err := m.step(3, wire.KindPermProbeReply, r, m.c.Config().Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	stamp := m.awaitProbe(3, 2, tm.DeadAfter)
	if quiet := m.now.Sub(lastHeard); quiet >= tm.DeadAfter-tm.Margin {
		t.Fatalf("first probe about member 2 %v after it was last heard: want the lease end rule's, well before DeadAfter (%v)", quiet, tm.DeadAfter)
	}
	m.tick(time.Millisecond)
	heardAt3 := lastHeard.Add((tm.DeadAfter - tm.SuspectAfter) / 2)
	answer(stamp, m.now.Sub(heardAt3))
	if downs := m.events(liveness.EventMemberDown); len(downs) > 0 {
		t.Fatalf("member 2 given up %v after its silence here began, its leases ended %v before, though 3 heard it %v ago: %v",
			m.now.Sub(lastHeard), m.now.Sub(lastHeard.Add(time.Second)), m.now.Sub(heardAt3), downs[0].Msg)
	}
	stamp = m.awaitProbe(3, 2, tm.DeadAfter)
	m.tick(time.Millisecond)
	if quiet := m.now.Sub(heardAt3); quiet < tm.SuspectAfter {
		t.Fatalf("member 1 asked again %v after 3 last heard 2: before a silence of SuspectAfter (%v) could show", quiet, tm.SuspectAfter)
	}
	answer(stamp, m.now.Sub(heardAt3))
	downs := m.events(liveness.EventMemberDown)
	if len(downs) != 1 {
		t.Fatalf("member 2 not given up %v after it fell silent here, 3 silent from it for %v: %v", m.now.Sub(lastHeard), m.now.Sub(heardAt3), m.evs)
	}
	if n := m.c.Report().Counters["members_given_up_at_lease_end"]; n != 1 || m.now.Sub(lastHeard) >= tm.DeadAfter {
		t.Errorf("member 2 given up %v after it fell silent (DeadAfter %v), %d times at its lease end: want at its lease end", m.now.Sub(lastHeard), tm.DeadAfter, n)
	}
}
