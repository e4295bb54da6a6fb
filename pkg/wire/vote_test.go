package wire

import (
	"bytes"
	"errors"
	"testing"
)

func voteSamples() []*Vote {
	return []*Vote{
		{Op: VoteRequest, Name: "counter", Attempt: 7, Stamp: 12, LeaseMS: 3000},
		{Op: VoteRequest, Mode: VoteShared, Name: "db:main", Attempt: 1<<32 - 1, Stamp: 1<<64 - 1, LeaseMS: 1<<32 - 1},
		{Op: VoteLocked, Name: "counter", Attempt: 7, Stamp: 12, Fence: 41},
		{Op: VoteLocked, Name: "counter", Attempt: 8, Stamp: 13, Fence: 42, LeaseMS: 3, Recorded: true},
		{Op: VoteFailed, Name: "a", Attempt: 2},
		{Op: VoteInquire, Name: "a", Attempt: 2, Stamp: 9},
		{Op: VoteRelinquish, Name: "a", Attempt: 2},
		{Op: VoteRelease, Name: "printer/lab-2", Attempt: 3, Fence: MaxVoteFence},
		{Op: VoteCommit, Name: "a", Attempt: 3, Fence: 42, LeaseMS: 1000},
		{Op: VoteCommitOK, Name: "a", Attempt: 3, Fence: 42},
		{Op: VoteCommitRefused, Name: "a", Attempt: 3},
		{Op: VoteRenew, Name: "a", Attempt: 3, Fence: 42, LeaseMS: 500},
		{Op: VoteRenewOK, Name: "a", Attempt: 3},
		{Op: VoteRenewRefused, Name: "a", Attempt: 3},
		{Op: VoteDeny, Name: "a", Attempt: 3},
	}
}

// TestVoteRoundTrips: every op re-encodes what it decodes; every
// truncation and any trailing byte is a *DecodeError.
func TestVoteRoundTrips(t *testing.T) {
	samples := voteSamples()
	for i, b := range checkRoundTrips(t, samples) {
		in := *samples[i]
		var out Vote
		if err := out.UnmarshalBinary(b); err != nil || out != in {
			t.Errorf("%v: decoded %+v (%v), want %+v", in.Op, out, err, in)
		}
		var v Vote
		if err := v.UnmarshalBinary(append(bytes.Clone(b), 'x')); !errors.Is(err, DecodeBadLength) && !errors.Is(err, DecodeBadField) {
			t.Errorf("%v: trailing byte: %v", in.Op, err)
		}
		if in.Op.String() == "" || in.Op.String()[0] == 'o' {
			t.Errorf("op %d has no name", in.Op)
		}
	}
}

// TestVoteLayout pins the byte layout (the diagram above Vote).
func TestVoteLayout(t *testing.T) {
	checkLayout(t, Vote{Op: VoteLocked, Name: "ab", Fence: 5, Recorded: true},
		[]byte{2, 0, 2, 1, 0, 0, 0, 0,
			0, 0, 0, 0, 0, 0, 0, 0,
			0, 0, 0, 0, 0, 0, 0, 5,
			0, 0, 0, 0, 0, 0, 0, 0, 'a', 'b'})
	checkLayout(t, Vote{Op: VoteCommit, Mode: VoteShared, Name: "ab", Attempt: 0x01020304,
		Stamp: 0x1112131415161718, Fence: 0x2122232425262728, LeaseMS: 0x31323334},
		[]byte{7, 1, 2, 0, 1, 2, 3, 4,
			0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
			0x31, 0x32, 0x33, 0x34, 0, 0, 0, 0, 'a', 'b'})
}

// TestVoteHostile: what an attacker can put in each field is refused by
// the decoder with a typed error, or is a value the cores bound by policy
// (attempt, stamp, lease: any value decodes).
func TestVoteHostile(t *testing.T) {
	good, _ := Vote{Op: VoteLocked, Name: "ab", Fence: 1}.AppendBinary(nil)
	mod := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	checkRefusals(t, []refusal{
		{"op 0", new(Vote), mod(func(b []byte) { b[0] = 0 }), DecodeBadField},
		{"op 14", new(Vote), mod(func(b []byte) { b[0] = 14 }), DecodeBadField},
		{"op 255", new(Vote), mod(func(b []byte) { b[0] = 255 }), DecodeBadField},
		{"mode 2", new(Vote), mod(func(b []byte) { b[1] = 2 }), DecodeBadField},
		{"name len 0", new(Vote), mod(func(b []byte) { b[2] = 0 }), DecodeBadField},
		{"name len 65", new(Vote), mod(func(b []byte) { b[2] = 65 }), DecodeBadField},
		{"name len past end", new(Vote), mod(func(b []byte) { b[2] = 3 }), DecodeTruncated},
		{"unknown flag", new(Vote), mod(func(b []byte) { b[3] = 2 }), DecodeBadReserved},
		{"flags 0xff", new(Vote), mod(func(b []byte) { b[3] = 0xff }), DecodeBadReserved},
		{"recorded on a request", new(Vote), mod(func(b []byte) { b[0] = byte(VoteRequest); b[3] = 1 }), DecodeBadField},
		{"recorded on a commit", new(Vote), mod(func(b []byte) { b[0] = byte(VoteCommit); b[3] = 1 }), DecodeBadField},
		{"reserved word", new(Vote), mod(func(b []byte) { b[31] = 1 }), DecodeBadReserved},
		{"reserved word top bit", new(Vote), mod(func(b []byte) { b[28] = 0x80 }), DecodeBadReserved},
		{"fence 2^62", new(Vote), mod(func(b []byte) { b[16] = 0x40; b[23] = 0 }), DecodeBadField},
		{"fence max", new(Vote), mod(func(b []byte) {
			for i := 16; i < 24; i++ {
				b[i] = 0xff
			}
		}), DecodeBadField},
		{"name bytes", new(Vote), mod(func(b []byte) { b[32] = ' ' }), DecodeBadField},
	})
	checkEncodeRefused(t, Vote{Op: 0, Name: "a"}, Vote{Op: voteOpEnd, Name: "a"}, Vote{Op: VoteLocked, Mode: 2, Name: "a"},
		Vote{Op: VoteLocked, Name: ""}, Vote{Op: VoteLocked, Name: "a", Fence: MaxVoteFence + 1},
		Vote{Op: VoteRequest, Name: "a", Recorded: true}, Vote{Op: VoteRelease, Name: "a", Recorded: true})
}

// TestVoteZeroAlloc: decoding allocates only the name.
func TestVoteZeroAlloc(t *testing.T) {
	b, _ := Vote{Op: VoteRequest, Name: "counter", Attempt: 1}.AppendBinary(nil)
	var v Vote
	if n := testing.AllocsPerRun(100, func() { _ = v.UnmarshalBinary(b) }); n > 1 {
		t.Errorf("decode: %v allocs", n)
	}
}

func FuzzVote(f *testing.F) {
	fuzzDecoders(f, voteSamples(), [][]byte{{}}, new(Vote))
}
