package wire

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// goldenFrame is the frame of testdata/heartbeat_frame.hex, field by field.
func goldenFrame() Frame {
	return Frame{
		Header: Header{
			Version:  1,
			Kind:     KindHeartbeat,
			Cluster:  0xa51146d3,
			Sender:   2,
			Receiver: 0,
			Term:     7,
			Seq:      3<<32 | 17,
			Lamport:  42,
			Xmt:      NTPTimeFromTime(time.Date(2026, 11, 22, 8, 0, 0, 500_000_000, time.UTC)),
		},
		Payload: []byte{0, 0, 0, 100, 0, 0, 0, 3},
	}
}

func equalFrames(t *testing.T, got, want Frame) {
	t.Helper()
	if got.Header != want.Header {
		t.Errorf("header:\n got %+v\nwant %+v", got.Header, want.Header)
	}
	if !bytes.Equal(got.Payload, want.Payload) {
		t.Errorf("payload % x, want % x", got.Payload, want.Payload)
	}
	if got.KeyID != want.KeyID || got.MAC != want.MAC {
		t.Errorf("trailer %d/% x, want %d/% x", got.KeyID, got.MAC, want.KeyID, want.MAC)
	}
}

func TestClusterIDGolden(t *testing.T) {
	// SHA-256("lab") starts a5 11 46 d3 (computed by gen_vectors.py).
	if got := ClusterID("lab"); got != 0xa51146d3 {
		t.Fatalf("ClusterID(lab) = %08x", got)
	}
	if ClusterID("lab") == ClusterID("lab2") {
		t.Fatal("different names, same ID")
	}
}

func TestFrameGolden(t *testing.T) {
	raw := readHex(t, "heartbeat_frame.hex")
	var f Frame
	if err := f.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	equalFrames(t, f, goldenFrame())
	var hb Heartbeat
	if err := hb.UnmarshalBinary(f.Payload); err != nil {
		t.Fatal(err)
	}
	if hb != (Heartbeat{Interval: 100, Alive: 3}) {
		t.Errorf("heartbeat %+v", hb)
	}
	if got := f.Xmt.Time(); !got.Equal(time.Date(2026, 11, 22, 8, 0, 0, 500_000_000, time.UTC)) {
		t.Errorf("xmt %v", got)
	}

	// Encoding the expected value reproduces the vector.
	want := goldenFrame()
	want.Version = 0 // 0 means "current version" when encoding
	enc, err := want.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, raw) {
		t.Fatalf("encoding\n got % x\nwant % x", enc, raw)
	}
}

func TestFrameSealGolden(t *testing.T) {
	raw := readHex(t, "heartbeat_frame_auth.hex")
	var f Frame
	if err := f.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	want := goldenFrame()
	want.Flags = FlagAuth
	want.KeyID = 1
	copy(want.MAC[:], raw[len(raw)-MACLen:])
	equalFrames(t, f, want)

	// Encode, seal with key 1 of keys.txt: the vector, byte for byte.
	plain := goldenFrame()
	b, err := plain.AppendBinary(make([]byte, 0, 80))
	if err != nil {
		t.Fatal(err)
	}
	sealed := Seal(b, goldenKeys(t)[0])
	if !bytes.Equal(sealed, raw) {
		t.Fatalf("sealed\n got % x\nwant % x", sealed, raw)
	}
	if &sealed[0] != &b[0] {
		t.Error("Seal reallocated although the buffer had room")
	}
	// The payload of a decoded sealed frame cannot grow into the trailer.
	if cap(f.Payload) != len(f.Payload) {
		t.Errorf("payload cap %d, len %d", cap(f.Payload), len(f.Payload))
	}
}

func TestFrameAppendBinaryClearsAuthAndAppends(t *testing.T) {
	f := goldenFrame()
	f.Flags = FlagAuth
	prefix := []byte("prefix")
	b, err := f.AppendBinary(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:len(prefix)], prefix) {
		t.Fatal("prefix clobbered")
	}
	if b[len(prefix)+offFlags] != 0 {
		t.Fatal("FlagAuth written by AppendBinary")
	}
	if len(b) != len(prefix)+HeaderLen+len(f.Payload) {
		t.Fatalf("length %d", len(b))
	}
}

func TestFrameEncodeErrors(t *testing.T) {
	for name, mut := range map[string]func(*Frame){
		"version":  func(f *Frame) { f.Version = 2 },
		"kind 0":   func(f *Frame) { f.Kind = KindInvalid },
		"kind 200": func(f *Frame) { f.Kind = 200 },
		"flags":    func(f *Frame) { f.Flags = 0x80 },
		"sender":   func(f *Frame) { f.Sender = 0 },
		"payload":  func(f *Frame) { f.Payload = make([]byte, MaxPayloadLen+1) },
	} {
		f := goldenFrame()
		mut(&f)
		b, err := f.AppendBinary([]byte{9})
		var ee *EncodeError
		if !errors.As(err, &ee) {
			t.Errorf("%s: err %v, want *EncodeError", name, err)
		}
		if len(b) != 1 {
			t.Errorf("%s: wrote %d bytes on error", name, len(b)-1)
		}
	}
	// The largest payload fits, sealed, in MaxFrameLen.
	f := goldenFrame()
	f.Payload = make([]byte, MaxPayloadLen)
	b, err := f.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	b = Seal(b, Key{ID: 1, Secret: make([]byte, 32)})
	if len(b) != MaxFrameLen {
		t.Fatalf("max sealed frame %d bytes", len(b))
	}
	var g Frame
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
}

func TestFrameDecodeErrors(t *testing.T) {
	good := readHex(t, "heartbeat_frame.hex")
	sealed := readHex(t, "heartbeat_frame_auth.hex")
	mod := func(b []byte, f func([]byte) []byte) []byte { return f(bytes.Clone(b)) }
	cases := []struct {
		name string
		in   []byte
		kind DecodeErrorKind
	}{
		{"empty", nil, DecodeTruncated},
		{"short header", good[:HeaderLen-1], DecodeTruncated},
		{"short payload", good[:len(good)-1], DecodeTruncated},
		{"short trailer", sealed[:len(sealed)-1], DecodeTruncated},
		{"trailing byte", append(bytes.Clone(good), 0), DecodeBadLength},
		{"trailer without flag", mod(sealed, func(b []byte) []byte { b[offFlags] = 0; return b }), DecodeBadLength},
		{"magic", mod(good, func(b []byte) []byte { b[0] = 's'; return b }), DecodeBadMagic},
		{"magic 2", mod(good, func(b []byte) []byte { b[1] = 'X'; return b }), DecodeBadMagic},
		{"version 0", mod(good, func(b []byte) []byte { b[offVersion] = 0; return b }), DecodeBadVersion},
		{"version 2", mod(good, func(b []byte) []byte { b[offVersion] = 2; return b }), DecodeBadVersion},
		{"kind 0", mod(good, func(b []byte) []byte { b[offKind] = 0; return b }), DecodeUnknownKind},
		{"kind 255", mod(good, func(b []byte) []byte { b[offKind] = 255; return b }), DecodeUnknownKind},
		{"flags", mod(good, func(b []byte) []byte { b[offFlags] = 4; return b }), DecodeBadFlags},
		{"reserved", mod(good, func(b []byte) []byte { b[offReserved] = 1; return b }), DecodeBadReserved},
		{"sender 0", mod(good, func(b []byte) []byte { copy(b[offSender:], []byte{0, 0, 0, 0}); return b }), DecodeBadField},
		{"length too big", mod(good, func(b []byte) []byte { b[offLength+1] = 9; return b }), DecodeTruncated},
		{"length too small", mod(good, func(b []byte) []byte { b[offLength+1] = 7; return b }), DecodeBadLength},
		{"oversized length", mod(sealed, func(b []byte) []byte { b[offLength], b[offLength+1] = 0xff, 0xff; return b }), DecodeOversized},
		{"oversized input", make([]byte, MaxFrameLen+1), DecodeOversized},
	}
	for _, c := range cases {
		var f Frame
		err := f.UnmarshalBinary(c.in)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: err %v, want *DecodeError", c.name, err)
			continue
		}
		if de.Kind != c.kind || !errors.Is(err, c.kind) {
			t.Errorf("%s: kind %v, want %v (%v)", c.name, de.Kind, c.kind, err)
		}
		if Reason(err) != c.kind.String() {
			t.Errorf("%s: Reason %q", c.name, Reason(err))
		}
	}
}

func TestPatchXmt(t *testing.T) {
	f := goldenFrame()
	b, _ := f.AppendBinary(nil)
	ts := NTPTimeFromTime(time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC))
	PatchXmt(b, ts)
	var g Frame
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if g.Xmt != ts {
		t.Fatalf("xmt %x, want %x", g.Xmt, ts)
	}
	g.Xmt = f.Xmt
	equalFrames(t, g, f)
}

func TestSealPanics(t *testing.T) {
	k := Key{ID: 1, Secret: make([]byte, 16)}
	for name, b := range map[string][]byte{
		"short":  make([]byte, HeaderLen-1),
		"sealed": readHex(t, "heartbeat_frame_auth.hex"),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			Seal(b, k)
		}()
	}
}

func TestHeartbeat(t *testing.T) {
	hb := Heartbeat{Interval: 0xdeadbeef, Alive: 7}
	b, err := hb.AppendBinary(nil)
	if err != nil || len(b) != HeartbeatLen {
		t.Fatalf("% x, %v", b, err)
	}
	var got Heartbeat
	if err := got.UnmarshalBinary(b); err != nil || got != hb {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, n := range []int{0, 7, 9} {
		err := got.UnmarshalBinary(make([]byte, n))
		var de *DecodeError
		if !errors.As(err, &de) || de.What != "heartbeat" {
			t.Errorf("len %d: %v", n, err)
		}
	}
}

func TestZeroAllocFrame(t *testing.T) {
	raw := readHex(t, "heartbeat_frame_auth.hex")
	var f Frame
	if n := testing.AllocsPerRun(100, func() {
		if err := f.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Frame.UnmarshalBinary: %v allocs", n)
	}
	g := goldenFrame()
	buf := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := g.AppendBinary(buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Frame.AppendBinary: %v allocs", n)
	}
	var hb Heartbeat
	if n := testing.AllocsPerRun(100, func() {
		_ = hb.UnmarshalBinary(f.Payload)
		_, _ = hb.AppendBinary(buf)
	}); n != 0 {
		t.Errorf("Heartbeat codec: %v allocs", n)
	}
}

func TestKindString(t *testing.T) {
	if KindHeartbeat != 1 {
		t.Fatal("KindHeartbeat is on the wire as 1")
	}
	seen := map[string]bool{}
	for k := KindInvalid; k < 255; k++ {
		if k != KindInvalid && !k.Known() {
			if k.String() != "kind("+itoa(int(k))+")" {
				t.Errorf("unknown kind %d: %q", k, k.String())
			}
			continue
		}
		s := k.String()
		if s == "" || seen[s] {
			t.Errorf("kind %d: %q", k, s)
		}
		seen[s] = true
		if k.Known() != (k != KindInvalid) {
			t.Errorf("kind %d: Known %v", k, k.Known())
		}
	}
	if ks := Kinds(); len(ks) < int(KindEpochRefused) || ks[0] != KindHeartbeat || !slices.IsSorted(ks) {
		t.Errorf("Kinds() = %v", ks)
	}
}

func TestSeqParts(t *testing.T) {
	for _, tc := range []struct {
		inc     uint32
		series  uint8
		counter uint32
		seq     uint64
	}{
		{0, 0, 0, 0},
		{1, 0, 1, 1<<40 | 1},
		{7, 3, 9, 7<<40 | 3<<32 | 9},
		{MaxIncarnation, MaxSeries, MaxCounter, ^uint64(0)},
	} {
		if got := Seq(tc.inc, tc.series, tc.counter); got != tc.seq {
			t.Errorf("Seq(%d, %d, %d) = %#x, want %#x", tc.inc, tc.series, tc.counter, got, tc.seq)
		}
		inc, series, counter := SeqParts(tc.seq)
		if inc != tc.inc || series != tc.series || counter != tc.counter {
			t.Errorf("SeqParts(%#x) = %d, %d, %d", tc.seq, inc, series, counter)
		}
		if got, want := SeqEpoch(tc.seq), tc.inc<<SeriesBits|uint32(tc.series); got != want {
			t.Errorf("SeqEpoch(%#x) = %#x, want %#x", tc.seq, got, want)
		}
	}
	// The diagram: incarnation and series in bytes 28-31, the counter in 32-35.
	f := Frame{Header: Header{Kind: KindHeartbeat, Sender: 1, Seq: Seq(0x010203, 0x04, 0x05060708)}}
	b, _ := f.AppendBinary(nil)
	if got := b[28:36]; !bytes.Equal(got, []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("sequence on the wire % x", got)
	}
}

// TestSealerSealsAsSeal: a Sealer's frames are Seal's, byte for byte,
// from many goroutines at once (its HMAC states are reused, never
// shared), and every one passes the validator.
func TestSealerSealsAsSeal(t *testing.T) {
	k := Key{ID: 7, Secret: bytes.Repeat([]byte{0x5a}, MinKeyLen)}
	s := NewSealer(k)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				f := Frame{Header: Header{Kind: KindHeartbeat, Cluster: 9, Sender: 2, Receiver: 1, Seq: uint64(g*1000 + i + 1)}, Payload: bytes.Repeat([]byte{byte(i)}, i%40)}
				raw, err := f.AppendBinary(nil)
				if err != nil {
					t.Error(err)
					return
				}
				want := Seal(bytes.Clone(raw), k)
				if got := s.Seal(raw); !bytes.Equal(got, want) {
					t.Errorf("goroutine %d frame %d: Sealer %x, Seal %x", g, i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	raw, _ := (&Frame{Header: Header{Kind: KindHeartbeat, Cluster: 9, Sender: 2, Receiver: 1, Seq: 1}}).AppendBinary(nil)
	var f Frame
	sealed := s.Seal(raw)
	if err := f.UnmarshalBinary(sealed); err != nil {
		t.Fatal(err)
	}
	if err := NewValidator(9, 1, []Key{k}).Admit(&f, sealed); err != nil {
		t.Fatalf("a Sealer's frame refused: %v", err)
	}
}
