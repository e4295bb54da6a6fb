package wire

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readHex reads an annotated hex vector from testdata: hex digits, white
// space ignored, '#' starts a comment.
func readHex(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return b
}

func readFile(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// goldenKeys are the synclab keys of testdata/keys.txt.
func goldenKeys(tb testing.TB) []Key {
	tb.Helper()
	keys, err := ParseKeyFile(readFile(tb, "keys.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	return keys
}
