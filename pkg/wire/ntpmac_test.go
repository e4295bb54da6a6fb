package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func goldenNTPKeys(t testing.TB) []NTPKey {
	t.Helper()
	keys, err := ParseChronyKeys(readFile(t, "chrony.keys"))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestParseChronyKeysGolden(t *testing.T) {
	keys := goldenNTPKeys(t)
	want := []struct {
		id     uint32
		typ    string
		secret string
	}{
		{10, "MD5", "synclab-md5-key-0"},
		{11, "SHA1", "\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf\xb0\xb1\xb2\xb3"},
		{12, "SHA256", "\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd\xce\xcf\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xdb\xdc\xdd\xde\xdf"},
	}
	if len(keys) != len(want) {
		t.Fatalf("%d keys", len(keys))
	}
	for i, w := range want {
		if keys[i].ID != w.id || keys[i].Type != w.typ || string(keys[i].Secret) != w.secret {
			t.Errorf("key %d: %+v", i, keys[i])
		}
	}
}

func TestNTPMACGolden(t *testing.T) {
	keys := goldenNTPKeys(t)
	for _, c := range []struct {
		file      string
		key       int
		digestLen int
	}{
		{"ntp_reply_md5.hex", 0, 16},
		{"ntp_reply_sha1.hex", 1, 20},
		{"ntp_reply_sha256.hex", 2, 20},    // NTPv4: truncated as chrony does
		{"ntp_reply_sha256_v3.hex", 2, 32}, // NTPv3: whole digest
	} {
		raw := readHex(t, c.file)
		pkt, keyID, digest, err := SplitNTPMAC(raw)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if keyID != keys[c.key].ID || len(digest) != c.digestLen || len(pkt) != NTPHeaderLen {
			t.Errorf("%s: key %d, digest %d bytes, pkt %d", c.file, keyID, len(digest), len(pkt))
		}
		if err := VerifyNTPMAC(pkt, keyID, digest, keys); err != nil {
			t.Errorf("%s: %v", c.file, err)
		}
		// Signing the bare packet reproduces the vector.
		signed := AppendNTPMAC(bytes.Clone(raw[:NTPHeaderLen]), keys[c.key])
		if !bytes.Equal(signed, raw) {
			t.Errorf("%s: AppendNTPMAC\n got % x\nwant % x", c.file, signed, raw)
		}
		// Tampering with any byte fails verification.
		for i := range raw {
			b := bytes.Clone(raw)
			b[i] ^= 0x80
			pkt, keyID, digest, err := SplitNTPMAC(b)
			if err != nil {
				t.Fatalf("%s byte %d: %v", c.file, i, err)
			}
			err = VerifyNTPMAC(pkt, keyID, digest, keys)
			if !errors.Is(err, ErrNTPBadMAC) && !errors.Is(err, ErrNTPUnknownKey) {
				t.Errorf("%s: byte %d flipped: %v", c.file, i, err)
			}
		}
	}
}

func TestVerifyNTPMACErrors(t *testing.T) {
	keys := goldenNTPKeys(t)
	raw := readHex(t, "ntp_reply_sha256.hex")
	pkt, keyID, digest, _ := SplitNTPMAC(raw)
	if err := VerifyNTPMAC(pkt, 99, digest, keys); !errors.Is(err, ErrNTPUnknownKey) || Reason(err) != "ntp_unknown_key" {
		t.Errorf("unknown key: %v", err)
	}
	if err := VerifyNTPMAC(pkt, 0, digest, []NTPKey{{ID: 0, Type: "MD5", Secret: []byte("x")}}); !errors.Is(err, ErrNTPUnknownKey) {
		t.Errorf("key 0: %v", err)
	}
	if err := VerifyNTPMAC(pkt, keyID, digest[:16], keys); !errors.Is(err, ErrNTPBadMAC) || Reason(err) != "ntp_bad_mac" {
		t.Errorf("short digest: %v", err)
	}
	// A whole 32-byte SHA256 digest in an NTPv4 packet (ntpsec's ntpdig
	// sends one) verifies against the whole digest of this packet, and
	// only that: the v3 packet's differs in its first byte.
	v3 := readHex(t, "ntp_reply_sha256_v3.hex")
	if err := VerifyNTPMAC(pkt, keyID, v3[NTPHeaderLen+4:], keys); !errors.Is(err, ErrNTPBadMAC) {
		t.Errorf("another packet's whole digest in v4: %v", err)
	}
	whole := AppendNTPMACWhole(bytes.Clone(pkt), keys[2])
	if len(whole) != NTPHeaderLen+4+32 {
		t.Fatalf("whole SHA256 MAC: %d bytes", len(whole))
	}
	if p, id, d, err := SplitNTPMAC(whole); err != nil || VerifyNTPMAC(p, id, d, keys) != nil || !bytes.Equal(d[:20], digest) {
		t.Errorf("whole digest in v4: split %v, verify %v; its first 20 bytes must be the truncated digest", err, VerifyNTPMAC(p, id, d, keys))
	}
	if err := VerifyNTPMAC(pkt, keyID, whole[NTPHeaderLen+4:NTPHeaderLen+4+24], keys); !errors.Is(err, ErrNTPBadMAC) {
		t.Errorf("a digest cut to neither length: %v", err)
	}
	// An SHA1 key's digest checked with the MD5 key of the same ID fails.
	wrong := []NTPKey{{ID: keyID, Type: "MD5", Secret: keys[2].Secret}}
	if err := VerifyNTPMAC(pkt, keyID, digest, wrong); !errors.Is(err, ErrNTPBadMAC) {
		t.Errorf("wrong type: %v", err)
	}
}

func TestAppendNTPMACAllTypes(t *testing.T) {
	req := readHex(t, "ntp_client_request.hex")
	for _, typ := range []string{"MD5", "SHA1", "SHA256", "SHA384", "SHA512", "sha256", ""} {
		for _, version := range []byte{3, 4} {
			pkt := bytes.Clone(req)
			pkt[0] = pkt[0]&^0x38 | version<<3
			k := NTPKey{ID: 77, Type: typ, Secret: []byte("0123456789abcdef")}
			signed := AppendNTPMAC(pkt, k)
			p, id, d, err := SplitNTPMAC(signed)
			if err != nil {
				t.Fatalf("%s v%d: %v", typ, version, err)
			}
			if id != 77 || (version == 4 && len(d) > 20) {
				t.Errorf("%s v%d: id %d digest %d", typ, version, id, len(d))
			}
			if err := VerifyNTPMAC(p, id, d, []NTPKey{k}); err != nil {
				t.Errorf("%s v%d: %v", typ, version, err)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for an unsupported type")
		}
	}()
	AppendNTPMAC(bytes.Clone(req), NTPKey{ID: 1, Type: "AES128", Secret: make([]byte, 16)})
}

func TestSplitNTPMAC(t *testing.T) {
	hdr := readHex(t, "ntp_server_reply.hex") // NTPv4
	v3 := bytes.Clone(hdr)
	v3[0] = 0x1c
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	keyID := []byte{0, 0, 0, 7}
	zeroID := []byte{0, 0, 0, 0}
	// ext is an RFC 7822 extension field of type typ, n bytes long.
	ext := func(typ uint16, n int) []byte {
		f := make([]byte, n)
		binary.BigEndian.PutUint16(f, typ)
		binary.BigEndian.PutUint16(f[2:], uint16(n))
		return f
	}
	cases := []struct {
		name      string
		in        []byte
		kind      DecodeErrorKind // 0: success
		keyID     uint32
		digestLen int
		nak       bool
	}{
		{"no MAC", hdr, 0, 0, 0, false},
		{"crypto-NAK", cat(hdr, zeroID), 0, 0, 0, true},
		{"MD5", cat(hdr, keyID, make([]byte, 16)), 0, 7, 16, false},
		{"SHA1", cat(hdr, keyID, make([]byte, 20)), 0, 7, 20, false},
		{"v3 SHA256", cat(v3, keyID, make([]byte, 32)), 0, 7, 32, false},
		{"v3 SHA512", cat(v3, keyID, make([]byte, 64)), 0, 7, 64, false},
		{"short", hdr[:47], DecodeTruncated, 0, 0, false},
		{"odd length", cat(hdr, []byte{1}), DecodeBadLength, 0, 0, false},
		{"key ID without digest", cat(hdr, keyID), DecodeBadLength, 0, 0, false},
		{"12-byte digest", cat(hdr, keyID, make([]byte, 12)), DecodeBadLength, 0, 0, false},
		// ntpsec's ntpdig: whole SHA-256 / SHA-512 digests in NTPv4.
		{"v4 whole 32-byte digest", cat(hdr, keyID, make([]byte, 32)), 0, 7, 32, false},
		{"v4 whole 64-byte digest", cat(hdr, keyID, make([]byte, 64)), 0, 7, 64, false},
		{"v4 extension field and MAC", cat(hdr, ext(0x0104, 28), keyID, make([]byte, 16)), DecodeUnsupported, 0, 0, false},
		{"v4 extension fields", cat(hdr, ext(0x0104, 36), ext(0x0204, 104)), DecodeUnsupported, 0, 0, false},
		{"v4 28 bytes of garbage", cat(hdr, make([]byte, 28)), DecodeBadLength, 0, 0, false},
		{"v4 short extension field", cat(hdr, ext(0x0104, 12), make([]byte, 16)), DecodeBadLength, 0, 0, false},
		{"v4 overlong extension field", cat(hdr, ext(0x0104, 100)[:28]), DecodeBadLength, 0, 0, false},
		{"v4 40-byte digest", cat(hdr, keyID, make([]byte, 40)), DecodeBadLength, 0, 0, false},
		{"v3 68-byte digest", cat(v3, keyID, make([]byte, 68)), DecodeBadLength, 0, 0, false},
	}
	for _, c := range cases {
		pkt, id, digest, err := SplitNTPMAC(c.in)
		if c.kind != 0 {
			if !errors.Is(err, c.kind) || !strings.HasPrefix(Reason(err), "ntp_") {
				t.Errorf("%s: %v (%s), want %v", c.name, err, Reason(err), c.kind)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if id != c.keyID || len(digest) != c.digestLen || IsCryptoNAK(c.in) != c.nak {
			t.Errorf("%s: id %d digest %d nak %v", c.name, id, len(digest), IsCryptoNAK(c.in))
		}
		if c.nak && digest == nil {
			t.Errorf("%s: nil digest for a crypto-NAK", c.name)
		}
		if c.name == "no MAC" && digest != nil {
			t.Errorf("%s: non-nil digest", c.name)
		}
		if len(pkt) != NTPHeaderLen {
			t.Errorf("%s: pkt %d bytes", c.name, len(pkt))
		}
	}
}

func TestParseChronyKeys(t *testing.T) {
	good := `
# comment
; comment
! comment
  % comment
1 MD5 HEX:00112233
2 SHA1 ASCII:pass#word
3 plainmd5key
4 sha256 HEX:aabb
5 SHA512 hex:notprefix
`
	keys, err := ParseChronyKeys([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []NTPKey{
		{1, "MD5", []byte{0, 0x11, 0x22, 0x33}},
		{2, "SHA1", []byte("pass#word")},
		{3, "MD5", []byte("plainmd5key")},
		{4, "SHA256", []byte{0xaa, 0xbb}},
		{5, "SHA512", []byte("hex:notprefix")}, // chrony's prefixes are upper case only
	}
	if len(keys) != len(want) {
		t.Fatalf("%+v", keys)
	}
	for i := range want {
		if keys[i].ID != want[i].ID || keys[i].Type != want[i].Type || !bytes.Equal(keys[i].Secret, want[i].Secret) {
			t.Errorf("%d: %+v, want %+v", i, keys[i], want[i])
		}
	}
	// Round trip through FormatChronyKeys.
	again, err := ParseChronyKeys(FormatChronyKeys(keys))
	if err != nil || len(again) != len(keys) {
		t.Fatalf("%v %v", again, err)
	}
	for i := range keys {
		if again[i].ID != keys[i].ID || again[i].Type != keys[i].Type || !bytes.Equal(again[i].Secret, keys[i].Secret) {
			t.Errorf("round trip %d: %+v", i, again[i])
		}
	}

	for _, c := range []struct {
		in   string
		want error
		line int
	}{
		{"1 MD5 a b", ErrKeySyntax, 1},
		{"1", ErrKeySyntax, 1},
		{"\n\nx MD5 abc", ErrKeyID, 3},
		{"0 MD5 abc", ErrKeyID, 1},
		{"4294967296 MD5 abc", ErrKeyID, 1},
		{"1 MD5 a\n1 SHA1 b", ErrKeyDuplicate, 2},
		{"1 AES128 HEX:00112233445566778899aabbccddeeff", ErrKeyType, 1},
		{"1 SHA3-256 abc", ErrKeyType, 1},
		{"1 CRC32 abc", ErrKeyType, 1},
		{"1 MD5 HEX:abc", ErrKeyEncoding, 1},
		{"1 MD5 HEX:zz", ErrKeyEncoding, 1},
		{"1 MD5 HEX:", ErrKeyEncoding, 1},
		{"1 MD5 ASCII:", ErrKeyEncoding, 1},
	} {
		_, err := ParseChronyKeys([]byte(c.in))
		var kf *KeyFileError
		if !errors.Is(err, c.want) || !errors.As(err, &kf) || kf.Line != c.line || kf.Format != "chrony" {
			t.Errorf("%q: %v, want %v at line %d", c.in, err, c.want, c.line)
		}
	}
}

func TestNTPKeyEdgeCases(t *testing.T) {
	pkt := readHex(t, "ntp_server_reply.hex")
	// A hand-built key with a type this package lacks is an unknown key, not
	// a panic, on the receive path.
	err := VerifyNTPMAC(pkt, 5, make([]byte, 16), []NTPKey{{ID: 5, Type: "AES128", Secret: make([]byte, 16)}})
	if !errors.Is(err, ErrNTPUnknownKey) {
		t.Errorf("unsupported type: %v", err)
	}
	// An empty type means MD5, as in chrony, in both directions.
	k := NTPKey{ID: 5, Secret: []byte("secret")}
	keys, err := ParseChronyKeys(FormatChronyKeys([]NTPKey{k}))
	if err != nil || len(keys) != 1 || keys[0].Type != "MD5" {
		t.Fatalf("%+v %v", keys, err)
	}
	p, id, d, err := SplitNTPMAC(AppendNTPMAC(bytes.Clone(pkt), k))
	if err != nil || len(d) != 16 {
		t.Fatalf("%d %v", len(d), err)
	}
	if err := VerifyNTPMAC(p, id, d, keys); err != nil {
		t.Fatal(err)
	}
}
