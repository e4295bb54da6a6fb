package central

import (
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
)

// Detail is the algorithm's part of mutex.Status.Detail.
type Detail struct {
	// Coordinator is the member this one follows (itself while it
	// coordinates; 0: none known), in Term.
	Coordinator uint32 `json:"coordinator"`
	Term        uint64 `json:"term"`
	Coordinates bool   `json:"coordinates"`
	// Unsaved is the term this member won but cannot coordinate: its
	// write failed, and every frame waits for one that succeeds
	// (EventCoordinatingUnsaved); Coordinates is false meanwhile.
	Unsaved     uint64 `json:"coordinating_unsaved_term,omitempty"`
	Incarnation uint32 `json:"incarnation"`
	// Ready: the coordinator may grant (its hold is over); HoldLeftMS:
	// how long it still waits (this member's own, or what the
	// coordinator's last beat said).
	Ready      bool  `json:"ready"`
	HoldLeftMS int64 `json:"hold_left_ms,omitempty"`
	// FrozenLeftMS: how long the coordinator still grants nothing for
	// the holds it did not keep, re-announced over a member's cap
	// (EventHoldsOverCap names the member). Only while coordinating.
	FrozenLeftMS int64 `json:"frozen_left_ms,omitempty"`
	// GrantsFrom: when the coordinator may grant again, its hold and any
	// stop for holds not kept together (this member's clock: its own
	// while it coordinates, else what the coordinator's last beat said);
	// zero when it grants.
	GrantsFrom time.Time `json:"grants_from,omitzero"`
	// Supporters is how many members (this one included) answered a beat
	// within the confirm window; Joined how many synced in the term. Only
	// while coordinating.
	Supporters int `json:"supporters,omitempty"`
	Joined     int `json:"joined,omitempty"`
	Majority   int `json:"majority"`
	// Election is the election's own view.
	Election elect.Status `json:"election"`
	// Variant is "central" or "tokenask"; Vector, in the token-asking
	// variant, the stamp of this member's latest request (what a program
	// message sent now carries: mutexd vector).
	// VectorUnsaved: this member has a vector, withheld (Vector is empty,
	// mutexd vector answers 503) until the incarnation it carries is on
	// disk (ErrVectorUnsaved).
	Variant       string `json:"variant"`
	Vector        string `json:"vector,omitempty"`
	VectorUnsaved bool   `json:"vector_unsaved,omitempty"`
	// RenewalsUnanswered is how many of this member's clients' leases
	// have a renewal unconfirmed for a beat or more
	// (EventRenewalUnanswered says why it may be).
	RenewalsUnanswered int `json:"renewals_unanswered,omitempty"`
	// LastSkip (the token-asking variant) is the latest request this
	// member granted without a predecessor, at LastSkipAt, in short:
	// which request, which predecessor, and what the coordinator knew of
	// it ("never heard of", "never made", "dropped when its member fell
	// silent", "granted, never confirmed"); the WARN tokenask_unknown_predecessor
	// logged then says the rest.
	LastSkip   string    `json:"last_causal_skip,omitempty"`
	LastSkipAt time.Time `json:"last_causal_skip_at,omitzero"`
}

// LockDetail is the algorithm's part of a mutex.LockStatus.Detail, from
// the coordinator's queue (only while coordinating).
type LockDetail struct {
	// Holders and Waiting are the members holding and waiting, in queue
	// order.
	Holders []uint32 `json:"holders,omitempty"`
	Waiting []uint32 `json:"waiting,omitempty"`
	// WaitingFor (the token-asking variant) lists each waiting request
	// held back by a causal predecessor not yet served, as
	// "member:inc.seq<member:inc.seq".
	WaitingFor []string `json:"waiting_for,omitempty"`
}

// guarantees: what the algorithm promises (doc.go argues each).
var guarantees = mutex.Guarantees{
	Survives:  []mutex.Fault{mutex.Crash, mutex.Pause, mutex.Partition, mutex.Loss},
	Messages:  "3 (request, grant, release; 0 at the coordinator itself); a renewal 2",
	SyncDelay: "2 (release to the coordinator, grant to the next)",
	Shared:    true,
	Protection: "the fence: strictly increasing per lock across coordinators and restarts (term round.rank<<32 | grants in the term); " +
		"a new coordinator waits out every lease an older one may have granted unless every member re-announced its grants",
}

// Guarantees implements mutex.Algorithm.
func (c *Core) Guarantees() mutex.Guarantees {
	if c.ta != nil {
		return tokenAskGuarantees
	}
	return guarantees
}

// Status implements core.Core.
func (c *Core) Status() any { return c.Report() }

// allCounters is the core's counters, its request table's and its bugs',
// one view.
func (c *Core) allCounters() map[string]uint64 {
	return mutexcount.Counters(c.reqs, c.counters, &c.bugs)
}

// Report returns the status (mutex.Algorithm); Detail is a Detail, each
// lock's a LockDetail while this member coordinates.
func (c *Core) Report() mutex.Status {
	d := Detail{Coordinator: c.fol.leader, Term: c.fol.term, Incarnation: c.inc, Majority: c.majority, Election: c.el.Report(),
		Variant: c.cfg.Variant.String()}
	if c.ta != nil && c.ta.last.Len() > 0 {
		if v, err := c.Vector(); err == nil {
			d.Vector = VectorText(v)
		} else {
			d.VectorUnsaved = true // what Vector refuses, status does not show
		}
	}
	d.RenewalsUnanswered = c.renewalsUnanswered()
	d.LastSkip, d.LastSkipAt = c.lastSkip, c.lastSkipAt
	k := c.co
	if k != nil && c.unsavedTerm == k.term {
		d.Unsaved = k.term
		k = nil
	}
	if k != nil {
		d.Coordinates, d.Ready = true, k.ready
		d.FrozenLeftMS = max(k.frozenUntil.Sub(c.now), 0).Milliseconds()
		d.GrantsFrom, _ = c.grantsFrom()
		if !k.ready {
			d.HoldLeftMS = c.cfg.Hold().Milliseconds()
			if !k.majorityAt.IsZero() {
				d.HoldLeftMS = max(k.holdUntil.Sub(c.now), 0).Milliseconds()
			}
		}
		from := c.now.Add(-c.cfg.ConfirmWindow)
		for id, p := range k.peers {
			if id == c.self || !p.support.Before(from) {
				d.Supporters++
			}
			if p.joined {
				d.Joined++
			}
		}
	} else if c.following() {
		// What the last beat said, counted down since.
		if at := c.fol.holdSaid.Add(time.Duration(c.fol.holdMS) * time.Millisecond); c.fol.holdMS > 0 && at.After(c.now) {
			d.HoldLeftMS, d.GrantsFrom = at.Sub(c.now).Milliseconds(), at
		}
		d.Ready = d.HoldLeftMS == 0
	}
	st := mutex.Status{Algorithm: c.cfg.Variant.String(), ID: c.self, Counters: c.allCounters(), Guarantees: c.Guarantees(), Detail: d}
	for _, m := range c.members {
		ms := mutex.MemberStatus{ID: m, Self: m == c.self, Alive: true, State: mutex.MemberAlive}
		switch {
		case m == c.self:
			ms.State = mutex.MemberSelf
		case k != nil:
			p := k.peers[m]
			heard := k.start
			if p != nil && p.heard.After(heard) {
				heard = p.heard
			}
			ms.HeardAgoMS = c.now.Sub(heard).Milliseconds()
			if c.now.Sub(heard) >= c.cfg.DeadAfter {
				ms.Alive, ms.State = false, mutex.MemberDown
			}
		}
		st.Members = append(st.Members, ms)
	}
	names := c.reqs.Locks()
	if k != nil {
		names = slices.Compact(slices.Sorted(slices.Values(append(names, slices.Collect(maps.Keys(k.queues))...))))
	}
	for _, name := range names {
		ls := mutex.LockStatus{Name: name}
		c.reqs.Fill(c.now, &ls)
		c.unsaved.Mark(&ls)
		for _, h := range ls.Holders {
			ls.Fence = max(ls.Fence, h.Fence)
		}
		if k != nil {
			if q := k.queues[name]; q != nil {
				var ld LockDetail
				for _, h := range q.holders {
					ld.Holders = append(ld.Holders, h.member)
					ls.Fence = max(ls.Fence, h.fence)
				}
				for _, w := range q.waiting {
					ld.Waiting = append(ld.Waiting, w.member)
				}
				ld.WaitingFor = c.waitingFor(q)
				ls.Detail = ld
			}
		}
		st.Locks = append(st.Locks, ls)
	}
	return st
}
