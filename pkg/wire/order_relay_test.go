package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func orderRelaySamples() []orderPayload {
	vec := make([]uint64, MaxOrderVector)
	return []orderPayload{
		&OrderHolding{Origin: 1},
		&OrderHolding{Origin: ^uint32(0), Flags: OrderHoldingAnswer, Upto: ^uint64(0), Stable: ^uint64(0)},
		&OrderHolding{Origin: 3, Upto: 9, Stable: 4},
		&OrderRelay{Origin: 2, Record: OrderRecord{Seq: 1, Type: OrderFIFO, Message: []byte("f_A")}},
		&OrderRelay{Origin: ^uint32(0), Record: OrderRecord{Seq: ^uint64(0), Type: OrderCausal, Vector: vec, Message: bytes.Repeat([]byte("m"), MaxOrderMessage)}},
		&OrderRelay{Origin: 4, Record: OrderRecord{Seq: 10, Stamp: 44, Type: OrderTotalAck, AckSender: 3, AckStamp: 42}},
	}
}

// TestOrderRelayRoundTrips: every payload re-encodes what it decodes, at
// its largest too; every truncation and any trailing byte is refused.
func TestOrderRelayRoundTrips(t *testing.T) {
	checkRoundTrips(t, orderRelaySamples())
}

// TestOrderRelayRejects: a relay's origin 0, an undefined flag, a
// reserved byte, stability past the holding, and every refusal of the
// record it carries are typed errors; the encoders refuse the same.
func TestOrderRelayRejects(t *testing.T) {
	h, _ := OrderHolding{Origin: 2, Upto: 5, Stable: 3}.AppendBinary(nil)
	r, _ := OrderRelay{Origin: 2, Record: OrderRecord{Seq: 1, Type: OrderCausal, Vector: []uint64{1}, Message: []byte("x")}}.AppendBinary(nil)
	mutate := func(b []byte, f func(b []byte)) []byte { b = bytes.Clone(b); f(b); return b }
	checkRefusals(t, []refusal{
		{"holding origin 0", new(OrderHolding), mutate(h, func(b []byte) { clear(b[:4]) }), DecodeBadField},
		{"holding flag 2", new(OrderHolding), mutate(h, func(b []byte) { b[4] = 2 }), DecodeBadField},
		{"holding reserved", new(OrderHolding), mutate(h, func(b []byte) { b[7] = 1 }), DecodeBadReserved},
		{"stable past upto", new(OrderHolding), mutate(h, func(b []byte) { binary.BigEndian.PutUint64(b[16:], ^uint64(0)) }), DecodeBadField},
		{"relay origin 0", new(OrderRelay), mutate(r, func(b []byte) { clear(b[:4]) }), DecodeBadField},
		{"relay short", new(OrderRelay), r[:3], DecodeTruncated},
		{"relayed seq 0", new(OrderRelay), mutate(r, func(b []byte) { clear(b[4:12]) }), DecodeBadField},
		{"relayed vector 255", new(OrderRelay), mutate(r, func(b []byte) { b[4+17] = 255 }), DecodeOversized},
		{"relayed message 65535", new(OrderRelay), mutate(r, func(b []byte) { binary.BigEndian.PutUint16(b[4+18:], 0xffff) }), DecodeOversized},
	})
	checkEncodeRefused(t,
		OrderHolding{},
		OrderHolding{Origin: 1, Flags: 2},
		OrderHolding{Origin: 1, Upto: 1, Stable: 2},
		OrderRelay{Record: OrderRecord{Seq: 1, Type: OrderFIFO}},
		OrderRelay{Origin: 1, Record: OrderRecord{Type: OrderFIFO}},
	)
}

func FuzzOrderHolding(f *testing.F) {
	fuzzDecoders(f, orderRelaySamples(), nil, new(OrderHolding))
}

func FuzzOrderRelay(f *testing.F) {
	fuzzDecoders(f, orderRelaySamples(), nil, new(OrderRelay))
}
