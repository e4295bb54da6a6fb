package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// Golden encodings of the ring payloads: the bytes on the wire, fixed
// forever for these values.
func TestRingGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    interface{ AppendBinary([]byte) ([]byte, error) }
		into interface{ UnmarshalBinary([]byte) error }
		hex  string
	}{
		{"election chang-roberts", RingElection{Seq: 0x0102030405060708, Attempt: 2, Origin: 3, Candidate: 5},
			new(RingElection), "0102030405060708" + "00000002" + "00000003" + "00000005" + "00000000" + "00" + "00" + "0000"},
		{"election franklin ccw", RingElection{Seq: 1, Origin: 4, Candidate: 4, Round: 3, Flags: RingCounterclockwise | RingRelayed},
			new(RingElection), "0000000000000001" + "00000000" + "00000004" + "00000004" + "00000003" + "03" + "00" + "0000"},
		{"election list", RingElection{Seq: 9, Origin: 1, IDs: []uint32{1, 2, 0xfffffffe}},
			new(RingElection), "0000000000000009" + "00000000" + "00000001" + "00000000" + "00000000" + "00" + "00" + "0003" + "00000001" + "00000002" + "fffffffe"},
		{"coordinator", RingCoordinator{Seq: 7, Attempt: 1, Origin: 2, Leader: 6},
			new(RingCoordinator), "0000000000000007" + "00000001" + "00000002" + "00000006"},
		{"ack", RingAck{Seq: 0xfffffffffffffffe}, new(RingAck), "fffffffffffffffe"},
		{"heartbeat", RingHeartbeat{}, new(RingHeartbeat), "00000000"},
		{"heartbeat resign", RingHeartbeat{Flags: HeartbeatResign}, new(RingHeartbeat), "01000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.v.AppendBinary([]byte{0xaa})
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(b[1:]); got != tc.hex {
				t.Fatalf("encoding %s\nwant     %s", got, tc.hex)
			}
			if err := tc.into.UnmarshalBinary(b[1:]); err != nil {
				t.Fatal(err)
			}
			if got := reflect.ValueOf(tc.into).Elem().Interface(); !reflect.DeepEqual(got, tc.v) {
				t.Fatalf("decoded %+v, want %+v", got, tc.v)
			}
		})
	}
}

// TestRingDecodeErrors reads every field as an attacker writes it: counts
// beyond the limit or the bytes there are, ID 0 in a list, unknown flags,
// reserved bits, lengths off by one.
func TestRingDecodeErrors(t *testing.T) {
	election := func(count uint16, ids int, mod func([]byte)) []byte {
		b, _ := RingElection{Seq: 1, Origin: 1, Candidate: 1}.AppendBinary(nil)
		binary.BigEndian.PutUint16(b[offRingCount:], count)
		for i := range ids {
			b = binary.BigEndian.AppendUint32(b, uint32(i+1))
		}
		if mod != nil {
			mod(b)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		p    interface{ UnmarshalBinary([]byte) error }
		b    []byte
		kind DecodeErrorKind
	}{
		{"election empty", new(RingElection), nil, DecodeTruncated},
		{"election short", new(RingElection), election(0, 0, nil)[:RingElectionMinLen-1], DecodeTruncated},
		{"election count above the ids", new(RingElection), election(3, 2, nil), DecodeTruncated},
		{"election count below the ids", new(RingElection), election(1, 2, nil), DecodeBadLength},
		{"election absurd count", new(RingElection), election(0xffff, 0, nil), DecodeOversized},
		{"election count one too many", new(RingElection), election(MaxRingIDs+1, MaxRingIDs+1, nil), DecodeOversized},
		{"election id 0", new(RingElection), election(2, 2, func(b []byte) { binary.BigEndian.PutUint32(b[offRingIDs+4:], 0) }), DecodeBadField},
		{"election unknown flag", new(RingElection), election(0, 0, func(b []byte) { b[offRingFlags] = 0x80 }), DecodeBadFlags},
		{"election reserved", new(RingElection), election(0, 0, func(b []byte) { b[offRingReserved] = 1 }), DecodeBadReserved},
		{"coordinator short", new(RingCoordinator), make([]byte, RingCoordinatorLen-1), DecodeTruncated},
		{"coordinator long", new(RingCoordinator), make([]byte, RingCoordinatorLen+1), DecodeBadLength},
		{"ack short", new(RingAck), make([]byte, 7), DecodeTruncated},
		{"ack long", new(RingAck), make([]byte, 9), DecodeBadLength},
		{"heartbeat unknown flag", new(RingHeartbeat), []byte{2, 0, 0, 0}, DecodeBadFlags},
		{"heartbeat reserved", new(RingHeartbeat), []byte{0, 0, 0, 1}, DecodeBadReserved},
		{"heartbeat long", new(RingHeartbeat), []byte{0, 0, 0, 0, 0}, DecodeBadLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.UnmarshalBinary(tc.b)
			if err == nil {
				t.Fatal("decoded")
			}
			checkElectDecodeError(t, err)
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v, want kind %v", err, tc.kind)
			}
		})
	}
	// The largest list decodes.
	full := election(MaxRingIDs, MaxRingIDs, nil)
	var e RingElection
	if err := e.UnmarshalBinary(full); err != nil || len(e.IDs) != MaxRingIDs || len(full) != RingElectionMaxLen {
		t.Fatalf("full list: %v, %d ids, %d bytes", err, len(e.IDs), len(full))
	}
	if RingElectionMaxLen > MaxPayloadLen {
		t.Fatalf("a full list (%d bytes) does not fit a frame (%d)", RingElectionMaxLen, MaxPayloadLen)
	}
}

func TestRingEncodeErrors(t *testing.T) {
	for _, v := range []interface{ AppendBinary([]byte) ([]byte, error) }{
		RingElection{Flags: 0x80},
		RingElection{IDs: make([]uint32, MaxRingIDs+1)},
		RingElection{IDs: []uint32{1, 0}},
		RingHeartbeat{Flags: 2},
	} {
		if b, err := v.AppendBinary(nil); err == nil || !errors.As(err, new(*EncodeError)) {
			t.Errorf("%T encoded as %x (%v)", v, b, err)
		}
	}
}

func TestRingDecodeZeroAlloc(t *testing.T) {
	var (
		e RingElection
		c RingCoordinator
		a RingAck
		h RingHeartbeat
	)
	e.IDs = make([]uint32, 0, 8)
	eb, _ := RingElection{Seq: 1, Origin: 1, IDs: []uint32{1, 2, 3}}.AppendBinary(nil)
	cb, _ := RingCoordinator{Seq: 1, Leader: 3}.AppendBinary(nil)
	ab, _ := RingAck{Seq: 1}.AppendBinary(nil)
	hb, _ := RingHeartbeat{}.AppendBinary(nil)
	allocs := testing.AllocsPerRun(100, func() {
		if e.UnmarshalBinary(eb) != nil || c.UnmarshalBinary(cb) != nil || a.UnmarshalBinary(ab) != nil || h.UnmarshalBinary(hb) != nil {
			panic("decode failed")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per decode (list into a reused array), want 0", allocs)
	}
}

// FuzzRingElection: whatever the decoder accepts re-encodes to the same
// bytes, and it refuses everything else with a *DecodeError.
func FuzzRingElection(f *testing.F) {
	b, _ := RingElection{Seq: 1, Origin: 2, IDs: []uint32{2, 3}}.AppendBinary(nil)
	f.Add(b)
	f.Add([]byte{})
	f.Add(make([]byte, RingElectionMinLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e RingElection
		if err := e.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := e.AppendBinary(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x (%v)", b, out, err)
		}
	})
}

func FuzzRingSmall(f *testing.F) {
	f.Add(byte(0), make([]byte, RingCoordinatorLen))
	f.Add(byte(1), make([]byte, RingAckLen))
	f.Add(byte(2), []byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, which byte, b []byte) {
		var p interface {
			UnmarshalBinary([]byte) error
			AppendBinary([]byte) ([]byte, error)
		}
		switch which % 3 {
		case 0:
			p = new(RingCoordinator)
		case 1:
			p = new(RingAck)
		default:
			p = new(RingHeartbeat)
		}
		if err := p.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := p.AppendBinary(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x (%v)", b, out, err)
		}
	})
}
