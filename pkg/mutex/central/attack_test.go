package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// settled is a 3-member cluster (coordinator 3) past its first hold, with
// member 1's client waiting for "x" behind member 2's grant.
func settled(t *testing.T) (*scenarioRun, mutex.RequestID) {
	t.Helper()
	r := &scenarioRun{t: t}
	r.newCluster(3, nil)
	r.s.Run(2 * time.Second)
	var req mutex.RequestID
	r.s.Do(2, func(c core.Core) { c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "x"}) })
	r.s.Run(10 * time.Millisecond)
	r.s.Do(1, func(c core.Core) { req, _ = c.(*central.Core).Acquire(r.s.Clock(1).Now(), mutex.Request{Lock: "x"}) })
	r.s.Run(10 * time.Millisecond)
	return r, req
}

func (r *scenarioRun) inject(to uint32, m core.Message) error {
	var err error
	m.To, m.Time = to, r.s.Clock(to).Now()
	r.s.Do(to, func(c core.Core) { err = c.Step(m) })
	return err
}

func encode(t *testing.T, p interface{ AppendBinary([]byte) ([]byte, error) }) []byte {
	t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForgedGrants: a grant is taken only from the coordinator followed,
// in its term, for this incarnation, with a fence of that term, the lease
// asked for and an echo of a stamp really sent; anything else is refused
// and counted, and the request keeps waiting.
func TestForgedGrants(t *testing.T) {
	r, req := settled(t)
	m1 := r.core(1)
	d := m1.Report().Detail.(central.Detail)
	base, _ := central.FenceBase(d.Term, []uint32{1, 2, 3})
	good := wire.CentralGrant{Name: "x", Incarnation: m1.Incarnation(), Seq: uint64(req), Fence: base + 99, Echo: 1, LeaseMS: 3000}
	for _, c := range []struct {
		name   string
		from   uint32
		term   uint64
		g      func(g wire.CentralGrant) wire.CentralGrant
		reject string
	}{
		{"from a member that does not coordinate", 2, d.Term, nil, "rejected_not_coordinator"},
		{"of another term", 3, d.Term + 1<<32, nil, "rejected_not_coordinator"},
		{"for another incarnation", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.Incarnation++; return g }, "rejected_stale_incarnation"},
		{"with a fence of an older term", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.Fence = base - 5; return g }, "rejected_bad_fence"},
		{"with a fence beyond the term's", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.Fence = base + 1<<40; return g }, "rejected_bad_fence"},
		{"with an absurd lease", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.LeaseMS = 1 << 31; return g }, "rejected_bad_lease"},
		{"with no lease", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.LeaseMS = 0; return g }, "rejected_bad_lease"},
		{"with a lease longer than asked", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.LeaseMS = 1001; return g }, "rejected_bad_lease"},
		{"echoing a stamp never sent", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.Echo = 1 << 30; return g }, "rejected_bad_echo"},
		{"for a request never made", 3, d.Term, func(g wire.CentralGrant) wire.CentralGrant { g.Seq = 1 << 40; return g }, "rejected_unknown_request"},
	} {
		g := good
		if c.g != nil {
			g = c.g(g)
		}
		before := m1.Report().Counters[c.reject]
		err := r.inject(1, core.Message{From: c.from, Term: c.term, Kind: wire.KindCentralGrant, Payload: encode(t, g)})
		if err == nil || m1.Report().Counters[c.reject] != before+1 {
			t.Errorf("grant %s: %v, %s %d -> %d", c.name, err, c.reject, before, m1.Report().Counters[c.reject])
		}
		if st, _ := m1.Lookup(req); st.Granted {
			t.Fatalf("grant %s: taken", c.name)
		}
	}
}

// TestCoordinatorRefuses: what a member (or anyone in its name) sends the
// coordinator is read as an attacker would write it: an absurd lease is
// refused back to the member, a sync cannot install a holder with a fence
// of the current term it was not granted nor a lease longer than the
// cluster's, one member cannot fill the queue, an older incarnation's frames
// are refused; nothing is granted beside the real holder.
func TestCoordinatorRefuses(t *testing.T) {
	r, req := settled(t)
	co := r.core(3)
	d := co.Report().Detail.(central.Detail)
	if !d.Coordinates {
		t.Fatalf("member 3 does not coordinate: %+v", d)
	}
	base, _ := central.FenceBase(d.Term, []uint32{1, 2, 3})
	inc := r.core(1).Incarnation()
	count := func(k string) uint64 { return co.Report().Counters[k] }

	if err := r.inject(3, core.Message{From: 1, Term: d.Term, Kind: wire.KindCentralRequest, Payload: encode(t,
		wire.CentralRequest{Name: "y", Incarnation: inc, Seq: 50, Stamp: 1 << 20, LeaseMS: 1 << 31})}); err == nil || count("rejected_bad_lease") != 1 {
		t.Errorf("absurd lease: %v, counted %d", err, count("rejected_bad_lease"))
	}
	if count("sent_central_refuse") != 1 {
		t.Errorf("absurd lease not refused back: %d refusals sent", count("sent_central_refuse"))
	}

	sync := wire.CentralSync{Incarnation: inc, Stamp: 1 << 21, MaxSeq: 600, Entries: []wire.CentralSyncEntry{
		{Name: "x", Held: true, LeaseMS: 1000, LeftMS: 900, Seq: 60, Fence: base + 77},    // a fence of this term never granted
		{Name: "x", Held: true, LeaseMS: 1000, LeftMS: 1 << 30, Seq: 61, Fence: base - 1}, // an older term's, after the hold
		{Name: "x", LeaseMS: 1 << 30, Seq: 62},                                            // an absurd lease
	}}
	if err := r.inject(3, core.Message{From: 1, Term: d.Term, Kind: wire.KindCentralSync, Payload: encode(t, sync)}); err != nil {
		t.Fatal(err)
	}
	if count("sync_forged_hold") != 1 || count("sync_late_hold") != 1 || count("sync_bad_lease") != 1 {
		t.Errorf("sync: forged holds %d, late holds %d, bad leases %d, want 1 of each",
			count("sync_forged_hold"), count("sync_late_hold"), count("sync_bad_lease"))
	}
	share := central.DefaultLANConfig().MaxQueue / 2 / 2
	for i := range share + 10 { // more than one member's share
		r.inject(3, core.Message{From: 1, Term: d.Term, Kind: wire.KindCentralRequest, Payload: encode(t,
			wire.CentralRequest{Name: "z", Incarnation: inc, Seq: uint64(1000 + i), Stamp: 1<<21 + uint32(i), LeaseMS: 1000})})
	}
	if got := count("refused_queue_full"); got != 10 {
		t.Errorf("%d requests of one member refused, want the 10 beyond its share of %d", got, share)
	}
	for _, ls := range co.Report().Locks {
		if ld, ok := ls.Detail.(central.LockDetail); ok && ls.Name == "x" && len(ld.Holders) != 1 {
			t.Errorf("x held by %v at the coordinator, want member 2 alone", ld.Holders)
		}
	}

	if err := r.inject(3, core.Message{From: 1, Term: d.Term, Kind: wire.KindCentralSync, Payload: encode(t,
		wire.CentralSync{Incarnation: inc - 1, Stamp: 1 << 23})}); err == nil || count("rejected_stale_incarnation") != 1 {
		t.Errorf("older incarnation: %v", err)
	}
	// The forged stamps did not cut member 1 off: its next frames set its
	// stamp right, and once 2 releases, 1 is granted.
	r.s.Do(2, func(c core.Core) {
		m2 := c.(*central.Core)
		for _, ls := range m2.Report().Locks {
			for _, h := range ls.Holders {
				m2.Release(r.s.Clock(2).Now(), h.ID)
			}
		}
	})
	r.s.Run(time.Second)
	if st, _ := r.core(1).Lookup(req); !st.Granted {
		t.Errorf("member 1 not granted after the forged frames: %+v", r.core(1).Report().Counters)
	}
}

// TestForgedIncarnationUndone: one request "from 1" to the coordinator
// claiming incarnation 99, as a host can send a cluster without a key. On
// main the coordinator then refused every real frame of member 1 as
// stale_incarnation for the rest of its term: member 1's locks timed out.
// Now member 1's next frame stamped after the forged one (member 1 hears
// the forged stamp through the coordinator's beats) brings its incarnation
// back (epoch.Life), and member 1 is granted.
func TestForgedIncarnationUndone(t *testing.T) {
	r := &scenarioRun{t: t}
	r.newCluster(3, nil)
	r.s.Run(2 * time.Second)
	d := r.core(1).Report().Detail.(central.Detail)
	stamp := r.s.Node(3).Status().Lamport + 1000
	err := r.s.Forge(1, 3, wire.KindCentralRequest, d.Term, stamp,
		wire.CentralRequest{Name: "y", Incarnation: r.core(1).Incarnation() + 98, Seq: 1, Stamp: 1, LeaseMS: 1000})
	if err != nil {
		t.Fatalf("forged request refused: %v", err)
	}
	r.s.Run(100 * time.Millisecond)
	if !r.grantedWithin(1, "z", 3*time.Second) {
		t.Fatalf("member 1 not granted z within 3 s of a forged incarnation: coordinator counters %v", r.core(3).Report().Counters)
	}
}

// grantedWithin asks for lock at member id and says whether it is
// granted within d.
func (r *scenarioRun) grantedWithin(id uint32, lock string, d time.Duration) bool {
	var req mutex.RequestID
	var err error
	r.s.Do(id, func(c core.Core) {
		req, err = c.(*central.Core).Acquire(r.s.Clock(id).Now(), mutex.Request{Lock: lock})
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return r.s.RunUntil(func() bool {
		st, ok := r.core(id).Lookup(req)
		return ok && st.Granted
	}, d)
}

// TestForgedBeatUndone: one beat "from" the coordinator to each other
// member numbered 2^32-1, as a host can send a cluster without a key. On
// main each member then took every real beat of the term for an old one
// and never answered it: the coordinator's support ran out, and it
// granted nothing (member 1's lock waited) until the term changed. Now a
// beat stamped after the forged one is the coordinator's own again
// (beats_undone), and member 1 is granted.
func TestForgedBeatUndone(t *testing.T) {
	r := &scenarioRun{t: t}
	r.newCluster(3, nil)
	r.s.Run(2 * time.Second)
	d := r.core(1).Report().Detail.(central.Detail)
	for _, to := range []uint32{1, 2} {
		stamp := r.s.Node(to).Status().Lamport + 1000
		if err := r.s.Forge(3, to, wire.KindCentralBeat, d.Term, stamp, wire.CentralBeat{Beat: 1<<32 - 1}); err != nil {
			t.Fatalf("forged beat refused by %d: %v", to, err)
		}
	}
	r.s.Run(2 * time.Second) // past the confirm window: support must come from real beats
	if !r.grantedWithin(1, "z", 5*time.Second) {
		t.Fatalf("member 1 not granted z within 5 s of a forged beat: coordinator counters %v, member 1's %v", r.core(3).Report().Counters, r.core(1).Report().Counters)
	}
	t.Logf("beats_undone: member 1 %d, member 2 %d", r.core(1).Report().Counters["beats_undone"], r.core(2).Report().Counters["beats_undone"])
}
