package order

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order/rsm"
)

// announced is one delivery as a member announced it: the Delivery and
// whether its event went before the Ready's write.
type announced struct {
	Delivery
	beforeSave bool
}

// A member announces the sequencer's total order before its delivery
// record is written: crashed right after announcing two deliveries, and
// before any write of their record (its disk fails every write from
// then on), it announces exactly those two again once restarted, with
// the same log numbers and messages, at new delivery indexes past every
// index it used, and nothing else again; its state machine, rebuilt
// from the log, ends equal to the others'.
func TestRestartRepeatsOnlyUnwrittenDeliveries(t *testing.T) {
	s := sim.New(sim.Config{Seed: 3, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	cfg := DefaultLANConfig()
	cfg.Machine = func() StateMachine { return rsm.New() }
	ids := []uint32{1, 2, 3, 4, 5}
	addMembers(t, s, len(ids), cfg)
	got := map[uint32][]announced{}
	s.OnReady(func(r sim.Ready) {
		for _, d := range r.Core.(*Core).Deliveries() {
			got[r.Node] = append(got[r.Node], announced{Delivery: d})
		}
	})
	s.Run(time.Second)
	seqr, _, ok := s.Core(1).(*Core).Election().Leader()
	if !ok {
		t.Fatal("no sequencer after a second")
	}
	// x: the member that crashes; from: the sender; both not the sequencer.
	var others []uint32
	for _, id := range ids {
		if id != seqr {
			others = append(others, id)
		}
	}
	x, from := others[0], others[1]
	send := func(text string) {
		t.Helper()
		_ = s.Do(from, func(c core.Core) {
			if err := c.(*Core).Multicast(s.Clock(from).Now(), TotalOrder, []byte(text)); err != nil {
				t.Fatal(err)
			}
		})
	}
	deliveredAt := func(id uint32, n int) func() bool {
		return func() bool { return len(got[id]) >= n }
	}
	send("deposit 100")
	send("deposit 200")
	if !s.RunUntil(deliveredAt(x, 2), 2*time.Second) {
		t.Fatalf("member %d delivered %d of 2", x, len(got[x]))
	}
	s.Run(50 * time.Millisecond) // their record written
	s.SetDiskFaults(x, 1)
	send("deposit 10")
	send("interest 1%")
	if !s.RunUntil(deliveredAt(x, 4), 2*time.Second) {
		t.Fatalf("member %d delivered %d of 4 with its writes failing: it must deliver committed entries all the same", x, len(got[x]))
	}
	s.Crash(x)
	s.SetDiskFaults(x, 0)
	s.Restart(x)
	send("deposit 1")
	if !s.RunUntil(deliveredAt(x, 7), 3*time.Second) {
		t.Fatalf("member %d delivered %d after its restart, want the 2 unwritten again and the new one", x, len(got[x])-4)
	}
	s.Run(200 * time.Millisecond)

	// Which announcements went before their Ready's write.
	early := map[uint64]bool{} // by index, at x
	for _, e := range s.EventsNamed(EventDelivered) {
		if e.Node == x {
			idx, _ := e.Arg("index")
			early[idx.(uint64)] = e.BeforeSave
		}
	}
	before, after := got[x][:4], got[x][4:]
	for _, d := range before {
		if !early[d.Index] {
			t.Errorf("delivery %d (log number %d) at member %d waited for its write", d.Index, d.Seq, x)
		}
	}
	if len(after) != 3 {
		t.Fatalf("after the restart member %d delivered %d messages, want 3: %+v", x, len(after), after)
	}
	for i, d := range after[:2] {
		was := before[2+i]
		if d.Seq != was.Seq || string(d.Message) != string(was.Message) || d.Sender != was.Sender || d.SID != was.SID {
			t.Errorf("repeat %d: log number %d %q, announced before the crash as %d %q", i, d.Seq, d.Message, was.Seq, was.Message)
		}
		if d.Result != was.Result {
			t.Errorf("repeat of %q: the state machine answered %q, before the crash %q", d.Message, d.Result, was.Result)
		}
	}
	if d := after[2]; string(d.Message) != "deposit 1" || d.Seq != before[3].Seq+1 {
		t.Errorf("after the repeats: log number %d %q, want %d \"deposit 1\"", d.Seq, d.Message, before[3].Seq+1)
	}
	last := before[3].Index
	for _, d := range after {
		if d.Index <= last {
			t.Errorf("index %d after index %d: a restart must not give an index away again", d.Index, last)
		}
		last = d.Index
	}
	if after[0].Index <= before[3].Index+indexSlack-2 {
		t.Errorf("the restart's first index %d: want past %d (the last written, %d, plus indexSlack)", after[0].Index, before[1].Index+indexSlack, before[1].Index)
	}
	want := string(s.Core(seqr).(*Core).Machine().Snapshot())
	for _, id := range ids {
		if m := string(s.Core(id).(*Core).Machine().Snapshot()); m != want {
			t.Errorf("member %d's state machine %s, the sequencer's %s", id, m, want)
		}
	}
}

// The sequencer's total order under crashes while every member's disk
// fails now and then: a member that crashes before a failed write is
// retried has announced deliveries whose record it never wrote, and its
// restart announces them again; the oracle holds it to the promise
// (oracle.announced): again only after a restart, only what was never
// written, in place, and nothing at two positions or two indexes.
func TestSimSequencerAnnouncedBeforeWritten(t *testing.T) {
	repeats, runs := 0, 0
	sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
		o := runChaos(t, seed, chaos{nodes: 5, total: Sequencer, crashes: true, burstCrashes: true, diskFaults: 0.4, totalOnly: true, msgs: 60})
		repeats += o.repeats
		runs++
	})
	t.Logf("%d announcements repeated after restarts over %d runs", repeats, runs)
	if runs >= 10 && repeats == 0 {
		t.Error("no restart repeated an announcement: the runs never crashed a member between an announcement and its record")
	}
}

// Indexes only increase across restarts, and a fresh member starts at 1.
func TestIndexesAfterRestart(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	addMembers(t, s, 3, DefaultLANConfig())
	o := newOracle(t, s)
	o.sequencer = true
	s.Run(time.Second)
	for i := range 6 {
		o.send(uint32(1+i%3), []Order{FIFO, TotalOrder}[i%2], fmt.Sprintf("m%d", i))
		s.Run(20 * time.Millisecond)
	}
	if first := o.delivered[1][0].Index; first != 1 {
		t.Fatalf("a fresh member's first index %d, want 1", first)
	}
	s.Restart(1)
	s.Run(time.Second)
	o.send(1, FIFO, "after")
	s.Run(100 * time.Millisecond)
	if !o.complete() {
		t.Fatalf("incomplete:\n%s", o.missing())
	}
	idx := []uint64{}
	for _, d := range o.delivered[1] {
		idx = append(idx, d.Index)
	}
	if !slices.IsSorted(idx) || idx[len(idx)-1] <= indexSlack {
		t.Fatalf("member 1's indexes %v: want increasing, past indexSlack (%d) after its restart", idx, indexSlack)
	}
}
