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
// SlowTermWindow of a slow write of its state, one that ended before the
// term's Ready and lasted at least the leader timeout: the leader changes
// are likely the disk's doing.
type SlowTerm struct {
	At      time.Time `json:"at"`
	Event   string    `json:"event"` // the core's event that carried the term
	Term    uint64    `json:"term"`
	WriteMs int64     `json:"write_ms"` // the slow write's total time
	AfterMs int64     `json:"after_ms"` // from the end of that write to the event
}

// SlowTermShown is how long status keeps showing the last leader change
// tied to a slow write (PersistStatus.LastSlowTerm; the count stays): an
// administrator who moved --state-dir to a faster disk sees the row go
// within the hour instead of for the life of the process.
const SlowTermShown = time.Hour

// slowTermWrite is the shortest write a leader change is blamed on: the
// members' leader timeout when the daemon knows it (electd, orderd,
// timed's Berkeley mode give it to configuration agreement), since only a
// write that kept the heartbeats in for that long makes the others elect;
// SlowPersist when it does not (mutexd's algorithms name their own
// timeouts).
func (d *Daemon) slowTermWrite() (time.Duration, bool) {
	if a := d.cfg.Agreement; a != nil && a.LeaderTimeout > 0 {
		return a.LeaderTimeout, true
	}
	return SlowPersist, false
}

// noteTerm follows the terms the core's events carry ("term": every
// election core's, orderd's sequencer's), and says at WARN when a new one
// comes within SlowTermWindow of a slow write: the slow_persist line
// names the write, this one ties the elections to it. The first term
// this process sees is not a change (a start's election). The write is
// one that ended before the Ready that brought the term (slowBefore,
// set by process): a Ready's events are reported after its own write,
// and the write that records a term cannot have caused it. Only a write
// at least slowTermWrite long counts: a shorter one sent the heartbeats
// late, not late enough for an election.
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
	w := d.slowBefore
	if first || w == nil || now.Before(w.At) || now.Sub(w.At) > SlowTermWindow {
		return
	}
	least, known := d.slowTermWrite()
	if time.Duration(w.TotalUs)*time.Microsecond < least {
		return
	}
	timeout := fmt.Sprintf("the leader timeout (%v)", least)
	if !known {
		timeout = fmt.Sprintf("the algorithm's leader timeout (not known to the daemon: writes over %v are counted)", least)
	}
	p := &d.persist
	st := &SlowTerm{At: now, Event: e.Name, Term: term, WriteMs: w.TotalUs / 1000, AfterMs: now.Sub(w.At).Milliseconds()}
	p.SlowTerms++
	p.LastSlowTerm = st
	d.alerts.report(now, slog.LevelWarn, "slow_persist_elections", 0, 0,
		fmt.Sprintf("term %s (%s) began %d ms after a write of %s that took %d ms: while a member writes its state its loop sends nothing, heartbeats included; "+
			"a write longer than %s makes the others elect again, and each election waits for more writes: these leader changes are likely caused by the disk",
			epoch.Format(term), e.Name, st.AfterMs, d.state.file(w.File), st.WriteMs, timeout),
		"term", epoch.Term(term), "event", e.Name, "write_ms", st.WriteMs, "after_ms", st.AfterMs, "terms_after_slow_writes", p.SlowTerms,
		"hint", "put --state-dir on a faster or less busy disk on every member whose status shows slow writes (status: Persist); the elections stop when writes take less than the leader timeout and, where votes wait for the voters' writes (electd's majority election), less than the answer timeout: raise --answer-timeout above the write time if the disk cannot be faster")
}

// persistStatus is status's copy of the writes' counts: the last leader
// change tied to a slow write is left out once it is SlowTermShown old.
func (d *Daemon) persistStatus(now time.Time) PersistStatus {
	p := d.persist
	if t := p.LastSlowTerm; t != nil && now.Sub(t.At) > SlowTermShown {
		p.LastSlowTerm = nil
	}
	return p
}

// wallNow is the time of the loop's write bookkeeping (a write's length,
// when it ended, when an event came): time.Now, or a test's clock.
func (d *Daemon) wallNow() time.Time {
	if d.wall != nil {
		return d.wall()
	}
	return time.Now()
}
