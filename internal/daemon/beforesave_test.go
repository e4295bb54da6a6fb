package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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
