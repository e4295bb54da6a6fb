package maekawa

import (
	"maps"
	"slices"

	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
)

// Names of the algorithms this core runs (mutexd run --algorithm NAME).
const (
	Name         = "maekawa"
	MajorityName = "majority"
)

// Stats are the core's message counts, for the messages-per-entry
// figures: frames this member sent by op (frames to itself are not
// counted: they cost nothing), and what its voter and requester did.
type Stats struct {
	Sent [16]uint64 // by wire.VoteOp
	// Entries: grants to this member's clients; Attempts: rounds of
	// requests sent (retries included).
	Entries, Attempts uint64
	// Direct: entries on a fence every voter recorded as it voted (no
	// commit round); Partial: entries that committed the fence only at
	// the voters that had recorded less.
	Direct, Partial uint64
	// Voter side: requests seen, votes given, denied (majority), failed
	// and inquiries sent and relinquishes received (Maekawa).
	Requests, Votes, Denied, Failed, Inquired, Relinquished uint64
	// Relinquishes: votes this member's requests gave back.
	Relinquishes uint64
}

// SentTotal is every vote frame this member sent.
func (s Stats) SentTotal() uint64 {
	var n uint64
	for _, v := range s.Sent {
		n += v
	}
	return n
}

// Stats returns the message counts.
func (c *Core) Stats() Stats { return c.stats }

// What a voter's votes become across a restart (Detail.Votes).
const (
	VotesWait    = "memory, wait a lease after a restart"
	VotesForget  = "memory, forgotten on restart"
	VotesPersist = "on disk"
)

// Detail is the voting core's part of mutex.Status.Detail.
type Detail struct {
	// Maekawa: the grid and this member's voting set (the cross it asks
	// now, live members only). Majority: Quorum of Members.
	Grid      string   `json:"grid,omitempty"`
	VotingSet []uint32 `json:"voting_set,omitempty"`
	Quorum    int      `json:"quorum,omitempty"`
	// Votes says what a restart does to this voter's votes: VotesWait,
	// VotesForget or VotesPersist.
	Votes string `json:"votes"`
	// Era is this voter's fence era (on disk; fences are era<<32 | a
	// count); Floor the fence every lock not in its table starts from.
	Era   uint32 `json:"era"`
	Floor uint64 `json:"floor,omitempty"`
	// HoldLeftMS: restarted, it votes on nothing for this long yet.
	HoldLeftMS int64 `json:"hold_left_ms,omitempty"`
	// SlowBeats: members whose heartbeats are slower than this member's
	// (an older mutexd, another --heartbeat), each given a longer silence
	// before it is taken for down.
	SlowBeats []SlowBeat `json:"slow_heartbeats,omitempty"`
}

// SlowBeat is a member beating slower than this one: every IntervalMS,
// taken for down after DownAfterMS of silence.
type SlowBeat struct {
	ID          uint32 `json:"id"`
	IntervalMS  int64  `json:"interval_ms"`
	DownAfterMS int64  `json:"down_after_ms"`
}

// LockDetail is one lock's part: this member as a voter (whom it voted
// for, who waits) and as a requester (its request's phase).
type LockDetail struct {
	VotedFor []uint32 `json:"voted_for,omitempty"`
	Queue    []uint32 `json:"queue,omitempty"`
	Phase    string   `json:"phase,omitempty"`
	Votes    int      `json:"votes,omitempty"`
	Need     int      `json:"need,omitempty"`
	Tries    int      `json:"tries,omitempty"`
}

// Status implements core.Core.
func (c *Core) Status() any { return c.Report() }

// allCounters is the core's counters, its request table's and its bugs',
// one view.
func (c *Core) allCounters() map[string]uint64 {
	return mutexcount.Counters(c.reqs, c.counters, &c.bugs)
}

// Report returns the status: Detail is a Detail, each lock's a LockDetail.
func (c *Core) Report() mutex.Status {
	d := Detail{Votes: VotesWait, Era: c.era, Floor: c.floor, HoldLeftMS: max(c.holdUntil.Sub(c.now), 0).Milliseconds()}
	switch {
	case c.cfg.Forgetful:
		d.Votes = VotesForget
	case c.cfg.PersistVotes:
		d.Votes = VotesPersist
	}
	if c.majority() {
		d.Quorum = c.cfg.Quorum
	} else {
		d.Grid = itoa(c.grid.Rows()) + "x" + itoa(c.grid.Cols())
		d.VotingSet, _ = c.voters()
	}
	for _, m := range slices.Sorted(maps.Keys(c.slow)) {
		d.SlowBeats = append(d.SlowBeats, SlowBeat{ID: m, IntervalMS: c.slow[m].Milliseconds(), DownAfterMS: c.det.Timeout(m).Milliseconds()})
	}
	st := mutex.Status{Algorithm: c.name, ID: c.self, Counters: c.allCounters(), Guarantees: c.Guarantees(), Detail: d}
	for _, m := range c.cfg.Members {
		ms := mutex.MemberStatus{ID: m, Self: m == c.self, Alive: c.alive(m), State: mutex.MemberAlive}
		switch {
		case m == c.self:
			ms.State = mutex.MemberSelf
		case !c.alive(m):
			ms.State = mutex.MemberDown
		}
		if c.det != nil {
			if v, ok := c.det.Member(m); ok && !v.LastHeard.IsZero() {
				ms.HeardAgoMS = c.now.Sub(v.LastHeard).Milliseconds()
			}
		}
		st.Members = append(st.Members, ms)
	}
	names := map[string]bool{}
	for _, n := range c.reqs.Locks() {
		names[n] = true
	}
	for n, l := range c.votes {
		if !l.idle() {
			names[n] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		ls := mutex.LockStatus{Name: n}
		c.reqs.Fill(c.now, &ls)
		c.unsaved.Mark(&ls)
		var ld LockDetail
		if l := c.votes[n]; l != nil {
			ls.Fence = l.fence
			for _, g := range l.grants {
				ld.VotedFor = append(ld.VotedFor, g.from)
			}
			for _, q := range l.queue {
				ld.Queue = append(ld.Queue, q.from)
			}
		}
		if a := c.asks[n]; a != nil {
			ld.Phase, ld.Votes, ld.Need, ld.Tries = a.phase.String(), len(a.locked), a.need, a.tries
			ls.Fence = max(ls.Fence, a.fence)
		}
		ls.Detail = ld
		st.Locks = append(st.Locks, ls)
	}
	return st
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Guarantees: what each algorithm promises (doc.go argues each).
var maekawaGuarantees = mutex.Guarantees{
	Survives: []mutex.Fault{mutex.Crash, mutex.Pause, mutex.Partition, mutex.Loss},
	Messages: "3(K-1) (K = |cross| = about 2 sqrt(N)): request, locked, release, each voter recording the fence as it votes; " +
		"+2 (a commit and its ack) for each voter that recorded less; up to 7(K-1) with failed, inquire, relinquish and the new locked",
	SyncDelay: "2 (release to the shared voter, its locked to the next), and a commit round where a voter recorded less",
	Shared:    false,
	Protection: "the fence: above the highest its cross's voters know, recorded at all of them before the grant; " +
		"any two crosses share a voter, so fences grow strictly. Survives a crash or partition while a whole row " +
		"and a whole column of the grid are reachable (a majority is neither needed nor enough: at 5 members, " +
		"6 of the 10 splits 3/2 leave no side granting until the heal); a holder that pauses past its lease is fenced out",
}

func majorityGuarantees(forgetful bool) mutex.Guarantees {
	g := mutex.Guarantees{
		Survives:  []mutex.Fault{mutex.Crash, mutex.Pause, mutex.Partition, mutex.Loss},
		Messages:  "3(n-1): request, answer and release at the n-1 others; + commit and ack at each of the m-1 that recorded less, at all m-1 for a reader (readers retry when denied)",
		SyncDelay: "2 (release to a coordinator, its locked to the next in its queue), and a commit round where one recorded less",
		Shared:    true,
		Protection: "the fence: above the highest its m coordinators know, recorded at m of them before the grant; " +
			"any two majorities meet, so fences grow strictly, and a restart starts a new era above them. " +
			"A restarted coordinator, which has forgotten its votes, votes on nothing for a whole lease",
	}
	if forgetful {
		g.Survives = []mutex.Fault{mutex.Pause, mutex.Partition, mutex.Loss}
		g.Protection = "none against restarts: votes are forgotten and given again at once (the course notes' P_v experiment)"
	}
	return g
}
