package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// orderPayload is the order family's payload (codec_test.go's checks).
type orderPayload = payload

func orderSamples() []orderPayload {
	msg := bytes.Repeat([]byte("m"), MaxOrderMessage)
	vec := make([]uint64, MaxOrderVector)
	for i := range vec {
		vec[i] = ^uint64(0) - uint64(i)
	}
	var entries []OrderEntry
	for i := range MaxOrderEntries {
		entries = append(entries, OrderEntry{Sender: uint32(i + 1), SID: uint64(i + 1), Message: []byte("deposit 100")})
	}
	return []orderPayload{
		&OrderRecord{Seq: 1, Type: OrderFIFO, Message: []byte("hello")},
		&OrderRecord{Seq: ^uint64(0), Type: OrderFIFO, Message: msg},
		&OrderRecord{Seq: 7, Type: OrderCausal, Vector: []uint64{1, 0, 3}, Message: []byte("m_C")},
		&OrderRecord{Seq: 8, Type: OrderCausal, Vector: vec},
		&OrderRecord{Seq: 9, Stamp: 42, Type: OrderTotal, Message: []byte("interest 1%")},
		&OrderRecord{Seq: 10, Stamp: 44, Type: OrderTotalAck, AckSender: 3, AckStamp: 42},
		&OrderStreamAck{Upto: 0},
		&OrderStreamAck{Upto: ^uint64(0)},
		&OrderSubmit{SID: 1, Message: []byte("set k v")},
		&OrderSubmit{SID: ^uint64(0), Message: msg},
		&OrderEntries{Prev: 0, Commit: 0, Start: 0},
		&OrderEntries{Prev: 10, Commit: 9, Start: 3, Entries: entries},
		&OrderEntries{Prev: ^uint64(0) - 1, Entries: []OrderEntry{{Sender: 1, SID: 1}}},
		&OrderAppendAck{Match: 5, Commit: 5},
		&OrderRecover{Last: 17},
		&OrderRecoverReply{LogTerm: 4, Last: 9, Commit: 3},
		&OrderFetch{From: 1},
		&OrderSnapshot{Index: 1, Data: []byte(`{"cents":100}`)},
		&OrderSnapshot{Index: ^uint64(0), Data: bytes.Repeat([]byte("s"), MaxOrderSnapshot)},
	}
}

// TestOrderRoundTrips: every payload re-encodes what it decodes, at its
// largest too; every truncation and any trailing byte is a *DecodeError.
func TestOrderRoundTrips(t *testing.T) {
	checkRoundTrips(t, orderSamples())
	if len(orderSamples()[11].(*OrderEntries).Entries) != MaxOrderEntries {
		t.Fatal("sample does not reach MaxOrderEntries")
	}
}

// TestOrderRecordLayout pins the record's bytes (the diagram above
// OrderRecord).
func TestOrderRecordLayout(t *testing.T) {
	b, err := OrderRecord{Seq: 0x0102030405060708, Stamp: 0x1112131415161718, Type: OrderCausal, Vector: []uint64{0x2122232425262728}, Message: []byte("ab")}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		2, 1, 0, 2, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 'a', 'b'}
	if !bytes.Equal(b, want) {
		t.Fatalf("record encodes as\n% x\nwant\n% x", b, want)
	}
}

// TestOrderRejects: what an attacker can put in each field is refused
// with a typed error before anything is allocated, and the encoders
// refuse what the decoders would.
func TestOrderRejects(t *testing.T) {
	rec, _ := OrderRecord{Seq: 1, Type: OrderCausal, Vector: []uint64{1}, Message: []byte("x")}.AppendBinary(nil)
	ack, _ := OrderRecord{Seq: 1, Stamp: 3, Type: OrderTotalAck, AckSender: 2, AckStamp: 1}.AppendBinary(nil)
	mutate := func(b []byte, f func(b []byte)) []byte { b = bytes.Clone(b); f(b); return b }
	entries, _ := OrderEntries{Prev: 1, Entries: []OrderEntry{{Sender: 1, SID: 1, Message: []byte("x")}}}.AppendBinary(nil)
	sub, _ := OrderSubmit{SID: 1, Message: []byte("x")}.AppendBinary(nil)
	checkRefusals(t, []refusal{
		{"seq 0", new(OrderRecord), mutate(rec, func(b []byte) { clear(b[:8]) }), DecodeBadField},
		{"type 0", new(OrderRecord), mutate(rec, func(b []byte) { b[16] = 0 }), DecodeBadField},
		{"type 200", new(OrderRecord), mutate(rec, func(b []byte) { b[16] = 200 }), DecodeBadField},
		{"vector 255", new(OrderRecord), mutate(rec, func(b []byte) { b[17] = 255 }), DecodeOversized},
		{"vector on fifo", new(OrderRecord), mutate(rec, func(b []byte) { b[16] = byte(OrderFIFO) }), DecodeBadField},
		{"causal without vector", new(OrderRecord), mutate(rec, func(b []byte) { b[17] = 0 }), DecodeBadField},
		{"message 65535", new(OrderRecord), mutate(rec, func(b []byte) { binary.BigEndian.PutUint16(b[18:], 0xffff) }), DecodeOversized},
		{"more message than bytes", new(OrderRecord), mutate(rec, func(b []byte) { b[19] = 9 }), DecodeTruncated},
		{"ack sender on causal", new(OrderRecord), mutate(rec, func(b []byte) { b[23] = 1 }), DecodeBadField},
		{"ack stamp on causal", new(OrderRecord), mutate(rec, func(b []byte) { b[31] = 1 }), DecodeBadReserved},
		{"ack without sender", new(OrderRecord), mutate(ack, func(b []byte) { clear(b[20:24]) }), DecodeBadField},
		{"ack with message", new(OrderRecord), append(mutate(ack, func(b []byte) { b[19] = 1 }), 'x'), DecodeBadField},
		{"submit sid 0", new(OrderSubmit), mutate(sub, func(b []byte) { clear(b[:8]) }), DecodeBadField},
		{"submit reserved", new(OrderSubmit), mutate(sub, func(b []byte) { b[11] = 1 }), DecodeBadReserved},
		{"submit 65535", new(OrderSubmit), mutate(sub, func(b []byte) { binary.BigEndian.PutUint16(b[8:], 0xffff) }), DecodeOversized},
		{"entries 65535", new(OrderEntries), mutate(entries, func(b []byte) { binary.BigEndian.PutUint16(b[24:], 0xffff) }), DecodeOversized},
		{"entries more than bytes", new(OrderEntries), mutate(entries, func(b []byte) { b[25] = 2 }), DecodeTruncated},
		{"entries wrap", new(OrderEntries), mutate(entries, func(b []byte) { binary.BigEndian.PutUint64(b, ^uint64(0)) }), DecodeBadField},
		{"entries reserved", new(OrderEntries), mutate(entries, func(b []byte) { b[27] = 1 }), DecodeBadReserved},
		{"entry sender 0", new(OrderEntries), mutate(entries, func(b []byte) { clear(b[28:32]) }), DecodeBadField},
		{"entry sid 0", new(OrderEntries), mutate(entries, func(b []byte) { clear(b[32:40]) }), DecodeBadField},
		{"entry 65535", new(OrderEntries), mutate(entries, func(b []byte) { binary.BigEndian.PutUint16(b[40:], 0xffff) }), DecodeOversized},
		{"commit after match", new(OrderAppendAck), []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2}, DecodeBadField},
		{"commit after last", new(OrderRecoverReply), append(make([]byte, 16), 0, 0, 0, 0, 0, 0, 0, 1), DecodeBadField},
		{"fetch from 0", new(OrderFetch), make([]byte, 8), DecodeBadField},
		{"snapshot index 0", new(OrderSnapshot), make([]byte, 12), DecodeBadField},
		{"snapshot 4 GB", new(OrderSnapshot), []byte{0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}, DecodeOversized},
	})
	checkEncodeRefused(t,
		OrderRecord{Type: OrderFIFO},
		OrderRecord{Seq: 1},
		OrderRecord{Seq: 1, Type: OrderFIFO, Vector: []uint64{1}},
		OrderRecord{Seq: 1, Type: OrderCausal},
		OrderRecord{Seq: 1, Type: OrderCausal, Vector: make([]uint64, MaxOrderVector+1)},
		OrderRecord{Seq: 1, Type: OrderFIFO, Message: make([]byte, MaxOrderMessage+1)},
		OrderRecord{Seq: 1, Type: OrderTotalAck},
		OrderRecord{Seq: 1, Type: OrderTotal, AckStamp: 1},
		OrderRecord{Seq: 1, Type: OrderTotalAck, AckSender: 1, Message: []byte("x")},
		OrderSubmit{},
		OrderSubmit{SID: 1, Message: make([]byte, MaxOrderMessage+1)},
		OrderEntries{Entries: make([]OrderEntry, MaxOrderEntries+1)},
		OrderEntries{Entries: []OrderEntry{{SID: 1}}},
		OrderEntries{Entries: []OrderEntry{{Sender: 1}}},
		OrderEntries{Prev: ^uint64(0), Entries: []OrderEntry{{Sender: 1, SID: 1}}},
		OrderAppendAck{Commit: 1},
		OrderRecoverReply{Commit: 1},
		OrderFetch{},
		OrderSnapshot{},
		OrderSnapshot{Index: 1, Data: make([]byte, MaxOrderSnapshot+1)},
	)
}

func fuzzOrder(f *testing.F, p func() orderPayload) {
	fuzzDecoders(f, orderSamples(), nil, p())
}

func FuzzOrderRecord(f *testing.F)   { fuzzOrder(f, func() orderPayload { return new(OrderRecord) }) }
func FuzzOrderEntries(f *testing.F)  { fuzzOrder(f, func() orderPayload { return new(OrderEntries) }) }
func FuzzOrderSubmit(f *testing.F)   { fuzzOrder(f, func() orderPayload { return new(OrderSubmit) }) }
func FuzzOrderSnapshot(f *testing.F) { fuzzOrder(f, func() orderPayload { return new(OrderSnapshot) }) }
func FuzzOrderFixed(f *testing.F) {
	fuzzOrder(f, func() orderPayload { return new(OrderRecoverReply) })
}
