package wire

import (
	"bytes"
	"strings"
	"testing"
)

func permSamples() []payload {
	return []payload{
		&PermRequest{Name: "counter", Incarnation: 1, Stamp: 8},
		&PermRequest{Name: "db:main/users@eu-1+ro_2", Incarnation: 1<<32 - 1, Stamp: MaxPermStamp, Fence: 1<<63 - 1},
		&PermReply{Name: "x", Incarnation: 2, Answers: 1, Stamp: 12, Fence: 8 << 16, Want: 0},
		&PermReply{Name: "printer", Incarnation: 7, Answers: 9, Stamp: MaxPermStamp, Fence: 1 << 62, Want: MaxPermStamp},
		&PermRequeue{PermRequest: PermRequest{Name: "counter", Incarnation: 1, Stamp: 12, Fence: 5 << 16}, Released: 5},
		&PermRequeue{PermRequest: PermRequest{Name: "db:main/users@eu-1+ro_2", Incarnation: 1<<32 - 1, Stamp: MaxPermStamp, Fence: 1<<63 - 1},
			Released: MaxPermStamp - 1},
		&PermHeartbeat{Interval: 1000},
		&PermHeartbeat{Interval: 200, Busy: true},
		&PermHeartbeat{Interval: 1<<32 - 1, Busy: true, Oldest: 1<<64 - 1},
		&PermHeartbeat{Interval: 1000, Ext: true},
		&PermHeartbeat{Interval: 200, Ext: true, Busy: true, Oldest: 9, Bounded: true, Pending: true, AckWanted: true, EndMS: 2999, Ack: 1<<64 - 1},
		&PermHeartbeat{Interval: 1<<32 - 1, Ext: true, Ack: 5, EndMS: 1<<31 - 1},
		&PermHeartbeat{Interval: 1000, Ext: true, EndMS: -1 << 31},
	}
}

// TestPermRoundTrips: every payload re-encodes what it decodes; every
// truncation and any trailing byte is a *DecodeError.
func TestPermRoundTrips(t *testing.T) {
	checkRoundTrips(t, permSamples())
}

// TestPermLayout pins the byte layouts (the diagrams above the types).
func TestPermLayout(t *testing.T) {
	checkLayout(t, PermRequest{Name: "ab", Incarnation: 0x01020304, Stamp: 0x0000111213141516, Fence: 0x2122232425262728},
		[]byte{2, 0, 0, 0, 1, 2, 3, 4,
			0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 'a', 'b'})
	checkLayout(t, PermReply{Name: "ab", Incarnation: 0x01020304, Answers: 0x05060708, Stamp: 0x0000111213141516,
		Fence: 0x2122232425262728, Want: 0x0000313233343536},
		[]byte{2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0,
			0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
			0, 0, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 'a', 'b'})
	checkLayout(t, PermRequeue{PermRequest: PermRequest{Name: "ab", Incarnation: 0x01020304, Stamp: 0x0000111213141516,
		Fence: 0x2122232425262728}, Released: 0x0000010203040506},
		[]byte{2, 0, 0, 0, 1, 2, 3, 4,
			0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
			0, 0, 1, 2, 3, 4, 5, 6, 'a', 'b'})
	checkLayout(t, PermHeartbeat{Interval: 0x01020304, Busy: true}, []byte{1, 2, 3, 4, 1})
	checkLayout(t, PermHeartbeat{Interval: 0x01020304, Busy: true, Oldest: 0x0000111213141516},
		[]byte{1, 2, 3, 4, 2, 0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16})
	checkLayout(t, PermHeartbeat{Interval: 0x01020304, Ext: true, Busy: true, Bounded: true, AckWanted: true, Oldest: 0x0000111213141516,
		EndMS: 0x21222324, Ack: 0x3132333435363738},
		[]byte{1, 2, 3, 4, 3, PermBeatBusy | PermBeatBounded | PermBeatAckWanted, 0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
			0x21, 0x22, 0x23, 0x24, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38})
}

// TestPermRejects: names, zero incarnations and stamps, stamps past
// MaxPermStamp and reserved bytes are refused on both sides.
func TestPermRejects(t *testing.T) {
	checkEncodeRefused(t,
		PermRequest{Name: "", Incarnation: 1, Stamp: 1},
		PermRequest{Name: strings.Repeat("x", MaxLockNameLen+1), Incarnation: 1, Stamp: 1},
		PermRequest{Name: "a", Incarnation: 0, Stamp: 1},
		PermRequest{Name: "a", Incarnation: 1, Stamp: 0},
		PermRequest{Name: "a", Incarnation: 1, Stamp: MaxPermStamp + 1},
		PermReply{Name: "a b", Incarnation: 1, Answers: 1, Stamp: 1},
		PermReply{Name: "a", Incarnation: 1, Answers: 0, Stamp: 1},
		PermReply{Name: "a", Incarnation: 1, Answers: 1, Stamp: 1, Want: MaxPermStamp + 1},
		PermRequeue{PermRequest: PermRequest{Name: "a", Incarnation: 1, Stamp: 5}, Released: 0},
		PermRequeue{PermRequest: PermRequest{Name: "a", Incarnation: 1, Stamp: 5}, Released: 5},
		PermRequeue{PermRequest: PermRequest{Name: "a", Incarnation: 0, Stamp: 5}, Released: 4},
		PermRequeue{PermRequest: PermRequest{Name: "", Incarnation: 1, Stamp: 5}, Released: 4},
	)
	rq, _ := PermRequeue{PermRequest: PermRequest{Name: "ab", Incarnation: 1, Stamp: 5}, Released: 3}.AppendBinary(nil)
	req, _ := PermRequest{Name: "ab", Incarnation: 1, Stamp: 5}.AppendBinary(nil)
	rep, _ := PermReply{Name: "ab", Incarnation: 1, Answers: 1, Stamp: 5}.AppendBinary(nil)
	hb, _ := PermHeartbeat{Interval: 200, Busy: true, Oldest: 5}.AppendBinary(nil)
	ext, _ := PermHeartbeat{Interval: 200, Ext: true, Busy: true, Oldest: 5, EndMS: 3000}.AppendBinary(nil)
	set := func(b []byte, i int, v ...byte) []byte { b = bytes.Clone(b); copy(b[i:], v); return b }
	checkRefusals(t, []refusal{
		{"heartbeat busy 4", new(PermHeartbeat), set(hb, 4, 4), DecodeBadField},
		{"heartbeat busy 3 of 13 bytes", new(PermHeartbeat), set(hb, 4, 3), DecodeTruncated},
		{"extended heartbeat undefined flag", new(PermHeartbeat), set(ext, 5, 0x10|PermBeatBusy), DecodeBadField},
		{"extended heartbeat oldest while idle", new(PermHeartbeat), set(ext, 5, PermBeatBounded), DecodeBadField},
		{"extended heartbeat trailing", new(PermHeartbeat), append(bytes.Clone(ext), 0), DecodeBadLength},
		{"heartbeat busy 2 without oldest", new(PermHeartbeat), hb[:PermHeartbeatLen], DecodeTruncated},
		{"heartbeat busy 1 with oldest", new(PermHeartbeat), set(hb, 4, 1), DecodeBadLength},
		{"heartbeat oldest 0", new(PermHeartbeat), set(hb, 12, 0), DecodeBadField},
		{"heartbeat of 9 bytes", new(PermHeartbeat), hb[:9], DecodeTruncated},
		{"reserved", new(PermRequest), set(req, 1, 1), DecodeBadReserved},
		{"incarnation 0", new(PermRequest), set(req, 4, 0, 0, 0, 0), DecodeBadField},
		{"stamp 0", new(PermRequest), set(req, 8, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"stamp past MaxPermStamp", new(PermRequest), set(req, 8, 0, 0x80, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"stamp all ones", new(PermRequest), set(req, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), DecodeBadField},
		{"empty name", new(PermRequest), set(req, 0, 0), DecodeBadField},
		{"name too long", new(PermRequest), set(req, 0, 65), DecodeBadField},
		{"name character", new(PermRequest), set(req, 24, ' '), DecodeBadField},
		{"reply reserved byte", new(PermReply), set(rep, 3, 1), DecodeBadReserved},
		{"reply reserved word", new(PermReply), set(rep, 15, 1), DecodeBadReserved},
		{"answers 0", new(PermReply), set(rep, 8, 0, 0, 0, 0), DecodeBadField},
		{"want past MaxPermStamp", new(PermReply), set(rep, 32, 0x80), DecodeBadField},
		{"reply stamp 0", new(PermReply), set(rep, 16, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"requeue reserved", new(PermRequeue), set(rq, 2, 1), DecodeBadReserved},
		{"requeue stamp 0", new(PermRequeue), set(rq, 8, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"requeue released 0", new(PermRequeue), set(rq, 24, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"requeue released at the stamp", new(PermRequeue), set(rq, 31, 5), DecodeBadField},
		{"requeue released after the stamp", new(PermRequeue), set(rq, 24, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), DecodeBadField},
		{"requeue name character", new(PermRequeue), set(rq, 32, ' '), DecodeBadField},
	})
}

// FuzzPermPayloads: any bytes decode into a valid payload that re-encodes
// to the same bytes, or fail with a *DecodeError.
func FuzzPermPayloads(f *testing.F) {
	fuzzDecoders(f, permSamples(), [][]byte{{}}, new(PermRequest), new(PermReply), new(PermRequeue), new(PermHeartbeat))
}

func permLinkSamples() []payload {
	return []payload{
		&PermRelay{Origin: 1, Target: 2, Kind: KindRAReply, Lamport: 9, Payload: []byte{}},
		&PermRelay{Origin: 1<<32 - 1, Target: 3, Kind: KindPermHeartbeat, Flags: PermRelayUnheard, Lamport: 1<<64 - 1, Payload: []byte{0, 0, 3, 0xe8, 1}},
		&PermRelay{Origin: 2, Target: 1, Kind: KindPermProbeReply, Lamport: 1, Payload: bytes.Repeat([]byte{7}, MaxPermRelayPayload)},
		&PermProbe{Member: 3},
		&PermProbe{Member: 1<<32 - 1},
		&PermProbeReply{Member: 2, SilentMS: 3800, Probe: 77},
		&PermProbeReply{Member: 1<<32 - 1, SilentMS: 1<<32 - 1, Probe: 1<<64 - 1},
	}
}

// permProbeReplyExt are extended probe replies: their first
// PermProbeReplyLen bytes are a valid short reply (the form older members
// read), which says nothing of leases, the safe reading of a cut one.
func permProbeReplyExt() []*PermProbeReply {
	return []*PermProbeReply{
		{Member: 2, SilentMS: 3800, Probe: 77, Ext: true},
		{Member: 3, SilentMS: 10, Probe: 78, Ext: true, Covered: true, EndMS: 2500},
		{Member: 4, SilentMS: 1900, Probe: 79, Ext: true, Covered: true, EndMS: -700},
		{Member: 1<<32 - 1, SilentMS: 1<<32 - 1, Probe: 1<<64 - 1, Ext: true, Covered: true, EndMS: 1<<31 - 1},
	}
}

// TestPermProbeReplyExt: the extended reply round-trips; every cut but the
// one to the short form, and a trailing byte, is refused; the short form
// of its bytes claims no coverage.
func TestPermProbeReplyExt(t *testing.T) {
	for _, in := range permProbeReplyExt() {
		b, err := in.AppendBinary(nil)
		if err != nil || len(b) != PermProbeReplyExtLen {
			t.Fatalf("%+v: % x, %v", in, b, err)
		}
		var out PermProbeReply
		if err := out.UnmarshalBinary(b); err != nil || out != *in {
			t.Fatalf("%+v: decoded %+v, %v", in, out, err)
		}
		for n := range len(b) {
			var cut PermProbeReply
			err := cut.UnmarshalBinary(b[:n])
			switch {
			case n == PermProbeReplyLen && (err != nil || cut.Covered || cut.Ext):
				t.Errorf("%+v cut to the short form: %+v, %v", in, cut, err)
			case n != PermProbeReplyLen && err == nil:
				t.Errorf("%+v: %d of %d bytes accepted", in, n, len(b))
			}
		}
		if err := new(PermProbeReply).UnmarshalBinary(append(b, 0)); err == nil {
			t.Errorf("%+v: trailing byte accepted", in)
		}
	}
	checkLayout(t, PermProbeReply{Member: 0x01020304, SilentMS: 0x05060708, Probe: 0x1112131415161718, Ext: true, Covered: true, EndMS: 0x21222324},
		[]byte{1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, PermProbeCovered, 0x21, 0x22, 0x23, 0x24})
	pr, _ := PermProbeReply{Member: 2, SilentMS: 10, Probe: 5, Ext: true, Covered: true, EndMS: 9}.AppendBinary(nil)
	set := func(b []byte, i int, v ...byte) []byte { b = bytes.Clone(b); copy(b[i:], v); return b }
	checkRefusals(t, []refusal{
		{"probe reply undefined flag", new(PermProbeReply), set(pr, 16, 2|PermProbeCovered), DecodeBadField},
		{"probe reply end without covered", new(PermProbeReply), set(pr, 16, 0), DecodeBadField},
	})
	checkEncodeRefused(t, PermProbeReply{Member: 2, Probe: 5, Ext: true, EndMS: 1})
}

// TestPermLinkRoundTrips: the relay and the probes re-encode what they
// decode, at their largest too; truncations and trailing bytes are refused.
func TestPermLinkRoundTrips(t *testing.T) {
	checkRoundTrips(t, permLinkSamples())
}

// TestPermLinkLayout pins the relay's and the probes' bytes.
func TestPermLinkLayout(t *testing.T) {
	checkLayout(t, PermRelay{Origin: 0x01020304, Target: 0x05060708, Kind: KindRARequest, Flags: PermRelayUnheard, Lamport: 0x1112131415161718, Payload: []byte("ab")},
		[]byte{1, 2, 3, 4, 5, 6, 7, 8, 30, 1, 0, 2,
			0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 'a', 'b'})
	checkLayout(t, PermProbe{Member: 0x01020304}, []byte{1, 2, 3, 4})
	checkLayout(t, PermProbeReply{Member: 0x01020304, SilentMS: 0x05060708, Probe: 0x1112131415161718},
		[]byte{1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18})
}

// TestPermLinkRejects: member 0, a relay to its own origin, of an unknown
// kind or of a relay, a Lamport time or probe of 0, an undefined flag and
// a length that disagrees with the bytes are refused on both sides.
func TestPermLinkRejects(t *testing.T) {
	checkEncodeRefused(t,
		PermRelay{Origin: 0, Target: 2, Kind: KindRAReply, Lamport: 1},
		PermRelay{Origin: 1, Target: 0, Kind: KindRAReply, Lamport: 1},
		PermRelay{Origin: 2, Target: 2, Kind: KindRAReply, Lamport: 1},
		PermRelay{Origin: 1, Target: 2, Kind: KindPermRelay, Lamport: 1},
		PermRelay{Origin: 1, Target: 2, Kind: Kind(250), Lamport: 1},
		PermRelay{Origin: 1, Target: 2, Kind: KindRAReply, Lamport: 0},
		PermRelay{Origin: 1, Target: 2, Kind: KindRAReply, Flags: 2, Lamport: 1},
		PermRelay{Origin: 1, Target: 2, Kind: KindRAReply, Lamport: 1, Payload: make([]byte, MaxPermRelayPayload+1)},
		PermProbe{},
		PermProbeReply{Member: 0, Probe: 1},
		PermProbeReply{Member: 1, Probe: 0},
	)
	rl, _ := PermRelay{Origin: 1, Target: 2, Kind: KindRAReply, Lamport: 5, Payload: []byte("xy")}.AppendBinary(nil)
	pr, _ := PermProbeReply{Member: 2, SilentMS: 10, Probe: 5}.AppendBinary(nil)
	set := func(b []byte, i int, v ...byte) []byte { b = bytes.Clone(b); copy(b[i:], v); return b }
	checkRefusals(t, []refusal{
		{"relay origin 0", new(PermRelay), set(rl, 0, 0, 0, 0, 0), DecodeBadField},
		{"relay target 0", new(PermRelay), set(rl, 4, 0, 0, 0, 0), DecodeBadField},
		{"relay to its origin", new(PermRelay), set(rl, 4, 0, 0, 0, 1), DecodeBadField},
		{"relay of a relay", new(PermRelay), set(rl, 8, byte(KindPermRelay)), DecodeBadField},
		{"relay of an unknown kind", new(PermRelay), set(rl, 8, 250), DecodeBadField},
		{"relay of kind 0", new(PermRelay), set(rl, 8, 0), DecodeBadField},
		{"relay flag 2", new(PermRelay), set(rl, 9, 2), DecodeBadField},
		{"relay Lamport 0", new(PermRelay), set(rl, 12, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"relay length past the bytes", new(PermRelay), set(rl, 10, 0, 3), DecodeTruncated},
		{"relay length short of the bytes", new(PermRelay), set(rl, 10, 0, 1), DecodeBadLength},
		{"relay length past the largest", new(PermRelay), set(rl, 10, 0xff, 0xff), DecodeOversized},
		{"probe member 0", new(PermProbe), []byte{0, 0, 0, 0}, DecodeBadField},
		{"probe reply member 0", new(PermProbeReply), set(pr, 0, 0, 0, 0, 0), DecodeBadField},
		{"probe reply probe 0", new(PermProbeReply), set(pr, 8, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
	})
}

// FuzzPermLink: any bytes decode into a valid relay or probe that
// re-encodes to the same bytes, or fail with a *DecodeError.
func FuzzPermLink(f *testing.F) {
	samples := permLinkSamples()
	for _, r := range permProbeReplyExt() {
		samples = append(samples, r)
	}
	fuzzDecoders(f, samples, [][]byte{{}}, new(PermRelay), new(PermProbe), new(PermProbeReply))
}
