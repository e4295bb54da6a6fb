package maekawa

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
	"github.com/synclab/synclab/pkg/wire"
)

// phase is where a request of this member's clients stands.
type phase uint8

const (
	collecting phase = iota + 1 // asking for votes
	committing                  // votes in hand, the fence being recorded
	entering                    // fence recorded; the grant waits for a clock reading (granted)
	held                        // granted
	backoff                     // gave back what it got; waits to retry
)

func (p phase) String() string {
	switch p {
	case collecting:
		return "collecting"
	case committing:
		return "committing"
	case entering:
		return "entering"
	case held:
		return "held"
	case backoff:
		return "backoff"
	}
	return "?"
}

// ask is the protocol run for one request of this member's clients (one
// per lock at a time; the table queues the others).
type ask struct {
	id    mutex.RequestID
	lock  string
	mode  wire.VoteMode
	lease time.Duration
	stamp uint64 // Lamport time of the first attempt: its priority, kept across retries

	attempt uint32
	tries   int
	phase   phase
	noLive  bool     // the last attempt found no live cross (said once, no_live_set)
	set     []uint32 // the voters asked
	need    int
	started time.Time // first attempt

	locked     map[uint32]uint64 // voter -> the fence it offers
	recorded   map[uint32]bool   // voter -> it recorded its offer before voting
	waited     map[uint32]uint32 // voter -> ms the request waited there before its vote
	proposal   uint64            // exclusive: the fence this attempt proposes (doc.go, "Fences")
	sentAt     time.Time         // when this attempt's requests left
	answered   map[uint32]bool   // voters that voted or denied: no queued entry of this attempt left there
	withdrawAt time.Time         // majority: the grant, when withdraw released the others
	withdrawn  map[uint32]bool   // majority: coordinators sent a release at the grant (withdraw)
	denied     map[uint32]bool
	failed     bool // a voter said failed (Maekawa)
	yielded    bool // this attempt gave a vote back (Maekawa)
	inquiries  map[uint32]bool
	deadline   time.Time
	refreshAt  time.Time // collecting: ask again the voters whose vote it lacks

	fence    uint64
	commitAt time.Time // when the lease counts from
	hint     uint64    // the highest fence offered to this request so far
	acked    map[uint32]bool

	renewAt    time.Time
	renewBy    time.Time // a renewal is unanswered until then
	renewLease time.Duration
	renewAcks  map[uint32]bool
	renewNo    int
	renewed    bool // a quorum confirmed the renewal: reported at a reading of the clock (confirmRenewal)
	// renewedAt is the receive stamp of the confirmation that completed
	// the quorum, renewedBy its voter (named in lock_renewal_late).
	renewedAt time.Time
	renewedBy uint32
}

// Acquire queues r (mutex.Algorithm).
func (c *Core) Acquire(now time.Time, r mutex.Request) (mutex.RequestID, error) {
	c.observe(now)
	id, err := c.reqs.Enqueue(c.now, c.self, r)
	if err != nil {
		return 0, err
	}
	c.settle()
	return id, nil
}

// Renew asks for a granted request's lease to run lease from now: a round
// of renew frames to the voters that committed it, confirmed by as many
// as its grant needed.
func (c *Core) Renew(now time.Time, id mutex.RequestID, lease time.Duration) error {
	c.observe(now)
	defer c.settle()
	if err := c.reqs.Renew(c.now, id, lease); err != nil {
		return err
	}
	st, _ := c.reqs.Lookup(c.now, id)
	a := c.asks[st.Lock]
	if a == nil || a.id != id || a.phase != held {
		c.reqs.Lose(st.Lock, mutex.RenewRefused)
		return nil
	}
	if lease == 0 {
		lease = time.Duration(st.LeaseMS) * time.Millisecond
	}
	a.renewAt, a.renewBy, a.renewLease = c.now, c.now.Add(c.cfg.AttemptTimeout), lease
	// A confirmation read in a Step and left for the reading (deadline
	// now) is the earlier renewal's: this one replaces it, and so its
	// deadline, else stale at every later Tick.
	a.renewAcks, a.renewNo, a.renewed, a.deadline = map[uint32]bool{}, 0, false, time.Time{}
	for _, v := range slices.Sorted(maps.Keys(a.acked)) {
		c.post(v, wire.Vote{Op: wire.VoteRenew, Name: a.lock, Attempt: a.attempt, Stamp: a.stamp, Mode: a.mode, Fence: a.fence, LeaseMS: msOf(lease)}, 0)
	}
	return nil
}

// Release gives a granted lock back, or withdraws a waiting request.
func (c *Core) Release(now time.Time, id mutex.RequestID) error {
	c.observe(now)
	defer c.settle()
	st, err := c.reqs.Release(c.now, id)
	if a := c.asks[st.Lock]; a != nil && a.id == id {
		c.endAsk(a)
	}
	return err
}

// pump starts the protocol for the first grantable request of every lock
// without one running, and ends runs whose request is gone.
func (c *Core) pump() {
	for _, name := range slices.Sorted(maps.Keys(c.asks)) {
		if a := c.asks[name]; a != nil {
			if _, ok := c.reqs.Lookup(c.now, a.id); !ok {
				c.endAsk(a)
			}
		}
	}
	for _, lock := range c.reqs.Locks() {
		if c.asks[lock] != nil {
			continue
		}
		ids := c.reqs.Grantable(lock)
		if len(ids) == 0 {
			continue
		}
		st, _ := c.reqs.Lookup(c.now, ids[0])
		a := &ask{id: ids[0], lock: lock, lease: time.Duration(st.LeaseMS) * time.Millisecond, started: c.now}
		if st.Mode == mutex.Shared {
			a.mode = wire.VoteShared
		}
		a.stamp = c.cfg.Lamport.Send()
		c.asks[lock] = a
		c.try(a, a.stamp)
	}
}

// voters returns the set a request asks and how many must vote: every
// member and the quorum (majority); or a cross that is wholly alive, all
// of it (Maekawa).
func (c *Core) voters() ([]uint32, int) {
	if c.majority() {
		return c.cfg.Coordinators, c.cfg.Quorum
	}
	if c.cfg.VotingSets != nil {
		set := c.cfg.VotingSets[c.self]
		return set, len(set)
	}
	set := c.grid.LiveSet(c.self, c.alive)
	return set, len(set)
}

// try sends one attempt of a's request. lamport is the stamp its frames
// carry (the first attempt's Lamport send; 0: the node stamps them).
func (c *Core) try(a *ask, lamport uint64) {
	a.set, a.need = c.voters()
	a.locked, a.denied, a.inquiries, a.acked = map[uint32]uint64{}, map[uint32]bool{}, map[uint32]bool{}, map[uint32]bool{}
	a.answered, a.waited, a.recorded, a.withdrawn = map[uint32]bool{}, map[uint32]uint32{}, map[uint32]bool{}, map[uint32]bool{}
	a.failed, a.yielded, a.fence = false, false, 0
	a.deadline = c.now.Add(c.collectTimeout(a.mode))
	a.refreshAt = c.now.Add(c.cfg.AttemptTimeout)
	if len(a.set) == 0 {
		// No cross is wholly alive: wait for members to come back,
		// looking again every AttemptTimeout (a collectTimeout, 3.5 s
		// at mutexd's defaults, passed after they were back: a member
		// cut off by configuration agreement's refusal, TestRefusedVotesResent).
		a.phase = backoff
		a.deadline = c.now.Add(c.cfg.AttemptTimeout)
		if !a.noLive {
			a.noLive = true
			c.count("no_live_set")
			c.emit(EventNoLiveSet, fmt.Sprintf("%s: no row and column of the grid are wholly alive; waiting", a.lock), "lock", a.lock)
		}
		return
	}
	a.noLive = false
	c.attempt++
	a.attempt = c.attempt
	a.phase = collecting
	a.sentAt = c.now
	a.proposal = c.propose(a)
	c.stats.Attempts++
	for _, v := range a.set {
		c.post(v, wire.Vote{Op: wire.VoteRequest, Name: a.lock, Attempt: a.attempt, Stamp: a.stamp, Mode: a.mode,
			Fence: a.proposal, LeaseMS: msOf(a.lease)}, lamport)
	}
}

// collectTimeout is how long votes may take to come. A majority
// coordinator answers a shared request at once (a vote or a deny):
// AttemptTimeout. A voter queues an exclusive request while its vote is
// held, for as long as the holder holds (renewals included): waiting is
// no fault there, and a crashed or cut-off voter is found by the failure
// detector (Maekawa) or is one of the n-m a majority can do without. The
// attempt is refreshed after a lease and AttemptTimeout only in case a
// voter restarted faster than DeadAfter and forgot its queue; a refreshed
// request keeps its stamp, so it keeps its place.
func (c *Core) collectTimeout(mode wire.VoteMode) time.Duration {
	if mode == wire.VoteShared {
		return c.cfg.AttemptTimeout
	}
	return c.cfg.MaxLease + c.cfg.AttemptTimeout
}

// giveUp releases everything a's attempt got (and its place in every
// queue) and backs off before the next attempt: randomized exponential
// backoff, so two contenders that split the voters stop colliding with
// probability that grows every round.
func (c *Core) giveUp(a *ask, why string) {
	c.count("retries_" + why)
	c.sendRelease(a, 0)
	a.tries++
	a.phase = backoff
	hi := min(c.cfg.BackoffMax, c.cfg.BackoffBase<<min(a.tries, 20))
	lo := c.cfg.BackoffBase / 2
	a.deadline = c.now.Add(lo + time.Duration(c.cfg.Rand.Int64N(int64(hi-lo)+1)))
}

func (c *Core) sendRelease(a *ask, fence uint64) {
	if a.phase == backoff {
		return
	}
	to := a.set
	if a.phase == committing || a.phase == entering || a.phase == held {
		// The voters it kept have an entry, and those that have not
		// answered (a majority's request may wait in their queues); the
		// others were released when their votes came too late, or denied.
		to = slices.DeleteFunc(slices.Clone(a.set), func(v uint32) bool {
			_, kept := a.locked[v]
			return !kept && a.answered[v]
		})
	}
	for _, v := range to {
		c.post(v, wire.Vote{Op: wire.VoteRelease, Name: a.lock, Attempt: a.attempt, Stamp: a.stamp, Mode: a.mode, Fence: fence}, 0)
	}
}

// endAsk ends a's run: its voters are told, the next request may start.
func (c *Core) endAsk(a *ask) {
	c.sendRelease(a, a.fence)
	delete(c.asks, a.lock)
}

// requesterStep is the requester's side: locked, failed, inquire, deny,
// and the answers to commits and renewals.
func (c *Core) requesterStep(from uint32, m wire.Vote) error {
	if !c.majority() && m.Op == wire.VoteDeny {
		return ErrBadOp
	}
	a := c.asks[m.Name]
	if a == nil || a.attempt != m.Attempt || a.phase == backoff || !slices.Contains(a.set, from) {
		// An answer to an attempt given up or ended: its release went to
		// every voter it asked, after its request on the same link, so a
		// vote given meanwhile is usually freed already: it crossed the
		// release. Not if that release was lost (a connection reset at a
		// majority's grant, which withdraws from the coordinators that
		// have not answered): the request waited in the voter's queue,
		// and its vote, given to a request long over, would be kept a
		// stretched lease. One that waited there more than Margin is
		// released again (a crossing vote that waited that long costs a
		// redundant frame); one that waited less is most likely the
		// crossing of an uncontended entry, which ended at once.
		c.count("answers_stale")
		if m.Op == wire.VoteLocked && time.Duration(m.LeaseMS)*time.Millisecond > c.cfg.Margin {
			c.count("answers_stale_released")
			c.post(from, wire.Vote{Op: wire.VoteRelease, Name: m.Name, Attempt: m.Attempt, Stamp: m.Stamp, Mode: m.Mode}, 0)
		}
		return nil
	}
	switch m.Op {
	case wire.VoteLocked:
		if a.phase != collecting {
			lost := a.answered[from] && c.withdrawLost(a, from, m.LeaseMS)
			if _, ok := a.locked[from]; !ok && (!a.answered[from] || lost) {
				// The quorum was complete without it: not needed. (A
				// coordinator withdrawn from at the grant was sent its
				// release then: unless that was lost, this vote crossed
				// it and is freed by it.)
				if lost {
					c.count("answers_stale_released")
				}
				c.post(from, wire.Vote{Op: wire.VoteRelease, Name: m.Name, Attempt: m.Attempt, Stamp: m.Stamp, Mode: m.Mode}, 0)
			}
			a.answered[from] = true
			return nil
		}
		a.answered[from] = true
		a.locked[from] = m.Fence
		a.recorded[from] = m.Recorded
		a.waited[from] = m.LeaseMS
		a.hint = max(a.hint, m.Fence)
		delete(a.inquiries, from)
		if len(a.locked) >= a.need {
			c.decide(a)
		}
	case wire.VoteDeny:
		a.answered[from] = true
		if a.phase != collecting {
			return nil
		}
		a.denied[from] = true
		if len(a.set)-len(a.denied) < a.need {
			c.giveUp(a, "denied")
		}
	case wire.VoteFailed:
		if a.phase != collecting {
			return nil
		}
		a.failed = true
		for _, v := range slices.Sorted(maps.Keys(a.inquiries)) {
			c.relinquish(a, v)
		}
	case wire.VoteInquire:
		if a.phase != collecting {
			return nil // entering or in: the release will free the vote
		}
		if _, ok := a.locked[from]; !ok {
			return nil
		}
		if a.failed || a.yielded {
			c.relinquish(a, from)
		} else {
			a.inquiries[from] = true
		}
	case wire.VoteCommitOK:
		if a.phase != committing {
			return nil
		}
		a.acked[from] = true
		if len(a.acked) >= a.need {
			c.granted(a)
		}
	case wire.VoteCommitRefused:
		a.hint = max(a.hint, m.Fence)
		if a.phase == committing {
			c.giveUp(a, "commit_refused")
		}
	case wire.VoteRenewOK:
		if a.phase == held && !a.renewBy.IsZero() && a.acked[from] {
			a.renewAcks[from] = true
			if len(a.renewAcks) >= a.need {
				a.renewBy, a.renewed, a.renewedAt, a.renewedBy = time.Time{}, true, c.now, from
				if c.stamped {
					a.deadline = c.now.Add(time.Nanosecond) // confirmed at the next reading of the clock
				} else {
					c.confirmRenewal(a)
				}
			}
		}
	case wire.VoteRenewRefused:
		if a.phase == held && !a.renewBy.IsZero() && a.acked[from] {
			a.renewNo++
			if len(a.acked)-a.renewNo < a.need {
				// Lost, and reported at once; but its client may run until
				// its lease ends (it learns of the loss late, or not at
				// all): the votes it still has are left to run out, not
				// released.
				c.reqs.Lose(a.lock, mutex.RenewRefused)
				a.phase = backoff
				c.endAsk(a)
			}
		}
	}
	return nil
}

// relinquish gives voter v's vote back (Sanders): this request cannot
// enter yet, and one of higher priority waits for the vote.
func (c *Core) relinquish(a *ask, v uint32) {
	delete(a.locked, v)
	delete(a.recorded, v)
	delete(a.inquiries, v)
	delete(a.answered, v) // back in v's queue
	a.yielded = true
	c.stats.Relinquishes++
	c.post(v, wire.Vote{Op: wire.VoteRelinquish, Name: a.lock, Attempt: a.attempt, Stamp: a.stamp, Mode: a.mode}, 0)
}

// propose is the fence an exclusive attempt proposes: one above the
// highest this member knows for the lock (its own voter's, and what the
// request's earlier attempts were told), or, if higher, the member's
// clock in the same era (clockFence). If every voter of the quorum knows
// nothing higher, each records it as it votes and the request holds on it
// without a commit round (decide); 0 for a shared request, which always
// commits (two readers' votes are given together, so a proposal could not
// tell their order).
//
// The clock is what makes the proposal current when this member's own
// voter missed the last grants (the lock moved to a member outside the
// last holder's cross, or grants went by while the request waited): a
// grant proposed from the cluster's fastest clock (clusterClock) is below
// the proposal of any request made later in real time. It is a hint and
// no more: a voter records a proposal only above everything it knows, so
// a wrong clock costs a commit round (decide), never a fence out of order.
func (c *Core) propose(a *ask) uint64 {
	if a.mode != wire.VoteExclusive {
		return 0
	}
	known := c.floor
	if l := c.votes[a.lock]; l != nil {
		known = l.fence
	}
	known = max(known, a.hint)
	if known >= wire.MaxVoteFence {
		return 0 // the commit reports the exhaustion
	}
	return max(known+1, clockFence(eraOf(known), c.clusterClock()))
}

// maxAhead bounds how far ahead a member's clock is believed to run: half
// the clock fence's range (clockFence), beyond which a reading would look
// like one from before.
const maxAhead = time.Duration(1<<31) * time.Millisecond

// clusterClock reads the fastest clock among this member's and the live
// members' it heard from (ahead), so that every member proposes from about
// the same clock however far apart their own clocks run (mutexd's is the
// raw oscillator anchored at the wall time of its start, so two members'
// clocks part by their oscillators' drift, up to a fraction of a second a
// day; and a lab's wall clocks may not be synchronized at all): a grant
// proposed from it is below the proposal of a request made later in real
// time by more than the network's one-way delay. A member taken for down
// no longer counts: a dead fast clock would otherwise hold every proposal
// ahead of real time.
func (c *Core) clusterClock() time.Time {
	var lead time.Duration
	for id, d := range c.ahead {
		if d > lead && d < maxAhead && c.alive(id) {
			lead = d
		}
	}
	return c.now.Add(lead)
}

// clockFence is the fence of era e that the clock reading now proposes:
// the era's floor and the reading in milliseconds, modulo 2^32 (the
// count's width, so the era stays whole; the reading wraps every 49.7
// days, and until a member's restart opens a new era the locks used
// before the wrap propose from their fences alone).
func clockFence(e uint32, now time.Time) uint64 {
	return floorOf(e) | uint64(uint32(now.UnixMilli()))
}

// decide takes a's quorum of votes to a grant. The fence is the highest
// any vote offers, top: above every fence each of these voters knew.
// Every voter of the quorum must have it before the request may hold
// (any later quorum meets this one in a voter that then knows it, so
// fences grow strictly across the cluster, even if this holder dies
// without a release). A voter that recorded its offer before voting and
// offers top has it already; the others are sent a commit of top and the
// request holds once they acknowledge. When every vote recorded top (the
// common case: the proposal was current) the request holds at once: 3
// frames per other voter, request, locked and release.
//
// The lease counts from when the votes began (fresh): the requests left
// at sentAt, and each voter voted after holding the request for the wait
// it reports, on its clock (taken at the slowest rate); the earliest vote
// ends first. When that is long ago (a vote given at once, the others
// after a wait in queues), the lease would be mostly spent: the request
// commits top at every voter instead, which starts every vote and the
// lease afresh, for a round trip.
func (c *Core) decide(a *ask) {
	var top uint64
	for _, f := range a.locked {
		top = max(top, f)
	}
	if top >= wire.MaxVoteFence || top == 0 {
		c.reqs.Refuse(a.id, FenceExhausted)
		c.endAsk(a)
		return
	}
	a.fence = top
	start, fresh := c.voteStart(a)
	if a.mode != wire.VoteExclusive || !fresh {
		c.commit(a, c.now, slices.Sorted(maps.Keys(a.locked)))
		return
	}
	var stale []uint32
	for _, v := range slices.Sorted(maps.Keys(a.locked)) {
		if a.recorded[v] && a.locked[v] == top {
			a.acked[v] = true // has top already; a renewal goes to it too
		} else {
			stale = append(stale, v)
		}
	}
	if len(stale) == 0 {
		a.commitAt = start
		c.stats.Direct++
		c.granted(a)
		return
	}
	c.stats.Partial++
	c.commit(a, start, stale)
}

// voteStart is when a's votes began, at the earliest (decide), and
// whether that leaves most of the lease.
func (c *Core) voteStart(a *ask) (time.Time, bool) {
	wait := uint32(math.MaxUint32)
	for v := range a.locked {
		wait = min(wait, a.waited[v])
	}
	slow := 1 - 2*c.cfg.MaxDriftPPM*1e-6
	start := a.sentAt.Add(time.Duration(float64(time.Duration(wait)*time.Millisecond) * slow))
	if start.After(c.now) {
		start = c.now
	}
	return start, c.now.Sub(start) <= a.lease/16
}

// commit records a's fence at voters to (decide), the lease counted from
// from: when the commit leaves, or, when the other voters recorded the
// fence as they voted, when the first vote began.
func (c *Core) commit(a *ask, from time.Time, to []uint32) {
	a.phase, a.commitAt = committing, from
	a.deadline = c.now.Add(c.cfg.AttemptTimeout)
	a.inquiries = map[uint32]bool{}
	for _, v := range to {
		c.post(v, wire.Vote{Op: wire.VoteCommit, Name: a.lock, Attempt: a.attempt, Stamp: a.stamp, Mode: a.mode, Fence: a.fence, LeaseMS: msOf(a.lease)}, 0)
	}
}

// granted: enough voters recorded the fence; the lease counts from when
// the commit left (or the first vote began: decide), before any voter
// started counting its own. It is reported only if the lease has time
// left when the clock says so, and a frame's receive stamp does not: the
// frames that complete a grant are stepped with their stamps, and a loop
// that reads them late (a host too busy to run it, a process paused and
// continued, its frames waiting in the kernel the while) would report,
// judged on those stamps, a grant whose lease had ended before the
// report, which the next Tick would end at once: a client told it holds
// the lock with no time left. So a grant completed in Step waits, in
// phase entering, for the next reading of the clock (the Tick its
// Deadline asks for at once, or a client's call) and is judged then
// (enter); one completed in a call with a reading of the clock is judged
// at once. The lease is never lengthened for lateness: its end stays
// where the votes put it.
func (c *Core) granted(a *ask) {
	a.phase = entering
	a.deadline = c.now.Add(time.Nanosecond) // Tick at once (after the last, which may have read c.now)
	if !c.stamped {
		c.enter(a)
	}
}

// enter reports a's grant, now being a reading of the clock, if its lease
// has time left; else its votes are given back and it asks again (its
// fence, possibly below one granted meanwhile, is never used).
func (c *Core) enter(a *ask) {
	end := a.commitAt.Add(a.lease)
	if !c.now.Before(end) {
		c.late.Report(c.now, c.counters, &c.events, mutex.EventGrantLate, a.lock, a.id, c.now.Sub(end), "its votes are given back and it asks again")
		c.giveUp(a, "lease_spent")
		return
	}
	a.phase = held
	a.deadline = time.Time{}
	if _, err := c.reqs.Grant(a.commitAt, a.id, a.fence, 0); err != nil {
		c.bugs.Report(&c.events, "grant", err)
		c.endAsk(a)
		return
	}
	c.withdraw(a)
	c.stats.Entries++
	c.reqs.ExpireLock(c.now, a.lock)
}

// confirmRenewal reports a's renewal, which its quorum confirmed, now
// being a reading of the clock: its lease from when it was asked
// (renewAt), or, when that lease has ended by now (the loop read the last
// confirmation late), nothing: the lease runs on as it was and ends
// (renewals_late), as for a renewal unanswered; the client renews again
// or learns of the loss. As for a grant (granted), a confirmation read
// from a frame waits for the reading.
func (c *Core) confirmRenewal(a *ask) {
	a.renewed, a.deadline = false, time.Time{}
	if end := a.renewAt.Add(a.renewLease); !c.now.Before(end) {
		c.late.ReportRenewal(c.now, c.counters, &c.events, mutexcount.RenewalLate{Lock: a.lock, ID: a.id, Late: c.now.Sub(end),
			Answered: a.renewedAt, End: end, By: []uint32{a.renewedBy}, EndOf: "the renewed lease it asked for"})
		return
	}
	c.reqs.ConfirmRenewals(a.renewAt, a.lock)
}

// withdraw sends its release now, at the grant, to every coordinator of
// the majority quorum that has not answered a's request (it waits in that
// coordinator's queue, behind a vote or a restart's hold), instead of at
// the release (endAsk leaves out those answered). Left there, it would be
// voted for once the coordinator is free, and a recorded vote is kept a
// stretched lease: were the holder to crash meanwhile, that vote would
// hold the next request back for a lease after this one's ended (doc.go,
// "Recovery after a holder's crash"). The same frame moves earlier, so
// an entry still costs 3(n-1). Maekawa's requests hold on every vote of
// their cross: nothing is left unanswered.
func (c *Core) withdraw(a *ask) {
	if !c.majority() {
		return
	}
	a.withdrawAt = c.now
	for _, v := range a.set {
		if !a.answered[v] {
			a.answered[v], a.withdrawn[v] = true, true
			c.count("requests_withdrawn")
			c.post(v, wire.Vote{Op: wire.VoteRelease, Name: a.lock, Attempt: a.attempt, Stamp: a.stamp, Mode: a.mode}, 0)
		}
	}
}

// withdrawLost tells whether a vote from coordinator v, withdrawn from at
// the grant (now, or earlier when still held), was given after that
// release should have reached v: the release was lost (a connection reset
// at the grant), v had the request queued and voted for it once free, and
// nothing else will free that vote until its stretched lease ends. The
// vote says how long the request waited there (waitedMS). A vote that
// crossed the release was given before the release arrived, so it waited
// less than the time from the request's leaving to the grant plus the
// release's delay, Margin at most on a LAN: no release is sent twice
// then, which keeps an entry at 3(n-1) frames. A release slower than
// Margin costs one frame more, a lost one answered to a vote given within
// Margin of its arrival leaves that vote held a stretched lease.
func (c *Core) withdrawLost(a *ask, v uint32, waitedMS uint32) bool {
	if !a.withdrawn[v] {
		return false
	}
	waited := time.Duration(waitedMS) * time.Millisecond
	return waited > a.withdrawAt.Sub(a.sentAt)+c.cfg.Margin
}

// tickAsk runs a request's timers: an attempt that took too long is given
// up, a backoff ends in a new attempt, a Maekawa attempt whose cross lost
// a member starts over on a live one, a renewal unanswered in time is
// dropped (the lease runs out unless the next renewal gets through).
func (c *Core) tickAsk(a *ask) {
	switch a.phase {
	case collecting, committing:
		if !c.now.Before(a.deadline) {
			c.giveUp(a, "timeout")
			return
		}
		if a.phase == collecting && !c.now.Before(a.refreshAt) {
			c.refresh(a)
		}
		if !c.majority() && a.phase == collecting && c.cfg.VotingSets == nil {
			for _, v := range a.set {
				if !c.alive(v) {
					c.giveUp(a, "member_down")
					a.deadline = c.now.Add(time.Nanosecond) // at once, on a live cross (after this Tick: not stale)
					return
				}
			}
		}
	case backoff:
		if !c.now.Before(a.deadline) {
			c.try(a, 0)
		}
	case held:
		if !a.renewBy.IsZero() && !c.now.Before(a.renewBy) {
			a.renewBy = time.Time{}
			c.count("renewals_unanswered")
		}
	}
}

// refresh asks again, every AttemptTimeout while the request collects,
// the voters whose vote it lacks: one that has it queued takes the
// repeat for what it is; one that restarted and forgot it queues it
// again (or votes). Without it a voter's restart would cost the waiting
// request a whole collectTimeout.
func (c *Core) refresh(a *ask) {
	a.refreshAt = c.now.Add(c.cfg.AttemptTimeout)
	for _, v := range a.set {
		if _, ok := a.locked[v]; !ok && v != c.self {
			c.count("requests_refreshed")
			c.post(v, wire.Vote{Op: wire.VoteRequest, Name: a.lock, Attempt: a.attempt, Stamp: a.stamp, Mode: a.mode, LeaseMS: msOf(a.lease)}, 0)
		}
	}
}
