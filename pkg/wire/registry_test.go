package wire

import (
	"bytes"
	"testing"
)

// TestBlocks: the blocks are in order, disjoint, leave 0 and 255 out, and
// every registered kind lies in one; Known, String, Kinds and KindNamed
// are the registry's.
func TestBlocks(t *testing.T) {
	prev := KindInvalid
	for _, b := range Blocks {
		if b.First <= prev || b.Last < b.First || b.Last == 255 {
			t.Errorf("block %d-%d (%s): out of order, overlapping or holding 0 or 255", b.First, b.Last, b.Family)
		}
		prev = b.Last
	}
	if len(Kinds()) != len(registry) || len(Registered()) != len(registry) {
		t.Errorf("%d kinds known, %d registered", len(Kinds()), len(registry))
	}
	for _, i := range Registered() {
		if _, ok := BlockOf(i.Kind); !ok {
			t.Errorf("%s (%d) is in no block", i.Name, i.Kind)
		}
		if k, ok := KindNamed(i.Name); !ok || k != i.Kind || i.Kind.String() != i.Name || !i.Kind.Known() {
			t.Errorf("%s (%d): KindNamed %v %v, String %q", i.Name, i.Kind, k, ok, i.Kind)
		}
	}
	if KindInvalid.Known() || KindInvalid.String() != "invalid" || Kind(255).Known() {
		t.Error("kind 0 or 255 known")
	}
}

// FuzzKinds fuzzes every registered kind's decoder at once: the first byte
// picks the kind (by its place in the registry), the rest is its payload,
// which must either decode and re-encode byte for byte or be refused with
// a *DecodeError. A kind added to the registry is fuzzed from then on.
func FuzzKinds(f *testing.F) {
	for i, info := range registry {
		f.Add(append([]byte{byte(i)}, make([]byte, 40)...))
		if info.Kind == KindConfigTimings {
			// Zeros never decode as timings (a version, both timings
			// above 0, exactly 20 bytes): one that does, to start from.
			b, err := ConfigTimings{Heartbeat: 200e6, LeaderTimeout: 400e6}.AppendBinary([]byte{byte(i)})
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		info := registry[int(b[0])%len(registry)]
		p := info.New()
		if err := p.UnmarshalBinary(b[1:]); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := p.AppendBinary(nil)
		if err != nil {
			t.Fatalf("%s: decoded but does not encode: %v", info.Name, err)
		}
		if !bytes.Equal(out, b[1:]) {
			t.Fatalf("%s: round trip % x -> % x", info.Name, b[1:], out)
		}
	})
}
