package order

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// electedSequencer elects and returns the sequencer of a fresh simulated
// cluster.
func electedSequencer(t *testing.T, s *sim.Sim) uint32 {
	t.Helper()
	s.Run(time.Second)
	seq := s.Core(1).(*Core).seqr.leader
	if seq == 0 {
		t.Fatal("no sequencer elected")
	}
	return seq
}

// A multicast of the sequencer's total order sent alone (the cluster idle
// before and after) costs exactly 3(N-1)+1 frames on a lossless network:
// the Submit to the sequencer, its Append to the N-1 others, their N-1
// acknowledgements, and the commit point sent alone to the N-1 (not
// acknowledged: it would tell the sequencer only what it sent). One from
// the sequencer itself has no Submit: 3(N-1). The bench's frames row
// (internal/testkit/bench, framesPerMulticast) counts the same way; a
// change of the count is a change of the protocol, and of docs/orderd.md.
func TestSimSequencerFramesPerMulticast(t *testing.T) {
	for _, n := range []int{3, 5, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
			cfg := DefaultLANConfig()
			addMembers(t, s, n, cfg)
			seq := electedSequencer(t, s)
			s.Run(cfg.Heartbeat)
			kinds := []wire.Kind{wire.KindOrderSubmit, wire.KindOrderAppend, wire.KindOrderAppendAck}
			before := map[wire.Kind]uint64{}
			total := func() uint64 {
				var sum uint64
				for _, k := range wire.Kinds() {
					if b, _ := wire.BlockOf(k); b == orderBlockOf(t) {
						sum += s.Sent(k)
					}
				}
				return sum
			}
			for _, k := range kinds {
				before[k] = s.Sent(k)
			}
			all := total()
			const msgs = 10
			others := 0
			for i := range msgs {
				id := uint32(1 + i%n)
				if id != seq {
					others++
				}
				_ = s.Do(id, func(c core.Core) {
					if err := c.(*Core).Multicast(s.Clock(id).Now(), TotalOrder, []byte(fmt.Sprintf("m%d", i))); err != nil {
						t.Fatal(err)
					}
				})
				s.Run(5 * cfg.Heartbeat) // idle again: every member asks nothing, every resend due has gone
			}
			for id := uint32(1); id <= uint32(n); id++ {
				if got := s.Core(id).(*Core).st.Log.Applied; got != msgs {
					t.Fatalf("member %d applied %d of %d", id, got, msgs)
				}
			}
			m := uint64(n - 1)
			want := map[wire.Kind]uint64{
				wire.KindOrderSubmit:    uint64(others),
				wire.KindOrderAppend:    msgs * 2 * m, // the entry, then the commit point alone
				wire.KindOrderAppendAck: msgs * m,     // the entry's only
			}
			for _, k := range kinds {
				if got := s.Sent(k) - before[k]; got != want[k] {
					t.Errorf("%v: %d frames for %d multicasts at N=%d, want %d", k, got, msgs, n, want[k])
				}
			}
			if got, want := total()-all, uint64(msgs*3*(n-1)+others); got != want {
				t.Errorf("%d frames of the order block for %d multicasts (%d submitted) at N=%d, want %d: 3(N-1)+1 each (3(N-1) from the sequencer)", got, msgs, others, n, want)
			}
		})
	}
}

// orderBlockOf is the wire block of orderd's kinds.
func orderBlockOf(t *testing.T) wire.Block {
	t.Helper()
	b, ok := wire.BlockOf(wire.KindOrderAppend)
	if !ok {
		t.Fatal("no block for order_append")
	}
	return b
}

// The commit point sent alone is not acknowledged, so the sequencer does
// not resend it: a member that lost it holds its entry uncommitted, and
// in an idle cluster nothing else would come. It asks once it has heard
// no Append for a Heartbeat (askCommit) and delivers within a few; the
// sequencer answers with the commit point alone, not the entries again.
func TestSimLostCommitPointAsked(t *testing.T) {
	sim.SoakSeeds(t, 10, 100, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 100 * time.Microsecond}})
		cfg := DefaultLANConfig()
		const n = 5
		addMembers(t, s, n, cfg)
		seq := electedSequencer(t, s)
		victim := seq%n + 1
		sender := victim%n + 1
		cut := false
		s.OnSend(func(f sim.SentFrame) {
			if !cut && f.From == victim && f.Frame.Kind == wire.KindOrderAppendAck {
				// The entry is acknowledged: whatever the sequencer sends
				// it next (the commit point alone) is lost.
				cut = true
				s.Cut(seq, victim)
			}
		})
		_ = s.Do(sender, func(c core.Core) {
			if err := c.(*Core).Multicast(s.Clock(sender).Now(), TotalOrder, []byte("m")); err != nil {
				t.Fatal(err)
			}
		})
		if !s.RunUntil(func() bool { return s.Core(sender).(*Core).st.Log.Applied >= 1 }, time.Second) {
			t.Fatal("the sender never delivered")
		}
		s.Run(5 * time.Millisecond)
		if !cut {
			t.Fatal("the member never acknowledged the entry")
		}
		v := s.Core(victim).(*Core)
		if v.st.Log.Applied != 0 || v.st.Log.last() != 1 {
			t.Fatalf("member %d: applied %d, log to %d; want the entry held, its commit point lost", victim, v.st.Log.Applied, v.st.Log.last())
		}
		s.Heal()
		if !s.RunUntil(func() bool { return v.st.Log.Applied >= 1 }, 3*cfg.Heartbeat) {
			t.Fatalf("member %d never delivered after losing the commit point (asked %d times)", victim, v.counters["commit_asks"])
		}
		if v.counters["commit_asks"] == 0 {
			t.Fatalf("member %d delivered without asking: the commit point came again unasked", victim)
		}
		// The answer is the commit point alone: the member holds the
		// entry, and says so.
		if sq := s.Core(seq).(*Core); sq.counters["commits_resent"] == 0 || sq.counters["resent_appends"] != 0 {
			t.Fatalf("the sequencer answered the ask with %d commit points alone and %d resent Appends, want the commit point alone", sq.counters["commits_resent"], sq.counters["resent_appends"])
		}
	})
}
