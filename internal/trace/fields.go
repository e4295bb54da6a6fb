package trace

import (
	"encoding"
	"encoding/hex"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/synclab/synclab/pkg/wire"
)

// payloads builds an empty payload of each kind whose fields a trace shows.
// A kind added to pkg/wire without a line here is traced without fields
// (and with the payload's length), never refused.
var payloads = map[wire.Kind]func() encoding.BinaryUnmarshaler{
	wire.KindHeartbeat:         func() encoding.BinaryUnmarshaler { return new(wire.Heartbeat) },
	wire.KindElection:          func() encoding.BinaryUnmarshaler { return new(wire.Election) },
	wire.KindAnswer:            func() encoding.BinaryUnmarshaler { return new(wire.Answer) },
	wire.KindCoordinator:       func() encoding.BinaryUnmarshaler { return new(wire.Coordinator) },
	wire.KindLeaderHeartbeat:   func() encoding.BinaryUnmarshaler { return new(wire.LeaderHeartbeat) },
	wire.KindTimeRequest:       func() encoding.BinaryUnmarshaler { return new(wire.TimeRequest) },
	wire.KindTimeReply:         func() encoding.BinaryUnmarshaler { return new(wire.TimeReply) },
	wire.KindClockPoll:         func() encoding.BinaryUnmarshaler { return new(wire.ClockPoll) },
	wire.KindClockReading:      func() encoding.BinaryUnmarshaler { return new(wire.ClockReading) },
	wire.KindClockAdjust:       func() encoding.BinaryUnmarshaler { return new(wire.ClockAdjust) },
	wire.KindClockAdjustAck:    func() encoding.BinaryUnmarshaler { return new(wire.ClockAdjustAck) },
	wire.KindToken:             func() encoding.BinaryUnmarshaler { return new(wire.Token) },
	wire.KindTokenAck:          func() encoding.BinaryUnmarshaler { return new(wire.TokenAck) },
	wire.KindRingProbe:         func() encoding.BinaryUnmarshaler { return new(wire.RingProbe) },
	wire.KindRingProbeReply:    func() encoding.BinaryUnmarshaler { return new(wire.RingProbeReply) },
	wire.KindEpochRefused:      func() encoding.BinaryUnmarshaler { return new(wire.EpochRefused) },
	wire.KindCentralBeat:       func() encoding.BinaryUnmarshaler { return new(wire.CentralBeat) },
	wire.KindCentralGrant:      func() encoding.BinaryUnmarshaler { return new(wire.CentralGrant) },
	wire.KindCentralRefuse:     func() encoding.BinaryUnmarshaler { return new(wire.CentralRefuse) },
	wire.KindCentralRelease:    func() encoding.BinaryUnmarshaler { return new(wire.CentralRelease) },
	wire.KindCentralRenew:      func() encoding.BinaryUnmarshaler { return new(wire.CentralRenew) },
	wire.KindCentralRenewed:    func() encoding.BinaryUnmarshaler { return new(wire.CentralGrant) },
	wire.KindCentralRequest:    func() encoding.BinaryUnmarshaler { return new(wire.CentralRequest) },
	wire.KindCentralSync:       func() encoding.BinaryUnmarshaler { return new(wire.CentralSync) },
	wire.KindLamportAck:        func() encoding.BinaryUnmarshaler { return new(wire.PermReply) },
	wire.KindLamportRelease:    func() encoding.BinaryUnmarshaler { return new(wire.PermRequest) },
	wire.KindLamportRequeue:    func() encoding.BinaryUnmarshaler { return new(wire.PermRequeue) },
	wire.KindPermHeartbeat:     func() encoding.BinaryUnmarshaler { return new(wire.PermHeartbeat) },
	wire.KindLamportRequest:    func() encoding.BinaryUnmarshaler { return new(wire.PermRequest) },
	wire.KindMaekawa:           func() encoding.BinaryUnmarshaler { return new(wire.Vote) },
	wire.KindQuorumLock:        func() encoding.BinaryUnmarshaler { return new(wire.Vote) },
	wire.KindRAReply:           func() encoding.BinaryUnmarshaler { return new(wire.PermReply) },
	wire.KindRARequest:         func() encoding.BinaryUnmarshaler { return new(wire.PermRequest) },
	wire.KindRingAck:           func() encoding.BinaryUnmarshaler { return new(wire.RingAck) },
	wire.KindRingCoordinator:   func() encoding.BinaryUnmarshaler { return new(wire.RingCoordinator) },
	wire.KindRingElection:      func() encoding.BinaryUnmarshaler { return new(wire.RingElection) },
	wire.KindRingHeartbeat:     func() encoding.BinaryUnmarshaler { return new(wire.RingHeartbeat) },
	wire.KindOrderRecord:       func() encoding.BinaryUnmarshaler { return new(wire.OrderRecord) },
	wire.KindOrderStreamAck:    func() encoding.BinaryUnmarshaler { return new(wire.OrderStreamAck) },
	wire.KindOrderSubmit:       func() encoding.BinaryUnmarshaler { return new(wire.OrderSubmit) },
	wire.KindOrderAppend:       func() encoding.BinaryUnmarshaler { return new(wire.OrderEntries) },
	wire.KindOrderAppendAck:    func() encoding.BinaryUnmarshaler { return new(wire.OrderAppendAck) },
	wire.KindOrderRecover:      func() encoding.BinaryUnmarshaler { return new(wire.OrderRecover) },
	wire.KindOrderRecoverReply: func() encoding.BinaryUnmarshaler { return new(wire.OrderRecoverReply) },
	wire.KindOrderFetch:        func() encoding.BinaryUnmarshaler { return new(wire.OrderFetch) },
	wire.KindOrderFetchReply:   func() encoding.BinaryUnmarshaler { return new(wire.OrderEntries) },
	wire.KindOrderSnapshot:     func() encoding.BinaryUnmarshaler { return new(wire.OrderSnapshot) },
	wire.KindOrderHolding:      func() encoding.BinaryUnmarshaler { return new(wire.OrderHolding) },
	wire.KindOrderRelay:        func() encoding.BinaryUnmarshaler { return new(wire.OrderRelay) },
	wire.KindVoteRequest:       func() encoding.BinaryUnmarshaler { return new(wire.LeaseRequest) },
	wire.KindVote:              func() encoding.BinaryUnmarshaler { return new(wire.LeaseReply) },
	wire.KindLeaseRenew:        func() encoding.BinaryUnmarshaler { return new(wire.LeaseRequest) },
	wire.KindLeaseGrant:        func() encoding.BinaryUnmarshaler { return new(wire.LeaseReply) },
	wire.KindLeaseRelease:      func() encoding.BinaryUnmarshaler { return new(wire.LeaseRelease) },
	wire.KindOmegaHeartbeat:    func() encoding.BinaryUnmarshaler { return new(wire.OmegaHeartbeat) },
	wire.KindYoYoHello:         func() encoding.BinaryUnmarshaler { return new(wire.YoYoHello) },
	wire.KindYoYoDown:          func() encoding.BinaryUnmarshaler { return new(wire.YoYoDown) },
	wire.KindYoYoUp:            func() encoding.BinaryUnmarshaler { return new(wire.YoYoUp) },
	wire.KindYoYoLeader:        func() encoding.BinaryUnmarshaler { return new(wire.YoYoLeader) },
	wire.KindConfig:            func() encoding.BinaryUnmarshaler { return new(wire.ConfigAnnounce) },
	wire.KindStatusQuery:       func() encoding.BinaryUnmarshaler { return new(wire.StatusQuery) },
	wire.KindStatusReport:      func() encoding.BinaryUnmarshaler { return new(wire.StatusReport) },
}

// Fields decodes payload, a frame of kind k, into the trace's `fields`
// object: its exported fields by snake_case name, enums by their names,
// times in RFC 3339, bytes in hex. A payload that does not decode gives
// {"undecoded": "<why>", "len": N}: a trace shows what came, never fails.
func Fields(k wire.Kind, payload []byte) map[string]any {
	mk, ok := payloads[k]
	if !ok {
		return map[string]any{"len": len(payload)}
	}
	p := mk()
	if err := p.UnmarshalBinary(payload); err != nil {
		return map[string]any{"undecoded": err.Error(), "len": len(payload)}
	}
	m, _ := value(reflect.ValueOf(p).Elem()).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

var (
	stringerType = reflect.TypeFor[fmt.Stringer]()
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	addrPortType = reflect.TypeFor[netip.AddrPort]()
)

// value turns a decoded payload value into plain JSON values.
func value(v reflect.Value) any {
	t := v.Type()
	switch {
	case t == timeType:
		return v.Interface().(time.Time).UTC().Format(time.RFC3339Nano)
	case t == durationType:
		return v.Interface().(time.Duration).String()
	case t == addrPortType:
		return v.Interface().(netip.AddrPort).String()
	case t.Kind() != reflect.Struct && t.PkgPath() != "" && t.Implements(stringerType):
		// A named enum (ElectionReason, TokenAckStatus...): its name reads
		// better than its number.
		return v.Interface().(fmt.Stringer).String()
	}
	switch t.Kind() {
	case reflect.Struct:
		m := make(map[string]any, t.NumField())
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				m[snake(f.Name)] = value(v.Field(i))
			}
		}
		return m
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if t.Kind() == reflect.Array {
				b := make([]byte, v.Len())
				reflect.Copy(reflect.ValueOf(b), v)
				return hex.EncodeToString(b)
			}
			return hex.EncodeToString(v.Bytes())
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = value(v.Index(i))
		}
		return out
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return value(v.Elem())
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.String:
		return v.String()
	}
	return fmt.Sprint(v.Interface())
}

// snake turns a Go field name into snake_case: HoldMS -> hold_ms,
// RootDelay -> root_delay, T1 -> t1.
func snake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		if unicode.IsUpper(c) {
			if i > 0 && (unicode.IsLower(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(c))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// NTPFields names an NTP packet for a trace: its kind (ntp_ and the mode's
// name), its frame ("ntp:" and the transmit timestamp in hex) and its
// header's fields, timestamps in RFC 3339 (t1..t3 of the exchange are
// origin, receive and transmit) and the frame the packet answers
// (origin_frame: the frame of the packet whose transmit time it echoes).
// A packet shorter than a header is kind "ntp", frame "", with its length.
func NTPFields(data []byte) (kind, frame string, fields map[string]any) {
	var p wire.NTPPacket
	if len(data) < wire.NTPHeaderLen || p.UnmarshalBinary(data[:wire.NTPHeaderLen]) != nil {
		return "ntp", "", map[string]any{"undecoded": "short", "len": len(data)}
	}
	ts := func(t wire.NTPTime) any {
		if t.IsZero() {
			return "0"
		}
		return t.Time().UTC().Format(time.RFC3339Nano)
	}
	fields = map[string]any{
		"leap": p.Leap, "version": p.Version, "mode": p.Mode, "stratum": p.Stratum,
		"poll": p.Poll, "precision": p.Precision,
		"root_delay": p.RootDelay.Duration().String(), "root_dispersion": p.RootDispersion.Duration().String(),
		"reference_id": wire.RefIDText(p.ReferenceID),
		"reference":    ts(p.Reference), "origin": ts(p.Origin), "receive": ts(p.Receive), "transmit": ts(p.Transmit),
	}
	if !p.Origin.IsZero() {
		fields["origin_frame"] = NTPFrameID(p.Origin)
	}
	if len(data) > wire.NTPHeaderLen {
		fields["extension_len"] = len(data) - wire.NTPHeaderLen
	}
	return "ntp_" + ntpModes[p.Mode&7], NTPFrameID(p.Transmit), fields
}

// NTPFrameID is the frame of an NTP packet with transmit timestamp xmt.
// It names one packet because a daemon never stamps two NTP packets with
// one transmit time (internal/node nudges a repeated clock reading, as the
// answers of one datagram batch share one, by 2^-32 s).
func NTPFrameID(xmt wire.NTPTime) string { return fmt.Sprintf("ntp:%016x", uint64(xmt)) }

var ntpModes = [8]string{"reserved", "symmetric_active", "symmetric_passive", "client", "server", "broadcast", "control", "private"}
