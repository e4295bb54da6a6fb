package maekawa

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// vlock is one lock at a voter: its votes, its queue (Maekawa), and the
// highest fence it has seen committed.
type vlock struct {
	name   string
	fence  uint64
	grants []*vote // Maekawa: at most one; majority: one exclusive or any shared
	queue  []*vote // Maekawa: waiting requests by (stamp, member)
	// inquired: an inquire was sent to the exclusive vote's holder and not
	// answered (Maekawa).
	inquired bool
	// holdUntil: restarted with a vote outstanding (PersistVotes): no
	// vote before then.
	holdUntil time.Time
}

// vote is one request at a voter: queued, or voted for.
type vote struct {
	from      uint32
	attempt   uint32
	stamp     uint64
	mode      wire.VoteMode
	failed    bool // a failed was sent for it (Maekawa)
	committed bool
	fence     uint64
	expires   time.Time // the vote ends then unless committed or renewed further

	// An exclusive request proposes its fence (doc.go, "Fences"):
	// proposal, with lease the lease it asks (0: refused, too long); it
	// arrived then. recorded: this voter took offered (the proposal, or
	// one above its own fence if that was higher) as its fence for the
	// lock when it voted, so the requester may hold on it without a
	// commit.
	proposal uint64
	lease    time.Duration
	arrived  time.Time
	recorded bool
	offered  uint64
}

// mayHold says whether the requester may hold the lock on this vote now:
// it committed a fence here, or may have entered on the fence this voter
// recorded. Such a vote lasts its lease, whatever happens to its member.
// (Of an entry in the queue it says what it would be if voted for.)
func (v *vote) mayHold() bool { return v.committed || v.recorded }

// before is the requests' priority: lower Lamport time first, then lower ID.
func (v *vote) before(o *vote) bool {
	return cmp.Or(cmp.Compare(v.stamp, o.stamp), cmp.Compare(v.from, o.from)) < 0
}

func (l *vlock) outstanding() bool { return len(l.grants) > 0 }

func (l *vlock) idle() bool {
	return len(l.grants) == 0 && len(l.queue) == 0 && l.holdUntil.IsZero()
}

func (l *vlock) deadline() time.Time {
	var d time.Time
	for _, g := range l.grants {
		if d.IsZero() || g.expires.Before(d) {
			d = g.expires
		}
	}
	if !l.holdUntil.IsZero() && (d.IsZero() || l.holdUntil.Before(d)) {
		d = l.holdUntil
	}
	return d
}

// voterLock returns lock name's entry, making one for a request from
// member from if there is room (idle entries folded into the floor to
// make it).
func (c *Core) voterLock(name string, from uint32, create bool) (*vlock, error) {
	if l := c.votes[name]; l != nil {
		return l, nil
	}
	if !create {
		return nil, nil
	}
	if len(c.votes) >= c.cfg.MaxLocks {
		for _, n := range slices.Sorted(maps.Keys(c.votes)) {
			if l := c.votes[n]; l.idle() {
				c.floor = max(c.floor, l.fence)
				delete(c.votes, n)
				c.count("locks_reclaimed")
			}
		}
		if len(c.votes) >= c.cfg.MaxLocks {
			return nil, ErrNoRoom
		}
	}
	share := max(4, c.cfg.MaxLocks/2/max(1, len(c.cfg.Members)-1))
	if from != c.self && c.byMember[from] >= share {
		return nil, ErrNoRoom
	}
	l := &vlock{name: name, fence: c.floor}
	c.votes[name] = l
	return l, nil
}

// entry returns member from's entry of attempt at l (a vote, or queued).
func (l *vlock) entry(from, attempt uint32) (*vote, bool) {
	for _, g := range l.grants {
		if g.from == from && g.attempt == attempt {
			return g, true
		}
	}
	for _, q := range l.queue {
		if q.from == from && q.attempt == attempt {
			return q, false
		}
	}
	return nil, false
}

// remove takes entry v out of l (a vote or queued).
func (c *Core) remove(l *vlock, v *vote) {
	if i := slices.Index(l.grants, v); i >= 0 {
		l.grants = slices.Delete(l.grants, i, i+1)
		if len(l.grants) == 0 {
			l.inquired = false
			if c.cfg.PersistVotes {
				c.durable.Change(false)
			}
		}
	} else if i := slices.Index(l.queue, v); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
	} else {
		return
	}
	if c.byMember[v.from]--; c.byMember[v.from] <= 0 {
		delete(c.byMember, v.from)
	}
}

// supersede drops what member from's newer request replaces: its queued
// requests and its votes not committed (a member runs one request per
// lock: those attempts were given up). A committed vote stays until its
// release or its lease's end: the member may have restarted, and the
// program that held the lock with it may still run until then.
func (c *Core) supersede(l *vlock, from uint32) {
	for _, e := range slices.Clone(l.queue) {
		if e.from == from {
			c.remove(l, e) // a queued entry holds no vote, whatever it recorded before
		}
	}
	for _, e := range slices.Clone(l.grants) {
		if e.from == from && !e.mayHold() {
			c.remove(l, e)
		}
	}
}

func (c *Core) reply(to uint32, op wire.VoteOp, l *vlock, v *vote, fence uint64) {
	c.post(to, wire.Vote{Op: op, Name: l.name, Attempt: v.attempt, Stamp: v.stamp, Mode: v.mode, Fence: fence}, 0)
}

// voterStep is the voter's side: request, relinquish, release, commit,
// renew.
func (c *Core) voterStep(from uint32, m wire.Vote) error {
	if c.majority() && !slices.Contains(c.cfg.Coordinators, c.self) {
		return ErrBadOp
	}
	if !c.majority() && m.Mode == wire.VoteShared {
		return ErrBadOp
	}
	l, err := c.voterLock(m.Name, from, m.Op == wire.VoteRequest)
	if err != nil {
		if m.Op == wire.VoteRequest && c.majority() {
			c.reply(from, wire.VoteDeny, &vlock{name: m.Name}, &vote{attempt: m.Attempt, stamp: m.Stamp, mode: m.Mode}, 0)
		}
		return err
	}
	if l == nil {
		c.count("votes_unknown_lock")
		return nil // a release or commit for a lock this voter does not know: nothing to free
	}
	switch m.Op {
	case wire.VoteRequest:
		if _, ok := l.entry(from, m.Attempt); ok || slices.ContainsFunc(l.queue, func(q *vote) bool { return q.from == from && q.attempt == m.Attempt }) {
			c.count("requests_repeated") // a refresh (requester.go): it is here already
			return nil
		}
		c.supersede(l, from)
		v := &vote{from: from, attempt: m.Attempt, stamp: m.Stamp, mode: m.Mode, arrived: c.now}
		if m.Mode == wire.VoteExclusive {
			// Every exclusive vote records a fence (giveVote): the
			// proposal, or one above this voter's if the proposal is
			// stale (a refresh proposes nothing: 0).
			if lease, ok := c.leaseOK(m.LeaseMS); ok {
				v.proposal, v.lease = m.Fence, lease
			}
		}
		c.byMember[from]++
		c.stats.Requests++
		if c.majority() && v.mode == wire.VoteShared {
			c.coordinate(l, v)
		} else {
			c.maekawaRequest(l, v)
		}
	case wire.VoteRelinquish:
		g, ok := l.entry(from, m.Attempt)
		if !ok || g.committed {
			c.count("relinquish_stale")
			return nil
		}
		c.remove(l, g)
		g.failed = false
		c.byMember[from]++
		c.enqueue(l, g)
		c.stats.Relinquished++
		c.next(l)
	case wire.VoteRelease:
		if e, _ := l.entry(from, m.Attempt); e != nil {
			if c.admit(m.Fence) == nil {
				c.raise(l, m.Fence)
			}
			c.remove(l, e)
			c.next(l)
		}
	case wire.VoteCommit:
		g, ok := l.entry(from, m.Attempt)
		if !ok || !c.now.Before(g.expires) {
			c.reply(from, wire.VoteCommitRefused, l, &vote{attempt: m.Attempt, stamp: m.Stamp, mode: m.Mode}, l.fence)
			c.count("commits_refused")
			return nil
		}
		if err := c.admit(m.Fence); err != nil {
			c.reply(from, wire.VoteCommitRefused, l, g, l.fence)
			return fmt.Errorf("%w: %d: %w", ErrFenceJump, m.Fence, err)
		}
		if readers := readersFence(l); g.mode == wire.VoteShared && readers != 0 {
			if m.Fence != readers {
				// Readers hold here on another fence: readers together
				// share one (readersFence). The requester gives up and
				// asks again, and is offered theirs.
				c.reply(from, wire.VoteCommitRefused, l, g, readers)
				c.count("commits_refused_readers")
				return nil
			}
		} else if mine := g.recorded && m.Fence == g.offered && l.fence == g.offered; m.Fence <= l.fence && !mine {
			// Another grant recorded this fence or a higher one since this
			// vote was given: a reader whose commit crossed another's (the
			// first reader's fence must be above every grant before it),
			// or a writer's. (The proposal this vote recorded may be
			// committed: it is this request's.)
			c.reply(from, wire.VoteCommitRefused, l, g, l.fence)
			c.count("commits_refused_fence")
			return nil
		}
		lease, ok := c.leaseOK(m.LeaseMS)
		if !ok {
			c.reply(from, wire.VoteCommitRefused, l, g, l.fence)
			return nil
		}
		c.raise(l, m.Fence)
		g.committed, g.fence = true, m.Fence
		g.expires = c.now.Add(c.cfg.stretch(lease))
		c.reply(from, wire.VoteCommitOK, l, g, m.Fence)
	case wire.VoteRenew:
		g, ok := l.entry(from, m.Attempt)
		if !ok || !g.mayHold() || !c.now.Before(g.expires) {
			c.reply(from, wire.VoteRenewRefused, l, &vote{attempt: m.Attempt, stamp: m.Stamp, mode: m.Mode}, l.fence)
			c.count("renewals_refused")
			return nil
		}
		lease, ok := c.leaseOK(m.LeaseMS)
		if !ok {
			c.reply(from, wire.VoteRenewRefused, l, g, l.fence)
			return nil
		}
		g.expires = maxTime(g.expires, c.now.Add(c.cfg.stretch(lease)))
		c.reply(from, wire.VoteRenewOK, l, g, g.fence)
	}
	return nil
}

// leaseOK reads a commit's or renewal's lease: one longer than this
// voter's MaxLease is refused, never cut short (the holder would count the
// longer one while the vote ran out: --lease must be the same on every
// member); a shorter one than MinLease is held for MinLease.
func (c *Core) leaseOK(ms uint32) (time.Duration, bool) {
	d := time.Duration(ms) * time.Millisecond
	if d > c.cfg.MaxLease {
		c.count("leases_too_long")
		return 0, false
	}
	return max(d, c.cfg.MinLease), true
}

// raise records fence f for l (admitted by admit). A fence of a newer
// era than this voter's raises the era, on disk before anything leaves:
// a restart must start above it. It happens once per restart of some
// member, not per grant.
func (c *Core) raise(l *vlock, f uint64) {
	if f <= l.fence {
		return
	}
	l.fence = min(f, wire.MaxVoteFence)
	if e := eraOf(l.fence); e > c.era {
		c.era = e
		c.durable.Change(true)
		c.count("era_raised")
	}
}

// admit applies the eras' plausibility rule (pkg/epoch) to a fence read
// from a frame: within this voter's era any count is plausible (2^32
// grants), a newer era only as far as the restarts since could take it.
func (c *Core) admit(f uint64) error {
	return c.guard.Admit(eraLimit, c.now.UnixNano(), floorOf(c.era)|(1<<eraShift-1), f)
}

// held says whether l may get no vote now: this voter restarted less
// than a stretched lease ago (its votes of the last run may still hold).
func (c *Core) held(l *vlock) bool {
	return c.now.Before(c.holdUntil) || c.now.Before(l.holdUntil)
}

// giveVote votes for v (with PersistVotes, on disk before the locked
// frame leaves). A vote not committed lasts as long as its requester
// collects (collectTimeout): a requester that waits in other voters'
// queues keeps what it got, and Sanders' inquire, not a timer, takes it
// back for a request before it. One whose member is taken for down ends
// at once (tickVotes).
func (c *Core) giveVote(l *vlock, v *vote) {
	if len(l.grants) == 0 && c.cfg.PersistVotes {
		c.durable.Change(true)
	}
	v.expires = c.now.Add(c.collectTimeout(v.mode))
	v.committed = false
	l.grants = append(l.grants, v)
	c.stats.Votes++
	offer := min(l.fence+1, wire.MaxVoteFence)
	if readers := readersFence(l); v.mode == wire.VoteShared && readers != 0 {
		offer = readers // a reader joins the readers holding here
	}
	switch {
	case v.mode != wire.VoteExclusive || v.lease == 0:
		// A reader's vote (readers always commit), or a lease this voter
		// refuses (the commit will be refused too): nothing recorded.
		v.recorded = false
	case v.recorded && l.fence == v.offered:
		// A vote given back (relinquish) and given again: nothing was
		// recorded here since, so the same offer is still above them all
		// (and still agrees with the other voters').
		offer = v.offered
	default:
		// Refreshed at vote time: the proposal if it is above everything
		// this voter knows, else one above its own fence; recorded either
		// way, so that a request whose votes all offer the same fence may
		// hold on it (doc.go, "Fences").
		want := l.fence + 1
		if v.proposal > want {
			if err := c.admit(v.proposal); err == nil {
				want = v.proposal
			} else {
				c.count("proposals_implausible")
			}
		}
		v.recorded = want <= wire.MaxVoteFence && c.admit(want) == nil
		if v.recorded {
			c.raise(l, want)
			v.offered, offer = want, want
		}
	}
	if v.recorded {
		// The requester may enter on this vote without a commit, its lease
		// counted from before the vote: keep it for the stretched lease,
		// and no longer (doc.go, "Recovery after a holder's crash"). Its
		// requester may enter on it only within a sixteenth of the lease
		// of its start (voteStart), before the vote; later it must commit
		// here, and a commit after the vote's end is refused. Kept for
		// collectTimeout as well, as before, it outlived a crashed
		// holder's lease by AttemptTimeout less the stretch (0.47 s by
		// default), the recovery's whole excess over the lease.
		v.expires = c.now.Add(c.cfg.stretch(v.lease))
	}
	c.post(v.from, wire.Vote{Op: wire.VoteLocked, Name: l.name, Attempt: v.attempt, Stamp: v.stamp, Mode: v.mode,
		Fence: offer, LeaseMS: msOf(c.now.Sub(v.arrived)), Recorded: v.recorded}, 0)
}

// readersFence is the fence of the readers whose committed votes l has
// given (0: none). Readers together share one fence: a resource keeps the
// highest fence it has seen and refuses a lower one, so two readers on f1
// < f2 could not both use it once the second had. A voter offers a reader
// their fence and refuses a reader's commit of any other; two readers
// whose grants overlap committed at a common voter (their majorities
// intersect) while the other's vote was committed there, so they hold on
// the same fence. The first reader of a group commits above the voter's
// fence, as a writer does, so it is above every grant that ended before.
func readersFence(l *vlock) uint64 {
	for _, g := range l.grants {
		if g.mode == wire.VoteShared && g.committed {
			return g.fence
		}
	}
	return 0
}

// coordinate is a majority coordinator's answer to a shared request: a
// vote if the lock is free for readers here, else a deny (the requester
// gives back what it got and retries after a backoff). Readers never wait
// in a queue holding votes, so they cannot take part in a deadlock; an
// exclusive request queued here (a writer waiting) makes new readers
// wait, so a stream of readers cannot starve a writer.
func (c *Core) coordinate(l *vlock, v *vote) {
	free := !c.held(l) && len(l.queue) == 0 &&
		!slices.ContainsFunc(l.grants, func(g *vote) bool { return g.mode == wire.VoteExclusive })
	if free && slices.ContainsFunc(l.grants, func(g *vote) bool { return g.from == v.from }) {
		// It still holds a committed vote here (it restarted, or it
		// lies): one at a time, or one member could pile up shared votes.
		free = false
	}
	if free {
		c.giveVote(l, v)
		return
	}
	if c.byMember[v.from]--; c.byMember[v.from] <= 0 {
		delete(c.byMember, v.from)
	}
	c.stats.Denied++
	c.reply(v.from, wire.VoteDeny, l, v, l.fence)
}

// maekawaRequest is Maekawa's voter with Sanders' correction: vote if the
// vote is free; else queue the request and either inquire whether the
// vote's holder can give it back (the new request comes first of all) or
// tell the new request it failed (something comes before it).
func (c *Core) maekawaRequest(l *vlock, v *vote) {
	if len(l.grants) == 0 && !c.held(l) {
		c.giveVote(l, v)
		return
	}
	head := firstOr(l.queue)
	c.enqueue(l, v)
	if len(l.grants) != 1 || l.grants[0].mode == wire.VoteShared || c.cfg.Textbook {
		// A restart's hold, or readers that will release (they never wait
		// holding a vote); or the notes' algorithm: just wait.
		return
	}
	g := l.grants[0]
	if l.queue[0] == v && v.before(g) {
		if head != nil && !head.failed {
			head.failed = true // displaced from the head: it will not get this vote next
			c.reply(head.from, wire.VoteFailed, l, head, 0)
		}
		if !l.inquired && !g.committed {
			l.inquired = true
			c.stats.Inquired++
			c.reply(g.from, wire.VoteInquire, l, g, 0)
		}
		return
	}
	v.failed = true
	c.stats.Failed++
	c.reply(v.from, wire.VoteFailed, l, v, 0)
}

func (c *Core) enqueue(l *vlock, v *vote) {
	i, _ := slices.BinarySearchFunc(l.queue, v, func(a, b *vote) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	l.queue = slices.Insert(l.queue, i, v)
}

// next gives a free vote to the first request in the queue: at once, so
// a handoff costs the release and the next locked, never a timer.
func (c *Core) next(l *vlock) {
	if len(l.grants) > 0 || len(l.queue) == 0 || c.held(l) {
		return
	}
	v := l.queue[0]
	l.queue = l.queue[1:]
	c.giveVote(l, v)
}

// tickVotes ends votes whose time ran out (the requester gave up, or its
// lease ended without a release: it crashed or was cut off) and a
// restart's hold.
func (c *Core) tickVotes(l *vlock) {
	for _, q := range slices.Clone(l.queue) {
		if !c.alive(q.from) {
			c.remove(l, q)
			c.count("requests_dropped_member_down")
		}
	}
	for _, g := range slices.Clone(l.grants) {
		if !g.mayHold() && !c.alive(g.from) {
			c.remove(l, g)
			c.count("votes_dropped_member_down")
			continue
		}
		if !c.now.Before(g.expires) {
			c.remove(l, g)
			if g.mayHold() {
				c.count("votes_expired_held")
			} else {
				c.count("votes_expired")
			}
		}
	}
	if !l.holdUntil.IsZero() && !c.now.Before(l.holdUntil) {
		l.holdUntil = time.Time{}
	}
	c.next(l)
}

func firstOr(q []*vote) *vote {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func msOf(d time.Duration) uint32 {
	return uint32(min(max(d, 0)/time.Millisecond, math.MaxUint32))
}
