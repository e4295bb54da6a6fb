package core_test

import (
	"testing"

	"github.com/synclab/synclab/pkg/core"
)

func TestDurable(t *testing.T) {
	var d core.Durable
	state := []byte{1}
	enc := func() []byte { return append([]byte(nil), state...) }
	ready := func() core.Ready {
		var rd core.Ready
		d.Ready(&rd, enc)
		return rd
	}
	if rd := ready(); rd.State != nil || d.Pending() {
		t.Fatalf("zero Durable handed %v", rd.State)
	}
	d.Change(true)
	rd := ready()
	if rd.State == nil || !rd.Promise {
		t.Fatalf("a promise: Ready %+v", rd)
	}
	d.Advance(false) // the write failed
	state = []byte{2}
	rd = ready()
	if string(rd.State) != "\x02" || !rd.Promise {
		t.Fatalf("after a failed write the next Ready must carry the newest state as a promise: %+v", rd)
	}
	d.Advance(true)
	if d.Pending() {
		t.Fatal("still pending after a confirmed write")
	}
	if rd := ready(); rd.State != nil {
		t.Fatalf("a saved state handed again: %+v", rd)
	}
	// A hint is handed without Promise, and a later promise upgrades it.
	d.Change(false)
	if rd := ready(); rd.State == nil || rd.Promise {
		t.Fatalf("a hint: %+v", rd)
	}
	d.Change(true) // changed between Ready and Advance
	d.Advance(true)
	if !d.PromisePending() {
		t.Fatal("a change made after the Ready was taken for saved")
	}
	if rd := ready(); !rd.Promise {
		t.Fatalf("the promise: %+v", rd)
	}
	// Advance without a Ready that carried state confirms nothing.
	d.Advance(true)
	d.Change(true)
	d.Advance(true)
	if !d.Pending() {
		t.Fatal("Advance without a handed state confirmed a change")
	}
}

// A core that appends hands a record per change, the whole state when it
// asks for it, and after any failed write until a whole state is saved:
// a record builds on the write before it, which may be lost or torn.
func TestDurableReadyLog(t *testing.T) {
	var d core.Durable
	records := 0
	ready := func(whole bool) core.Ready {
		var rd core.Ready
		d.ReadyLog(&rd, whole, func() []byte { return []byte("whole") }, func() []byte { records++; return []byte("rec") })
		return rd
	}
	if rd := ready(false); !rd.Empty() {
		t.Fatalf("nothing changed: %+v", rd)
	}
	d.Change(true)
	if rd := ready(true); string(rd.State) != "whole" || rd.Entries != nil || !rd.Promise {
		t.Fatalf("a snapshot asked for: %+v", rd)
	}
	d.Advance(true)
	d.Change(false)
	if rd := ready(false); rd.State != nil || len(rd.Entries) != 1 || rd.Promise {
		t.Fatalf("a record: %+v", rd)
	}
	d.Advance(false) // the append failed
	if rd := ready(false); string(rd.State) != "whole" {
		t.Fatalf("after a failed append the next write must be whole: %+v", rd)
	}
	d.Advance(false) // and that failed too
	if rd := ready(false); string(rd.State) != "whole" {
		t.Fatalf("after a failed snapshot the next write must be whole: %+v", rd)
	}
	d.Advance(true)
	if rd := ready(false); !rd.Empty() {
		t.Fatalf("saved: %+v", rd)
	}
	d.Change(true)
	if rd := ready(false); len(rd.Entries) != 1 || !rd.Promise || records != 2 {
		t.Fatalf("records resume after a saved snapshot: %+v (%d records)", rd, records)
	}
}
