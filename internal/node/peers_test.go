package node

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// forged is a heartbeat "from" sender to 2 with exactly the header values
// given, sealed with key if not nil: what a student, or a member holding
// the key, can send.
func forged(t *testing.T, sender uint32, seq, lamport uint64, key *wire.Key) []byte {
	t.Helper()
	b, err := forge.Raw(wire.Header{Kind: wire.KindHeartbeat, Cluster: wire.ClusterID("lab"), Sender: sender, Receiver: 2,
		Seq: seq, Lamport: lamport}, make([]byte, 8), key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pair is node 1 sending heartbeats to node 2, with or without keys.
type pair struct {
	t      *testing.T
	a, b   *Node
	ra, rb *recorder
	now    time.Time
}

func newPair(t *testing.T, keyed bool, mutateB func(*Config)) *pair {
	withKey := func(c *Config) {
		if keyed {
			c.Keys = []wire.Key{testKey}
		}
	}
	p := &pair{t: t, now: t0}
	p.a, p.ra = newNode(t, 1, withKey)
	p.b, p.rb = newNode(t, 2, func(c *Config) {
		withKey(c)
		if mutateB != nil {
			mutateB(c)
		}
	})
	return p
}

// send makes a send a heartbeat to b and returns the bytes, undelivered.
func (p *pair) send() []byte {
	p.ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	s := p.a.Ready().Sends
	if len(s) != 1 {
		p.t.Fatalf("%d sends", len(s))
	}
	return p.a.Finalize(s[0], p.now)
}

// deliver hands b to node 2 from node 1's address 50 ms after the last.
func (p *pair) deliver(b []byte) error {
	p.now = p.now.Add(50 * time.Millisecond)
	return p.b.Receive(Inbound{From: members[1], Data: b, Time: p.now})
}

func (p *pair) mustAccept(what string, b []byte) {
	p.t.Helper()
	if err := p.deliver(b); err != nil {
		p.t.Fatalf("%s refused: %v", what, err)
	}
}

func (p *pair) mustRefuse(what string, b []byte, reason string) {
	p.t.Helper()
	before := p.b.Status().Dropped[reason]
	if err := p.deliver(b); err == nil {
		p.t.Fatalf("%s accepted", what)
	} else if got := p.b.Status().Dropped[reason]; got != before+1 {
		p.t.Fatalf("%s: %v, counted %v; want one more %s", what, err, p.b.Status().Dropped, reason)
	}
}

func TestSourceMustBeTheMembersAddress(t *testing.T) {
	p := newPair(t, false, nil)
	for _, tc := range []struct {
		name   string
		from   string
		stream bool
		ok     bool
	}{
		{"udp from another port of the member's IP", "127.0.0.11:7001", false, false},
		{"udp from a stranger", "10.9.9.9:7000", false, false},
		{"udp from another member", "127.0.0.13:7000", false, false},
		{"tcp from another IP", "127.0.0.13:40000", true, false},
		{"tcp from the member's IP, ephemeral port", "127.0.0.11:40000", true, true},
		{"udp from the member's address", "127.0.0.11:7000", false, true},
	} {
		before := p.b.Status().Dropped["wrong_source"]
		err := p.b.Receive(Inbound{From: netip.MustParseAddrPort(tc.from), Data: p.send(), Time: t0, Stream: tc.stream})
		if tc.ok != (err == nil) {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if got := p.b.Status().Dropped["wrong_source"]; !tc.ok && (got != before+1 || !errors.Is(err, ErrWrongSource)) {
			t.Errorf("%s: wrong_source %d -> %d, err %v", tc.name, before, got, err)
		}
	}
}

// TestSequenceSplitRefused is issue 13's attack on a node: a frame "from 1"
// with sequence number 0xffffffffffffff00 used to make node 2 refuse every
// real frame of node 1 as stale. Without keys (anyone can send it) and with
// them (a member holding the key can), it is refused as implausible, counted,
// and node 1's frames keep flowing.
func TestSequenceSplitRefused(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		p := newPair(t, keyed, nil)
		p.mustAccept("first real frame", p.send())
		var key *wire.Key
		if keyed {
			key = &testKey
		}
		p.mustRefuse("seq 0xffffffffffffff00", forged(t, 1, 0xffffffffffffff00, 0, key), "implausible_seq")
		top := p.b.Status().Peers[0].Seq
		p.mustRefuse("counter far ahead", forged(t, 1, top+SeqBurst+SeqRate, 0, key), "implausible_seq")
		_, _, c := wire.SeqParts(top)
		inc, _, _ := wire.SeqParts(top)
		p.mustRefuse("incarnation far ahead", forged(t, 1, wire.Seq(inc+IncarnationSlack+1, 0, 1), 0, key), "implausible_seq")
		if keyed {
			p.mustRefuse("new series opening with a counter far ahead", forged(t, 1, wire.Seq(inc, 1, c+SeqBurst+SeqRate), 0, key), "implausible_seq")
		} else {
			// Without keys the window goes wherever a frame puts it, and
			// the real sender's next frame (an older epoch) puts it back.
			p.mustAccept("new series opening with a counter far ahead, without keys", forged(t, 1, wire.Seq(inc, 1, c+SeqBurst+SeqRate), 0, key))
		}
		for i := range 5 {
			p.mustAccept("real frame after the forgeries", p.send())
			_ = i
		}
	}
}

// TestForgedJumpWithoutKeysNeverLocksOut: without keys a forged frame within
// the bounds (a plausible jump, a newer incarnation) is accepted, like any
// frame, but the real sender's next frames are still taken: the window
// restarts at them (resync) instead of refusing them as stale.
func TestForgedJumpWithoutKeysNeverLocksOut(t *testing.T) {
	p := newPair(t, false, nil)
	p.mustAccept("first", p.send())
	top := p.b.Status().Peers[0].Seq
	inc, _, _ := wire.SeqParts(top)
	for _, seq := range []uint64{top + SeqBurst, wire.Seq(inc+5, 0, 3)} {
		p.mustAccept("plausible forgery", forged(t, 1, seq, 0, nil))
		p.mustAccept("real frame after it", p.send())
		p.mustAccept("and the next", p.send())
	}
	if got := p.b.Status().Resynced; got != 2 {
		t.Errorf("resynced %d, want 2", got)
	}
	dup := p.send()
	p.mustAccept("frame", dup)
	p.mustRefuse("its duplicate", dup, "replay")

	// With keys the window is strict: only a member holding the key can
	// forge, and an outsider's replays must never pass.
	k := newPair(t, true, nil)
	k.mustAccept("first", k.send())
	old := k.send()
	k.mustAccept("second", k.send())
	for range ReplayWindowForTest {
		k.mustAccept("more", k.send())
	}
	k.mustRefuse("a frame older than the window", old, "stale")
}

// ReplayWindowForTest is the window's size in frames.
const ReplayWindowForTest = wire.ReplayWindow

// disk is a driver's state directory for one node: Save writes it, a
// restart reads it.
type disk struct {
	d     Durable
	fail  error
	saves int
}

func (d *disk) save(v Durable) error {
	if d.fail != nil {
		return d.fail
	}
	d.saves++
	v.Stamps.Peers = maps.Clone(v.Stamps.Peers)
	d.d = Durable{Incarnation: v.Incarnation, Epochs: maps.Clone(v.Epochs), Stamps: v.Stamps}
	return nil
}

// TestReplayAfterRestartRefused: frames captured before node 2 restarts are
// refused after it (the epochs it accepted were saved); node 2 tells node 1,
// which moves to a new series, and node 1's frames are accepted again; a
// recording of that message moves nothing.
func TestReplayAfterRestartRefused(t *testing.T) {
	var dsk disk
	b := func(c *Config) { c.Save = dsk.save }
	p := newPair(t, true, b)
	var captured [][]byte
	for range 3 {
		f := p.send()
		captured = append(captured, f)
		p.mustAccept("before the restart", f)
	}
	if dsk.saves != 1 {
		t.Fatalf("saved %d times for one epoch of node 1", dsk.saves)
	}
	// Node 2 restarts from its disk, under the next incarnation.
	p.b, p.rb = newNode(t, 2, func(c *Config) {
		c.Keys, c.Save, c.Epochs, c.Incarnation = []wire.Key{testKey}, dsk.save, dsk.d.Epochs, 2
	})
	for _, f := range captured {
		p.mustRefuse("a frame captured before the restart", f, "pre_restart")
	}
	p.mustRefuse("node 1's next frame, in the same epoch", p.send(), "pre_restart")

	// Node 2 tells node 1, once for the burst; node 1 moves on.
	sends := p.b.Ready().Sends
	if len(sends) != 1 || sends[0].Kind != wire.KindEpochRefused || sends[0].To != members[1] {
		t.Fatalf("node 2 sends %+v, want one epoch_refused to node 1", sends)
	}
	refusal := p.b.Finalize(sends[0], p.now)
	if err := p.a.Receive(Inbound{From: members[2], Data: refusal, Time: p.now}); err != nil {
		t.Fatalf("node 1 refused node 2's epoch_refused: %v", err)
	}
	if len(p.ra.steps) != 0 {
		t.Error("the core saw the node's own message")
	}
	if st := p.a.Status(); st.Series != 1 || st.NewSeries != 1 {
		t.Fatalf("node 1 series %d after node 2's refusal, want 1", st.Series)
	}
	p.mustAccept("node 1's frame in its new series", p.send())
	for _, f := range captured {
		p.mustRefuse("an old frame after the new series", f, "stale")
	}
	if err := p.a.Receive(Inbound{From: members[2], Data: refusal, Time: p.now}); err == nil || p.a.Status().Series != 1 {
		t.Errorf("a replayed refusal: err %v, series %d", err, p.a.Status().Series)
	}
}

func TestUnsavedEpochRefusedThenRetried(t *testing.T) {
	dsk := disk{fail: errors.New("disk full")}
	p := newPair(t, true, func(c *Config) { c.Save = dsk.save })
	p.mustRefuse("a new epoch that cannot be saved", p.send(), "unsaved")
	dsk.fail = nil
	p.mustAccept("the next frame, once the disk is back", p.send())
	if dsk.d.Epochs[1] == 0 {
		t.Error("epoch not saved")
	}
}

func TestSeriesRunOutRaisesIncarnation(t *testing.T) {
	var dsk disk
	a, ra := newNode(t, 1, func(c *Config) { c.Save = dsk.save; c.Incarnation = 9 })
	for range wire.MaxSeries + 1 {
		a.newSeries()
	}
	if st := a.Status(); st.Incarnation != 10 || st.Series != 0 || dsk.d.Incarnation != 10 {
		t.Fatalf("after %d new series: incarnation %d series %d, saved %d", wire.MaxSeries+1, st.Incarnation, st.Series, dsk.d.Incarnation)
	}
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat}}
	var f wire.Frame
	if err := f.UnmarshalBinary(a.Ready().Sends[0].Data); err != nil {
		t.Fatal(err)
	}
	if inc, series, counter := wire.SeqParts(f.Seq); inc != 10 || series != 0 || counter != 1 {
		t.Errorf("first frame after: %d/%d/%d", inc, series, counter)
	}
	// A counter that runs out moves to a new series too.
	a.seq = wire.Seq(10, 0, wire.MaxCounter)
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat}}
	f.UnmarshalBinary(a.Ready().Sends[0].Data)
	if inc, series, counter := wire.SeqParts(f.Seq); inc != 10 || series != 1 || counter != 1 {
		t.Errorf("after the counter ran out: %d/%d/%d", inc, series, counter)
	}
}

func TestLamportAheadRefused(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		p := newPair(t, keyed, nil)
		p.mustAccept("first", p.send())
		var key *wire.Key
		if keyed {
			key = &testKey
		}
		seq := p.b.Status().Peers[0].Seq
		clk := p.b.Status().Lamport
		last := p.b.Status().Peers[0].Stamp
		p.mustRefuse("stamp 2^64-1", forged(t, 1, seq+1, ^uint64(0), key), "lamport_ahead")
		// deliver is 50 ms after the last frame: the rate for the time since
		// the first, and the burst.
		p.mustRefuse("stamp just beyond the bound", forged(t, 1, seq+2, last+LamportBurst+rateOver(100*time.Millisecond)+1, key), "lamport_ahead")
		if got := p.b.Status().Lamport; got != clk {
			t.Errorf("refused stamps moved the clock %d -> %d", clk, got)
		}
		bound := last + LamportBurst + rateOver(150*time.Millisecond)
		p.mustAccept("stamp at the bound", forged(t, 1, seq+3, bound, key))
		if got, want := p.b.Status().Lamport, bound+1; got != want {
			t.Errorf("clock %d, want %d", got, want)
		}
		// The burst is spent: 50 ms later, 50 ms of the rate only.
		p.mustRefuse("a second jump at once", forged(t, 1, seq+4, bound+rateOver(50*time.Millisecond)+1, key), "lamport_ahead")
		p.mustAccept("the rate's worth", forged(t, 1, seq+5, bound+rateOver(100*time.Millisecond), key))
		if got := p.b.Status().Peers[0].StampsRefused; got != 3 {
			t.Errorf("stamps_refused %d, want 3", got)
		}
	}
}

// TestNoHeaderValueLocksOutTheSender drives node 2 with a random mix of node
// 1's real frames and forgeries "from 1", from node 1's own address, with
// extreme header values of every kind (what a student who can spoof node
// 1's address can send without keys, or a member holding the key with
// them). Nothing panics; and once the forger stops, node 1's real frames
// are accepted again at once. With keys the forger is a member holding the
// key: its absurd values are refused the same way; what it can still do
// with plausible ones (move node 1's window ahead, as it can impersonate
// node 1 outright) is TestForgedJumpWithoutKeysNeverLocksOut's subject.
func TestNoHeaderValueLocksOutTheSender(t *testing.T) {
	extremes := []uint64{0, 1, 1<<32 - 1, 1 << 32, 1<<40 - 1, 1 << 40, 1<<63 - 1, 1 << 63, ^uint64(0) - 0xff, ^uint64(0)}
	for _, keyed := range []bool{false, true} {
		for seed := range uint64(30) {
			rnd := rand.New(rand.NewPCG(seed, 13))
			p := newPair(t, keyed, nil)
			var key *wire.Key
			if keyed {
				key = &testKey
			}
			for range 300 {
				if rnd.IntN(3) > 0 {
					p.deliver(p.send())
					continue
				}
				top := p.a.seq
				pick := func() uint64 {
					n := 4
					if keyed {
						n = 1 // extremes and random values only
					}
					switch rnd.IntN(n) {
					case 0:
						if rnd.IntN(2) == 0 {
							return rnd.Uint64()
						}
						return extremes[rnd.IntN(len(extremes))]
					case 1:
						return top + uint64(rnd.IntN(2*SeqBurst))
					case 2:
						return top - uint64(rnd.IntN(2*wire.ReplayWindow))
					}
					return rnd.Uint64()
				}
				_ = keyed
				p.deliver(forged(t, 1, pick(), pick(), key))
			}
			// The forger stops.
			accepted := 0
			for range 200 {
				if p.deliver(p.send()) == nil {
					accepted++
				}
			}
			if accepted < 199 {
				t.Fatalf("keyed %v seed %d: %d of 200 real frames accepted after the forgeries (dropped %v)", keyed, seed, accepted, p.b.Status().Dropped)
			}
		}
	}
}

// FuzzReceiveHeader feeds node 2 a real frame of node 1, then a frame "from"
// any sender with any sequence number, Lamport stamp and kind, from node 1's
// address (sealed with the key when keyed: a key holder), then node 1's next
// real frame. Nothing panics; a refused frame changes nothing (no window, no
// clock, no core); and without keys node 1's next frame is always taken,
// whatever came before it.
func FuzzReceiveHeader(f *testing.F) {
	f.Add(uint64(0xffffffffffffff00), uint64(0), uint32(1), uint8(wire.KindHeartbeat), false)
	f.Add(uint64(1<<40|5000), ^uint64(0), uint32(1), uint8(wire.KindEpochRefused), true)
	f.Add(uint64(0), uint64(1<<40), uint32(3), uint8(wire.KindCoordinator), false)
	f.Add(uint64(1<<40|2), uint64(1<<40), uint32(1), uint8(wire.KindHeartbeat), false) // a stamp beyond the ceiling
	f.Fuzz(func(t *testing.T, seq, lamport uint64, sender uint32, kind uint8, keyed bool) {
		p := newPair(t, keyed, nil)
		p.mustAccept("first real frame", p.send())
		var key *wire.Key
		if keyed {
			key = &testKey
		}
		b, err := forge.Raw(wire.Header{Kind: wire.Kind(kind), Cluster: wire.ClusterID("lab"), Sender: max(sender, 1), Receiver: 2,
			Seq: seq, Lamport: lamport}, make([]byte, 8), key)
		if err != nil {
			return // not encodable: an unknown kind
		}
		before := p.b.Status()
		steps := len(p.rb.steps)
		if err := p.deliver(b); err != nil {
			after := p.b.Status()
			// Only the refusal counters may move.
			for i := range after.Peers {
				after.Peers[i].StampsRefused, after.Peers[i].StampRefusedAt = 0, time.Time{}
			}
			after.Peers = slices.DeleteFunc(after.Peers, func(ps PeerSeq) bool { return ps == PeerSeq{ID: ps.ID} })
			if after.Lamport != before.Lamport || len(p.rb.steps) != steps || !slices.Equal(before.Peers, after.Peers) || after.Series != before.Series {
				t.Fatalf("a refused frame (%v) changed the node: %+v -> %+v", err, before, after)
			}
		}
		if err := p.deliver(p.send()); err != nil && !keyed {
			t.Fatalf("without keys, node 1's next frame after seq %#x lamport %#x was refused: %v", seq, lamport, err)
		}
	})
}

// TestOlderEpochDoesNotHoldTheSenderBack: node 1 has been running for
// weeks in its epoch (incarnation 7) and has sent five million frames to
// the lab. Node 2 takes a frame of an older epoch of node 1: with a key, a
// recording of incarnation 5 played back just after node 2 restarted
// (switched off overnight, it saved only incarnation 1, and nothing tells
// the recording from a frame delayed in the network); without one, a
// frame forged one incarnation below the current one (which resyncs the
// window). Node 1's real frames then open a newer epoch with a counter of
// five million, judged against the 50 ms since that frame: on main every
// one was refused as implausible_seq for counter/SeqRate = 50 s (at
// 2^32-1, 12 hours), and a forger repeating one frame without a key held
// node 1 out for good. Now node 2 asks node 1 for a new series at the
// first refusal, and hears it again one round trip later; without keys
// (where a forged older epoch is what puts it there) it takes node 1's
// frame at once.
func TestOlderEpochDoesNotHoldTheSenderBack(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		var key *wire.Key
		var dsk disk
		p := newPair(t, keyed, func(c *Config) {
			c.Save, c.Incarnation = dsk.save, 3
			if keyed {
				c.Epochs = map[uint32]uint32{1: wire.SeqEpoch(wire.Seq(1, 0, 9))}
			}
		})
		p.a, p.ra = newNode(t, 1, func(c *Config) {
			c.Incarnation = 7
			if keyed {
				c.Keys = []wire.Key{testKey}
			}
		})
		p.a.seq = wire.Seq(7, 0, 5_000_000) // weeks of frames to the lab
		older := wire.Seq(5, 0, 1200)       // the recording
		if keyed {
			key = &testKey
		} else {
			p.mustAccept("node 1's frame", p.send())
			older = wire.Seq(6, 0, 10) // forged
		}
		p.mustAccept("the older epoch's frame", forged(t, 1, older, 1, key))
		if !keyed {
			// Without keys nothing holds it back: the window goes where
			// node 1's frame puts it, at once, and no refusal is sent
			// (a node without keys obeys none: anyone could send one).
			p.mustAccept("node 1's next frame, far into a newer epoch, without keys", p.send())
			if sends := p.b.Ready().Sends; len(sends) != 0 {
				t.Fatalf("without keys node 2 sends %+v", sends)
			}
			continue
		}
		p.mustRefuse("node 1's next frame, far into a newer epoch", p.send(), "implausible_seq")
		sends := p.b.Ready().Sends
		if len(sends) != 1 || sends[0].Kind != wire.KindEpochRefused || sends[0].To != members[1] {
			t.Fatalf("keyed %v: node 2 sends %+v, want one epoch_refused to node 1", keyed, sends)
		}
		if err := p.a.Receive(Inbound{From: members[2], Data: p.b.Finalize(sends[0], p.now), Time: p.now}); err != nil {
			t.Fatalf("keyed %v: node 1 refused node 2's epoch_refused: %v", keyed, err)
		}
		for i := range 3 {
			p.mustAccept(fmt.Sprintf("node 1's frame %d in its new series", i), p.send())
		}
		if keyed {
			if got, want := dsk.d.Epochs[1], wire.SeqEpoch(wire.Seq(7, 1, 0)); got != want {
				t.Errorf("saved epoch %#x, want node 1's current %#x", got, want)
			}
			p.mustRefuse("the recording once more", forged(t, 1, older, 1, key), "stale")
		}
	}
}
