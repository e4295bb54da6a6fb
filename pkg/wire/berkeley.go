package wire

import "encoding/binary"

// Payloads of the Berkeley algorithm (pkg/timesync/berkeley). The frame
// header carries the master's term (the bully term it leads in: a worker
// takes polls and adjustments only from the leader of the term it knows)
// and each frame's transmit timestamp, patched just before the write.
//
//	master                    worker
//	  t1 --- ClockPoll -------> t2   (kernel receive stamp, worker clock)
//	  t4 <-- ClockReading ----- t3   with t1 echoed, t2, the worker's slew
//	                                 still pending at t2, and how late its
//	                                 frames leave after their stamp
//
//	worker - master = ((t2 - t1) + (t3 - t4)) / 2, RTT = (t4 - t1) - (t3 - t2)
//
// The notes' d = (t1 + t4)/2 - t2 is the special case t3 = t2 (a worker that
// answers in no time); using both worker times takes its processing time
// out of the round trip.
//
// A stamp patched into a frame precedes its departure by the whole sendmsg
// path (a multicast poll is delivered to every bridge port inside it: tens
// of microseconds more than a unicast reading), and half the difference of
// the two biases every offset. So the master takes t1 from the kernel's
// transmit stamp of its own poll, and t3 is the reading's stamp plus the
// worker's TxLag: how much later than their stamps the kernel saw its
// recent readings leave. Each round is a burst of polls (Sample 0, 1...);
// the master keeps each worker's reading with the smallest round trip, as
// NTP's clock filter does, and its correction names that sample.

// ClockPoll is the payload of KindClockPoll.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Round                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Sample     |                 Reserved (zero)               |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type ClockPoll struct {
	// Round numbers the master's rounds within its term; Sample the polls
	// of one round's burst.
	Round  uint32
	Sample uint8
}

// ClockReading is the payload of KindClockReading: a worker's answer to
// one poll.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Round                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Sample     |                 Reserved (zero)               |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Poll Sent: the poll's transmit timestamp, t1         |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Poll Received: the worker's clock at arrival, t2       | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Pending: slew still to apply at t2, ns (signed)          | 24
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Frequency: the worker's frequency correction, ppb (signed)  | 32
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Tx Lag: its readings leave this long after their stamp, ns  | 36
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type ClockReading struct {
	Round        uint32
	Sample       uint8
	PollSent     NTPTime
	PollReceived NTPTime
	// Pending lets the master compare clocks as if every correction
	// already commanded had been applied (a 200 ms slew takes 2.4 s).
	Pending int64
	// Frequency is the correction the worker applies to its oscillator,
	// in parts per billion: the master keeps the group's mean correction
	// near zero, so that the group runs at the mean natural rate of its
	// clocks instead of wherever its corrections happen to have taken it.
	Frequency int32
	// TxLag is how long after its transmit timestamp the kernel saw the
	// worker's recent readings leave (0: unknown, no kernel stamps).
	TxLag uint32
}

// ClockAdjust is the payload of KindClockAdjust: the correction one
// worker is to apply, and how far it can be trusted.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Round                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Sample     |                 Reserved (zero)               |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Correction, ns (signed; positive: move the clock forward)   |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Error: bound on the correction's error, ns (unsigned)     | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Correction is as of the arrival of the round's poll Sample (the reading
// the master kept), as if every correction the worker had commanded by
// then had been applied (see ClockReading.Pending).
type ClockAdjust struct {
	Round      uint32
	Sample     uint8
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
	ClockReadingLen   = 40
	ClockAdjustLen    = 24
	ClockAdjustAckLen = 4

	clockPollWhat    = "clock poll"
	clockReadingWhat = "clock reading"
	clockAdjustWhat  = "clock adjust"
	clockAckWhat     = "clock adjust ack"
)

// appendRoundSample writes a round and a sample index with three reserved
// zero bytes.
func appendRoundSample(b []byte, round uint32, sample uint8) []byte {
	b = binary.BigEndian.AppendUint32(b, round)
	return append(b, sample, 0, 0, 0)
}

// readRoundSample reads them back, refusing non-zero reserved bytes.
func readRoundSample(what string, b []byte) (uint32, uint8, error) {
	if r := int(b[5])<<16 | int(b[6])<<8 | int(b[7]); r != 0 {
		return 0, 0, decodeErr(what, DecodeBadReserved, "reserved", r, 0)
	}
	return binary.BigEndian.Uint32(b), b[4], nil
}

// AppendBinary appends the encoding of p to b. It cannot fail.
func (p ClockPoll) AppendBinary(b []byte) ([]byte, error) {
	return appendRoundSample(b, p.Round, p.Sample), nil
}

// UnmarshalBinary decodes exactly ClockPollLen bytes, reserved zero.
func (p *ClockPoll) UnmarshalBinary(b []byte) error {
	if err := checkLen(clockPollWhat, b, ClockPollLen); err != nil {
		return err
	}
	round, sample, err := readRoundSample(clockPollWhat, b)
	if err != nil {
		return err
	}
	*p = ClockPoll{Round: round, Sample: sample}
	return nil
}

// AppendBinary appends the encoding of r to b. It cannot fail.
func (r ClockReading) AppendBinary(b []byte) ([]byte, error) {
	b = appendRoundSample(b, r.Round, r.Sample)
	b = binary.BigEndian.AppendUint64(b, uint64(r.PollSent))
	b = binary.BigEndian.AppendUint64(b, uint64(r.PollReceived))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Pending))
	b = binary.BigEndian.AppendUint32(b, uint32(r.Frequency))
	return binary.BigEndian.AppendUint32(b, r.TxLag), nil
}

// UnmarshalBinary decodes exactly ClockReadingLen bytes.
func (r *ClockReading) UnmarshalBinary(b []byte) error {
	if err := checkLen(clockReadingWhat, b, ClockReadingLen); err != nil {
		return err
	}
	round, sample, err := readRoundSample(clockReadingWhat, b)
	if err != nil {
		return err
	}
	*r = ClockReading{
		Round:        round,
		Sample:       sample,
		PollSent:     NTPTime(binary.BigEndian.Uint64(b[8:])),
		PollReceived: NTPTime(binary.BigEndian.Uint64(b[16:])),
		Pending:      int64(binary.BigEndian.Uint64(b[24:])),
		Frequency:    int32(binary.BigEndian.Uint32(b[32:])),
		TxLag:        binary.BigEndian.Uint32(b[36:]),
	}
	return nil
}

// AppendBinary appends the encoding of a to b. It cannot fail.
func (a ClockAdjust) AppendBinary(b []byte) ([]byte, error) {
	b = appendRoundSample(b, a.Round, a.Sample)
	b = binary.BigEndian.AppendUint64(b, uint64(a.Correction))
	return binary.BigEndian.AppendUint64(b, a.Error), nil
}

// UnmarshalBinary decodes exactly ClockAdjustLen bytes.
func (a *ClockAdjust) UnmarshalBinary(b []byte) error {
	if err := checkLen(clockAdjustWhat, b, ClockAdjustLen); err != nil {
		return err
	}
	round, sample, err := readRoundSample(clockAdjustWhat, b)
	if err != nil {
		return err
	}
	*a = ClockAdjust{
		Round:      round,
		Sample:     sample,
		Correction: int64(binary.BigEndian.Uint64(b[8:])),
		Error:      binary.BigEndian.Uint64(b[16:]),
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
