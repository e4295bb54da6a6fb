package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseKeyFileGolden(t *testing.T) {
	keys := goldenKeys(t)
	if len(keys) != 2 {
		t.Fatalf("%d keys", len(keys))
	}
	if keys[0].ID != 1 || !bytes.Equal(keys[0].Secret, []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f")) {
		t.Errorf("key 1: %+v", keys[0])
	}
	if keys[1].ID != 2 || !bytes.Equal(keys[1].Secret, []byte("@ABCDEFGHIJKLMNO")) {
		t.Errorf("key 2 (upper-case hex, no prefix): %+v", keys[1])
	}
}

func TestParseKeyFile(t *testing.T) {
	const k16 = "00112233445566778899aabbccddeeff"
	keys, err := ParseKeyFile([]byte("\n  # only comments\n\t\n7\tHEX:" + k16 + "\t# trailing\r\n3 " + k16 + k16))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != 7 || len(keys[0].Secret) != 16 || keys[1].ID != 3 || len(keys[1].Secret) != 32 {
		t.Fatalf("%+v", keys)
	}
	if keys, err := ParseKeyFile(nil); err != nil || len(keys) != 0 {
		t.Fatalf("empty: %v %v", keys, err)
	}
	for _, c := range []struct {
		in   string
		want error
		line int
	}{
		{"1", ErrKeySyntax, 1},
		{"1 " + k16 + " extra", ErrKeySyntax, 1},
		{"# c\none " + k16, ErrKeyID, 2},
		{"-1 " + k16, ErrKeyID, 1},
		{"0 " + k16, ErrKeyID, 1},
		{"4294967296 " + k16, ErrKeyID, 1},
		{"1 " + k16 + "\n1 " + k16, ErrKeyDuplicate, 2},
		{"1 " + k16[:30], ErrKeyShort, 1},
		{"1 hex:", ErrKeyEncoding, 1},
		{"1 " + k16 + "0", ErrKeyEncoding, 1},
		{"1 " + strings.Replace(k16, "a", "g", 1), ErrKeyEncoding, 1},
		{"1 " + strings.Repeat("00", 1025), ErrKeyEncoding, 1},
	} {
		_, err := ParseKeyFile([]byte(c.in))
		var kf *KeyFileError
		if !errors.Is(err, c.want) || !errors.As(err, &kf) || kf.Line != c.line || kf.Format != "synclab" {
			t.Errorf("%q: %v, want %v at line %d", c.in, err, c.want, c.line)
			continue
		}
		if Reason(err) != "bad_key_file" {
			t.Errorf("%q: Reason %q", c.in, Reason(err))
		}
	}
	// Errors never quote the secret.
	secret := "deadbeefdeadbeefdeadbeefdeadbeefzz"
	for _, in := range []string{"1 " + secret, secret + " 1"} {
		_, err := ParseKeyFile([]byte(in))
		if err == nil || strings.Contains(err.Error(), "deadbeef") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestFormatKeyFile(t *testing.T) {
	keys := goldenKeys(t)
	again, err := ParseKeyFile(FormatKeyFile(keys))
	if err != nil || len(again) != len(keys) {
		t.Fatalf("%v %v", again, err)
	}
	for i := range keys {
		if again[i].ID != keys[i].ID || !bytes.Equal(again[i].Secret, keys[i].Secret) {
			t.Errorf("%d: %+v", i, again[i])
		}
	}
}
