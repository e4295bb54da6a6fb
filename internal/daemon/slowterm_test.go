package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
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
	d.slowBefore = d.persist.LastSlow // the next Ready's terms (process)
	at := d.persist.LastSlow.At
	buf.Reset() // the slow_persist line itself: TestSlowPersistWarns

	d.noteTerm(sequencer(1), at.Add(time.Second)) // the start's election
	d.noteTerm(sequencer(2), at.Add(SlowTermWindow+time.Millisecond))
	if buf.Len() > 0 || d.persist.SlowTerms != 0 {
		t.Fatalf("the first term, or a term long after the slow write, was blamed on the disk (%d):\n%s", d.persist.SlowTerms, buf.String())
	}

	d.persisted(CoreLogFile, 1, true, slow, 1501*time.Millisecond)
	d.slowBefore = d.persist.LastSlow
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

// TestSlowTermNeedsALongEnoughWrite: a write shorter than the members'
// leader timeout (known from configuration agreement) kept the
// heartbeats in, but not long enough for an election: the term after it
// is not blamed on the disk; a write as long as the timeout is. Status
// shows the last such term for SlowTermShown, then only the count.
func TestSlowTermNeedsALongEnoughWrite(t *testing.T) {
	var buf bytes.Buffer
	d := &Daemon{alerts: newAlerts(slog.New(slog.NewTextHandler(&buf, nil))), state: &stateDir{path: t.TempDir()},
		cfg: Config{Agreement: &node.Agreement{LeaderTimeout: 400 * time.Millisecond}}}
	leader := func(round uint32) core.Event {
		return core.Event{Name: "leader_changed", Args: []any{"leader", uint32(2), "term", epoch.Make(round, 2)}}
	}
	d.noteTerm(leader(1), time.Now()) // the start's
	d.persisted(CoreStateFile, 13, true, writeTimes{synced: 250 * time.Millisecond}, 260*time.Millisecond)
	d.slowBefore = d.persist.LastSlow
	buf.Reset()
	d.noteTerm(leader(2), d.slowBefore.At.Add(time.Second))
	if d.persist.SlowTerms != 0 || strings.Contains(buf.String(), "slow_persist_elections") {
		t.Fatalf("a 260 ms write, below the 400 ms leader timeout, was blamed for a leader change (%d):\n%s", d.persist.SlowTerms, buf.String())
	}
	d.persisted(CoreStateFile, 13, true, writeTimes{synced: 400 * time.Millisecond}, 410*time.Millisecond)
	d.slowBefore = d.persist.LastSlow
	at := d.slowBefore.At.Add(time.Second)
	d.noteTerm(leader(3), at)
	if d.persist.SlowTerms != 1 || !strings.Contains(buf.String(), "longer than the leader timeout (400ms)") {
		t.Fatalf("a 410 ms write, over the 400 ms leader timeout, was not blamed (%d):\n%s", d.persist.SlowTerms, buf.String())
	}
	if p := d.persistStatus(at.Add(SlowTermShown - time.Second)); p.LastSlowTerm == nil {
		t.Fatalf("status dropped the leader change before SlowTermShown")
	}
	if p := d.persistStatus(at.Add(SlowTermShown + time.Second)); p.LastSlowTerm != nil || p.SlowTerms != 1 {
		t.Fatalf("status %s after it: %d, %+v; want the count without the term", SlowTermShown, p.SlowTerms, p.LastSlowTerm)
	}
}

// termCore is an election-like core: each newTerm is a term change that
// is persisted with a promise (as a follower adopting a term does) and
// reported by an event carrying the term, as every election core does;
// touch is a write with no new term.
type termCore struct {
	core.Durable
	term, n uint64
	events  []core.Event
}

func (c *termCore) newTerm(t uint64) {
	c.term = t
	c.Change(true)
	c.events = append(c.events, core.Event{Name: "leader_changed", Args: []any{"leader", uint32(2), "term", t}})
}
func (c *termCore) touch()                           { c.n++; c.Change(false) }
func (c *termCore) Step(core.Message) error          { return nil }
func (c *termCore) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (c *termCore) Status() any                      { return nil }
func (c *termCore) Tick(time.Time)                   {}
func (c *termCore) Ready() core.Ready {
	rd := core.Ready{Events: c.events}
	c.events = nil
	c.Durable.Ready(&rd, func() []byte { return fmt.Appendf(nil, "term=%d n=%d", c.term, c.n) })
	return rd
}

// TestSlowTermNotBlamedOnItsOwnWrite: a member learns a new term (a
// leader change caused elsewhere) and the write that records it is slow;
// no write before it was. The loop writes a Ready's state before it
// reports the Ready's events, so the term's own write used to count as
// "a slow write before the term" (a review found it with every fsync
// delayed by strace). A slow write of an earlier Ready is still blamed.
// The daemon's write bookkeeping reads a test clock: each call moves it
// by step, so a write measures two steps.
func TestSlowTermNotBlamedOnItsOwnWrite(t *testing.T) {
	net := transport.NewMemNetwork()
	d, err := New(testConfig(t, net, shortDir(t), 1, 2), func(core.Env) (core.Core, error) { return &termCore{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now, step := time.Now(), time.Duration(0)
	d.wall = func() time.Time { // on the loop (process, emit)
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
	setStep := func(s time.Duration) { mu.Lock(); step = s; mu.Unlock() }
	start(t, d)
	ctx := context.Background()
	do := func(f func(c *termCore)) {
		t.Helper()
		if err := d.DoSaved(ctx, func(n *node.Node) { f(n.Core().(*termCore)) }); err != nil {
			t.Fatal(err)
		}
	}
	do(func(c *termCore) { c.newTerm(epoch.Make(1, 2)) }) // the start's
	setStep(SlowPersist)                                  // each write: 2 x SlowPersist
	do(func(c *termCore) { c.newTerm(epoch.Make(2, 2)) })
	setStep(0)
	var p PersistStatus
	d.Do(ctx, func(*node.Node) { p = d.persist })
	if p.Slow != 1 {
		t.Fatalf("the test clock made %d slow writes, want 1 (the new term's)", p.Slow)
	}
	if p.SlowTerms != 0 {
		t.Fatalf("a leader change was blamed on the disk by its own write: %d, %+v", p.SlowTerms, *p.LastSlowTerm)
	}
	setStep(SlowPersist)
	do(func(c *termCore) { c.touch() }) // slow, no new term
	setStep(0)
	do(func(c *termCore) { c.newTerm(epoch.Make(3, 2)) })
	d.Do(ctx, func(*node.Node) { p = d.persist })
	if p.SlowTerms != 1 || p.LastSlowTerm.Term != epoch.Make(3, 2) {
		t.Fatalf("a term after a slow write of an earlier Ready was not blamed: %d, %+v", p.SlowTerms, p.LastSlowTerm)
	}
}
