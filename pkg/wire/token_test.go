package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func tokenSamples() []payload {
	return []payload{
		&Token{Name: "counter", HoldMS: 3250, Generation: 3<<32 | 2, Hop: 17, Fence: 3<<40 | 5, Wants: []uint32{4, 1},
			Served: []WantServed{{Member: 2, Want: 1764127000123}, {Member: 4, Want: 9}}},
		&Token{Name: "a", Generation: 1<<32 | 1},
		&TokenAck{Name: "printer/lab-2", Status: TokenAccepted, Generation: 1<<32 | 4, Hop: 9},
		&TokenAck{Name: "x", Status: TokenStale, Generation: 7<<32 | 3},
		&RingProbe{Op: ProbeWant, Name: "counter", Nonce: 1},
		&RingProbe{Op: ProbeWant, Name: "counter", Generation: 1764127000124},
		&RingProbe{Op: ProbePrepare, Name: "counter", Nonce: 77, Generation: 4<<32 | 5},
		&RingProbe{Op: ProbeCheck, Name: "db:main", Nonce: 78, Generation: 4<<32 | 5},
		&RingProbe{Op: ProbeLocate, Name: "db:main", Nonce: 79},
		&RingProbeReply{Op: ProbePrepare, Name: "counter", Status: ProbeHave, Flags: ProbeHeld, Nonce: 77, Generation: 3<<32 | 2, Fence: 3<<40 | 9, LeaseLeftMS: 1200},
		&RingProbeReply{Op: ProbeCheck, Name: "counter", Status: ProbeOK, Nonce: 78, Generation: 4<<32 | 5},
		&RingProbeReply{Op: ProbePrepare, Name: "counter", Status: ProbeOK, Flags: ProbeConfirmKnown, Nonce: 80, Generation: 5<<32 | 1, LeaseLeftMS: 10, ConfirmLeftMS: 3270},
		&RingProbeReply{Op: ProbeLocate, Name: "counter", Status: ProbeOK, Nonce: 79, Generation: 4<<32 | 5},
	}
}

// TestTokenRoundTrips: every payload re-encodes what it decodes; every
// truncation and any trailing byte is a *DecodeError.
func TestTokenRoundTrips(t *testing.T) {
	checkRoundTrips(t, tokenSamples())
}

// TestTokenLayout pins the byte layout of a token (the diagram above Token).
func TestTokenLayout(t *testing.T) {
	checkLayout(t, Token{Name: "ab", HoldMS: 0x01020304, Generation: 0x1112131415161718, Hop: 0x2122232425262728, Fence: 0x3132333435363738, Wants: []uint32{0x41424344},
		Served: []WantServed{{Member: 0x51525354, Want: 0x6162636465666768}}},
		[]byte{2, 0, 0, 1, 1, 2, 3, 4,
			0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
			0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,
			0x41, 0x42, 0x43, 0x44,
			0, 1, 0, 0,
			0x51, 0x52, 0x53, 0x54, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
			'a', 'b'})
}

// TestTokenRejects: names, enums, reserved bytes and flags the format does
// not allow are refused on both sides.
func TestTokenRejects(t *testing.T) {
	for _, name := range []string{"", strings.Repeat("x", MaxLockNameLen+1), "a b", "lock\n", "é"} {
		if _, err := (Token{Name: name}).AppendBinary(nil); err == nil {
			t.Errorf("token named %q encoded", name)
		}
		var ee *EncodeError
		if _, err := (RingProbe{Op: ProbeWant, Name: name}).AppendBinary(nil); !errors.As(err, &ee) {
			t.Errorf("probe named %q: %v", name, err)
		}
	}
	if !ValidLockName(strings.Repeat("x", MaxLockNameLen)) || !ValidLockName("db:main/users@eu-1+ro_2") {
		t.Error("valid names refused")
	}
	if _, err := (TokenAck{Name: "a"}).AppendBinary(nil); err == nil {
		t.Error("ack without status encoded")
	}
	if _, err := (RingProbe{Op: 9, Name: "a"}).AppendBinary(nil); err == nil {
		t.Error("probe with op 9 encoded")
	}
	if _, err := (RingProbeReply{Op: ProbeWant, Name: "a", Status: ProbeOK}).AppendBinary(nil); err == nil {
		t.Error("reply to a want encoded")
	}
	if _, err := (RingProbeReply{Op: ProbeCheck, Name: "a", Status: ProbeOK, ConfirmLeftMS: 1}).AppendBinary(nil); err == nil {
		t.Error("confirm left without its flag encoded")
	}
	if _, err := (RingProbeReply{Op: ProbeCheck, Name: "a", Status: ProbeOK, Flags: 4}).AppendBinary(nil); err == nil {
		t.Error("reply with undefined flags encoded")
	}

	if _, err := (Token{Name: "a", Served: make([]WantServed, MaxTokenWants+1)}).AppendBinary(nil); err == nil {
		t.Error("token with too many served entries encoded")
	}

	good, _ := Token{Name: "ab", Wants: []uint32{3}, Served: []WantServed{{Member: 5, Want: 1}}}.AppendBinary(nil)
	mutate := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	checkRefusals(t, []refusal{
		{"reserved", new(Token), mutate(1, 1), DecodeBadReserved},
		{"empty name", new(Token), mutate(0, 0), DecodeBadField},
		{"name too long", new(Token), mutate(0, 65), DecodeBadField},
		{"want ID 0", new(Token), mutate(35, 0), DecodeBadField},
		{"served member 0", new(Token), mutate(43, 0), DecodeBadField},
		{"served reserved", new(Token), mutate(39, 1), DecodeBadReserved},
		{"absurd served count", new(Token), mutate(36, 0xff), DecodeOversized},
		{"more served than bytes", new(Token), mutate(37, 2), DecodeTruncated},
		{"name character", new(Token), mutate(52, ' '), DecodeBadField},
		{"more wants than bytes", new(Token), mutate(3, 20), DecodeTruncated},
		{"absurd want count", new(Token), mutate(2, 0xff), DecodeOversized},
	})
	reply, _ := RingProbeReply{Op: ProbeCheck, Name: "a", Status: ProbeOK}.AppendBinary(nil)
	for i, k := range map[int]DecodeErrorKind{0: DecodeBadField, 2: DecodeBadField, 3: DecodeBadFlags, 31: DecodeBadReserved} {
		b := bytes.Clone(reply)
		b[i] = 0x80
		var r RingProbeReply
		if err := r.UnmarshalBinary(b); !errors.Is(err, k) {
			t.Errorf("reply byte %d: %v, want %v", i, err, k)
		}
	}
}

func FuzzToken(f *testing.F) {
	fuzzDecoders(f, tokenSamples(), nil, new(Token), new(TokenAck), new(RingProbe), new(RingProbeReply))
}

// TestTokenRefusesZeroMembers: the encoder refuses a want or a served
// member 0, which the decoder refuses (before, it encoded them: a token
// every receiver dropped; found by corefuzz's generic generator).
func TestTokenRefusesZeroMembers(t *testing.T) {
	checkEncodeRefused(t,
		Token{Name: "x", Wants: []uint32{2, 0}},
		Token{Name: "x", Served: []WantServed{{Member: 0, Want: 1}}})
}
