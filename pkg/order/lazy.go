package order

import (
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// A record that holds only the sequencer's commit point and deliveries
// announced before their record (doc.go, "Announced before written")
// promises nothing: the entries are on a majority of disks, a restart
// learns the commit point again (askCommit) and delivers them again at
// the same numbers. Written at once, it cost every member a second
// fdatasync per multicast (the sequencer too), each blocking the
// member's loop right after the delivery, when the next multicast's
// Append arrives, and five more writes on the disk. So it waits for the
// next write (the next entry's, which is on the path anyway, and carries
// it in the same record) for at most Config.RecordDelay, and goes alone
// only when nothing else is written meanwhile (an idle cluster). It
// never waits while a delivery's index could leave indexSlack.

// lazyDurable is core.Durable, knowing which changes may wait.
type lazyDurable struct {
	core.Durable
	// urgent: a change since the last write must be written at the next
	// Ready (Change; a failed write).
	urgent bool
	// due is when a change that may wait goes alone; zero: none waits.
	due time.Time
}

// Change records a change that is written at the next Ready.
func (d *lazyDurable) Change(promise bool) {
	d.urgent = true
	d.Durable.Change(promise)
}

// Lazy records a change that may wait for the next write.
func (d *lazyDurable) Lazy() { d.Durable.Change(false) }

// handed: a Ready carries every change so far.
func (d *lazyDurable) handed() { d.urgent, d.due = false, time.Time{} }

// deferRecord reports whether this Ready leaves the pending changes for a
// later one, waking the core when they are due.
func (c *Core) deferRecord() bool {
	d := &c.durable
	if d.urgent || !d.Pending() || c.wantWhole() || c.st.Delivered-c.idx.saved >= indexSlack/2 {
		return false
	}
	if d.due.IsZero() {
		d.due = c.now.Add(c.cfg.RecordDelay)
	}
	if !c.now.Before(d.due) {
		return false
	}
	c.wake(d.due)
	return true
}

// WriteDeferred makes the changes that wait for a later write due at the
// next Ready: the daemon calls it before it stops, so that a clean stop
// repeats no delivery at the restart.
func (c *Core) WriteDeferred() {
	if c.durable.Pending() {
		c.durable.urgent = true
	}
}
