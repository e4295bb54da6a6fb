package wire

import "testing"

// TestBerkeleyRoundTrips: every payload re-encodes what it decodes, and
// refuses other lengths and non-zero reserved bytes with a *DecodeError.
func TestBerkeleyRoundTrips(t *testing.T) {
	samples := []payload{
		&ClockPoll{Round: 7, Sample: 2},
		&ClockReading{Round: 7, PollSent: 0xeead1f8080000000, PollReceived: 0xeead1f8080001000, Pending: -123456, Frequency: -41_250, Sample: 1, TxLag: 23_456},
		&ClockAdjust{Round: 7, Sample: 2, Correction: -42_000, Error: 1500},
		&ClockAdjustAck{Round: 7},
	}
	for i, b := range checkRoundTrips(t, samples) {
		if want := []int{ClockPollLen, ClockReadingLen, ClockAdjustLen, ClockAdjustAckLen}[i]; len(b) != want {
			t.Errorf("%T: %d bytes, want %d", samples[i], len(b), want)
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
	fuzzDecoders(f, []payload{&ClockPoll{Round: 1}, &ClockReading{Round: 2, Pending: -1}, &ClockAdjust{Round: 3, Correction: 5}, &ClockAdjustAck{Round: 4}},
		nil, new(ClockPoll), new(ClockReading), new(ClockAdjust), new(ClockAdjustAck))
}
