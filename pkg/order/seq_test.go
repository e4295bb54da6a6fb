package order

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

func newTestCore(t *testing.T, id uint32, state []byte, log [][]byte) *Core {
	t.Helper()
	c, err := New(core.Env{ID: id, Members: []uint32{1, 2, 3}, Now: time.Unix(1e9, 0), Lamport: &clock.Lamport{}, State: state, Log: log}, DefaultLANConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The sequencer numbers a sender's submissions once and in order, in
// eras: the next ID of the sender's era, or the first of a newer era (a
// restarted sender), never one it numbered, one before its turn, or an
// old era's once a newer one began.
func TestSequencerTakesSubmissionsByEra(t *testing.T) {
	c := newTestCore(t, 1, nil, nil)
	c.seqr.leading, c.seqr.sids, c.seqr.sidStamps = 1, map[uint32]uint64{}, map[uint32]uint64{}
	sid := func(era, n uint64) uint64 { return era<<32 | n }
	for _, step := range []struct {
		from     uint32
		sid      uint64
		at       uint64 // the frame's Lamport stamp
		err      error
		numbered bool
	}{
		{2, sid(1, 1), 10, nil, true},
		{2, sid(1, 3), 11, ErrStale, false}, // before its turn: resent later
		{2, sid(1, 2), 12, nil, true},
		{2, sid(1, 2), 13, nil, false}, // numbered already
		{2, sid(1, 3), 14, nil, true},
		{2, sid(2, 2), 21, ErrStale, false}, // a new era's second before its first
		{2, sid(2, 1), 20, nil, true},       // the sender restarted
		{2, sid(1, 4), 15, nil, false},      // the old era, still in flight: never answered, not numbered
		{2, sid(2, 2), 21, nil, true},
		{2, sid(3, 0), 22, ErrImplausible, false},
		{3, sid(7, 1), 10, nil, true}, // a sender's first in any era
		{3, sid(7, 1<<32-1), 11, ErrStale, false},
		// Issue 29: a submission forged in member 2's name in era 1000.
		{2, sid(1000, 1), 30, nil, true},
		{2, sid(2, 3), 29, nil, false}, // member 2's own, sent before it heard the forged stamp: lost, resent
		{2, sid(2, 3), 31, nil, true},  // stamped after the forged one: member 2's eras again
		{2, sid(2, 3), 32, nil, false}, // a resend: numbered already
		{2, sid(2, 4), 33, nil, true},
		{2, sid(1, 5), 34, ErrStale, false}, // a forged older era stamped later: believed, not numbered out of turn...
		{2, sid(2, 5), 35, nil, true},       // ...and member 2's next is taken all the same
		{2, sid(1, 4), 16, nil, false},      // a late frame of its real earlier era: numbered already
	} {
		before := c.st.Log.last()
		err := c.takeSubmit(step.from, step.sid, []byte("m"), step.at)
		if !errors.Is(err, step.err) || step.err == nil && err != nil {
			t.Fatalf("submission %x from %d: %v, want %v", step.sid, step.from, err, step.err)
		}
		if got := c.st.Log.last() > before; got != step.numbered {
			t.Fatalf("submission %x from %d stamped %d: numbered %v, want %v", step.sid, step.from, step.at, got, step.numbered)
		}
	}
	if n := c.counters["eras_undone"]; n != 2 {
		t.Errorf("eras_undone %d, want 2", n)
	}
}

// A start takes a new submission era, written before anything leaves; a
// submission is not written (it is answered once committed), and leaves
// at once.
func TestSubmissionEraWrittenSubmissionNot(t *testing.T) {
	c := newTestCore(t, 1, nil, nil)
	rd := c.Ready()
	if rd.State == nil || !rd.Promise {
		t.Fatalf("first Ready: state %d bytes, promise %v; want the era, promised", len(rd.State), rd.Promise)
	}
	disk := rd.State
	c.Advance(true)
	if c.st.Log.Era != 1 || c.Submission() != 1<<32 {
		t.Fatalf("era %d, last submission %x", c.st.Log.Era, c.Submission())
	}
	c.seqr.leader = 3
	if err := c.Multicast(time.Unix(1e9, 0), TotalOrder, []byte("m")); err != nil {
		t.Fatal(err)
	}
	rd = c.Ready()
	if rd.State != nil || len(rd.Entries) != 0 || rd.Promise {
		t.Fatalf("a submission was written: state %d bytes, %d records, promise %v", len(rd.State), len(rd.Entries), rd.Promise)
	}
	if len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindOrderSubmit || rd.Messages[0].To != 3 {
		t.Fatalf("want one Submit to 3, got %+v", rd.Messages)
	}
	if sid := c.Submission(); sid != 1<<32|1 || !c.Submitting(sid) {
		t.Fatalf("submission %x, waiting %v", sid, c.Submitting(sid))
	}
	c.Advance(true)

	// Restarted from what it wrote: the next era, the submission gone.
	again := newTestCore(t, 1, disk, nil)
	if again.st.Log.Era != 2 || again.Submitting(1<<32|1) {
		t.Fatalf("after a restart: era %d, old submission waiting %v", again.st.Log.Era, again.Submitting(1<<32|1))
	}
}

// The cores' CPU for one total-order multicast by sequencer, one at a
// time through five members on the simulator (no disk, no sockets, no
// scheduling): every step, Ready and record of the path's four hops, and
// the simulator's own bookkeeping, an upper bound of what the daemons'
// loops spend on it besides the kernel and the disk.
func BenchmarkSequencerMulticast(b *testing.B) {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 20 * time.Microsecond}})
	ids := []uint32{1, 2, 3, 4, 5}
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := New(env, DefaultLANConfig())
			if err != nil {
				b.Fatal(err)
			}
			return c
		}, clock.SimConfig{})
	}
	s.Run(2 * time.Second)
	b.ResetTimer()
	for k := range b.N {
		_ = s.Do(1, func(c core.Core) {
			_ = c.(*Core).Multicast(s.Clock(1).Now(), TotalOrder, []byte(fmt.Sprintf("deposit %d", k)))
		})
		s.Run(time.Millisecond)
	}
}

// History is the last History deliveries, whatever was cut when.
func TestHistoryKeepsTheLast(t *testing.T) {
	cfg := DefaultLANConfig()
	cfg.History = 4
	c, err := New(core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Unix(1e9, 0), Lamport: &clock.Lamport{}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 30; k++ {
		if err := c.Multicast(time.Unix(1e9, 0), FIFO, []byte("m")); err != nil {
			t.Fatal(err)
		}
		h := c.History(0)
		if want := min(k, 4); len(h) != want || h[len(h)-1].Index != uint64(k) || h[0].Index != uint64(k-want+1) {
			t.Fatalf("after %d deliveries: %d kept, %d to %d", k, len(h), h[0].Index, h[len(h)-1].Index)
		}
		if after := c.History(uint64(k - 1)); len(after) != 1 || after[0].Index != uint64(k) || c.LastIndex() != uint64(k) {
			t.Fatalf("after %d deliveries: History(%d) holds %d, last index %d", k, k-1, len(after), c.LastIndex())
		}
	}
}

// A fresh cluster refuses nothing: the recovery's answers that come after
// a majority's, or after a newer election overtook the recovery, are late,
// not bad input (before, a fresh cluster's status showed a dropped
// rejected_order_recover_reply at two members of three).
func TestSimFreshClusterRefusesNothing(t *testing.T) {
	late := uint64(0)
	sim.SoakSeeds(t, 10, 100, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: time.Millisecond}})
		addMembers(t, s, 5, DefaultLANConfig())
		s.Run(3 * time.Second)
		for id := uint32(1); id <= 5; id++ {
			for k, n := range s.Core(id).(*Core).counters {
				if strings.HasPrefix(k, "rejected_") {
					t.Errorf("member %d counted %s %d in a fresh cluster", id, k, n)
				}
			}
			late += s.Core(id).(*Core).counters["late_recover_replies"]
		}
	})
	if late == 0 {
		t.Error("no late recover reply in any seed: the test no longer covers them")
	}
}
