package wire

import (
	"bytes"
	"encoding"
	"testing"
)

type berkeleyPayload interface {
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

// TestBerkeleyRoundTrips: every payload re-encodes what it decodes, and
// refuses other lengths and non-zero reserved bytes with a *DecodeError.
func TestBerkeleyRoundTrips(t *testing.T) {
	cases := []struct {
		in  berkeleyPayload
		out berkeleyPayload
		len int
	}{
		{&ClockPoll{Round: 7, Sample: 2}, new(ClockPoll), ClockPollLen},
		{&ClockReading{Round: 7, PollSent: 0xeead1f8080000000, PollReceived: 0xeead1f8080001000, Pending: -123456, Frequency: -41_250, Sample: 1, TxLag: 23_456}, new(ClockReading), ClockReadingLen},
		{&ClockAdjust{Round: 7, Sample: 2, Correction: -42_000, Error: 1500}, new(ClockAdjust), ClockAdjustLen},
		{&ClockAdjustAck{Round: 7}, new(ClockAdjustAck), ClockAdjustAckLen},
	}
	for _, c := range cases {
		b, err := c.in.AppendBinary(nil)
		if err != nil || len(b) != c.len {
			t.Fatalf("%T: %d bytes, %v", c.in, len(b), err)
		}
		if err := c.out.UnmarshalBinary(b); err != nil {
			t.Fatalf("%T: %v", c.in, err)
		}
		again, _ := c.out.AppendBinary(nil)
		if !bytes.Equal(again, b) {
			t.Errorf("%T: round trip % x -> % x", c.in, b, again)
		}
		for _, bad := range [][]byte{b[:len(b)-1], append(append([]byte{}, b...), 0)} {
			if err := c.out.UnmarshalBinary(bad); err == nil {
				t.Errorf("%T: %d bytes accepted", c.in, len(bad))
			} else {
				requireDecodeError(t, err)
			}
		}
	}
	var p ClockPoll
	if err := p.UnmarshalBinary([]byte{0, 0, 0, 1, 0, 0, 0, 1}); err == nil {
		t.Error("poll with reserved bits accepted")
	}
	var a ClockAdjust
	if err := a.UnmarshalBinary(append([]byte{0, 0, 0, 1, 2, 0, 1, 0}, make([]byte, 16)...)); err == nil {
		t.Error("adjust with reserved bits accepted")
	}
}

func FuzzBerkeley(f *testing.F) {
	for _, p := range []encoding.BinaryAppender{ClockPoll{Round: 1}, ClockReading{Round: 2, Pending: -1}, ClockAdjust{Round: 3, Correction: 5}, ClockAdjustAck{Round: 4}} {
		b, _ := p.AppendBinary(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range []berkeleyPayload{new(ClockPoll), new(ClockReading), new(ClockAdjust), new(ClockAdjustAck)} {
			if err := p.UnmarshalBinary(b); err != nil {
				requireDecodeError(t, err)
				continue
			}
			out, _ := p.AppendBinary(nil)
			if !bytes.Equal(out, b) {
				t.Fatalf("%T: round trip % x -> % x", p, b, out)
			}
		}
	})
}
