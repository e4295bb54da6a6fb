package wire

import (
	"bytes"
	"encoding"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// electMorePayload is what the payloads of block 70-89 have in common.
type electMorePayload interface {
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

// newElectMore returns an empty payload of v's type, to decode into.
func newElectMore(v electMorePayload) electMorePayload {
	return reflect.New(reflect.TypeOf(v).Elem()).Interface().(electMorePayload)
}

// Golden encodings: the bytes on the wire, fixed forever for these values.
var electMoreGolden = []struct {
	name string
	v    electMorePayload
	hex  string
}{
	{"lease request", &LeaseRequest{Seq: 7, Weight: 2, Uptime: 0xfffffffe}, "0000000700000002fffffffe00000000"},
	{"lease renewal with ranks", &LeaseRequest{Seq: 8, Weight: 1, Uptime: 5000, Ranks: []uint32{3, 1, 0xffffffff}}, "000000080000000100001388030000000000000300000001ffffffff"},
	{"lease reply granted", &LeaseReply{Seq: 7, Weight: 1, Verdict: VerdictGranted, Uptime: 0xffffffff}, "00000007000000010000000001000000ffffffff"},
	{"lease reply bound", &LeaseReply{Seq: 1, Weight: 1, Holder: 3, Verdict: VerdictBound, Uptime: 400}, "0000000100000001000000030200000000000190"},
	{"lease reply recovering", &LeaseReply{Seq: 1, Weight: 9, Verdict: VerdictRecovering}, "0000000100000009000000000500000000000000"},
	{"lease release", &LeaseRelease{Weight: 1, Reason: ReleaseResigned}, "0000000101000000"},
	{"omega heartbeat", &OmegaHeartbeat{Leader: 2, Interval: 250}, "00000002000000fa"},
	{"yoyo hello", &YoYoHello{Digest: 0xdeadbeef}, "deadbeef"},
	{"yoyo down", &YoYoDown{Iteration: 3, Value: 1}, "0000000300000001"},
	{"yoyo up yes prune", &YoYoUp{Iteration: 3, Flags: YoYoYes | YoYoPrune}, "0000000303000000"},
	{"yoyo up no", &YoYoUp{Iteration: 0}, "0000000000000000"},
	{"yoyo leader", &YoYoLeader{Leader: 1, Seq: 42}, "000000010000002a"},
}

func TestElectMoreGolden(t *testing.T) {
	for _, tc := range electMoreGolden {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.v.AppendBinary([]byte{0xaa})
			if err != nil {
				t.Fatal(err)
			}
			if b[0] != 0xaa {
				t.Fatal("AppendBinary overwrote the prefix")
			}
			if got := hex.EncodeToString(b[1:]); got != tc.hex {
				t.Fatalf("encoding %s, want %s", got, tc.hex)
			}
			p := newElectMore(tc.v)
			if err := p.UnmarshalBinary(b[1:]); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, tc.v) {
				t.Fatalf("decoded %+v, want %+v", p, tc.v)
			}
		})
	}
}

// TestElectMoreDecodeErrors: every field an attacker controls, at its
// edges: lengths, reserved bytes and flags, undefined enums, zero IDs,
// absurd intervals. A failed decode leaves the value as it was.
func TestElectMoreDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    electMorePayload
		hex  string
		kind DecodeErrorKind
	}{
		{"request short", new(LeaseRequest), "0000000700000002ffffffff000000", DecodeTruncated},
		{"request of the 12-byte layout", new(LeaseRequest), "0000000700000002ffffffff", DecodeTruncated},
		{"request long", new(LeaseRequest), "0000000700000002ffffffff0000000000", DecodeBadLength},
		{"request empty", new(LeaseRequest), "", DecodeTruncated},
		{"request reserved", new(LeaseRequest), "0000000700000002ffffffff00000100", DecodeBadReserved},
		{"request count beyond the ranks", new(LeaseRequest), "0000000700000002ffffffff0200000000000003", DecodeTruncated},
		{"request count 255, no ranks", new(LeaseRequest), "0000000700000002ffffffffff000000", DecodeTruncated},
		{"request ranks beyond the count", new(LeaseRequest), "0000000700000002ffffffff010000000000000300000004", DecodeBadLength},
		{"request rank 0", new(LeaseRequest), "0000000700000002ffffffff020000000000000300000000", DecodeBadField},
		{"request rank twice", new(LeaseRequest), "0000000700000002ffffffff03000000000000030000000100000003", DecodeBadField},
		{"reply verdict 0", new(LeaseReply), "0000000700000001000000000000000000000000", DecodeBadField},
		{"reply verdict unknown", new(LeaseReply), "0000000700000001000000000600000000000000", DecodeBadField},
		{"reply verdict 255", new(LeaseReply), "000000070000000100000000ff00000000000000", DecodeBadField},
		{"reply reserved", new(LeaseReply), "0000000700000001000000000100000100000000", DecodeBadReserved},
		{"reply short", new(LeaseReply), "00000007000000010000000001000000000000", DecodeTruncated},
		{"reply of the 16-byte layout", new(LeaseReply), "00000007000000010000000001000000", DecodeTruncated},
		{"reply long", new(LeaseReply), "000000070000000100000000010000000000000000", DecodeBadLength},
		{"release reason 0", new(LeaseRelease), "0000000100000000", DecodeBadField},
		{"release reason unknown", new(LeaseRelease), "0000000104000000", DecodeBadField},
		{"release reserved", new(LeaseRelease), "0000000101010000", DecodeBadReserved},
		{"release long", new(LeaseRelease), "000000010100000000", DecodeBadLength},
		{"omega interval 0", new(OmegaHeartbeat), "0000000200000000", DecodeBadField},
		{"omega interval over an hour", new(OmegaHeartbeat), "000000020036ee81", DecodeBadField},
		{"omega interval max", new(OmegaHeartbeat), "00000002ffffffff", DecodeBadField},
		{"omega short", new(OmegaHeartbeat), "00000002000000", DecodeTruncated},
		{"hello long", new(YoYoHello), "deadbeef00", DecodeBadLength},
		{"down value 0", new(YoYoDown), "0000000300000000", DecodeBadField},
		{"down short", new(YoYoDown), "00000003", DecodeTruncated},
		{"up unknown flag", new(YoYoUp), "0000000304000000", DecodeBadFlags},
		{"up all flags", new(YoYoUp), "00000003ff000000", DecodeBadFlags},
		{"up reserved", new(YoYoUp), "0000000301000100", DecodeBadReserved},
		{"leader 0", new(YoYoLeader), "0000000000000001", DecodeBadField},
		{"leader long", new(YoYoLeader), "000000010000000100", DecodeBadLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.hex)
			before := reflect.ValueOf(tc.p).Elem().Interface()
			err := tc.p.UnmarshalBinary(b)
			if err == nil {
				t.Fatal("decoded")
			}
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.kind) {
				t.Fatalf("error %v, want a *DecodeError of kind %v", err, tc.kind)
			}
			if !reflect.DeepEqual(reflect.ValueOf(tc.p).Elem().Interface(), before) {
				t.Error("a failed decode modified the value")
			}
		})
	}
}

func TestElectMoreEncodeErrors(t *testing.T) {
	for _, v := range []electMorePayload{
		&LeaseRequest{Ranks: make([]uint32, MaxLeaseRanks+1)}, &LeaseRequest{Ranks: []uint32{2, 0}},
		&LeaseRequest{Ranks: []uint32{2, 3, 2}},
		&LeaseReply{}, &LeaseReply{Verdict: verdictEnd},
		&LeaseRelease{}, &LeaseRelease{Reason: releaseEnd},
		&OmegaHeartbeat{}, &OmegaHeartbeat{Interval: MaxOmegaInterval + 1},
		&YoYoDown{}, &YoYoUp{Flags: 4}, &YoYoLeader{},
	} {
		b, err := v.AppendBinary([]byte{1})
		var ee *EncodeError
		if !errors.As(err, &ee) || !bytes.Equal(b, []byte{1}) {
			t.Errorf("%T %+v: %v, %x: want an *EncodeError and the buffer untouched", v, v, err, b)
		}
	}
}

func TestElectMoreKinds(t *testing.T) {
	for k := Kind(70); k <= 79; k++ {
		if !k.Known() || k.String() == "" {
			t.Errorf("kind %d has no name", k)
		}
	}
}

// FuzzElectMore: every decoder of the block never panics, fails only with
// its typed error, and what it accepts it encodes back byte for byte.
func FuzzElectMore(f *testing.F) {
	for _, tc := range electMoreGolden {
		b, _ := hex.DecodeString(tc.hex)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, tc := range electMoreGolden {
			p := newElectMore(tc.v)
			if err := p.UnmarshalBinary(b); err != nil {
				requireDecodeError(t, err)
				continue
			}
			out, err := p.AppendBinary(nil)
			if err != nil || !bytes.Equal(out, b) {
				t.Fatalf("%T: round trip %x -> %x (%v)", p, b, out, err)
			}
		}
	})
}

// TestLeaseRequestMostRanks: the largest standing order round-trips, one
// more is refused on both sides.
func TestLeaseRequestMostRanks(t *testing.T) {
	r := LeaseRequest{Seq: 1, Weight: 1, Uptime: 1}
	for i := range MaxLeaseRanks {
		r.Ranks = append(r.Ranks, uint32(i+1))
	}
	b, err := r.AppendBinary(nil)
	if err != nil || len(b) != LeaseRequestLen+4*MaxLeaseRanks {
		t.Fatalf("%d ranks: %v, %d bytes", MaxLeaseRanks, err, len(b))
	}
	var got LeaseRequest
	if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("decoded %v, %+v", err, got)
	}
}
