package tokenring

import (
	"maps"
	"slices"
	"time"
)

// Status is what `mutexd status --json` shows of the ring.
type Status struct {
	ID       uint32 `json:"id"`
	Majority int    `json:"majority"`
	// Floor is the generation promised for every lock not in the table
	// (promises of reclaimed entries); GenerationCredit, how many rounds
	// above what this member knows a frame may carry now (pkg/epoch).
	Floor            uint64            `json:"floor,omitempty"`
	GenerationCredit uint32            `json:"generation_credit"`
	Members          []MemberStatus    `json:"members"`
	Locks            []LockStatus      `json:"locks"`
	Counters         map[string]uint64 `json:"counters"`
}

// MemberStatus is one ring member as this member sees it.
type MemberStatus struct {
	ID      uint32 `json:"id"`
	Self    bool   `json:"self,omitempty"`
	Alive   bool   `json:"alive"`
	Skipped bool   `json:"skipped"` // bypassed since it failed to acknowledge a token
	// HeardAgoMS is how long ago it was last heard from.
	HeardAgoMS int64 `json:"heard_ago_ms"`
}

// LockStatus is one lock at this member.
type LockStatus struct {
	Name string `json:"name"`
	// Token: "here", "in_flight" (sent, not acknowledged) or "" (elsewhere).
	Token      string          `json:"token,omitempty"`
	InFlightTo uint32          `json:"in_flight_to,omitempty"`
	Generation uint64          `json:"generation,omitempty"` // of the token here or in flight
	Promised   uint64          `json:"promised"`             // the highest generation known
	Fence      uint64          `json:"fence"`                // the highest fence known
	HoldLeftMS int64           `json:"hold_left_ms,omitempty"`
	Wants      []uint32        `json:"wants,omitempty"` // members known to wait for it
	Holder     *RequestStatus  `json:"holder,omitempty"`
	Queue      []RequestStatus `json:"queue,omitempty"`
	Looking    string          `json:"looking,omitempty"` // "locate" or "prepare" while searching
}

// RequestStatus is one request at this member.
type RequestStatus struct {
	ID          uint64 `json:"id"`
	Lock        string `json:"lock"`
	Client      string `json:"client,omitempty"`
	Granted     bool   `json:"granted"`
	Fence       uint64 `json:"fence,omitempty"`
	LeaseMS     int64  `json:"lease_ms"`
	LeaseLeftMS int64  `json:"lease_left_ms,omitempty"`
	WaitedMS    int64  `json:"waited_ms"`
}

// Status implements core.Core.
func (c *Core) Status() any { return c.Report() }

// Report returns the status.
func (c *Core) Report() Status {
	st := Status{ID: c.self, Majority: c.majority, Counters: maps.Clone(c.counters),
		Floor: c.floor, GenerationCredit: c.guard.Credit(c.limit, c.nanos())}
	for _, m := range c.cfg.Members {
		ms := MemberStatus{ID: m, Self: m == c.self, Alive: m == c.self || !c.down[m], Skipped: c.skipped[m]}
		if m != c.self {
			ms.HeardAgoMS = c.now.Sub(c.lastHeard[m]).Milliseconds()
		}
		st.Members = append(st.Members, ms)
	}
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		st.Locks = append(st.Locks, c.lockStatus(c.locks[name]))
	}
	return st
}

func (c *Core) lockStatus(l *lock) LockStatus {
	ls := LockStatus{Name: l.name, Promised: l.promised, Fence: l.maxFence, Wants: c.others(l)}
	switch {
	case l.tok != nil:
		ls.Token, ls.Generation = "here", l.tok.gen
		if left := l.tok.holdUntil.Sub(c.now); left > 0 {
			ls.HoldLeftMS = left.Milliseconds()
		}
	case l.inflight != nil:
		ls.Token, ls.Generation, ls.InFlightTo = "in_flight", l.inflight.gen, l.inflight.to
	}
	switch {
	case l.prepare != nil:
		ls.Looking = "prepare"
	case l.locate != nil:
		ls.Looking = "locate"
	}
	if l.holder != nil {
		r := c.requestStatus(l.holder)
		ls.Holder = &r
	}
	for _, r := range l.queue {
		ls.Queue = append(ls.Queue, c.requestStatus(r))
	}
	return ls
}

func (c *Core) requestStatus(r *request) RequestStatus {
	rs := RequestStatus{ID: r.id, Lock: r.lock.name, Client: r.client, LeaseMS: r.lease.Milliseconds()}
	if r.lock.holder == r {
		rs.Granted, rs.Fence = true, r.fence
		rs.LeaseLeftMS = max(r.expires.Sub(c.now), 0).Milliseconds()
		rs.WaitedMS = r.granted.Sub(r.queued).Milliseconds()
	} else {
		rs.WaitedMS = c.now.Sub(r.queued).Milliseconds()
	}
	return rs
}

// Request returns the status of request id, if it exists.
func (c *Core) Request(id uint64) (RequestStatus, bool) {
	r, ok := c.requests[id]
	if !ok {
		return RequestStatus{}, false
	}
	return c.requestStatus(r), true
}

// Expires returns the local time at which granted request id's lease ends.
func (c *Core) Expires(id uint64) (time.Time, bool) {
	r, ok := c.requests[id]
	if !ok || r.lock.holder != r {
		return time.Time{}, false
	}
	return r.expires, true
}

// TokenGeneration returns the generation of lock name's token if this
// member holds it (not counting one in flight).
func (c *Core) TokenGeneration(name string) (uint64, bool) {
	if l, ok := c.locks[name]; ok && l.tok != nil {
		return l.tok.gen, true
	}
	return 0, false
}
