package wire

import "encoding/binary"

// Payloads of the Berkeley algorithm (pkg/timesync/berkeley). The frame
// header carries the master's term (the bully term it leads in: a worker
// takes polls and adjustments only from the leader of the term it knows)
// and each frame's transmit timestamp, patched just before the write, which
// is half of every timing below: a poll's is t1 (the master's clock as the
// poll left), a reading's is t3' (the worker's clock as it answered).
//
//	master                    worker
//	  t1 --- ClockPoll -------> t2   (kernel receive stamp, worker clock)
//	  t4 <-- ClockReading ----- t3   (its transmit timestamp), with t1, t2
//	         and the worker's slew still pending at t2
//
//	worker - master = ((t2 - t1) + (t3 - t4)) / 2, RTT = (t4 - t1) - (t3 - t2)
//
// The notes' d = (t1 + t4)/2 - t2 is the special case t3 = t2 (a worker that
// answers in no time); using both worker times takes its processing time
// out of the round trip.

// ClockPoll is the payload of KindClockPoll.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Round                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Reserved (zero)                        |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type ClockPoll struct {
	// Round numbers the master's rounds within its term.
	Round uint32
}

// ClockReading is the payload of KindClockReading: a worker's answer to
// one poll.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Round                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Poll Sent: the poll's transmit timestamp, t1         |  4
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Poll Received: the worker's clock at arrival, t2       | 12
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Pending: slew still to apply at t2, ns (signed)          | 20
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Frequency: the worker's frequency correction, ppb (signed)  | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type ClockReading struct {
	Round        uint32
	PollSent     NTPTime
	PollReceived NTPTime
	// Pending lets the master compare clocks as if every correction
	// already commanded had been applied (a 200 ms slew takes 2.4 s).
	Pending int64
	// Frequency is the correction the worker applies to its oscillator,
	// in parts per billion: the master keeps the group's mean correction
	// near zero, so that the group runs at the mean of its clocks' natural
	// rates instead of wherever its corrections happen to have taken it.
	Frequency int32
}

// ClockAdjust is the payload of KindClockAdjust: the correction one
// worker is to apply, and how far it can be trusted.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Round                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Correction, ns (signed; positive: move the clock forward)   |  4
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Error: bound on the correction's error, ns (unsigned)     | 12
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Correction is as if every correction the worker had commanded by t2 had
// been applied (see ClockReading.Pending).
type ClockAdjust struct {
	Round      uint32
	Correction int64
	Error      uint64
}

// ClockAdjustAck is the payload of KindClockAdjustAck.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Round                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type ClockAdjustAck struct {
	Round uint32
}

const (
	// Exact payload lengths.
	ClockPollLen      = 8
	ClockReadingLen   = 32
	ClockAdjustLen    = 20
	ClockAdjustAckLen = 4

	clockPollWhat    = "clock poll"
	clockReadingWhat = "clock reading"
	clockAdjustWhat  = "clock adjust"
	clockAckWhat     = "clock adjust ack"
)

// AppendBinary appends the encoding of p to b. It cannot fail.
func (p ClockPoll) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, p.Round)
	return binary.BigEndian.AppendUint32(b, 0), nil
}

// UnmarshalBinary decodes exactly ClockPollLen bytes, reserved zero.
func (p *ClockPoll) UnmarshalBinary(b []byte) error {
	if err := checkLen(clockPollWhat, b, ClockPollLen); err != nil {
		return err
	}
	if r := binary.BigEndian.Uint32(b[4:]); r != 0 {
		return decodeErr(clockPollWhat, DecodeBadReserved, "reserved", int(r), 0)
	}
	p.Round = binary.BigEndian.Uint32(b)
	return nil
}

// AppendBinary appends the encoding of r to b. It cannot fail.
func (r ClockReading) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, r.Round)
	b = binary.BigEndian.AppendUint64(b, uint64(r.PollSent))
	b = binary.BigEndian.AppendUint64(b, uint64(r.PollReceived))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Pending))
	return binary.BigEndian.AppendUint32(b, uint32(r.Frequency)), nil
}

// UnmarshalBinary decodes exactly ClockReadingLen bytes.
func (r *ClockReading) UnmarshalBinary(b []byte) error {
	if err := checkLen(clockReadingWhat, b, ClockReadingLen); err != nil {
		return err
	}
	*r = ClockReading{
		Round:        binary.BigEndian.Uint32(b),
		PollSent:     NTPTime(binary.BigEndian.Uint64(b[4:])),
		PollReceived: NTPTime(binary.BigEndian.Uint64(b[12:])),
		Pending:      int64(binary.BigEndian.Uint64(b[20:])),
		Frequency:    int32(binary.BigEndian.Uint32(b[28:])),
	}
	return nil
}

// AppendBinary appends the encoding of a to b. It cannot fail.
func (a ClockAdjust) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, a.Round)
	b = binary.BigEndian.AppendUint64(b, uint64(a.Correction))
	return binary.BigEndian.AppendUint64(b, a.Error), nil
}

// UnmarshalBinary decodes exactly ClockAdjustLen bytes.
func (a *ClockAdjust) UnmarshalBinary(b []byte) error {
	if err := checkLen(clockAdjustWhat, b, ClockAdjustLen); err != nil {
		return err
	}
	*a = ClockAdjust{
		Round:      binary.BigEndian.Uint32(b),
		Correction: int64(binary.BigEndian.Uint64(b[4:])),
		Error:      binary.BigEndian.Uint64(b[12:]),
	}
	return nil
}

// AppendBinary appends the encoding of a to b. It cannot fail.
func (a ClockAdjustAck) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint32(b, a.Round), nil
}

// UnmarshalBinary decodes exactly ClockAdjustAckLen bytes.
func (a *ClockAdjustAck) UnmarshalBinary(b []byte) error {
	if err := checkLen(clockAckWhat, b, ClockAdjustAckLen); err != nil {
		return err
	}
	a.Round = binary.BigEndian.Uint32(b)
	return nil
}
