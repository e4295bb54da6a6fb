package corefuzz

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/wire"
)

// TestEveryKindGenerates: every registered kind has a codec, a generic
// generator and trace fields, all derived from its one line in wire's
// registry: its smallest payload encodes and decodes; random programs give
// payloads that all decode and re-encode byte for byte, and that differ
// from the smallest one (the generator reaches the fields); and the trace
// decoder shows each one's fields, never "undecoded".
func TestEveryKindGenerates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, info := range wire.Registered() {
		start, err := Base(info.New())
		if err != nil {
			t.Errorf("%s: the generic generator's start does not encode: %v", info.Name, err)
			continue
		}
		if err := info.New().UnmarshalBinary(start); err != nil {
			t.Errorf("%s: the start encodes but does not decode: %v", info.Name, err)
		}
		// A payload without fields (Cristian's request) has one value.
		fields := len(leavesOf(reflect.ValueOf(info.New()).Elem(), nil))
		varied := 0
		for range 200 {
			in := make([]byte, 64)
			for i := range in {
				in[i] = byte(r.Uint32())
			}
			b := NewProgram(in).Payload(info.Kind)
			out := info.New()
			if err := out.UnmarshalBinary(b); err != nil {
				t.Fatalf("%s: generated % x does not decode: %v", info.Name, b, err)
			}
			if again, _ := out.AppendBinary(nil); !bytes.Equal(again, b) {
				t.Fatalf("%s: round trip % x -> % x", info.Name, b, again)
			}
			if !bytes.Equal(b, start) {
				varied++
			}
			f := trace.Fields(info.Kind, b)
			if _, bad := f["undecoded"]; bad || (len(f) == 0) != (fields == 0) {
				t.Fatalf("%s: trace fields of % x: %v", info.Name, b, f)
			}
		}
		if fields > 0 && varied < 20 {
			t.Errorf("%s: %d of 200 programs changed the payload: the generator does not reach its fields", info.Name, varied)
		}
	}
}
