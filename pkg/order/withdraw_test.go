package order

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSimUnavailableSendNeverDelivered: member 1's disk fails, and a
// send's write fails with it: the daemon answers the send 503 (the
// write of its Ready failed). The disk heals, later writes succeed, the
// client sends the message again (what the answer tells it it may do),
// and member 1 restarts from its disk. Every member delivers the message
// once: the failed send was taken back, never delivered, and the resend
// is the only copy. Before, the failed send stayed pending and went out
// with the next good write: delivered twice everywhere.
func TestSimUnavailableSendNeverDelivered(t *testing.T) {
	for _, c := range []struct {
		order Order
		total Total
	}{{FIFO, Sequencer}, {Causal, Sequencer}, {TotalOrder, Lamport}} {
		t.Run(fmt.Sprintf("%v-%v", c.order, c.total), func(t *testing.T) {
			sim.SoakSeeds(t, 5, 100, func(t *testing.T, seed int64) {
				s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 500 * time.Microsecond, Loss: 0.05}})
				cfg := DefaultLANConfig()
				cfg.Total = c.total
				addMembers(t, s, 3, cfg)
				// What each member's core delivered, per message (the
				// daemon announces a delivery once a write holds it;
				// counted here as the core made it).
				got := map[uint32]map[string]int{1: {}, 2: {}, 3: {}}
				order := map[uint32][]string{}
				s.OnReady(func(r sim.Ready) {
					for _, d := range r.Core.(*Core).Deliveries() {
						got[r.Node][string(d.Message)]++
						order[r.Node] = append(order[r.Node], string(d.Message))
					}
				})
				s.Run(time.Second)
				send := func(text string) (failed bool) {
					t.Helper()
					before := s.Counters(1).WriteFailures
					if err := s.Do(1, func(cc core.Core) {
						if err := cc.(*Core).Multicast(s.Clock(1).Now(), c.order, []byte(text)); err != nil {
							t.Fatalf("%s: %v", text, err)
						}
					}); err != nil {
						t.Fatal(err)
					}
					return s.Counters(1).WriteFailures != before
				}
				send("before")
				s.Run(100 * time.Millisecond)

				s.SetDiskFaults(1, 1)
				if !send("m") {
					t.Fatal("the send's write did not fail")
				}
				s.Run(200 * time.Millisecond) // member 1's writes keep failing
				s.SetDiskFaults(1, 0)
				s.Run(time.Second) // a later write succeeds
				if s.Counters(1).WriteFailures < 2 {
					t.Fatalf("member 1's disk failed %d writes, want the send's and later ones", s.Counters(1).WriteFailures)
				}
				if send("m") { // the client sends it again
					t.Fatal("the resend's write failed on a healed disk")
				}
				send("after")
				s.Run(time.Second)
				s.Crash(1)
				s.Run(100 * time.Millisecond)
				s.Restart(1) // reads its disk
				all := func() bool {
					for id := uint32(1); id <= 3; id++ {
						if got[id]["after"] == 0 {
							return false
						}
					}
					return true
				}
				if !s.RunUntil(all, 10*time.Second) {
					t.Fatalf("not every member delivered \"after\": %v", got)
				}
				s.Run(2 * time.Second)
				for id := uint32(1); id <= 3; id++ {
					for _, text := range []string{"before", "m", "after"} {
						if n := got[id][text]; n != 1 {
							t.Errorf("member %d delivered %q %d times, want once (deliveries in order: %v)", id, text, n, order[id])
						}
					}
				}
			})
		})
	}
}

// TestWithdrawRenumbersTheBatch: the daemon takes every frame and call
// waiting into one write (group commit), so a failed write may hold this
// member's Lamport send and, after it, the ack it owes another member's
// message. The send is taken back with its own ack; the other ack takes
// the send's number, and a member that receives the stream once the disk
// works takes it as the next record: no gap, and the taken-back message
// in no queue.
func TestWithdrawRenumbersTheBatch(t *testing.T) {
	now := time.Unix(1e9, 0)
	cfg := DefaultLANConfig()
	cfg.Total = Lamport
	cores := map[uint32]*Core{}
	for id := uint32(1); id <= 3; id++ {
		c, err := New(core.Env{ID: id, Members: []uint32{1, 2, 3}, Now: now, Lamport: &clock.Lamport{}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.Ready()
		c.Advance(true)
		cores[id] = c
	}
	// frames carries c's frames of kind KindOrderRecord to member to, as
	// the node would stamp them (after every stamp they carry).
	frames := func(from uint32, rd core.Ready, to uint32) []core.Message {
		var out []core.Message
		for _, m := range rd.Messages {
			if m.To == to && m.Kind == wire.KindOrderRecord {
				out = append(out, core.Message{From: from, To: to, Kind: m.Kind, Payload: m.Payload, Lamport: 1 << 40, Time: now})
			}
		}
		return out
	}
	c1, c2, c3 := cores[1], cores[2], cores[3]
	if err := c2.Multicast(now, TotalOrder, []byte("x")); err != nil {
		t.Fatal(err)
	}
	rd2 := c2.Ready()
	c2.Advance(true)
	// One batch at member 1: its own send, then member 2's message.
	if err := c1.Multicast(now, TotalOrder, []byte("m")); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames(2, rd2, 1) {
		if err := c1.Step(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := c1.st.Stream.Seq; got != 3 {
		t.Fatalf("member 1 numbered %d records, want 3 (its message, its ack of it, its ack of member 2's)", got)
	}
	rd := c1.Ready()
	if !rd.Promise || len(rd.Entries) == 0 && rd.State == nil {
		t.Fatalf("the batch's Ready: promise %v, a write %v", rd.Promise, len(rd.Entries) > 0 || rd.State != nil)
	}
	c1.Advance(false)
	if _, taken, all := c1.Withdraw(rd.Events); !all || taken != 1 {
		t.Fatal("the send was not taken back")
	}
	s := c1.st.Stream
	if s.Seq != 1 || len(s.Sent) != 1 {
		t.Fatalf("member 1's stream after the withdrawal: seq %d, %d records kept, want 1 and 1", s.Seq, len(s.Sent))
	}
	var r wire.OrderRecord
	if err := r.UnmarshalBinary(s.Sent[0].Payload); err != nil || r.Seq != 1 || r.Type != wire.OrderTotalAck || r.AckSender != 2 {
		t.Fatalf("record 1 is %+v (%v), want member 1's ack of member 2's message", r, err)
	}
	for _, q := range c1.st.Lamport.Queue {
		if string(q.Message) == "m" {
			t.Fatal("the taken-back message is still queued")
		}
	}
	// The disk works again: the stream goes out with its resends, and
	// member 3 hands record 1 on as the next of member 1's stream.
	rd = c1.Ready()
	c1.Advance(true)
	later := now.Add(cfg.Retry)
	c1.Tick(later)
	rd = c1.Ready()
	c1.Advance(true)
	for _, f := range frames(2, rd2, 3) {
		if err := c3.Step(f); err != nil {
			t.Fatal(err)
		}
	}
	got := frames(1, rd, 3)
	if len(got) != 1 {
		t.Fatalf("member 1 resent %d records to member 3, want 1", len(got))
	}
	if err := c3.Step(got[0]); err != nil {
		t.Fatalf("member 3 refused the renumbered record: %v", err)
	}
	if next := c3.st.Stream.In[1].Next; next != 1 {
		t.Fatalf("member 3 holds member 1's stream up to %d, want 1", next)
	}
	for _, c := range []*Core{c1, c2, c3} {
		for _, d := range c.History(0) {
			if string(d.Message) == "m" {
				t.Fatalf("member %d delivered the taken-back message", c.id)
			}
		}
	}
}
