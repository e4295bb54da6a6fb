package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
)

// SlowTermWindow is how soon after a slow write of the core's state (over
// SlowPersist) a new term seen in the core's events is tied to it. While
// the loop writes it sends nothing, the leader's heartbeats included: a
// write longer than the members' leader timeout has them elect again, and
// each election waits for more writes, one after another (a vote, a term),
// so the new term shows up here a few writes after the one that stopped
// the heartbeats. 5 s covers the elections measured with every write
// delayed 1 s (a first sequencer 18 s after the start, 4 terms in 30 s)
// and is short enough that a slow write and a leader change of a quiet
// cluster an hour apart are not blamed on each other.
const SlowTermWindow = 5 * time.Second

// SlowTerm is a term this member first saw in its core's events within
// SlowTermWindow of a slow write of its state: the leader changes are
// likely the disk's doing.
type SlowTerm struct {
	At      time.Time `json:"at"`
	Event   string    `json:"event"` // the core's event that carried the term
	Term    uint64    `json:"term"`
	WriteMs int64     `json:"write_ms"` // the slow write's total time
	AfterMs int64     `json:"after_ms"` // from the end of that write to the event
}

// noteTerm follows the terms the core's events carry ("term": every
// election core's, orderd's sequencer's), and says at WARN when a new one
// comes within SlowTermWindow of a slow write: the slow_persist line
// names the write, this one ties the elections to it. The first term
// this process sees is not a change (a start's election).
func (d *Daemon) noteTerm(e core.Event, now time.Time) {
	var term uint64
	found := false
	for i := 0; i+1 < len(e.Args); i += 2 {
		if t, ok := termArg(e.Args[i], e.Args[i+1]); ok {
			term, found = t, true
			break
		}
	}
	if !found || term <= d.highestTerm {
		return
	}
	first := d.highestTerm == 0
	d.highestTerm = term
	w := d.persist.LastSlow
	if first || w == nil || now.Before(w.At) || now.Sub(w.At) > SlowTermWindow {
		return
	}
	p := &d.persist
	st := &SlowTerm{At: now, Event: e.Name, Term: term, WriteMs: w.TotalUs / 1000, AfterMs: now.Sub(w.At).Milliseconds()}
	p.SlowTerms++
	p.LastSlowTerm = st
	d.alerts.report(now, slog.LevelWarn, "slow_persist_elections", 0, 0,
		fmt.Sprintf("term %s (%s) began %d ms after a write of %s that took %d ms: while a member writes its state its loop sends nothing, heartbeats included; "+
			"a write longer than the leader timeout makes the others elect again, and each election waits for more writes: these leader changes are likely caused by the disk",
			epoch.Format(term), e.Name, st.AfterMs, d.state.file(w.File), st.WriteMs),
		"term", epoch.Term(term), "event", e.Name, "write_ms", st.WriteMs, "after_ms", st.AfterMs, "terms_after_slow_writes", p.SlowTerms,
		"hint", "put --state-dir on a faster or less busy disk on every member whose status shows slow writes (status: Persist); the elections stop when writes take less than the leader timeout")
}
