package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestExpiredGrantsBounded (hunt): the waiter crashes, and requests keep
// coming in its name (forged, without a key: its incarnation is in every
// frame it sent), each on a lock of its own, granted, never confirmed (the
// grants go to the dead member), its lease ending at the coordinator.
// Each such grant is kept in peer.expired until the member's next sync,
// which never comes: the list grew by one per forged request, for as long
// as the forger went on (vnow and causalDeadline walk it at every grant
// pass and deadline), though every entry past 2 x silentLapse after its
// lease's end only lapses (vnow). Bounded, it would keep the unlapsed ones
// and the earliest lapsed per member (what vnow reads).
func TestExpiredGrantsBounded(t *testing.T) {
	x := crossingCluster(t, central.TokenAskFactory, time.Second)
	s := x.s
	co := func() *central.Core { return s.Core(x.co).(*central.Core) }
	inc := s.Core(x.waiter).(*central.Core).Incarnation()
	s.Run(200 * time.Millisecond) // the waiter has synced this term
	s.Crash(x.waiter)
	const forged = 60
	for i := range forged {
		seq := uint64(100 + i)
		var v clock.Vector
		v.Set(x.waiter, uint64(inc)<<32|seq)
		vb, err := v.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		d := co().Report().Detail.(central.Detail)
		ps := s.Node(x.co).Peer(x.waiter)
		_ = s.Forge(x.waiter, x.co, wire.KindTokenAskRequest, d.Term, ps.Stamp+1, wire.TokenAskRequest{Vector: vb,
			CentralRequest: wire.CentralRequest{Name: "f", Incarnation: inc, Seq: seq, Stamp: uint32(1000 + i), LeaseMS: 100}})
		s.Run(250 * time.Millisecond) // granted, its 100 ms lease ended
	}
	n := central.ExpiredOf(co(), x.waiter)
	cs := co().Report().Counters
	t.Logf("after %d forged requests over %v: %d expired grants kept for member %d (leases_ended_unreleased=%d, grants_made=%d)",
		forged, forged*250*time.Millisecond, n, x.waiter, cs["leases_ended_unreleased"], cs["grants_made"])
	if cs["leases_ended_unreleased"] < forged/2 {
		t.Fatalf("only %d leases ended unreleased: the test no longer reaches the case", cs["leases_ended_unreleased"])
	}
	// 2 x silentLapse (4 x DeadAfter) is 2.5 s at a 100 ms heartbeat: ten
	// forged grants' worth at 250 ms each, and one lapsed.
	if n > 12 {
		t.Fatalf("%d expired grants kept for member %d, one per forged request: unbounded while frames come in its name", n, x.waiter)
	}
}
