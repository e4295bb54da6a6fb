package cristian

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

var synced = ntp.System{Leap: wire.LeapNone, Stratum: 3, Precision: -20, RootDelay: time.Millisecond, RootDispersion: 2 * time.Millisecond, ReferenceID: 0x0a000001}

// exchange runs one round through the real encodings: the client's request
// leaves at local time sent, the server (whose clock is ahead of the
// client's by offset) stamps the reply serverDelay after it arrived, and
// the reply arrives back after back. It returns the reply as the client
// decodes it and its arrival time.
func exchange(t *testing.T, b *Burst, sent time.Time, offset, there, serverDelay, back time.Duration, sys ntp.System) (*wire.Frame, time.Time) {
	t.Helper()
	raw, err := RequestFrame(wire.ClusterID("lab"), 9)
	if err != nil {
		t.Fatal(err)
	}
	xmt := wire.NTPTimeFromTime(sent)
	wire.PatchXmt(raw, xmt)
	b.Sent(xmt, sent)
	var req wire.Frame
	if err := req.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	if err := ParseRequest(&req); err != nil {
		t.Fatal(err)
	}
	rep, err := ReplyFrame(&req, 1, sys)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) > len(raw) {
		t.Fatalf("reply %d bytes, request %d: amplification", len(rep), len(raw))
	}
	serverTime := sent.Add(offset + there + serverDelay)
	wire.PatchXmt(rep, wire.NTPTimeFromTime(serverTime))
	var f wire.Frame
	if err := f.UnmarshalBinary(rep); err != nil {
		t.Fatal(err)
	}
	if f.Receiver != 9 || f.Sender != 1 {
		t.Fatalf("reply addressed %d from %d", f.Receiver, f.Sender)
	}
	return &f, sent.Add(there + serverDelay + back)
}

func TestBurstKeepsMinimumRTT(t *testing.T) {
	b := NewBurst(0, time.Microsecond)
	offset := 40 * time.Millisecond
	rtts := []time.Duration{3 * time.Millisecond, 800 * time.Microsecond, 5 * time.Millisecond, 2 * time.Millisecond}
	for i, rtt := range rtts {
		f, dst := exchange(t, b, t0.Add(time.Duration(i)*10*time.Millisecond), offset, rtt/2, 0, rtt/2, synced)
		if err := b.Receive(f, dst); err != nil {
			t.Fatal(err)
		}
	}
	r, ok := b.Result()
	if !ok || r.Estimate.Rounds != 4 {
		t.Fatalf("result %+v %v", r, ok)
	}
	if r.Estimate.RTT != 800*time.Microsecond || r.Sample.Delay != 800*time.Microsecond {
		t.Errorf("kept RTT %v (sample delay %v), want the minimum 800µs", r.Estimate.RTT, r.Sample.Delay)
	}
	if d := r.Sample.Offset - offset; d.Abs() > time.Microsecond || r.Sample.Offset != r.Estimate.Offset {
		t.Errorf("sample offset %v, estimate %v, true %v", r.Sample.Offset, r.Estimate.Offset, offset)
	}
	if r.Peer.Stratum != 3 || (r.Peer.RootDelay-time.Millisecond).Abs() > 16*time.Microsecond || r.Peer.ReferenceID != synced.ReferenceID {
		t.Errorf("peer variables %+v", r.Peer)
	}
	// The client's filter may pick this burst's sample after later
	// bursts': its bound needs this burst's header, not the newest.
	if r.Sample.Header != r.Peer {
		t.Errorf("sample header %+v, want the best round's %+v", r.Sample.Header, r.Peer)
	}
	b.Reset()
	if _, ok := b.Result(); ok || b.Outstanding() != 0 {
		t.Error("Reset kept the burst")
	}
}

func TestBurstRefuses(t *testing.T) {
	b := NewBurst(0, time.Microsecond)
	f, dst := exchange(t, b, t0, time.Millisecond, 100*time.Microsecond, 0, 100*time.Microsecond, synced)
	if err := b.Receive(f, dst); err != nil {
		t.Fatal(err)
	}
	if err := b.Receive(f, dst.Add(time.Millisecond)); !errors.Is(err, ErrUnsolicited) {
		t.Errorf("duplicate reply: %v", err)
	}
	bogus := *f
	bogus.Payload = append([]byte{}, f.Payload...)
	bogus.Payload[len(bogus.Payload)-1] ^= 1 // another origin
	if err := b.Receive(&bogus, dst); !errors.Is(err, ErrUnsolicited) {
		t.Errorf("reply to no request: %v", err)
	}
	for name, sys := range map[string]ntp.System{
		"leap 3":     {Leap: wire.LeapNotInSync, Stratum: 3},
		"stratum 16": {Stratum: wire.StratumUnsynchronized},
		"stratum 0":  {},
	} {
		f, dst := exchange(t, b, t0.Add(time.Second), 0, time.Millisecond, 0, time.Millisecond, sys)
		if err := b.Receive(f, dst); !errors.Is(err, ErrUnsynchronized) {
			t.Errorf("%s: %v", name, err)
		}
	}
	f, dst = exchange(t, b, t0.Add(2*time.Second), 0, time.Millisecond, 0, time.Millisecond, synced)
	f.Kind = wire.KindHeartbeat
	if err := b.Receive(f, dst); !errors.Is(err, ErrNotReply) {
		t.Errorf("wrong kind: %v", err)
	}
	if b.Rounds() != 1 {
		t.Errorf("%d rounds counted, want the 1 good one", b.Rounds())
	}
}

// TestTruthInsideBound: over random asymmetric paths and server delays,
// the true offset always lies within estimate ± accuracy, and within the
// sample's own half-delay.
func TestTruthInsideBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		min := time.Duration(rng.IntN(200)) * time.Microsecond
		b := NewBurst(min, time.Nanosecond)
		offset := time.Duration(rng.Int64N(int64(time.Second))) - 500*time.Millisecond
		for j := range 1 + rng.IntN(6) {
			there := min + time.Duration(rng.Int64N(int64(3*time.Millisecond)))
			back := min + time.Duration(rng.Int64N(int64(3*time.Millisecond)))
			proc := time.Duration(rng.Int64N(int64(200 * time.Microsecond)))
			f, dst := exchange(t, b, t0.Add(time.Duration(i)*time.Second+time.Duration(j)*10*time.Millisecond), offset, there, proc, back, synced)
			if err := b.Receive(f, dst); err != nil {
				t.Fatal(err)
			}
		}
		r, _ := b.Result()
		// One nanosecond of slack for NTP timestamp rounding.
		if err := (r.Estimate.Offset - offset).Abs(); err > r.Estimate.Accuracy+time.Nanosecond {
			t.Fatalf("case %d: error %v beyond accuracy ±%v (RTT %v, min %v)", i, err, r.Estimate.Accuracy, r.Estimate.RTT, min)
		}
		if err := (r.Sample.Offset - offset).Abs(); err > r.Sample.Delay/2+time.Nanosecond {
			t.Fatalf("case %d: sample error %v beyond half its delay %v", i, err, r.Sample.Delay/2)
		}
	}
}
