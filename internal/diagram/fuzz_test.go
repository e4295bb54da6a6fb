package diagram

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
)

// flip is the relation seen from the other event.
var flip = map[clock.Ordering]clock.Ordering{clock.Before: clock.After, clock.After: clock.Before, clock.Equal: clock.Equal, clock.Concurrent: clock.Concurrent}

// FuzzDraw feeds arbitrary bytes as a host's trace, next to the notes'
// traces: reading, laying out and writing the three formats must refuse or
// draw, never panic or hang.
func FuzzDraw(f *testing.F) {
	paths, _ := filepath.Glob("testdata/p*.trace")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"synclab_trace":1,"id":4}` + "\n" + `{"ev":"recv","frame":"1:1","vc":{"4294967295":18446744073709551615}}` + "\n" + `{"ev":"send","frame":"4:1","to":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var files []*trace.File
		for _, p := range paths {
			tf, err := trace.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, tf)
		}
		tf, err := trace.Read(bytes.NewReader(data), "fuzz.trace")
		if err != nil {
			return
		}
		d, err := Build(append(files, tf))
		if err != nil {
			return
		}
		for a := range d.Events {
			for b := range d.Events {
				if r, back := d.Relation(a, b), d.Relation(b, a); flip[r] != back {
					t.Fatalf("relation of %d and %d is not symmetric", a, b)
				}
			}
		}
		if err := d.WriteSVG(io.Discard, Options{Vector: true}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteHTML(io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteShiViz(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
