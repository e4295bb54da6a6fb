package wire

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func centralSamples() []payload {
	return []payload{
		&CentralRequest{Name: "counter", Mode: CentralShared, Incarnation: 3, Seq: 7, Stamp: 41, LeaseMS: 3000},
		&CentralRequest{Name: "a", Incarnation: 1, Seq: 1},
		&CentralGrant{Name: "counter", Mode: CentralExclusive, Incarnation: 3, Seq: 7, Fence: 5<<40 | 2<<32 | 9, Echo: 41, LeaseMS: 3000},
		&CentralRelease{Name: "printer/lab-2", Incarnation: 2, Seq: 9, Fence: 1<<40 | 1},
		&CentralRelease{Name: "x", Incarnation: 2, Seq: 10},
		&CentralRenew{Name: "db:main", Incarnation: 4, Seq: 2, Fence: 77, Stamp: 1 << 31, LeaseMS: 100},
		&CentralRefuse{Name: "db:main", Reason: RefuseNotHeld, Incarnation: 4, Seq: 2},
		&CentralBeat{Beat: 12, HoldMS: 3270},
		&CentralBeat{Beat: 13, Quiet: true},
		&CentralBeat{Beat: 14, HoldMS: 1<<31 - 1, Quiet: true},
		&CentralSync{Incarnation: 1, Stamp: 3, Echo: 2},
		&CentralSync{Flags: CentralSyncPrevQuiet, Prev: 255, Incarnation: 1, Stamp: 3, Echo: 2},
		&CentralSync{Flags: CentralSyncPrevQuiet | CentralSyncRestarted, Incarnation: 1, Stamp: 3},
		&CentralSync{Flags: CentralSyncRestarted, Incarnation: 5, Stamp: 9, Echo: 8, MaxSeq: 12, SupportAgeMS: 1500, Entries: []CentralSyncEntry{
			{Name: "counter", Held: true, LeaseMS: 3000, LeftMS: 1200, Seq: 11, Fence: 3<<40 | 4},
			{Name: "db", Mode: CentralShared, LeaseMS: 1000, Seq: 12},
		}},
	}
}

// TestCentralRoundTrips: every payload re-encodes what it decodes; every
// truncation and any trailing byte is a *DecodeError.
func TestCentralRoundTrips(t *testing.T) {
	checkRoundTrips(t, centralSamples())
}

// TestCentralLayout pins the byte layout of a grant, a beat and a sync
// entry (the diagrams above CentralGrant, CentralBeat and CentralSync).
func TestCentralLayout(t *testing.T) {
	checkLayout(t, CentralBeat{Beat: 0x01020304, HoldMS: 0x05060708, Quiet: true}, []byte{1, 2, 3, 4, 0x85, 6, 7, 8})
	checkLayout(t, CentralBeat{Beat: 0x01020304, HoldMS: 0x05060708}, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	checkLayout(t, CentralGrant{Name: "ab", Mode: CentralShared, Incarnation: 0x01020304, Seq: 0x1112131415161718,
		Fence: 0x2122232425262728, Echo: 0x31323334, LeaseMS: 0x41424344},
		[]byte{2, 1, 0, 0, 1, 2, 3, 4,
			0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
			0x31, 0x32, 0x33, 0x34, 0x41, 0x42, 0x43, 0x44, 'a', 'b'})
	checkLayout(t, CentralSync{Flags: 3, Prev: 7, Incarnation: 0x01020304}, []byte{3, 7, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	checkLayout(t, CentralSync{Flags: 1, Incarnation: 0x01020304, Stamp: 0x05060708, Echo: 0x090a0b0c, MaxSeq: 0x20, SupportAgeMS: 0x40414243,
		Entries: []CentralSyncEntry{{Name: "z", Mode: 1, Held: true, LeaseMS: 0x0d0e0f10, LeftMS: 0x11121314, Seq: 0x20, Fence: 0x30}}},
		[]byte{1, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x40, 0x41, 0x42, 0x43,
			1, 1, 1, 0, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0x30, 'z'})
}

// TestCentralRejects: what an attacker can put in a field the format does
// not allow is refused on both sides, as a typed error, before anything is
// allocated for an absurd count.
func TestCentralRejects(t *testing.T) {
	checkEncodeRefused(t,
		&CentralRequest{Name: "a b", Seq: 1}, &CentralRequest{Name: "a", Mode: 2, Seq: 1}, &CentralRequest{Name: "a"},
		&CentralGrant{Name: "a", Seq: 1}, &CentralRenew{Name: "a", Seq: 1}, &CentralRelease{Name: strings.Repeat("x", 65), Seq: 1},
		&CentralRefuse{Name: "a", Seq: 1}, &CentralRefuse{Name: "a", Seq: 1, Reason: 9},
		&CentralSync{Flags: 4}, &CentralSync{Prev: 1}, &CentralBeat{HoldMS: 1 << 31}, &CentralSync{Entries: make([]CentralSyncEntry, MaxSyncEntries+1)},
		&CentralSync{MaxSeq: 1, Entries: []CentralSyncEntry{{Name: "a", Seq: 2}}},
		&CentralSync{MaxSeq: 1, Entries: []CentralSyncEntry{{Name: "a", Seq: 1, Held: true}}},
		&CentralSync{MaxSeq: 1, Entries: []CentralSyncEntry{{Name: "a", Seq: 1, Fence: 3}}},
		&CentralSync{MaxSeq: 1, Entries: []CentralSyncEntry{{Name: "a", Seq: 1, LeftMS: 3}}},
	)

	req, _ := CentralRequest{Name: "ab", Incarnation: 1, Seq: 1}.AppendBinary(nil)
	grant, _ := CentralGrant{Name: "ab", Incarnation: 1, Seq: 1, Fence: 1}.AppendBinary(nil)
	sync, _ := CentralSync{MaxSeq: 4, Entries: []CentralSyncEntry{{Name: "ab", Seq: 4, Held: true, Fence: 9, LeftMS: 5}}}.AppendBinary(nil)
	mutate := func(b []byte, i int, v byte) []byte { b = bytes.Clone(b); b[i] = v; return b }
	absurdCount := mutate(sync, 2, 0xff)
	binary.BigEndian.PutUint16(absurdCount[2:], 0xffff)
	checkRefusals(t, []refusal{
		{"mode", new(CentralRequest), mutate(req, 1, 2), DecodeBadField},
		{"reserved", new(CentralRequest), mutate(req, 2, 1), DecodeBadReserved},
		{"seq 0", new(CentralRequest), mutate(req, 15, 0), DecodeBadField},
		{"empty name", new(CentralRequest), mutate(req, 0, 0), DecodeBadField},
		{"name character", new(CentralRequest), mutate(req, 24, ' '), DecodeBadField},
		{"fence 0", new(CentralGrant), mutate(grant, 23, 0), DecodeBadField},
		{"flags", new(CentralSync), mutate(sync, 0, 0x80), DecodeBadFlags},
		{"prev without its flag", new(CentralSync), mutate(sync, 1, 1), DecodeBadReserved},
		{"more entries than bytes", new(CentralSync), mutate(sync, 3, 2), DecodeTruncated},
		{"absurd count", new(CentralSync), absurdCount, DecodeOversized},
		{"held 2", new(CentralSync), mutate(sync, 30, 2), DecodeBadField},
		{"entry reserved", new(CentralSync), mutate(sync, 31, 1), DecodeBadReserved},
		{"entry name length 0", new(CentralSync), mutate(sync, 28, 0), DecodeBadField},
		{"entry name past the end", new(CentralSync), mutate(sync, 28, 9), DecodeBadField},
		{"entry seq above MaxSeq", new(CentralSync), mutate(sync, 47, 5), DecodeBadField},
		{"held without fence", new(CentralSync), mutate(sync, 55, 0), DecodeBadField},
		{"beat too long", new(CentralBeat), make([]byte, 9), DecodeBadLength},
		{"reason 0", new(CentralRefuse), make([]byte, 17), DecodeBadField},
		{"release reserved", new(CentralRelease), mutate(req[:25], 1, 1), DecodeBadReserved},
	})
}

func FuzzCentral(f *testing.F) {
	fuzzDecoders(f, centralSamples(), nil, new(CentralRequest), new(CentralGrant), new(CentralRelease), new(CentralRenew),
		new(CentralRefuse), new(CentralBeat), new(CentralSync))
}
