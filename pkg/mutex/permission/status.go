package permission

import (
	"maps"
	"slices"
	"strconv"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
)

// Guarantees returns what variant v promises (the package doc argues each).
func Guarantees(v Variant) mutex.Guarantees {
	g := mutex.Guarantees{
		// Partition as mutex.Partition means it: a split into a majority
		// side, which goes on, and a minority, which grants nothing (a
		// majority must answer and be heard; a holder cut off stops
		// renewing before the others give it up). And a link broken
		// between two members that both still hear a majority: neither
		// gives the other up (a member is given up only when a majority
		// has been silent from it), and frames go around the link through
		// relays (package doc, "Links").
		Survives: []mutex.Fault{mutex.Crash, mutex.Pause, mutex.Partition, mutex.Loss},
		Shared:   false,
		Protection: "the fence, (Lamport time, requester) of the request: strictly increasing per lock across the cluster " +
			"and restarts; a member cut off renews nothing and its lease ends before the others stop waiting for it, " +
			"which they do only when a majority has been silent from it",
	}
	switch v {
	case RicartAgrawala:
		g.Messages = "2(N-1): N-1 requests, N-1 replies (a reply deferred to the holder's exit)"
		g.SyncDelay = "1 (the holder's deferred reply)"
	case Lamport:
		g.Messages = "3(N-1): N-1 requests, N-1 acknowledgements, N-1 releases"
		g.SyncDelay = "1 (the holder's release)"
	case Bakery:
		g.Messages = "6(N-1): three reads of every other member (num, choosing, num against the ticket), a request and a reply each"
		g.SyncDelay = "1 (the holder's deferred reply to the ticket read)"
		g.Protection = "the fence, (ticket, requester): the ticket is a Lamport time above every num read, " +
			"so fences increase strictly per lock across the cluster and restarts; otherwise as Ricart-Agrawala"
	}
	return g
}

// Guarantees implements mutex.Algorithm.
func (c *Core) Guarantees() mutex.Guarantees { return Guarantees(c.cfg.Variant) }

// Detail is the permission cores' part of mutex.Status.Detail.
type Detail struct {
	Majority    int    `json:"majority"`
	Incarnation uint32 `json:"incarnation"`
	Lamport     uint64 `json:"lamport"`
	// RestartHoldMS is how long this restarted member still answers
	// nobody.
	RestartHoldMS int64 `json:"restart_hold_ms,omitempty"`
	// SuspectAfterMS: the silence after which a member is no longer
	// waited for; DeadAfterMS: the same for a member that may hold a lock
	// by this member's leave.
	SuspectAfterMS int64 `json:"suspect_after_ms"`
	DeadAfterMS    int64 `json:"dead_after_ms"`
	// Lent: the members that may hold a lock by this member's leave.
	Lent []uint32 `json:"lent,omitempty"`
	// Relayed: the members this member's frames also reach through relays
	// (none of theirs came directly for RelayAfter, or they lack this
	// member's), with what it knows of each link; Silent: members silent
	// here for their timeout but not given up (others still hear them,
	// or too few answered).
	Relayed []LinkDetail `json:"relayed,omitempty"`
	Silent  []LinkDetail `json:"silent,omitempty"`
	// LeaseEnds: "bounded" (a majority acknowledged an announcement of
	// this member's lease end: it renews only up to an end a majority
	// acknowledged, and a waiter may stop waiting for it at that end),
	// "unbounded" (not yet: a majority runs an older mutexd, or none
	// answered yet; it renews as before, and is waited for DeadAfter),
	// or "lamport" (never: Lamport's queue waits DeadAfter). AnnouncedEndMS:
	// how long until the end it last announced (0: passed).
	LeaseEnds      string `json:"lease_ends"`
	AnnouncedEndMS int64  `json:"announced_end_ms,omitempty"`
	// CutOff: this member heard no majority for RejoinAfter (counting
	// none of the frames its loop read late): it voids the answers it
	// holds, renews nothing, and rejoins once it hears one again.
	CutOff bool `json:"cut_off,omitempty"`
	// LoopLateMS: how late this host's loop last sent a heartbeat, when
	// more than Margin late (EventLoopLate), LoopLateAgoMS how long ago:
	// frames read meanwhile did not count as hearing a majority.
	LoopLateMS    int64 `json:"loop_late_ms,omitempty"`
	LoopLateAgoMS int64 `json:"loop_late_ago_ms,omitempty"`
	// Older: the members taken for a build older than the extended
	// heartbeat (EventOlderBuild): this member's heartbeats go to them
	// short, their frames count by its heartbeats alone (no
	// acknowledgement caps them), and when they are a majority of the
	// others a renewal waits for their next heartbeat.
	Older []uint32 `json:"older,omitempty"`
}

// LinkDetail is what a member knows of its link to another.
type LinkDetail struct {
	Member uint32 `json:"member"`
	// DirectAgoMS: how long since a frame of it came directly (since the
	// start if none did); HeardAgoMS: by any path.
	DirectAgoMS int64 `json:"direct_ago_ms"`
	HeardAgoMS  int64 `json:"heard_ago_ms"`
	// Via: the members frames to it go through.
	Via []uint32 `json:"via,omitempty"`
	// HeardBy: the members whose last answer said they heard it more
	// recently than this member's timeout for it (Silent only).
	HeardBy []uint32 `json:"heard_by,omitempty"`
}

// LockDetail is one lock's part of mutex.LockStatus.Detail.
type LockDetail struct {
	// Stamp is this member's request's Lamport time (0: none); Granted
	// whether it holds.
	Stamp   uint64 `json:"stamp,omitempty"`
	Granted bool   `json:"granted,omitempty"`
	// Phase (the bakery): the read this member's request is at,
	// "doorway" (Stamp is the read's), "choosing" or "ticket" (Stamp is
	// the ticket).
	Phase string `json:"phase,omitempty"`
	// Answered: the members whose answer to Stamp is in.
	Answered []uint32 `json:"answered,omitempty"`
	// Deferred (Ricart-Agrawala): requests this member answers when its
	// own ends; Queue (Lamport): the other members' requests it knows.
	Deferred []Entry `json:"deferred,omitempty"`
	Queue    []Entry `json:"queue,omitempty"`
}

// Entry is another member's request.
type Entry struct {
	Member uint32 `json:"member"`
	Stamp  uint64 `json:"stamp"`
}

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
	d := Detail{Majority: c.majority, Incarnation: c.inc, Lamport: c.lamport.Now(), SuspectAfterMS: c.cfg.SuspectAfter.Milliseconds(), DeadAfterMS: c.cfg.DeadAfter.Milliseconds()}
	for _, m := range c.others() {
		p := c.peers[m]
		if p.lent > 0 {
			d.Lent = append(d.Lent, m)
		}
		ld := LinkDetail{Member: m, DirectAgoMS: c.directSilence(m).Milliseconds(), HeardAgoMS: c.silenceAgo(m).Milliseconds()}
		if c.viaRelay(m) {
			ld.Via = c.relaysFor(m)
			d.Relayed = append(d.Relayed, ld)
		}
		if c.silent(m) {
			ld.Via = nil
			ld.HeardBy, _ = c.hearing(m)
			d.Silent = append(d.Silent, ld)
		}
	}
	if c.inHold() {
		d.RestartHoldMS = c.holdUntil.Sub(c.now).Milliseconds()
	}
	switch {
	case c.cfg.Variant == Lamport:
		d.LeaseEnds = "lamport"
	case c.bounded:
		d.LeaseEnds = "bounded"
	default:
		d.LeaseEnds = "unbounded"
	}
	d.AnnouncedEndMS = max(c.annEnd.Sub(c.now).Milliseconds(), 0)
	d.CutOff = c.cutOff
	d.Older = c.olders()
	if !c.lateAt.IsZero() {
		d.LoopLateMS, d.LoopLateAgoMS = c.lateBy.Milliseconds(), c.now.Sub(c.lateAt).Milliseconds()
	}
	st := mutex.Status{Algorithm: c.cfg.Variant.String(), ID: c.self, Counters: c.allCounters(), Guarantees: c.Guarantees(), Detail: d}
	for _, m := range c.cfg.Members {
		ms := mutex.MemberStatus{ID: m, Self: m == c.self, Alive: m == c.self || !c.givenUp(m), State: mutex.MemberAlive}
		switch {
		case m == c.self:
			ms.State = mutex.MemberSelf
		case c.givenUp(m):
			ms.State = mutex.MemberDown
		case c.silent(m):
			ms.State = mutex.MemberSilent
		case c.unheard(m) && c.relayedRecently(m):
			ms.State = mutex.MemberRelayed
		}
		if p := c.peers[m]; p != nil {
			heard := p.heardAt
			if heard.IsZero() {
				heard = c.begun
			}
			ms.HeardAgoMS = c.now.Sub(heard).Milliseconds()
		}
		st.Members = append(st.Members, ms)
	}
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		l := c.locks[name]
		ls := mutex.LockStatus{Name: name, Fence: l.known}
		ld := LockDetail{Stamp: l.stamp, Granted: l.granted, Phase: l.phase.String()}
		for _, m := range slices.Sorted(maps.Keys(l.got)) {
			if l.got[m] {
				ld.Answered = append(ld.Answered, m)
			}
		}
		for _, m := range slices.Sorted(maps.Keys(l.deferred)) {
			ld.Deferred = append(ld.Deferred, Entry{Member: m, Stamp: l.deferred[m].stamp})
		}
		for _, m := range slices.Sorted(maps.Keys(l.want)) {
			if w := l.want[m]; w != 0 {
				ld.Queue = append(ld.Queue, Entry{Member: m, Stamp: w})
			}
		}
		slices.SortFunc(ld.Queue, func(a, b Entry) int {
			if before(a.Stamp, a.Member, b.Stamp, b.Member) {
				return -1
			}
			return 1
		})
		ls.Detail = ld
		c.reqs.Fill(c.now, &ls)
		c.unsaved.Mark(&ls)
		st.Locks = append(st.Locks, ls)
	}
	return st
}

var _ core.MetricsWriter = (*Core)(nil)

// maxFenceSeries bounds the per-lock fence series.
const maxFenceSeries = 256

// Metrics exports the core's state and counters. Per-lock samples only for
// locks this member's clients use, at most maxFenceSeries.
func (c *Core) Metrics(m *core.MetricSet) {
	alive := 1
	for _, id := range c.others() {
		if !c.givenUp(id) {
			alive++
		}
	}
	m.Gauge("synclab_mutex_members", "Members, this one included.", float64(len(c.cfg.Members)))
	m.Gauge("synclab_mutex_members_alive", "Members believed alive (waited for), this one included.", float64(alive))
	m.Gauge("synclab_mutex_incarnation", "This member's incarnation.", float64(c.inc))
	held, waiting := 0, 0
	n := 0
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		if c.reqs.Held(name) {
			held++
		}
		waiting += c.reqs.Waiting(name)
		if l := c.locks[name]; l.stamp != 0 && n < maxFenceSeries {
			m.Gauge("synclab_mutex_fence", "Highest fence this member knows of, per lock it asks for.", float64(l.known),
				core.Label{Name: "lock", Value: name})
			n++
		}
	}
	m.Gauge("synclab_mutex_locks", "Locks in this member's table.", float64(len(c.locks)))
	m.Gauge("synclab_mutex_locks_held", "Locks granted to a client of this member now.", float64(held))
	m.Gauge("synclab_mutex_queue_length", "Requests waiting at this member, all locks.", float64(waiting))
	counters := c.allCounters()
	cnt := func(k string) float64 { return float64(counters[k]) }
	mutexcount.RequestMetrics(m, counters)
	m.Counter("synclab_mutex_requests_sent_total", "Requests stamped and sent to every member.", cnt("requests_sent"))
	m.Counter("synclab_mutex_requests_resent_total", "Requests sent again to a member whose answer was missing.", cnt("requests_resent"))
	m.Counter("synclab_mutex_requeues_sent_total", "Lamport requests sent with this member's release of the lock in one frame.", cnt("requeues_sent"))
	m.Counter("synclab_mutex_requests_reissued_total", "Requests stamped anew: their fence was below a known one.", cnt("requests_reissued"))
	m.Counter("synclab_mutex_rejoins_total", "Members seen back with a new incarnation.", cnt("rejoins"))
	m.Counter("synclab_mutex_stalls_total", "Stalls of this member's own loop (each a rejoin).", cnt("stalls"))
	m.Counter("synclab_mutex_loop_late_total", "Heartbeats this member's loop sent more than Margin late (frames read meanwhile count as no majority heard).", cnt("loop_late"))
	m.Counter("synclab_mutex_cut_off_total", "Times this member took itself for cut off from the majority.", cnt("cut_off"))
	m.Counters("synclab_mutex_relay_frames_total", "Frames through relays: sent for a member not heard directly (out), received from one (in), passed on for others (passed).",
		"dir", map[string]uint64{"out": counters["relayed_out"], "in": counters["relayed_in"], "passed": counters["relays_passed"]})
	m.Counter("synclab_mutex_probes_total", "Probes asking the others whether a member silent here is silent to them too.", cnt("probes_sent"))
	m.Counter("synclab_mutex_members_given_up_total", "Members no longer waited for, on a majority's confirmation.", cnt("members_given_up"))
	mutexcount.LossMetrics(m, counters, append(slices.Clone(mutex.LossReasons), LossStalled), "Frames")
	for _, id := range c.others() {
		m.GaugeBool("synclab_mutex_member_alive", "1 if the member is believed alive, else 0.", !c.givenUp(id),
			core.Label{Name: "member", Value: strconv.FormatUint(uint64(id), 10)})
	}
}
