package tokenring

import (
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
)

// Name is the algorithm's name (mutexd run --algorithm tokenring).
const Name = "tokenring"

// Detail is the ring's part of mutex.Status.Detail.
type Detail struct {
	Majority int `json:"majority"`
	// Floor is the generation promised for every lock not in the table
	// (promises of reclaimed entries); GenerationCredit, how many rounds
	// above what this member knows a frame may carry now (pkg/epoch).
	Floor            uint64 `json:"floor,omitempty"`
	GenerationCredit uint32 `json:"generation_credit"`
}

// LockDetail is the ring's part of a mutex.LockStatus.Detail.
type LockDetail struct {
	// Token: "here", "in_flight" (sent, not acknowledged) or "" (elsewhere).
	Token      string   `json:"token,omitempty"`
	InFlightTo uint32   `json:"in_flight_to,omitempty"`
	Generation uint64   `json:"generation,omitempty"` // of the token here or in flight
	Promised   uint64   `json:"promised"`             // the highest generation known
	HoldLeftMS int64    `json:"hold_left_ms,omitempty"`
	Wants      []uint32 `json:"wants,omitempty"`   // members known to wait for it
	Looking    string   `json:"looking,omitempty"` // "locate" or "prepare" while searching
}

// guarantees: what the ring promises (doc.go argues each).
var guarantees = mutex.Guarantees{
	Survives:  []mutex.Fault{mutex.Crash, mutex.Pause, mutex.Partition, mutex.Loss},
	Messages:  "0 (token here) to N+2 (a rotation, its acks and a majority check); 1 token + 1 ack + 1 vouch per handoff",
	SyncDelay: "1 to N-1 token passes (each a frame and its ack)",
	Shared:    false,
	Protection: "the fence: strictly increasing per lock across the cluster and restarts (round<<40 | grants); " +
		"a regenerated token waits out every lease the old one may have granted",
}

// Guarantees implements mutex.Algorithm.
func (c *Core) Guarantees() mutex.Guarantees { return guarantees }

// Status implements core.Core.
func (c *Core) Status() any { return c.Report() }

// allCounters is the core's counters, its request table's and its bugs',
// one view.
func (c *Core) allCounters() map[string]uint64 {
	return mutexcount.Counters(c.reqs, c.counters, &c.bugs)
}

// Report returns the status (mutex.Algorithm); Detail is a Detail, each
// lock's a LockDetail.
func (c *Core) Report() mutex.Status {
	st := mutex.Status{Algorithm: Name, ID: c.self, Counters: c.allCounters(), Guarantees: guarantees,
		Detail: Detail{Majority: c.majority, Floor: c.floor, GenerationCredit: c.guard.Credit(c.limit, c.nanos())}}
	for _, m := range c.cfg.Members {
		ms := mutex.MemberStatus{ID: m, Self: m == c.self, Alive: m == c.self || !c.down(m), State: mutex.MemberAlive}
		switch {
		case m == c.self:
			ms.State = mutex.MemberSelf
		case c.down(m):
			ms.State = mutex.MemberDown
		case c.skipped[m]:
			ms.State = mutex.MemberSkipped
		}
		if v, ok := c.peerView(m); ok {
			ms.HeardAgoMS = c.now.Sub(v.LastHeard).Milliseconds()
		}
		st.Members = append(st.Members, ms)
	}
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		st.Locks = append(st.Locks, c.lockStatus(c.locks[name]))
	}
	return st
}

func (c *Core) lockStatus(l *lock) mutex.LockStatus {
	ls := mutex.LockStatus{Name: l.name, Fence: l.maxFence}
	d := LockDetail{Promised: l.promised, Wants: c.others(l)}
	switch {
	case l.tok != nil:
		d.Token, d.Generation = "here", l.tok.gen
		if left := l.tok.holdUntil.Sub(c.now); left > 0 {
			d.HoldLeftMS = left.Milliseconds()
		}
	case l.inFlight() != nil:
		f := l.inFlight()
		d.Token, d.Generation, d.InFlightTo = "in_flight", f.gen, f.to
	}
	switch {
	case l.prepare != nil:
		d.Looking = "prepare"
	case l.locate != nil:
		d.Looking = "locate"
	}
	ls.Detail = d
	c.reqs.Fill(c.now, &ls)
	c.unsaved.Mark(&ls)
	return ls
}

// Expires returns the local time at which granted request id's lease ends.
func (c *Core) Expires(id mutex.RequestID) (time.Time, bool) { return c.reqs.Expires(id) }

// TokenGeneration returns the generation of lock name's token if this
// member holds it (not counting one in flight).
func (c *Core) TokenGeneration(name string) (uint64, bool) {
	if l, ok := c.locks[name]; ok && l.tok != nil {
		return l.tok.gen, true
	}
	return 0, false
}

// peerView is the detector's view of member m, its silence counted from the
// core's start when it was never heard; false for this member, and before
// the first Tick or Step.
func (c *Core) peerView(m uint32) (liveness.MemberView, bool) {
	if c.det == nil {
		return liveness.MemberView{}, false
	}
	v, ok := c.det.Member(m)
	if ok && v.LastHeard.IsZero() {
		v.LastHeard = c.begun
	}
	return v, ok
}
