package wire

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func testConfigAnnounce() *ConfigAnnounce {
	c := &ConfigAnnounce{
		Flags:          ConfigAnswer,
		KeyFingerprint: KeyFingerprint([]byte("0123456789abcdef")),
		KeyID:          1,
		Service:        "electd",
		Cluster:        "lab",
		Algorithm:      "bully",
		Params:         []ConfigParam{{Name: "priorities", Value: "2=10"}, {Name: "multicast", Value: "239.77.0.1:7599"}},
		Members: []ConfigMember{
			{ID: 3, Addr: netip.MustParseAddrPort("10.0.0.3:7500")},
			{ID: 1, Addr: netip.MustParseAddrPort("10.0.0.1:7500")},
			{ID: 2, Addr: netip.MustParseAddrPort("[fd00::2]:7500")},
		},
	}
	c.Canonical()
	return c
}

func TestConfigAnnounceRoundTrip(t *testing.T) {
	c := testConfigAnnounce()
	b, err := c.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got ConfigAnnounce
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got.Digest != ConfigDigest(c) || got.Cluster != "lab" || len(got.Members) != 3 || got.Members[1].Addr != netip.MustParseAddrPort("[fd00::2]:7500") ||
		got.Params[0].Name != "multicast" || got.KeyFingerprint != c.KeyFingerprint || got.Flags != ConfigAnswer {
		t.Fatalf("decoded %+v", got)
	}
	again, _ := got.AppendBinary(nil)
	if !bytes.Equal(again, b) {
		t.Fatal("re-encoding differs")
	}
	// The digest covers the parts that must agree, not the flags or key.
	d := ConfigDigest(c)
	c2 := testConfigAnnounce()
	c2.Flags, c2.KeyFingerprint, c2.KeyID = ConfigSteppedBack, [8]byte{1}, 7
	if ConfigDigest(c2) != d {
		t.Fatal("flags or key moved the digest")
	}
	c2.Members = c2.Members[:2]
	if ConfigDigest(c2) == d {
		t.Fatal("a shorter member list kept the digest")
	}
}

func TestConfigAnnounceRefuses(t *testing.T) {
	good, _ := testConfigAnnounce().AppendBinary(nil)
	for name, mut := range map[string]func(b []byte) []byte{
		"digest":   func(b []byte) []byte { b[4] ^= 1; return b },
		"flags":    func(b []byte) []byte { b[1] = 0x80; return b },
		"version":  func(b []byte) []byte { b[0] = 2; return b },
		"trailing": func(b []byte) []byte { return append(b, 0) },
		"short":    func(b []byte) []byte { return b[:len(b)-1] },
		"control":  func(b []byte) []byte { i := bytes.Index(b, []byte("lab")); b[i] = '\n'; return b },
	} {
		b := mut(bytes.Clone(good))
		var c ConfigAnnounce
		err := c.UnmarshalBinary(b)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: %v, want a DecodeError", name, err)
		}
	}
	bad := testConfigAnnounce()
	bad.Params[0], bad.Params[1] = bad.Params[1], bad.Params[0]
	if _, err := bad.AppendBinary(nil); err == nil {
		t.Error("unsorted params encoded")
	}
	bad = testConfigAnnounce()
	bad.Cluster = "a\x1b[31mred"
	if _, err := bad.AppendBinary(nil); err == nil {
		t.Error("escape code in the cluster name encoded")
	}
}

func TestKeyFingerprint(t *testing.T) {
	a, b := KeyFingerprint([]byte("0123456789abcdef")), KeyFingerprint([]byte("0123456789abcdeF"))
	if a == b || FingerprintText(a) == "none" || len(FingerprintText(a)) != 16 {
		t.Fatalf("fingerprints %x %x", a, b)
	}
	if FingerprintText([8]byte{}) != "none" {
		t.Fatal("zero fingerprint not none")
	}
}

func TestConfigTimings(t *testing.T) {
	in := ConfigTimings{Heartbeat: 200_000_000, LeaderTimeout: 400_000_000}
	b, err := in.AppendBinary(nil)
	if err != nil || len(b) != ConfigTimingsLen {
		t.Fatalf("encode: % x, %v", b, err)
	}
	var out ConfigTimings
	if err := out.UnmarshalBinary(b); err != nil || out != in {
		t.Fatalf("decode: %+v, %v", out, err)
	}
	for name, mutate := range map[string]func([]byte) []byte{
		"truncated":         func(b []byte) []byte { return b[:ConfigTimingsLen-1] },
		"trailing":          func(b []byte) []byte { return append(b, 0) },
		"version":           func(b []byte) []byte { b[0] = 2; return b },
		"flags":             func(b []byte) []byte { b[1] = 1; return b },
		"reserved":          func(b []byte) []byte { b[3] = 1; return b },
		"no heartbeat":      func(b []byte) []byte { clear(b[4:12]); return b },
		"leader timeout 0":  func(b []byte) []byte { clear(b[12:20]); return b },
		"heartbeat > bound": func(b []byte) []byte { copy(b[4:12], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); return b },
	} {
		var got ConfigTimings
		if err := got.UnmarshalBinary(mutate(slices.Clone(b))); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			requireDecodeError(t, err)
		}
	}
	if _, err := (ConfigTimings{Heartbeat: 1}).AppendBinary(nil); err == nil {
		t.Error("a leader timeout of 0 encoded")
	}
	if _, err := (ConfigTimings{Heartbeat: 1, LeaderTimeout: MaxTimingNanos}).AppendBinary(nil); err != nil {
		t.Errorf("the longest leader timeout: %v", err)
	}
}
