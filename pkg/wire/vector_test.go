package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// vectorBlock encodes (id, counter) pairs as a frame's vector block.
func vectorBlock(pairs ...uint64) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(pairs)/2))
	for i := 0; i+1 < len(pairs); i += 2 {
		b = binary.BigEndian.AppendUint32(b, uint32(pairs[i]))
		b = binary.BigEndian.AppendUint64(b, pairs[i+1])
	}
	return b
}

var vectorKey = Key{ID: 3, Secret: []byte("0123456789abcdef0123456789abcdef")}

func vectorFrame(tb testing.TB, seal bool, vector []byte) []byte {
	tb.Helper()
	f := Frame{Header: Header{Kind: KindHeartbeat, Cluster: 9, Sender: 2, Seq: Seq(1, 0, 1), Lamport: 5}, Payload: make([]byte, 8), Vector: vector}
	b, err := f.AppendBinary(nil)
	if err != nil {
		tb.Fatal(err)
	}
	if seal {
		b = Seal(b, vectorKey)
	}
	return b
}

func TestFrameVectorRoundTrip(t *testing.T) {
	block := vectorBlock(1, 3, 2, 7)
	for _, seal := range []bool{false, true} {
		b := vectorFrame(t, seal, block)
		var f Frame
		if err := f.UnmarshalBinary(b); err != nil {
			t.Fatalf("seal %v: %v", seal, err)
		}
		if f.Flags&FlagVector == 0 || !bytes.Equal(f.Vector, block) || len(f.Payload) != 8 {
			t.Fatalf("seal %v: flags %x vector % x payload %d", seal, f.Flags, f.Vector, len(f.Payload))
		}
		if seal {
			v := NewValidator(9, 1, []Key{vectorKey})
			if err := v.Admit(&f, b); err != nil {
				t.Fatalf("a sealed frame with a vector: %v", err)
			}
			// The MAC covers the vector: a counter changed in flight is
			// refused.
			b[len(b)-AuthTrailerLen-1] ^= 1
			if err := f.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if err := v.Admit(&f, b); !errors.Is(err, ErrBadMAC) {
				t.Fatalf("a tampered vector: %v, want ErrBadMAC", err)
			}
		}
	}
	// Without a vector, the frame is the one of before FlagVector: no
	// flag, no block, Vector nil on decode.
	b := vectorFrame(t, false, nil)
	var f Frame
	if err := f.UnmarshalBinary(b); err != nil || f.Vector != nil || b[offFlags] != 0 || len(b) != HeaderLen+8 {
		t.Fatalf("no vector: %v, vector %v, flags %x, %d bytes", err, f.Vector, b[offFlags], len(b))
	}
}

func TestFrameVectorRefused(t *testing.T) {
	mod := func(b []byte, f func([]byte) []byte) []byte { return f(bytes.Clone(b)) }
	good := vectorFrame(t, false, vectorBlock(1, 3, 2, 7))
	for _, tc := range []struct {
		name string
		b    []byte
		kind DecodeErrorKind
	}{
		{"count beyond the frame", mod(good, func(b []byte) []byte { b[HeaderLen+9] = 3; return b }), DecodeTruncated},
		{"count below the frame", mod(good, func(b []byte) []byte { b[HeaderLen+9] = 1; return b }), DecodeBadLength},
		{"count too large", mod(good, func(b []byte) []byte { binary.BigEndian.PutUint16(b[HeaderLen+8:], MaxVectorEntries+1); return b }), DecodeOversized},
		{"block truncated", good[:HeaderLen+9], DecodeTruncated},
		{"IDs not ascending", vectorFrame(t, false, nil), DecodeBadField},
		{"zero counter", nil, DecodeBadField},
	} {
		switch tc.name {
		case "IDs not ascending":
			tc.b = append(mod(tc.b, func(b []byte) []byte { b[offFlags] |= FlagVector; return b }), vectorBlock(2, 1, 1, 1)...)
		case "zero counter":
			tc.b = append(mod(vectorFrame(t, false, nil), func(b []byte) []byte { b[offFlags] |= FlagVector; return b }), vectorBlock(1, 0)...)
		}
		var f Frame
		err := f.UnmarshalBinary(tc.b)
		if !errors.Is(err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.kind)
		}
	}
	// The encoder refuses what the decoder would.
	f := Frame{Header: Header{Kind: KindHeartbeat, Sender: 1}, Vector: vectorBlock(2, 1, 1, 1)}
	if _, err := f.AppendBinary(nil); err == nil {
		t.Error("an unsorted vector encoded")
	}
}
