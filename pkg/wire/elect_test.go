package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// electPayload is what the four election payloads have in common.
type electPayload interface {
	AppendBinary([]byte) ([]byte, error)
}

// Golden encodings: the bytes on the wire, fixed forever for these values.
var electGolden = []struct {
	name string
	v    electPayload
	hex  string
}{
	{"election", Election{Priority: 0x01020304, Reason: ReasonLeaderLost}, "0102030402000000"},
	{"election startup", Election{Reason: ReasonStartup}, "0000000001000000"},
	{"election resigned", Election{Priority: 7, Reason: ReasonLeaderResigned}, "0000000705000000"},
	{"answer", Answer{Priority: 0xfffffffe}, "fffffffe"},
	{"coordinator", Coordinator{Priority: 9}, "0000000900000000"},
	{"coordinator reassert", Coordinator{Priority: 9, Flags: CoordinatorReassert}, "0000000901000000"},
	{"heartbeat", LeaderHeartbeat{Priority: 1}, "0000000100000000"},
	{"heartbeat resign", LeaderHeartbeat{Priority: 1, Flags: HeartbeatResign}, "0000000101000000"},
	{"heartbeat answer", LeaderHeartbeat{Priority: 1, Flags: HeartbeatAnswer}, "0000000102000000"},
	{"leader probe", LeaderProbe{Priority: 0x0a0b0c0d}, "0a0b0c0d"},
	{"leader watch", LeaderWatch{Priority: 0x01020304}, "01020304"},
}

func decodeInto(v electPayload) interface{ UnmarshalBinary([]byte) error } {
	switch v.(type) {
	case Election:
		return new(Election)
	case Answer:
		return new(Answer)
	case Coordinator:
		return new(Coordinator)
	case LeaderHeartbeat:
		return new(LeaderHeartbeat)
	case LeaderProbe:
		return new(LeaderProbe)
	case LeaderWatch:
		return new(LeaderWatch)
	}
	panic("unknown payload")
}

func deref(p any) any {
	switch p := p.(type) {
	case *Election:
		return *p
	case *Answer:
		return *p
	case *Coordinator:
		return *p
	case *LeaderHeartbeat:
		return *p
	case *LeaderProbe:
		return *p
	case *LeaderWatch:
		return *p
	}
	panic("unknown payload")
}

func TestElectGolden(t *testing.T) {
	for _, tc := range electGolden {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte{0xaa}
			b, err := tc.v.AppendBinary(prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b[:1], prefix) {
				t.Fatal("AppendBinary overwrote the prefix")
			}
			if got := hex.EncodeToString(b[1:]); got != tc.hex {
				t.Fatalf("encoding %s, want %s", got, tc.hex)
			}
			want, _ := hex.DecodeString(tc.hex)
			p := decodeInto(tc.v)
			if err := p.UnmarshalBinary(want); err != nil {
				t.Fatal(err)
			}
			if got := deref(p); got != tc.v {
				t.Fatalf("decoded %+v, want %+v", got, tc.v)
			}
		})
	}
}

func TestElectDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    interface{ UnmarshalBinary([]byte) error }
		hex  string
		kind DecodeErrorKind
	}{
		{"election short", new(Election), "01020304020000", DecodeTruncated},
		{"election long", new(Election), "010203040200000000", DecodeBadLength},
		{"election empty", new(Election), "", DecodeTruncated},
		{"election reason 0", new(Election), "0000000100000000", DecodeBadField},
		{"election unknown reason", new(Election), "0000000106000000", DecodeBadField},
		{"election reserved", new(Election), "0000000101000100", DecodeBadReserved},
		{"answer short", new(Answer), "000001", DecodeTruncated},
		{"answer long", new(Answer), "0000000100", DecodeBadLength},
		{"leader probe short", new(LeaderProbe), "000001", DecodeTruncated},
		{"leader probe long", new(LeaderProbe), "0000000100", DecodeBadLength},
		{"leader watch short", new(LeaderWatch), "000001", DecodeTruncated},
		{"leader watch long", new(LeaderWatch), "0000000100", DecodeBadLength},
		{"coordinator short", new(Coordinator), "00000001", DecodeTruncated},
		{"coordinator unknown flag", new(Coordinator), "0000000102000000", DecodeBadFlags},
		{"coordinator reserved", new(Coordinator), "0000000100000001", DecodeBadReserved},
		{"heartbeat long", new(LeaderHeartbeat), "000000010000000000", DecodeBadLength},
		{"heartbeat unknown flag", new(LeaderHeartbeat), "0000000180000000", DecodeBadFlags},
		{"heartbeat reserved", new(LeaderHeartbeat), "0000000100010000", DecodeBadReserved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.hex)
			before := deref(tc.p)
			err := tc.p.UnmarshalBinary(b)
			if err == nil {
				t.Fatal("decoded")
			}
			checkElectDecodeError(t, err)
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v, want kind %v", err, tc.kind)
			}
			if deref(tc.p) != before {
				t.Error("a failed decode modified the value")
			}
		})
	}
}

// checkElectDecodeError asserts the package's typed decode error.
func checkElectDecodeError(t testing.TB, err error) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %T %v, want a *DecodeError", err, err)
	}
}

func TestElectEncodeErrors(t *testing.T) {
	for _, v := range []electPayload{
		Election{Reason: 0},
		Election{Reason: reasonEnd},
		Coordinator{Flags: 2},
		LeaderHeartbeat{Flags: 0x80},
	} {
		b, err := v.AppendBinary(nil)
		if err == nil {
			t.Errorf("%+v encoded as %x", v, b)
		}
		if !errors.As(err, new(*EncodeError)) {
			t.Errorf("%+v: error %T, want *EncodeError", v, err)
		}
	}
}

func TestElectReasonString(t *testing.T) {
	for r := ElectionReason(1); r < reasonEnd; r++ {
		if s := r.String(); s == "" || s[0] == 'r' && s[:7] == "reason(" {
			t.Errorf("reason %d has no name: %q", r, s)
		}
		if _, err := (Election{Reason: r}).AppendBinary(nil); err != nil {
			t.Errorf("reason %v does not encode: %v", r, err)
		}
	}
	if s := reasonEnd.String(); s != "reason(6)" {
		t.Errorf("unknown reason prints %q", s)
	}
}

func TestElectDecodeZeroAlloc(t *testing.T) {
	var (
		e Election
		a Answer
		c Coordinator
		h LeaderHeartbeat
	)
	eb, _ := Election{Priority: 3, Reason: ReasonStartup}.AppendBinary(nil)
	ab, _ := Answer{Priority: 3}.AppendBinary(nil)
	cb, _ := Coordinator{Priority: 3}.AppendBinary(nil)
	hb, _ := LeaderHeartbeat{Priority: 3}.AppendBinary(nil)
	allocs := testing.AllocsPerRun(100, func() {
		if e.UnmarshalBinary(eb) != nil || a.UnmarshalBinary(ab) != nil ||
			c.UnmarshalBinary(cb) != nil || h.UnmarshalBinary(hb) != nil {
			panic("decode failed")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per decode, want 0", allocs)
	}
}

func TestElectAppendZeroAlloc(t *testing.T) {
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		b, _ := Election{Priority: 1, Reason: ReasonPreempt}.AppendBinary(buf[:0])
		b, _ = Coordinator{Priority: 1}.AppendBinary(b)
		b, _ = LeaderHeartbeat{Priority: 1}.AppendBinary(b)
		_, _ = Answer{Priority: 1}.AppendBinary(b)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per encode into a large enough buffer, want 0", allocs)
	}
}

// fuzzElect checks one decoder: whatever it accepts re-encodes to exactly
// the input (the layout has no slack: every accepted byte string is
// canonical), and whatever it refuses is refused with the package's error.
func fuzzElect(f *testing.F, kind Kind, newP func() interface {
	UnmarshalBinary([]byte) error
	AppendBinary([]byte) ([]byte, error)
}) {
	for _, g := range electGolden {
		b, _ := hex.DecodeString(g.hex)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 12))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := newP()
		if err := p.UnmarshalBinary(b); err != nil {
			checkElectDecodeError(t, err)
			return
		}
		out, err := p.AppendBinary(nil)
		if err != nil {
			t.Fatalf("%v: decoded %x but cannot re-encode it: %v", kind, b, err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("%v: %x decoded and re-encoded as %x", kind, b, out)
		}
	})
}

func FuzzElection(f *testing.F) {
	fuzzElect(f, KindElection, func() interface {
		UnmarshalBinary([]byte) error
		AppendBinary([]byte) ([]byte, error)
	} {
		return new(Election)
	})
}

func FuzzAnswer(f *testing.F) {
	fuzzElect(f, KindAnswer, func() interface {
		UnmarshalBinary([]byte) error
		AppendBinary([]byte) ([]byte, error)
	} {
		return new(Answer)
	})
}

func FuzzCoordinator(f *testing.F) {
	fuzzElect(f, KindCoordinator, func() interface {
		UnmarshalBinary([]byte) error
		AppendBinary([]byte) ([]byte, error)
	} {
		return new(Coordinator)
	})
}

func FuzzLeaderHeartbeat(f *testing.F) {
	fuzzElect(f, KindLeaderHeartbeat, func() interface {
		UnmarshalBinary([]byte) error
		AppendBinary([]byte) ([]byte, error)
	} {
		return new(LeaderHeartbeat)
	})
}

// TestElectKindsKnown: frames of the four election kinds must encode and
// decode, so every kind must be Known().
func TestElectKindsKnown(t *testing.T) {
	for _, k := range []Kind{KindElection, KindAnswer, KindCoordinator, KindLeaderHeartbeat} {
		if !k.Known() {
			t.Errorf("kind %v (%d) is not Known(): frames carrying it cannot be sent", k, uint8(k))
		}
	}
}

func FuzzLeaderProbe(f *testing.F) {
	fuzzElect(f, KindLeaderProbe, func() interface {
		UnmarshalBinary([]byte) error
		AppendBinary([]byte) ([]byte, error)
	} {
		return new(LeaderProbe)
	})
}

func FuzzLeaderWatch(f *testing.F) {
	fuzzElect(f, KindLeaderWatch, func() interface {
		UnmarshalBinary([]byte) error
		AppendBinary([]byte) ([]byte, error)
	} {
		return new(LeaderWatch)
	})
}
