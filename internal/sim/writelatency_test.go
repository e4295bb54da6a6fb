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

// slewWriter, at its fifth tick (the node's own first Ready, which saves
// its Lamport floor, is long done), decides a 1 ms slew and hands it over in
// the Ready that writes its state (with a promise or not) and sends a
// datagram to node 2 (timed's NTP polls: no Lamport stamp, so no save of
// the node's own before the Ready); it records when the clock took the
// slew (core.Adjuster).
type slewWriter struct {
	core.Durable
	promise       bool
	ticks         int
	ticked        time.Time
	rd            core.Ready
	adjusted      []time.Time
	advancedAfter int // len(adjusted) when Advance came
}

// slewPeer is node 2's address in TestWriteLatencyAdjustsFirst.
var slewPeer = netip.MustParseAddrPort("10.0.0.2:123")

func (c *slewWriter) Step(core.Message) error          { return nil }
func (c *slewWriter) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (c *slewWriter) Status() any                      { return nil }
func (c *slewWriter) Adjusted(at time.Time)            { c.adjusted = append(c.adjusted, at) }
func (c *slewWriter) Advance(saved bool) {
	c.advancedAfter = len(c.adjusted)
	c.Durable.Advance(saved)
}
func (c *slewWriter) Tick(now time.Time) {
	if c.ticks++; c.ticks < 5 || !c.ticked.IsZero() {
		return
	}
	c.ticked = now
	c.Change(c.promise)
	c.rd.Adjustments = []clock.Adjustment{{Kind: clock.AdjustSlew, Offset: time.Millisecond}}
	c.rd.Datagrams = []core.Datagram{{Addr: slewPeer, Data: []byte("poll")}}
}
func (c *slewWriter) Ready() core.Ready {
	rd := c.rd
	c.rd = core.Ready{}
	c.Durable.Ready(&rd, func() []byte { return []byte("state") })
	return rd
}

// TestWriteLatencyAdjustsFirst: a Ready's clock adjustments are made
// before its write, as the daemon makes them (a discipline counts its
// slew from the tick that decided it: one that waited 100 ms for the
// disk would have its bound trust 100 ms of slewing the clock had not
// done), promise or not: the clock slews while the write runs, and the
// core hears when the clock took it (at the deciding tick's reading)
// before it hears how the write went. The frame leaves before the write
// without a promise, after it with one. (Node 2 never ticks into action:
// it only receives.)
func TestWriteLatencyAdjustsFirst(t *testing.T) {
	const lat = 100 * time.Millisecond
	for _, promise := range []bool{false, true} {
		s := sim.New(sim.Config{Seed: 1})
		c := &slewWriter{promise: promise}
		s.AddNode(1, netip.MustParseAddrPort("10.0.0.1:123"), func(core.Env) core.Core { return c }, clock.SimConfig{})
		s.AddNode(2, slewPeer, func(core.Env) core.Core { return &slewWriter{ticked: time.Unix(1, 0)} }, clock.SimConfig{})
		s.SetWriteLatency(1, lat, lat)
		if !s.RunUntil(func() bool { return !c.ticked.IsZero() }, time.Second) {
			t.Fatal("no tick within 1 s")
		}
		s.Run(lat / 2)
		st, _ := s.Clock(1).State()
		if len(c.adjusted) != 1 || !c.adjusted[0].Equal(c.ticked) || st.SlewLeft >= time.Millisecond {
			t.Fatalf("promise %v, mid-write: the clock took the slew at %v (want once, at the deciding tick's %v), %v of it left: the adjustment waited for the write",
				promise, c.adjusted, c.ticked, st.SlewLeft)
		}
		if sent := s.Counters(1).Sent; sent != map[bool]uint64{false: 1, true: 0}[promise] {
			t.Fatalf("promise %v, mid-write: %d frames sent", promise, sent)
		}
		s.Run(lat)
		if c.advancedAfter != 1 || s.Counters(1).Sent != 1 {
			t.Fatalf("promise %v, after the write: Advance after %d adjustments (want 1), %d frames sent", promise, c.advancedAfter, s.Counters(1).Sent)
		}
	}
}
