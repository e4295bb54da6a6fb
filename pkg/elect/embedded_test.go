package elect

import (
	"bytes"
	"testing"

	"github.com/synclab/synclab/pkg/core"
)

// fakeElector hands out prepared Readies and records what it was told.
type fakeElector struct {
	Elector  // only the methods below are called
	ready    core.Ready
	changes  []Change
	advanced []bool
}

func (f *fakeElector) Ready() core.Ready {
	rd := f.ready
	f.ready = core.Ready{}
	return rd
}

func (f *fakeElector) Changes() []Change {
	c := f.changes
	f.changes = nil
	return c
}

func (f *fakeElector) Advance(saved bool) { f.advanced = append(f.advanced, saved) }

// TestEmbeddedDrain: a new state is kept in State and reported with its
// promise, and never left in the Ready; the changes are drained; messages
// and events pass through; Advance reaches an elector that takes it.
func TestEmbeddedDrain(t *testing.T) {
	f := &fakeElector{}
	e := Embedded{Elector: f, State: []byte("restored")}

	f.ready = core.Ready{Messages: []core.Message{{To: 2}}, Events: []core.Event{{Name: EventElected}}}
	f.changes = []Change{{}}
	rd, changed, promise := e.Drain()
	if changed || promise || !bytes.Equal(e.State, []byte("restored")) {
		t.Errorf("no new state: changed %v, promise %v, State %q", changed, promise, e.State)
	}
	if len(rd.Messages) != 1 || len(rd.Events) != 1 || rd.State != nil || f.changes != nil {
		t.Errorf("Ready %+v, changes left %v", rd, f.changes)
	}

	f.ready = core.Ready{State: []byte("term 7"), Promise: true}
	rd, changed, promise = e.Drain()
	if !changed || !promise || !bytes.Equal(e.State, []byte("term 7")) || rd.State != nil || rd.Promise {
		t.Errorf("new state: changed %v, promise %v, State %q, Ready %+v", changed, promise, e.State, rd)
	}
	f.ready = core.Ready{State: []byte("term 8")}
	if _, changed, promise = e.Drain(); !changed || promise {
		t.Errorf("state without promise: changed %v, promise %v", changed, promise)
	}

	e.Advance(false)
	e.Advance(true)
	if len(f.advanced) != 2 || f.advanced[0] || !f.advanced[1] {
		t.Errorf("advanced %v, want [false true]", f.advanced)
	}
	// An elector without Advance is not told.
	(&Embedded{Elector: struct{ Elector }{}}).Advance(true)
}
