package trace

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/synclab/synclab/pkg/wire"
)

// Fields decodes payload, a frame of kind k, into the trace's `fields`
// object with the kind's codec from wire's registry (a kind this build
// does not know shows only its length): its exported fields by snake_case
// name, enums by their names, times in RFC 3339, bytes in hex. A payload that does not decode gives
// {"undecoded": "<why>", "len": N}: a trace shows what came, never fails.
func Fields(k wire.Kind, payload []byte) map[string]any {
	info, ok := wire.Info(k)
	if !ok {
		return map[string]any{"len": len(payload)}
	}
	p := info.New()
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
