package daemon

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
)

// TestSlowWriteElectionsNamed: a new term in the core's events within
// SlowTermWindow of a slow write is a WARN that ties the leader change to
// the disk (the term, the write's file and time), counted in status with
// the last one; the first term the process sees (a start's election), an
// old term again, and a new term long after the slow write are not.
// The times are set by hand: no wall clock is raced.
func TestSlowWriteElectionsNamed(t *testing.T) {
	var buf bytes.Buffer
	dir := t.TempDir()
	d := &Daemon{alerts: newAlerts(slog.New(slog.NewTextHandler(&buf, nil))), state: &stateDir{path: dir}}
	sequencer := func(round uint32) core.Event {
		return core.Event{Name: "sequencer", Args: []any{"term", epoch.Make(round, 3), "last", uint64(7)}}
	}
	slow := writeTimes{wrote: 40 * time.Microsecond, synced: 1500 * time.Millisecond}
	d.persisted(CoreLogFile, 2, true, slow, 1501*time.Millisecond)
	at := d.persist.LastSlow.At
	buf.Reset() // the slow_persist line itself: TestSlowPersistWarns

	d.noteTerm(sequencer(1), at.Add(time.Second)) // the start's election
	d.noteTerm(sequencer(2), at.Add(SlowTermWindow+time.Millisecond))
	if buf.Len() > 0 || d.persist.SlowTerms != 0 {
		t.Fatalf("the first term, or a term long after the slow write, was blamed on the disk (%d):\n%s", d.persist.SlowTerms, buf.String())
	}

	d.persisted(CoreLogFile, 1, true, slow, 1501*time.Millisecond)
	at = d.persist.LastSlow.At
	d.noteTerm(sequencer(2), at.Add(time.Second)) // not new
	d.noteTerm(core.Event{Name: "delivered", Args: []any{"index", uint64(9)}}, at.Add(time.Second))
	if buf.Len() > 0 || d.persist.SlowTerms != 0 {
		t.Fatalf("no new term, yet (%d):\n%s", d.persist.SlowTerms, buf.String())
	}
	d.noteTerm(sequencer(3), at.Add(1200*time.Millisecond))
	out := buf.String()
	for _, want := range []string{"level=WARN", "condition=slow_persist_elections", `term="3 by 3"`, "1200 ms after a write of " + filepath.Join(dir, CoreLogFile),
		"took 1501 ms", "heartbeats", "caused by the disk", "--state-dir"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning lacks %q:\n%s", want, out)
		}
	}
	p := d.persist
	if p.SlowTerms != 1 || p.LastSlowTerm == nil || p.LastSlowTerm.Term != epoch.Make(3, 3) || p.LastSlowTerm.Event != "sequencer" ||
		p.LastSlowTerm.WriteMs != 1501 || p.LastSlowTerm.AfterMs != 1200 {
		t.Fatalf("status: %d, %+v", p.SlowTerms, p.LastSlowTerm)
	}
	// An election core's events count alike, each new term once.
	d.noteTerm(core.Event{Name: "election_started", Args: []any{"term", epoch.Make(4, 1), "reason", "leader_lost"}}, at.Add(2*time.Second))
	d.noteTerm(core.Event{Name: "leader_changed", Args: []any{"leader", uint32(1), "term", epoch.Make(4, 1)}}, at.Add(3*time.Second))
	if d.persist.SlowTerms != 2 || d.persist.LastSlowTerm.Event != "election_started" {
		t.Fatalf("an election's terms: %d, %+v", d.persist.SlowTerms, d.persist.LastSlowTerm)
	}
}

// TestEmitFollowsTerms: every event the daemon reports goes past
// noteTerm (its time is the report's: the test checks only that the term
// was seen).
func TestEmitFollowsTerms(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	d := &Daemon{log: log, events: map[string]uint64{}, alerts: newAlerts(log)}
	d.emit(core.Event{Name: "sequencer", Args: []any{"term", epoch.Make(5, 3)}})
	if d.highestTerm != epoch.Make(5, 3) {
		t.Fatalf("after an event of term 5 by 3 the daemon knows term %s", epoch.Format(d.highestTerm))
	}
}
