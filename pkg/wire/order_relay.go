package wire

import "encoding/binary"

// The relay of orderd's reliable multicast: when a member's stream falls
// silent while some member may lack records of it (its sender crashed
// mid-fan-out, or is cut off), the members that hold those records pass
// them on to the ones that do not (pkg/order, relay.go). OrderHolding
// says how far a member holds one origin's stream; OrderRelay carries one
// of the origin's records, as the origin encoded it, through another
// member.

// Kinds of the relay (orderd's block, 90-119).
const (
	// KindOrderHolding says how much of a member's stream the frame's
	// sender holds (payload: OrderHolding). From the stream's own sender
	// it announces that every member holds it up to a point.
	KindOrderHolding Kind = 100
	// KindOrderRelay carries a record of another member's stream
	// (payload: OrderRelay).
	KindOrderRelay Kind = 101
)

// OrderHoldingAnswer marks an OrderHolding that answers another: it is
// never answered itself.
const OrderHoldingAnswer uint8 = 1

// OrderHolding is how far the frame's sender holds Origin's stream
// (KindOrderHolding): it handed on records 1..Upto, and knows that every
// member holds 1..Stable (never after Upto). From Origin itself, Upto is
// its last record and Stable the last every member acknowledged.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Origin (32, not 0)                       |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     |                 Reserved (0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Upto (64)                                |  8
//	|                      Stable (64)                              | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type OrderHolding struct {
	Origin       uint32
	Flags        uint8
	Upto, Stable uint64
}

// OrderRelay is one record of Origin's stream passed on by another
// member (KindOrderRelay): the record's bytes are the OrderRecord Origin
// encoded.
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Origin (32, not 0)                       |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      OrderRecord                              |  4
type OrderRelay struct {
	Origin uint32
	Record OrderRecord
}

const (
	// OrderHoldingLen is an OrderHolding's exact length.
	OrderHoldingLen = 24

	orderHoldingWhat = "order holding"
	orderRelayWhat   = "order relay"
)

// AppendBinary encodes an OrderHolding.
func (h OrderHolding) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case h.Origin == 0:
		return b, &EncodeError{What: orderHoldingWhat, Field: "origin", Value: 0, Why: "member IDs start at 1"}
	case h.Flags&^OrderHoldingAnswer != 0:
		return b, &EncodeError{What: orderHoldingWhat, Field: "flags", Value: uint64(h.Flags), Why: "undefined flag"}
	case h.Stable > h.Upto:
		return b, &EncodeError{What: orderHoldingWhat, Field: "stable", Value: h.Stable, Why: "after upto"}
	}
	b = binary.BigEndian.AppendUint32(b, h.Origin)
	b = append(b, h.Flags, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, h.Upto)
	return binary.BigEndian.AppendUint64(b, h.Stable), nil
}

// UnmarshalBinary decodes an OrderHolding.
func (h *OrderHolding) UnmarshalBinary(b []byte) error {
	if err := checkLen(orderHoldingWhat, b, OrderHoldingLen); err != nil {
		return err
	}
	v := OrderHolding{Origin: binary.BigEndian.Uint32(b), Flags: b[4],
		Upto: binary.BigEndian.Uint64(b[8:]), Stable: binary.BigEndian.Uint64(b[16:])}
	switch {
	case v.Origin == 0:
		return decodeErr(orderHoldingWhat, DecodeBadField, "origin", 0, -1)
	case v.Flags&^OrderHoldingAnswer != 0:
		return decodeErr(orderHoldingWhat, DecodeBadField, "flags", int(v.Flags), -1)
	case b[5] != 0 || b[6] != 0 || b[7] != 0:
		return decodeErr(orderHoldingWhat, DecodeBadReserved, "reserved", 1, 0)
	case v.Stable > v.Upto:
		return decodeErr(orderHoldingWhat, DecodeBadField, "stable", int(min(v.Stable-v.Upto, 1<<30)), -1)
	}
	*h = v
	return nil
}

// AppendBinary encodes an OrderRelay.
func (r OrderRelay) AppendBinary(b []byte) ([]byte, error) {
	if r.Origin == 0 {
		return b, &EncodeError{What: orderRelayWhat, Field: "origin", Value: 0, Why: "member IDs start at 1"}
	}
	return r.Record.AppendBinary(binary.BigEndian.AppendUint32(b, r.Origin))
}

// UnmarshalBinary decodes an OrderRelay; the record's Message aliases b.
func (r *OrderRelay) UnmarshalBinary(b []byte) error {
	if len(b) < 4 {
		return decodeErr(orderRelayWhat, DecodeTruncated, "", len(b), 4)
	}
	origin := binary.BigEndian.Uint32(b)
	if origin == 0 {
		return decodeErr(orderRelayWhat, DecodeBadField, "origin", 0, -1)
	}
	var rec OrderRecord
	if err := rec.UnmarshalBinary(b[4:]); err != nil {
		return err
	}
	*r = OrderRelay{Origin: origin, Record: rec}
	return nil
}
