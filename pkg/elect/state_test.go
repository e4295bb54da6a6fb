package elect

import (
	"errors"
	"strings"
	"testing"

	"github.com/synclab/synclab/pkg/core"
)

// TestWord: what EncodeWord writes decodes back; empty state is 0; a
// truncated, bit-rotted or another algorithm's file is refused as
// core.ErrState, naming what is wrong.
func TestWord(t *testing.T) {
	for _, v := range []uint64{0, 1, 1<<32 | 7, 1<<64 - 1} {
		got, err := DecodeWord("x", 'M', EncodeWord('M', v))
		if err != nil || got != v {
			t.Errorf("%d: %d, %v", v, got, err)
		}
	}
	if v, err := DecodeWord("x", 'M', nil); v != 0 || err != nil {
		t.Errorf("empty: %d, %v", v, err)
	}
	good := EncodeWord('M', 42)
	flip := append([]byte(nil), good...)
	flip[4] ^= 1
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"short":   {good[:12], "length 12, want 13"},
		"long":    {append(append([]byte(nil), good...), 0), "length 14"},
		"version": {EncodeWord('O', 42), "version 79, want 77"},
		"bully's": {append([]byte{1}, good[1:]...), "version 1"},
		"rot":     {flip, "checksum"},
	} {
		_, err := DecodeWord("majority", 'M', tc.b)
		if !errors.Is(err, core.ErrState) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "majority: ") {
			t.Errorf("%s: %v, want core.ErrState saying %q", name, err, tc.want)
		}
	}
}
