package sim_test

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// writeLatencyPair is node 1, a promiser whose every write takes 50 ms,
// and node 2, a promiser without latency that sends to node 1 every
// tick; frames from node 1 are checked against its disk (nothing leaves
// before the promise it carries is written).
func writeLatencyPair(t *testing.T, seed int64, min, max time.Duration) *sim.Sim {
	s := sim.New(sim.Config{Seed: seed})
	s.AddNode(1, netip.AddrPort{}, restorePromiser, clock.SimConfig{})
	s.AddNode(2, netip.AddrPort{}, func(core.Env) core.Core { return &promiser{to: 1} }, clock.SimConfig{})
	s.SetWriteLatency(1, min, max)
	s.OnSend(func(f sim.SentFrame) {
		if f.From != 1 {
			return
		}
		var on uint64 // an empty disk holds no promise
		if len(f.Disk) == 8 {
			on = binary.BigEndian.Uint64(f.Disk)
		}
		if f.Frame.Term > on {
			t.Fatalf("term %d left with %d on disk: a promise's frame overtook its write", f.Frame.Term, on)
		}
	})
	return s
}

// TestWriteLatency: a node whose writes take 50 ms behaves as the
// daemon's loop does today: a promise's frames leave after its write,
// the loop is blocked meanwhile (it ticks once per write, not every 10
// ms, and the frames that come wait, none lost), and a crash mid-write
// loses the write.
func TestWriteLatency(t *testing.T) {
	const lat = 50 * time.Millisecond
	s := writeLatencyPair(t, 1, lat, lat)
	if !s.RunUntil(func() bool { return s.Counters(1).SlowWrites == 3 }, time.Second) {
		t.Fatal("no third write within 1 s")
	}
	// The third write just began: nothing is stepped until it ends.
	before := s.Counters(1)
	s.Run(lat - time.Millisecond)
	mid := s.Counters(1)
	if mid.Delivered != before.Delivered || mid.Ticks != before.Ticks || mid.Sent != before.Sent {
		t.Fatalf("during a write the loop ran: delivered %d -> %d, ticks %d -> %d, sent %d -> %d",
			before.Delivered, mid.Delivered, before.Ticks, mid.Ticks, before.Sent, mid.Sent)
	}
	s.Run(2 * time.Millisecond)
	after := s.Counters(1)
	if after.Delivered < mid.Delivered+3 || after.Sent != mid.Sent+1 {
		t.Fatalf("after the write: delivered %d -> %d (want the ~5 frames that waited), sent %d -> %d (want its frame)",
			mid.Delivered, after.Delivered, mid.Sent, after.Sent)
	}
	s.Run(time.Second)
	c := s.Counters(1)
	if c.Ticks < 15 || c.Ticks > 25 || c.WriteWait != time.Duration(c.SlowWrites)*lat || c.Missed != 0 {
		t.Fatalf("in %v: %d ticks (want ~%d: one per write), %d writes waited %v, %d missed", s.Elapsed(), c.Ticks, s.Elapsed()/lat, c.SlowWrites, c.WriteWait, c.Missed)
	}
	// A crash mid-write loses it: the restarted core reads the last
	// write that ended.
	disk := binary.BigEndian.Uint64(s.Disk(1))
	writes := s.Counters(1).SlowWrites
	s.RunUntil(func() bool { return s.Counters(1).SlowWrites > writes }, time.Second)
	if s.Run(lat / 2); binary.BigEndian.Uint64(s.Disk(1)) != disk+1 {
		t.Fatalf("disk %d, want %d (the write that ended)", binary.BigEndian.Uint64(s.Disk(1)), disk+1)
	}
	s.Crash(1)
	s.Run(lat)
	if got := binary.BigEndian.Uint64(s.Disk(1)); got != disk+1 {
		t.Fatalf("a write cut by the crash reached the disk: %d, want %d", got, disk+1)
	}
	s.Restart(1)
	s.Run(time.Second)
}

// TestWriteLatencyDrawn: drawn latencies are a function of the seed
// alone, and within their bounds.
func TestWriteLatencyDrawn(t *testing.T) {
	run := func(seed int64) (string, sim.Counters) {
		s := writeLatencyPair(t, seed, 10*time.Millisecond, 90*time.Millisecond)
		s.Run(3 * time.Second)
		return s.Digest(), s.Counters(1)
	}
	d1, c1 := run(7)
	d2, _ := run(7)
	d3, _ := run(8)
	if d1 != d2 || d1 == d3 {
		t.Fatalf("digests: seed 7 %s and %s, seed 8 %s: want the same seed alike, another different", d1, d2, d3)
	}
	if mean := c1.WriteWait / time.Duration(c1.SlowWrites); mean < 40*time.Millisecond || mean > 60*time.Millisecond {
		t.Fatalf("mean write %v over %d writes, want ~50ms", mean, c1.SlowWrites)
	}
}
