package wire

import "encoding/binary"

// Payloads of ordered multicast (pkg/order, orderd). Two families share
// the block 90-119:
//
//   - the reliable FIFO stream every member multicasts on (OrderRecord,
//     acknowledged cumulatively by OrderStreamAck): FIFO, causal and
//     Lamport-total messages and the Lamport algorithm's acks travel in it;
//   - the sequencer's replicated log (OrderSubmit to the sequencer,
//     OrderAppend from it, OrderAppendAck back; OrderRecover,
//     OrderRecoverReply, OrderFetch and OrderFetchReply when a newly elected
//     sequencer learns the log before it assigns a number).
//
// The frame header carries the sender, the receiver and the term (the
// sequencer's election term for the log's kinds). Every count and length
// is bounded here, before anything is allocated; what the numbers mean
// (a sequence far ahead of the receiver's window, a vector of the wrong
// width) is the core's policy, checked there.

// Kinds of ordered multicast.
const (
	// KindOrderRecord is one record of a member's reliable FIFO stream,
	// sent to every other member and resent until acknowledged (payload:
	// OrderRecord).
	KindOrderRecord Kind = 90
	// KindOrderStreamAck acknowledges a member's stream up to a sequence
	// number (payload: OrderStreamAck).
	KindOrderStreamAck Kind = 91
	// KindOrderSubmit hands a message to the sequencer to be numbered
	// (payload: OrderSubmit).
	KindOrderSubmit Kind = 92
	// KindOrderAppend carries numbered log entries and the commit point
	// from the sequencer; with no entries it is the sequencer's heartbeat
	// (payload: OrderEntries).
	KindOrderAppend Kind = 93
	// KindOrderAppendAck tells the sequencer how far a member's log
	// matches its own (payload: OrderAppendAck).
	KindOrderAppendAck Kind = 94
	// KindOrderRecover asks every member, for a new term, what log it
	// holds (payload: OrderRecover).
	KindOrderRecover Kind = 95
	// KindOrderRecoverReply answers a Recover and promises the term
	// (payload: OrderRecoverReply).
	KindOrderRecoverReply Kind = 96
	// KindOrderFetch asks a member for log entries from a number on
	// (payload: OrderFetch).
	KindOrderFetch Kind = 97
	// KindOrderFetchReply answers a Fetch (payload: OrderEntries).
	KindOrderFetchReply Kind = 98
	// KindOrderSnapshot carries the replicated state at a log number to a
	// member that needs entries no longer kept (payload: OrderSnapshot).
	KindOrderSnapshot Kind = 99
)

// Limits of ordered multicast, read before anything is allocated.
const (
	// MaxOrderMessage bounds one multicast message's bytes.
	MaxOrderMessage = 1024
	// MaxOrderVector bounds a causal vector's entries (one per member).
	MaxOrderVector = 64
	// MaxOrderEntries bounds the log entries of one Append or FetchReply.
	MaxOrderEntries = 32
	// MaxOrderSnapshot bounds a snapshot's bytes (it travels in one frame).
	MaxOrderSnapshot = 60000
)

// OrderType is what a stream record carries.
type OrderType uint8

// Record types.
const (
	// OrderFIFO: a message delivered in its sender's order.
	OrderFIFO OrderType = 1
	// OrderCausal: a message delivered after its causal predecessors
	// (Vector is its timestamp).
	OrderCausal OrderType = 2
	// OrderTotal: a message of the distributed total order (Stamp is its
	// Lamport time).
	OrderTotal OrderType = 3
	// OrderTotalAck: the Lamport algorithm's acknowledgement of the
	// message (AckSender, AckStamp); Stamp is the ack's own time.
	OrderTotalAck OrderType = 4

	orderTypeEnd OrderType = 5
)

var orderTypeNames = [...]string{OrderFIFO: "fifo", OrderCausal: "causal", OrderTotal: "total", OrderTotalAck: "total_ack"}

func (t OrderType) String() string {
	if t > 0 && t < orderTypeEnd {
		return orderTypeNames[t]
	}
	return "order_type(" + itoa(int(t)) + ")"
}

// OrderRecord is one record of a member's stream (KindOrderRecord).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Seq (64, from 1)                         |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Stamp (64, Lamport)                      |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Type      |  Vector count |         Message length        | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      AckSender (32)                           | 20
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      AckStamp (64)                            | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Vector entries (64 each, in member-ID order)         | 32
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Message (length bytes)                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Seq is never 0. Only a causal record has a vector; only a total ack has
// AckSender (non-zero) and AckStamp, and it carries no message.
type OrderRecord struct {
	Seq       uint64
	Stamp     uint64
	Type      OrderType
	AckSender uint32
	AckStamp  uint64
	Vector    []uint64
	Message   []byte // aliases the decoded buffer
}

// OrderStreamAck acknowledges the receiver's stream up to Upto
// (KindOrderStreamAck): every record with Seq <= Upto arrived and was
// handed on.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Upto (64)                                |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type OrderStreamAck struct {
	Upto uint64
}

// OrderSubmit hands a message to the sequencer (KindOrderSubmit): the
// sender's SID-th total-order message (from 1, per sender, in order).
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      SID (64)                                 |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Message length         |          Reserved (0)         |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Message                                  | 12
type OrderSubmit struct {
	SID     uint64
	Message []byte
}

// OrderEntry is one numbered message of the sequencer's log: the
// sender's SID-th submission.
type OrderEntry struct {
	Sender  uint32
	SID     uint64
	Message []byte
}

// OrderEntries is the sequencer's Append (KindOrderAppend) and a member's
// FetchReply (KindOrderFetchReply): the entries numbered Prev+1,
// Prev+2, ..., the sender's commit point, and Start: for an Append, the
// last number of the log the sequencer took over when its term began (a
// member whose log reaches it holds the term's whole log); for a
// FetchReply, the responder's last number.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Prev (64)                                |  0
//	|                      Commit (64)                              |  8
//	|                      Start (64)                               | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Entry count           |          Reserved (0)         | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| each entry: Sender (32), SID (64), length (16), message       | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type OrderEntries struct {
	Prev, Commit, Start uint64
	Entries             []OrderEntry
}

// OrderAppendAck tells the sequencer of the frame's term that the
// member's log matches its own up to Match (KindOrderAppendAck), and that
// it learned the commit point Commit (never after Match), so the
// sequencer knows whom to tell again.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Match (64)                               |  0
//	|                      Commit (64)                              |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type OrderAppendAck struct {
	Match, Commit uint64
}

// OrderRecover asks, for the frame's term, what log a member holds
// (KindOrderRecover); Last is the new sequencer's own last number.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Last (64)                                |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type OrderRecover struct {
	Last uint64
}

// OrderRecoverReply answers a Recover (KindOrderRecoverReply): the member
// promises the frame's term, and says which term's sequencer its log last
// came whole from (LogTerm), its last number and its commit point.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      LogTerm (64)                             |  0
//	|                      Last (64)                                |  8
//	|                      Commit (64)                              | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type OrderRecoverReply struct {
	LogTerm, Last, Commit uint64
}

// OrderFetch asks a member for its log entries numbered From and up
// (KindOrderFetch).
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      From (64)                                |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type OrderFetch struct {
	From uint64
}

// OrderSnapshot is the replicated state after log number Index
// (KindOrderSnapshot), as the core encodes it: the member that takes it
// continues from Index+1.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Index (64)                               |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Length (32)                              |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Data (Length bytes)                      | 12
type OrderSnapshot struct {
	Index uint64
	Data  []byte // aliases the decoded buffer
}

const orderSnapshotWhat = "order snapshot"

// AppendBinary encodes an OrderSnapshot.
func (s OrderSnapshot) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case s.Index == 0:
		return b, &EncodeError{What: orderSnapshotWhat, Field: "index", Value: 0, Why: "a snapshot follows at least one entry"}
	case len(s.Data) > MaxOrderSnapshot:
		return b, &EncodeError{What: orderSnapshotWhat, Field: "length", Value: uint64(len(s.Data)), Why: "exceeds MaxOrderSnapshot"}
	}
	b = binary.BigEndian.AppendUint64(b, s.Index)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Data)))
	return append(b, s.Data...), nil
}

// UnmarshalBinary decodes an OrderSnapshot; Data aliases b.
func (s *OrderSnapshot) UnmarshalBinary(b []byte) error {
	if len(b) < 12 {
		return decodeErr(orderSnapshotWhat, DecodeTruncated, "", len(b), 12)
	}
	idx := binary.BigEndian.Uint64(b)
	if idx == 0 {
		return decodeErr(orderSnapshotWhat, DecodeBadField, "index", 0, -1)
	}
	n := binary.BigEndian.Uint32(b[8:])
	if n > MaxOrderSnapshot {
		return decodeErr(orderSnapshotWhat, DecodeOversized, "length", int(min(n, 1<<30)), MaxOrderSnapshot)
	}
	if err := checkLen(orderSnapshotWhat, b, 12+int(n)); err != nil {
		return err
	}
	*s = OrderSnapshot{Index: idx, Data: b[12:len(b):len(b)]}
	return nil
}

const (
	orderRecordFixedLen  = 32
	orderSubmitFixedLen  = 12
	orderEntriesFixedLen = 28
	orderEntryFixedLen   = 14

	// OrderStreamAckLen, OrderAppendAckLen, OrderRecoverLen,
	// OrderRecoverReplyLen, OrderFetchLen are those payloads' exact lengths.
	OrderStreamAckLen    = 8
	OrderAppendAckLen    = 16
	OrderRecoverLen      = 8
	OrderRecoverReplyLen = 24
	OrderFetchLen        = 8

	orderRecordWhat       = "order record"
	orderStreamAckWhat    = "order stream ack"
	orderSubmitWhat       = "order submit"
	orderEntriesWhat      = "order entries"
	orderAppendAckWhat    = "order append ack"
	orderRecoverWhat      = "order recover"
	orderRecoverReplyWhat = "order recover reply"
	orderFetchWhat        = "order fetch"
)

// AppendBinary encodes an OrderRecord.
func (r OrderRecord) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case r.Seq == 0:
		return b, &EncodeError{What: orderRecordWhat, Field: "seq", Value: 0, Why: "sequence numbers start at 1"}
	case r.Type == 0 || r.Type >= orderTypeEnd:
		return b, &EncodeError{What: orderRecordWhat, Field: "type", Value: uint64(r.Type), Why: "undefined"}
	case len(r.Vector) > MaxOrderVector:
		return b, &EncodeError{What: orderRecordWhat, Field: "vector count", Value: uint64(len(r.Vector)), Why: "exceeds MaxOrderVector"}
	case len(r.Message) > MaxOrderMessage:
		return b, &EncodeError{What: orderRecordWhat, Field: "message length", Value: uint64(len(r.Message)), Why: "exceeds MaxOrderMessage"}
	case (r.Type == OrderCausal) != (len(r.Vector) > 0):
		return b, &EncodeError{What: orderRecordWhat, Field: "vector count", Value: uint64(len(r.Vector)), Why: "a causal record, and only one, has a vector"}
	case (r.Type == OrderTotalAck) != (r.AckSender != 0):
		return b, &EncodeError{What: orderRecordWhat, Field: "ack sender", Value: uint64(r.AckSender), Why: "a total ack, and only one, names the acked message's sender"}
	case r.Type != OrderTotalAck && r.AckStamp != 0:
		return b, &EncodeError{What: orderRecordWhat, Field: "ack stamp", Value: r.AckStamp, Why: "only a total ack has one"}
	case r.Type == OrderTotalAck && len(r.Message) > 0:
		return b, &EncodeError{What: orderRecordWhat, Field: "message length", Value: uint64(len(r.Message)), Why: "a total ack carries no message"}
	}
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, r.Stamp)
	b = append(b, byte(r.Type), byte(len(r.Vector)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.Message)))
	b = binary.BigEndian.AppendUint32(b, r.AckSender)
	b = binary.BigEndian.AppendUint64(b, r.AckStamp)
	for _, v := range r.Vector {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return append(b, r.Message...), nil
}

// UnmarshalBinary decodes an OrderRecord; Message aliases b. The vector
// is allocated (at most MaxOrderVector entries, checked first).
func (r *OrderRecord) UnmarshalBinary(b []byte) error {
	if len(b) < orderRecordFixedLen {
		return decodeErr(orderRecordWhat, DecodeTruncated, "", len(b), orderRecordFixedLen)
	}
	seq := binary.BigEndian.Uint64(b[0:])
	if seq == 0 {
		return decodeErr(orderRecordWhat, DecodeBadField, "seq", 0, -1)
	}
	typ := OrderType(b[16])
	if typ == 0 || typ >= orderTypeEnd {
		return decodeErr(orderRecordWhat, DecodeBadField, "type", int(typ), -1)
	}
	nv := int(b[17])
	if nv > MaxOrderVector {
		return decodeErr(orderRecordWhat, DecodeOversized, "vector count", nv, MaxOrderVector)
	}
	ml := int(binary.BigEndian.Uint16(b[18:]))
	if ml > MaxOrderMessage {
		return decodeErr(orderRecordWhat, DecodeOversized, "message length", ml, MaxOrderMessage)
	}
	ackSender := binary.BigEndian.Uint32(b[20:])
	ackStamp := binary.BigEndian.Uint64(b[24:])
	switch {
	case (typ == OrderCausal) != (nv > 0):
		return decodeErr(orderRecordWhat, DecodeBadField, "vector count", nv, -1)
	case (typ == OrderTotalAck) != (ackSender != 0):
		return decodeErr(orderRecordWhat, DecodeBadField, "ack sender", clampInt(uint64(ackSender)), -1)
	case typ != OrderTotalAck && ackStamp != 0:
		return decodeErr(orderRecordWhat, DecodeBadReserved, "ack stamp", 1, 0)
	case typ == OrderTotalAck && ml > 0:
		return decodeErr(orderRecordWhat, DecodeBadField, "message length", ml, 0)
	}
	end := orderRecordFixedLen + 8*nv + ml
	if len(b) != end {
		if len(b) < end {
			return decodeErr(orderRecordWhat, DecodeTruncated, "", len(b), end)
		}
		return decodeErr(orderRecordWhat, DecodeBadLength, "", len(b), end)
	}
	var vec []uint64
	if nv > 0 {
		vec = make([]uint64, nv)
		for i := range vec {
			vec[i] = binary.BigEndian.Uint64(b[orderRecordFixedLen+8*i:])
		}
	}
	*r = OrderRecord{Seq: seq, Stamp: binary.BigEndian.Uint64(b[8:]), Type: typ, AckSender: ackSender, AckStamp: ackStamp,
		Vector: vec, Message: b[orderRecordFixedLen+8*nv : end : end]}
	return nil
}

// AppendBinary encodes an OrderStreamAck.
func (a OrderStreamAck) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint64(b, a.Upto), nil
}

// UnmarshalBinary decodes an OrderStreamAck.
func (a *OrderStreamAck) UnmarshalBinary(b []byte) error {
	if err := checkLen(orderStreamAckWhat, b, OrderStreamAckLen); err != nil {
		return err
	}
	a.Upto = binary.BigEndian.Uint64(b)
	return nil
}

// AppendBinary encodes an OrderSubmit.
func (s OrderSubmit) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case s.SID == 0:
		return b, &EncodeError{What: orderSubmitWhat, Field: "sid", Value: 0, Why: "submission numbers start at 1"}
	case len(s.Message) > MaxOrderMessage:
		return b, &EncodeError{What: orderSubmitWhat, Field: "message length", Value: uint64(len(s.Message)), Why: "exceeds MaxOrderMessage"}
	}
	b = binary.BigEndian.AppendUint64(b, s.SID)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Message)))
	b = append(b, 0, 0)
	return append(b, s.Message...), nil
}

// UnmarshalBinary decodes an OrderSubmit; Message aliases b.
func (s *OrderSubmit) UnmarshalBinary(b []byte) error {
	if len(b) < orderSubmitFixedLen {
		return decodeErr(orderSubmitWhat, DecodeTruncated, "", len(b), orderSubmitFixedLen)
	}
	sid := binary.BigEndian.Uint64(b)
	if sid == 0 {
		return decodeErr(orderSubmitWhat, DecodeBadField, "sid", 0, -1)
	}
	if b[10] != 0 || b[11] != 0 {
		return decodeErr(orderSubmitWhat, DecodeBadReserved, "reserved", int(b[10])<<8|int(b[11]), 0)
	}
	ml := int(binary.BigEndian.Uint16(b[8:]))
	if ml > MaxOrderMessage {
		return decodeErr(orderSubmitWhat, DecodeOversized, "message length", ml, MaxOrderMessage)
	}
	if err := checkLen(orderSubmitWhat, b, orderSubmitFixedLen+ml); err != nil {
		return err
	}
	*s = OrderSubmit{SID: sid, Message: b[orderSubmitFixedLen:len(b):len(b)]}
	return nil
}

// AppendBinary encodes OrderEntries.
func (e OrderEntries) AppendBinary(b []byte) ([]byte, error) {
	if len(e.Entries) > MaxOrderEntries {
		return b, &EncodeError{What: orderEntriesWhat, Field: "entry count", Value: uint64(len(e.Entries)), Why: "exceeds MaxOrderEntries"}
	}
	if e.Prev > ^uint64(0)-uint64(len(e.Entries)) {
		return b, &EncodeError{What: orderEntriesWhat, Field: "prev", Value: e.Prev, Why: "entry numbers would wrap"}
	}
	for _, en := range e.Entries {
		switch {
		case en.Sender == 0:
			return b, &EncodeError{What: orderEntriesWhat, Field: "entry sender", Value: 0, Why: "member IDs start at 1"}
		case en.SID == 0:
			return b, &EncodeError{What: orderEntriesWhat, Field: "entry sid", Value: 0, Why: "submission numbers start at 1"}
		case len(en.Message) > MaxOrderMessage:
			return b, &EncodeError{What: orderEntriesWhat, Field: "entry length", Value: uint64(len(en.Message)), Why: "exceeds MaxOrderMessage"}
		}
	}
	b = binary.BigEndian.AppendUint64(b, e.Prev)
	b = binary.BigEndian.AppendUint64(b, e.Commit)
	b = binary.BigEndian.AppendUint64(b, e.Start)
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.Entries)))
	b = append(b, 0, 0)
	for _, en := range e.Entries {
		b = binary.BigEndian.AppendUint32(b, en.Sender)
		b = binary.BigEndian.AppendUint64(b, en.SID)
		b = binary.BigEndian.AppendUint16(b, uint16(len(en.Message)))
		b = append(b, en.Message...)
	}
	return b, nil
}

// UnmarshalBinary decodes OrderEntries; messages alias b. The entry slice
// is allocated (at most MaxOrderEntries, checked first).
func (e *OrderEntries) UnmarshalBinary(b []byte) error {
	if len(b) < orderEntriesFixedLen {
		return decodeErr(orderEntriesWhat, DecodeTruncated, "", len(b), orderEntriesFixedLen)
	}
	if b[26] != 0 || b[27] != 0 {
		return decodeErr(orderEntriesWhat, DecodeBadReserved, "reserved", int(b[26])<<8|int(b[27]), 0)
	}
	n := int(binary.BigEndian.Uint16(b[24:]))
	if n > MaxOrderEntries {
		return decodeErr(orderEntriesWhat, DecodeOversized, "entry count", n, MaxOrderEntries)
	}
	prev := binary.BigEndian.Uint64(b)
	if prev > ^uint64(0)-uint64(n) {
		return decodeErr(orderEntriesWhat, DecodeBadField, "prev", -1, -1)
	}
	var entries []OrderEntry
	if n > 0 {
		entries = make([]OrderEntry, n)
	}
	off := orderEntriesFixedLen
	for i := range entries {
		if len(b) < off+orderEntryFixedLen {
			return decodeErr(orderEntriesWhat, DecodeTruncated, "entry", len(b), off+orderEntryFixedLen)
		}
		en := OrderEntry{Sender: binary.BigEndian.Uint32(b[off:]), SID: binary.BigEndian.Uint64(b[off+4:])}
		ml := int(binary.BigEndian.Uint16(b[off+12:]))
		switch {
		case en.Sender == 0:
			return decodeErr(orderEntriesWhat, DecodeBadField, "entry sender", 0, -1)
		case en.SID == 0:
			return decodeErr(orderEntriesWhat, DecodeBadField, "entry sid", 0, -1)
		case ml > MaxOrderMessage:
			return decodeErr(orderEntriesWhat, DecodeOversized, "entry length", ml, MaxOrderMessage)
		}
		off += orderEntryFixedLen
		if len(b) < off+ml {
			return decodeErr(orderEntriesWhat, DecodeTruncated, "entry message", len(b), off+ml)
		}
		en.Message = b[off : off+ml : off+ml]
		off += ml
		entries[i] = en
	}
	if len(b) != off {
		return decodeErr(orderEntriesWhat, DecodeBadLength, "", len(b), off)
	}
	*e = OrderEntries{Prev: prev, Commit: binary.BigEndian.Uint64(b[8:]), Start: binary.BigEndian.Uint64(b[16:]), Entries: entries}
	return nil
}

// AppendBinary encodes an OrderAppendAck.
func (a OrderAppendAck) AppendBinary(b []byte) ([]byte, error) {
	if a.Commit > a.Match {
		return b, &EncodeError{What: orderAppendAckWhat, Field: "commit", Value: a.Commit, Why: "beyond the match"}
	}
	b = binary.BigEndian.AppendUint64(b, a.Match)
	return binary.BigEndian.AppendUint64(b, a.Commit), nil
}

// UnmarshalBinary decodes an OrderAppendAck.
func (a *OrderAppendAck) UnmarshalBinary(b []byte) error {
	if err := checkLen(orderAppendAckWhat, b, OrderAppendAckLen); err != nil {
		return err
	}
	m, cm := binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])
	if cm > m {
		return decodeErr(orderAppendAckWhat, DecodeBadField, "commit", -1, -1)
	}
	*a = OrderAppendAck{Match: m, Commit: cm}
	return nil
}

// AppendBinary encodes an OrderRecover.
func (r OrderRecover) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint64(b, r.Last), nil
}

// UnmarshalBinary decodes an OrderRecover.
func (r *OrderRecover) UnmarshalBinary(b []byte) error {
	if err := checkLen(orderRecoverWhat, b, OrderRecoverLen); err != nil {
		return err
	}
	r.Last = binary.BigEndian.Uint64(b)
	return nil
}

// AppendBinary encodes an OrderRecoverReply.
func (r OrderRecoverReply) AppendBinary(b []byte) ([]byte, error) {
	if r.Commit > r.Last {
		return b, &EncodeError{What: orderRecoverReplyWhat, Field: "commit", Value: r.Commit, Why: "beyond the last entry"}
	}
	b = binary.BigEndian.AppendUint64(b, r.LogTerm)
	b = binary.BigEndian.AppendUint64(b, r.Last)
	return binary.BigEndian.AppendUint64(b, r.Commit), nil
}

// UnmarshalBinary decodes an OrderRecoverReply.
func (r *OrderRecoverReply) UnmarshalBinary(b []byte) error {
	if err := checkLen(orderRecoverReplyWhat, b, OrderRecoverReplyLen); err != nil {
		return err
	}
	v := OrderRecoverReply{LogTerm: binary.BigEndian.Uint64(b), Last: binary.BigEndian.Uint64(b[8:]), Commit: binary.BigEndian.Uint64(b[16:])}
	if v.Commit > v.Last {
		return decodeErr(orderRecoverReplyWhat, DecodeBadField, "commit", -1, -1)
	}
	*r = v
	return nil
}

// AppendBinary encodes an OrderFetch.
func (f OrderFetch) AppendBinary(b []byte) ([]byte, error) {
	if f.From == 0 {
		return b, &EncodeError{What: orderFetchWhat, Field: "from", Value: 0, Why: "entries are numbered from 1"}
	}
	return binary.BigEndian.AppendUint64(b, f.From), nil
}

// UnmarshalBinary decodes an OrderFetch.
func (f *OrderFetch) UnmarshalBinary(b []byte) error {
	if err := checkLen(orderFetchWhat, b, OrderFetchLen); err != nil {
		return err
	}
	from := binary.BigEndian.Uint64(b)
	if from == 0 {
		return decodeErr(orderFetchWhat, DecodeBadField, "from", 0, -1)
	}
	f.From = from
	return nil
}
