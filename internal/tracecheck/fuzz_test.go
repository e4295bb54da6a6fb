package tracecheck

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
)

// FuzzCheck feeds arbitrary bytes as a third host's trace beside two
// hand-written ones (a mutexd overlap): a check must refuse the files or
// give every verdict, print it and draw its violations, never panic.
func FuzzCheck(f *testing.F) {
	h1 := mutexd(1, trace.ClockTrue).grant(0, 1, "x", 1, "exclusive").release(200, 1, "x", 1).text()
	h2 := mutexd(2, trace.ClockTrue).grant(100, 1, "x", 2, "exclusive").release(300, 1, "x", 2).text()
	f.Add([]byte(h1))
	f.Add([]byte(strings.Replace(h2, `"id":2`, `"id":3`, 1)))
	f.Add([]byte(orderd(3).deliver(1, "total", 2, 2, 7).deliver(2, "causal", 1, 1, 0).text()))
	f.Add([]byte(electd(3, trace.ClockSystem).local(0, "elected", `"leader":3,"term":5`).local(9, "demoted", `"leader":3`).text()))
	f.Add([]byte(`{"synclab_trace":1,"daemon":"timed","id":3,"clock":"sim"}` + "\n" + `{"t":"2026-03-01T10:00:00Z","max_error_ns":-5,"true_offset_ns":-9223372036854775808,"ev":"local"}`))
	f.Add([]byte(`{"synclab_trace":1,"daemon":"mutexd","id":3,"clock":"system"}` + "\n" + `{"t":"0001-01-01T00:00:00Z","ev":"local","name":"lock_granted","args":{"request":-1,"fence":1e300,"expires":"9999-12-31T23:59:59Z","lease":"-5s"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var files []*trace.File
		for i, text := range []string{h1, h2} {
			tf, err := trace.Read(strings.NewReader(text), []string{"h1.trace", "h2.trace"}[i])
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, tf)
		}
		tf, err := trace.Read(bytes.NewReader(data), "fuzz.trace")
		if err != nil {
			return
		}
		for _, bound := range []time.Duration{-1, 0, time.Millisecond} {
			rep, err := Check(append(files, tf), Options{ClockBound: bound})
			if err != nil {
				return
			}
			if err := rep.WriteText(io.Discard); err != nil {
				t.Fatal(err)
			}
			if err := rep.WriteJSON(io.Discard); err != nil {
				t.Fatal(err)
			}
			for _, res := range rep.Violations() {
				if len(res.Events) == 0 {
					t.Fatalf("%s violated without a counterexample", res.Property)
				}
				if err := rep.Draw(io.Discard, res); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
