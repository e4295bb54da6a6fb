package mutex

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// Limits bound a Table. Zero fields take the defaults noted.
type Limits struct {
	// Self is this member's ID: requests it takes for its own clients.
	Self uint32
	// MinLease and MaxLease bound a lease (a request's 0 is MaxLease).
	// Required: 0 < MinLease <= MaxLease.
	MinLease, MaxLease time.Duration
	// MaxQueue bounds the requests waiting in the table, all locks
	// (default 4096).
	MaxQueue int
	// MaxLocks bounds the locks with a request (default 4096).
	MaxLocks int
	// MemberShare bounds the requests one other member may have in the
	// table (an algorithm that queues other members' requests: a central
	// coordinator, Maekawa's voters). Default MaxQueue/2 split among the
	// other members (Members), so that half the table is always there for
	// this member's own clients and no member can fill it alone.
	MemberShare int
	// Members is how many members the cluster has (for MemberShare's
	// default).
	Members int
	// Shared says whether the algorithm offers Shared requests.
	Shared bool
	// Causal says whether the algorithm takes Request.After (it orders
	// grants by vector timestamps: mutex.Causal); otherwise a request
	// with one is refused (ErrBadVector), never silently unordered.
	Causal bool
}

// ErrLimits: limits no table can work with.
var ErrLimits = errors.New("mutex: invalid table limits")

// Table is the per-lock request table every algorithm embeds: request
// IDs, a FIFO queue per lock, the holders (one exclusive, or several
// shared), leases and their expiry, limits and name checks, and the typed
// Outcomes. The algorithm decides only when this member may grant (and
// with which fence), and when a renewal is confirmed; the table does the
// bookkeeping. Not safe for concurrent use.
type Table struct {
	lim      Limits
	nextID   RequestID
	reqs     map[RequestID]*entry
	locks    map[string]*queue
	waiting  int
	byMember map[uint32]int
	outcomes []Outcome
	counters map[string]uint64
}

// entry is one request.
type entry struct {
	id     RequestID
	req    Request
	member uint32
	queued time.Time

	granted  bool
	fence    uint64
	epoch    uint64
	grantAt  time.Time
	expires  time.Time
	renewing time.Duration // a renewal waiting for confirmation (its lease), 0 if none
}

// queue is one lock's requests.
type queue struct {
	waiting []*entry
	holders []*entry
}

// NewTable returns an empty table.
func NewTable(lim Limits) (*Table, error) {
	if lim.MinLease <= 0 || lim.MaxLease < lim.MinLease {
		return nil, fmt.Errorf("%w: MinLease %v, MaxLease %v: want 0 < MinLease <= MaxLease", ErrLimits, lim.MinLease, lim.MaxLease)
	}
	if lim.MaxQueue == 0 {
		lim.MaxQueue = 4096
	}
	if lim.MaxLocks == 0 {
		lim.MaxLocks = 4096
	}
	if lim.MemberShare == 0 {
		lim.MemberShare = max(1, lim.MaxQueue/2/max(1, lim.Members-1))
	}
	if lim.MaxQueue < 1 || lim.MaxLocks < 1 || lim.MemberShare < 1 {
		return nil, fmt.Errorf("%w: MaxQueue %d, MaxLocks %d, MemberShare %d must be positive", ErrLimits, lim.MaxQueue, lim.MaxLocks, lim.MemberShare)
	}
	return &Table{lim: lim, reqs: map[RequestID]*entry{}, locks: map[string]*queue{},
		byMember: map[uint32]int{}, counters: map[string]uint64{}}, nil
}

// Limits returns the table's limits, defaults filled in.
func (t *Table) Limits() Limits { return t.lim }

// CheckLease returns the lease a request or renewal asking for lease gets
// (0: MaxLease), or ErrBadLease.
func (t *Table) CheckLease(lease time.Duration) (time.Duration, error) {
	if lease == 0 {
		return t.lim.MaxLease, nil
	}
	if lease < t.lim.MinLease || lease > t.lim.MaxLease {
		return 0, fmt.Errorf("%w: %v, want %v to %v (the cluster's maximum lease)", ErrBadLease, lease, t.lim.MinLease, t.lim.MaxLease)
	}
	return lease, nil
}

// Check validates r as Enqueue would, without queueing it; it returns r
// with its lease filled in.
func (t *Table) Check(member uint32, r Request) (Request, error) {
	if !wire.ValidLockName(r.Lock) {
		return r, ErrBadLockName
	}
	switch r.Mode {
	case Exclusive:
	case Shared:
		if !t.lim.Shared {
			return r, ErrSharedUnsupported
		}
	default:
		return r, fmt.Errorf("%w: mode %v", ErrSharedUnsupported, r.Mode)
	}
	if r.After.Len() > 0 && !t.lim.Causal {
		return r, fmt.Errorf("%w: this algorithm does not order requests by vector timestamps", ErrBadVector)
	}
	lease, err := t.CheckLease(r.Lease)
	if err != nil {
		return r, err
	}
	r.Lease = lease
	if t.waiting >= t.lim.MaxQueue {
		return r, ErrQueueFull
	}
	if member != t.lim.Self && t.byMember[member] >= t.lim.MemberShare {
		return r, fmt.Errorf("%w: member %d has %d requests, its share", ErrQueueFull, member, t.byMember[member])
	}
	if _, ok := t.locks[r.Lock]; !ok && len(t.locks) >= t.lim.MaxLocks {
		return r, ErrTooManyLocks
	}
	return r, nil
}

// Enqueue queues r for member (Limits.Self for this member's own clients)
// at the end of its lock's queue.
func (t *Table) Enqueue(now time.Time, member uint32, r Request) (RequestID, error) {
	r, err := t.Check(member, r)
	if err != nil {
		return 0, err
	}
	t.nextID++
	e := &entry{id: t.nextID, req: r, member: member, queued: now}
	t.reqs[e.id] = e
	q := t.locks[r.Lock]
	if q == nil {
		q = &queue{}
		t.locks[r.Lock] = q
	}
	q.waiting = append(q.waiting, e)
	t.waiting++
	t.byMember[member]++
	t.counters["requests"]++
	return e.id, nil
}

// Waiting is how many requests wait for lock (0 for an unknown lock).
func (t *Table) Waiting(lock string) int {
	if q := t.locks[lock]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// WaitingTotal is how many requests wait, all locks.
func (t *Table) WaitingTotal() int { return t.waiting }

// Held says whether lock has a holder at this member.
func (t *Table) Held(lock string) bool {
	q := t.locks[lock]
	return q != nil && len(q.holders) > 0
}

// Grantable returns the requests that the table's rules allow to be
// granted now, in queue order: the head alone when it is exclusive and
// the lock is free; the leading run of shared requests when the lock is
// free or held shared. A shared request behind a waiting exclusive one
// waits, so a writer is never starved by a stream of readers.
func (t *Table) Grantable(lock string) []RequestID {
	q := t.locks[lock]
	if q == nil || len(q.waiting) == 0 {
		return nil
	}
	head := q.waiting[0]
	if head.req.Mode == Exclusive {
		if len(q.holders) > 0 {
			return nil
		}
		return []RequestID{head.id}
	}
	for _, h := range q.holders {
		if h.req.Mode == Exclusive {
			return nil
		}
	}
	var out []RequestID
	for _, e := range q.waiting {
		if e.req.Mode != Shared {
			break
		}
		out = append(out, e.id)
	}
	return out
}

// Grant makes waiting request id a holder from now, with fence and epoch,
// and reports it as Granted. The caller has decided that this member may
// grant; the table refuses only what its own rules forbid (id is not
// among Grantable).
func (t *Table) Grant(now time.Time, id RequestID, fence, epoch uint64) (Granted, error) {
	return t.GrantFrom(now, now, id, fence, epoch)
}

// GrantFrom is Grant with the lease counted from from (at most now): an
// algorithm whose grant may have been slow on the wire counts the lease
// from before the grant was made (a central coordinator: from when the
// member sent the frame the grant answers), so that it never ends later
// than the grantor believes.
func (t *Table) GrantFrom(now, from time.Time, id RequestID, fence, epoch uint64) (Granted, error) {
	if from.After(now) {
		from = now
	}
	e, ok := t.reqs[id]
	if !ok || e.granted {
		return Granted{}, fmt.Errorf("%w: %d is not waiting", ErrUnknownRequest, id)
	}
	if !slices.Contains(t.Grantable(e.req.Lock), id) {
		return Granted{}, fmt.Errorf("mutex: request %d may not be granted now: lock %q is held, or older requests wait", id, e.req.Lock)
	}
	q := t.locks[e.req.Lock]
	q.waiting = slices.DeleteFunc(q.waiting, func(x *entry) bool { return x == e })
	t.waiting--
	q.holders = append(q.holders, e)
	e.granted, e.fence, e.epoch, e.grantAt, e.expires = true, fence, epoch, now, from.Add(e.req.Lease)
	g := Granted{ID: id, Lock: e.req.Lock, Mode: e.req.Mode, Fence: fence, Lease: e.req.Lease, Expires: e.expires, Epoch: epoch}
	t.outcomes = append(t.outcomes, g)
	t.counters["grants"]++
	return g, nil
}

// Holders returns lock's holders at this member.
func (t *Table) Holders(lock string) []RequestID {
	q := t.locks[lock]
	if q == nil {
		return nil
	}
	out := make([]RequestID, len(q.holders))
	for i, h := range q.holders {
		out[i] = h.id
	}
	return out
}

// Expiry is the latest lease end among lock's holders (zero if none): a
// lease that may still run on this member's grant.
func (t *Table) Expiry(lock string) time.Time {
	var end time.Time
	if q := t.locks[lock]; q != nil {
		for _, h := range q.holders {
			if h.expires.After(end) {
				end = h.expires
			}
		}
	}
	return end
}

// Renew checks a renewal of granted request id to lease (0: its current
// lease) at now, and marks it pending: the algorithm confirms it with
// ConfirmRenewals, or ends it with Lose. A renewal after the lease ran out
// loses the lock (Lost, Expired) and returns ErrExpired.
func (t *Table) Renew(now time.Time, id RequestID, lease time.Duration) error {
	e, ok := t.reqs[id]
	if !ok {
		return ErrUnknownRequest
	}
	if !e.granted {
		return ErrNotHolder
	}
	if !now.Before(e.expires) {
		t.lose(e, Expired)
		return ErrExpired
	}
	if lease == 0 {
		lease = e.req.Lease
	}
	if _, err := t.CheckLease(lease); err != nil {
		return err
	}
	e.renewing = lease
	return nil
}

// Renewing says whether a holder of lock waits for its renewal's
// confirmation.
func (t *Table) Renewing(lock string) bool {
	if q := t.locks[lock]; q != nil {
		for _, h := range q.holders {
			if h.renewing != 0 {
				return true
			}
		}
	}
	return false
}

// ConfirmRenewals renews every pending renewal of lock's holders from now
// (Renewed). A holder whose lease ended by now is lost instead (Lost,
// Expired), as ConfirmRenewal does.
func (t *Table) ConfirmRenewals(now time.Time, lock string) {
	q := t.locks[lock]
	if q == nil {
		return
	}
	for _, h := range slices.Clone(q.holders) {
		if h.renewing == 0 {
			continue
		}
		if !now.Before(h.expires) {
			t.lose(h, Expired)
			continue
		}
		h.req.Lease, h.renewing = h.renewing, 0
		h.expires = now.Add(h.req.Lease)
		t.counters["renewals"]++
		t.outcomes = append(t.outcomes, Renewed{ID: h.id, Lock: lock, Fence: h.fence, Lease: h.req.Lease, Expires: h.expires})
	}
}

// ConfirmRenewal renews granted request id's pending renewal with its
// lease counted from from (Renewed), as ConfirmRenewals does for a whole
// lock from now; false if id has no renewal pending. A lease that ended by
// now is lost instead (Lost, Expired), even if the core has not expired it
// yet (a frame stepped before a late Tick): an ended lease is never renewed,
// which the permission algorithms' lease ends rely on. So is a renewal
// counted from a time its lease has run out by.
func (t *Table) ConfirmRenewal(now, from time.Time, id RequestID) bool {
	e, ok := t.reqs[id]
	if !ok || !e.granted || e.renewing == 0 {
		return false
	}
	if !now.Before(e.expires) || !now.Before(from.Add(e.renewing)) {
		t.lose(e, Expired)
		return true
	}
	e.req.Lease, e.renewing = e.renewing, 0
	e.expires = from.Add(e.req.Lease)
	t.counters["renewals"]++
	t.outcomes = append(t.outcomes, Renewed{ID: id, Lock: e.req.Lock, Fence: e.fence, Lease: e.req.Lease, Expires: e.expires})
	return true
}

// Revoke ends request id, waiting or granted (Lost, reason): the one
// request, where Lose takes every holder of a lock.
func (t *Table) Revoke(id RequestID, reason LossReason) bool {
	e, ok := t.reqs[id]
	if ok {
		t.lose(e, reason)
	}
	return ok
}

// Release ends request id at now: a holder gives its lock back (Released;
// ErrExpired and Lost if the lease had run out first), a waiting request
// leaves the queue (no outcome: the client withdrew it). It returns the
// request as it was.
func (t *Table) Release(now time.Time, id RequestID) (RequestStatus, error) {
	e, ok := t.reqs[id]
	if !ok {
		return RequestStatus{}, ErrUnknownRequest
	}
	st := t.status(now, e)
	if e.granted {
		if !now.Before(e.expires) {
			t.lose(e, Expired)
			return st, ErrExpired
		}
		t.remove(e)
		t.counters["released"]++
		t.outcomes = append(t.outcomes, Released{ID: id, Lock: e.req.Lock, Fence: e.fence})
		return st, nil
	}
	t.remove(e)
	t.counters["cancelled"]++
	return st, nil
}

// Lose takes lock from every holder at this member (Lost, reason), and
// returns how many lost it.
func (t *Table) Lose(lock string, reason LossReason) int {
	q := t.locks[lock]
	if q == nil {
		return 0
	}
	hs := slices.Clone(q.holders)
	for _, h := range hs {
		t.lose(h, reason)
	}
	return len(hs)
}

// Refuse ends waiting request id: it will never be granted (Lost, reason).
func (t *Table) Refuse(id RequestID, reason LossReason) {
	if e, ok := t.reqs[id]; ok && !e.granted {
		t.lose(e, reason)
	}
}

func (t *Table) lose(e *entry, reason LossReason) {
	t.remove(e)
	t.counters["lost_"+string(reason)]++
	t.outcomes = append(t.outcomes, Lost{ID: e.id, Lock: e.req.Lock, Fence: e.fence, Reason: reason})
}

func (t *Table) remove(e *entry) {
	delete(t.reqs, e.id)
	q := t.locks[e.req.Lock]
	if e.granted {
		q.holders = slices.DeleteFunc(q.holders, func(x *entry) bool { return x == e })
	} else {
		q.waiting = slices.DeleteFunc(q.waiting, func(x *entry) bool { return x == e })
		t.waiting--
	}
	if t.byMember[e.member]--; t.byMember[e.member] <= 0 {
		delete(t.byMember, e.member)
	}
	if len(q.holders) == 0 && len(q.waiting) == 0 {
		delete(t.locks, e.req.Lock)
	}
}

// Expire takes every lock whose lease ran out by now from its holder
// (Lost, Expired), and returns the locks that lost a holder, sorted.
func (t *Table) Expire(now time.Time) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(t.locks)) {
		if t.ExpireLock(now, name) {
			out = append(out, name)
		}
	}
	return out
}

// ExpireLock is Expire for one lock; it reports whether a holder lost it.
func (t *Table) ExpireLock(now time.Time, lock string) bool {
	q := t.locks[lock]
	if q == nil {
		return false
	}
	lost := false
	for _, h := range slices.Clone(q.holders) {
		if !now.Before(h.expires) {
			t.lose(h, Expired)
			lost = true
		}
	}
	return lost
}

// Deadline is the earliest lease end among the holders (zero if none):
// when Expire next has something to do.
func (t *Table) Deadline() time.Time {
	var d time.Time
	for _, q := range t.locks {
		for _, h := range q.holders {
			if d.IsZero() || h.expires.Before(d) {
				d = h.expires
			}
		}
	}
	return d
}

// Outcomes drains the outcomes since the last call.
func (t *Table) Outcomes() []Outcome {
	out := t.outcomes
	t.outcomes = nil
	return out
}

// Lookup returns request id as of now.
func (t *Table) Lookup(now time.Time, id RequestID) (RequestStatus, bool) {
	e, ok := t.reqs[id]
	if !ok {
		return RequestStatus{}, false
	}
	return t.status(now, e), true
}

// Member returns the member request id was queued for.
func (t *Table) Member(id RequestID) (uint32, bool) {
	e, ok := t.reqs[id]
	if !ok {
		return 0, false
	}
	return e.member, true
}

// Locks returns the names of the locks with a request, sorted.
func (t *Table) Locks() []string { return slices.Sorted(maps.Keys(t.locks)) }

// Fill puts lock's holders and queue as of now into ls.
func (t *Table) Fill(now time.Time, ls *LockStatus) {
	q := t.locks[ls.Name]
	if q == nil {
		return
	}
	for _, h := range q.holders {
		ls.Holders = append(ls.Holders, t.status(now, h))
	}
	if len(q.holders) == 1 && q.holders[0].req.Mode == Exclusive {
		h := ls.Holders[0]
		ls.Holder = &h
	}
	for _, e := range q.waiting {
		ls.Queue = append(ls.Queue, t.status(now, e))
	}
}

// Counters returns the table's counters: requests, grants, renewals,
// released, cancelled, lost_REASON.
func (t *Table) Counters() map[string]uint64 { return maps.Clone(t.counters) }

// Count adds one to counter name (an algorithm's refusal that the table
// does not see, kept with the table's for one view).
func (t *Table) Count(name string) { t.counters[name]++ }

func (t *Table) status(now time.Time, e *entry) RequestStatus {
	rs := RequestStatus{ID: e.id, Lock: e.req.Lock, Mode: e.req.Mode, Client: e.req.Client, LeaseMS: e.req.Lease.Milliseconds()}
	if e.granted {
		rs.Granted, rs.Fence = true, e.fence
		rs.LeaseLeftMS = max(e.expires.Sub(now), 0).Milliseconds()
		rs.WaitedMS = e.grantAt.Sub(e.queued).Milliseconds()
	} else {
		rs.WaitedMS = now.Sub(e.queued).Milliseconds()
	}
	return rs
}

// Expires returns when granted request id's lease ends.
func (t *Table) Expires(id RequestID) (time.Time, bool) {
	e, ok := t.reqs[id]
	if !ok || !e.granted {
		return time.Time{}, false
	}
	return e.expires, true
}
