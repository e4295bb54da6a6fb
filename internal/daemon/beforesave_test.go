package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// appender is a core that, on its first tick, appends one record to its
// log and reports four events: two that do not depend on the write
// (BeforeSave), one that does, and one more marked BeforeSave after it.
type appender struct {
	core.Durable
	ticked bool
	events []core.Event
}

func (a *appender) Step(core.Message) error          { return nil }
func (a *appender) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (a *appender) Status() any                      { return nil }
func (a *appender) Tick(time.Time) {
	if a.ticked {
		return
	}
	a.ticked = true
	a.Change(false)
	a.events = []core.Event{{Name: "early1", BeforeSave: true}, {Name: "early2", BeforeSave: true},
		{Name: "late"}, {Name: "after_late", BeforeSave: true}}
}
func (a *appender) Ready() core.Ready {
	rd := core.Ready{Events: a.events}
	a.events = nil
	a.Durable.ReadyLog(&rd, false, func() []byte { return []byte("whole-state") }, func() []byte { return []byte("record-one") })
	return rd
}

// A Ready's leading events marked BeforeSave are reported before its
// write, the others after it, in order: an event marked BeforeSave after
// one that is not waits for the write too, so that watchers see the
// events in the order the core made them.
func TestEventsBeforeSaveReportedBeforeTheWrite(t *testing.T) {
	net := transport.NewMemNetwork()
	dir := shortDir(t)
	cfg := testConfig(t, net, dir, 1, 1)
	type seen struct {
		name    string
		written bool
	}
	var got []seen
	logFile := filepath.Join(cfg.StateDir, CoreLogFile)
	cfg.OnEvent = func(e core.Event) { // on the loop
		b, _ := os.ReadFile(logFile)
		got = append(got, seen{e.Name, bytes.Contains(b, []byte("record-one"))})
	}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return &appender{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	var n int
	eventually(t, "the four events", func() bool {
		d.Do(context.Background(), func(*node.Node) { n = len(got) })
		return n == 4
	})
	var all []seen
	d.Do(context.Background(), func(*node.Node) { all = slices.Clone(got) })
	want := []seen{{"early1", false}, {"early2", false}, {"late", true}, {"after_late", true}}
	if !slices.Equal(all, want) {
		t.Fatalf("events (name, record already written): %v, want %v", all, want)
	}
}

// An appending core's events whose write failed wait, in order, for the
// next write that succeeds (a crash meanwhile loses them with the write,
// and the restarted core does it again); a Ready without a write does
// not overtake them; other cores' events are reported as before.
func TestEventsOfAFailedWriteWaitForTheNextWrite(t *testing.T) {
	ev := func(names ...string) []core.Event {
		var out []core.Event
		for _, n := range names {
			out = append(out, core.Event{Name: n})
		}
		return out
	}
	names := func(es []core.Event) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	d := &Daemon{errs: map[string]uint64{}}
	if got := names(d.afterWrite(ev("a"), false, true)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("a core that does not append: %v, want its events at once", got)
	}
	d.appends = true
	steps := []struct {
		events       []string
		saved, wrote bool
		want         []string
	}{
		{[]string{"1"}, true, true, []string{"1"}},
		{[]string{"2", "3"}, false, true, nil},
		{[]string{"4"}, true, false, nil}, // no write: behind the held ones
		{[]string{"5"}, false, true, nil},
		{[]string{"6"}, true, true, []string{"2", "3", "4", "5", "6"}},
		{[]string{"7"}, true, false, []string{"7"}},
	}
	for i, s := range steps {
		if got := names(d.afterWrite(ev(s.events...), s.saved, s.wrote)); !slices.Equal(got, append([]string{}, s.want...)) {
			t.Fatalf("step %d: reported %v, want %v", i, got, s.want)
		}
	}
	for range maxUnsaved + 3 {
		d.afterWrite(ev("x"), false, true)
	}
	if len(d.unsaved) != maxUnsaved || d.errs["events_reported_unsaved"] != 3 {
		t.Fatalf("%d held, %d reported unsaved: want %d and 3", len(d.unsaved), d.errs["events_reported_unsaved"], maxUnsaved)
	}
}

// everTicking is an appender that appends a record on every tick.
type everTicking struct{ appender }

func (a *everTicking) Tick(time.Time) { a.Change(false) }

// A running trace records each append to the core's log after it ended
// (TraceLogWrite: the records, the write(2) and the fdatasync), so that a
// message's path through a member splits into its wake-up and core, its
// write, and what follows (the order bench's path section).
func TestTraceRecordsTheLogsWrites(t *testing.T) {
	net := transport.NewMemNetwork()
	dir := shortDir(t)
	cfg := testConfig(t, net, dir, 1, 1)
	cfg.TraceFile = filepath.Join(dir, "h1.trace")
	d, err := New(cfg, func(core.Env) (core.Core, error) { return &everTicking{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	var writes []trace.Event
	eventually(t, "log writes in the trace", func() bool {
		d.Do(context.Background(), func(*node.Node) { d.tr.log.Flush() })
		f, err := trace.ReadFile(cfg.TraceFile)
		if err != nil {
			return false
		}
		writes = writes[:0]
		for _, e := range f.Events {
			if e.Ev == trace.EvLocal && e.Name == TraceLogWrite {
				writes = append(writes, e)
			}
		}
		return len(writes) >= 3
	})
	for _, e := range writes {
		if num := func(k string) float64 { f, _ := e.Args[k].(json.Number).Float64(); return f }; num("records") != 1 || num("sync_us") < 0 || num("write_us") < 0 || e.Args["sync_us"] == nil {
			t.Fatalf("log write event %+v", e.Args)
		}
	}
}
