package order

import (
	"fmt"
	"maps"
	"slices"
)

// Status is the core's view for `orderd status`.
type Status struct {
	ID      uint32   `json:"id"`
	Members []uint32 `json:"members"`
	Total   string   `json:"total"`

	// Stream: this member's records and what each member acknowledged.
	StreamSeq uint64         `json:"stream_seq"`
	Streams   []StreamStatus `json:"streams"`

	// Causal: the delivery vector (member order) and what is held back.
	CausalVector []uint64  `json:"causal_vector"`
	Pending      []Pending `json:"pending,omitempty"`

	Sequencer *SequencerStatus `json:"sequencer,omitempty"`

	Delivered map[string]uint64 `json:"delivered"`
	Counters  map[string]uint64 `json:"counters"`
	Bugs      map[string]uint64 `json:"bugs,omitempty"`
	Machine   string            `json:"machine,omitempty"`
}

// StreamStatus is one other member's side of the streams.
type StreamStatus struct {
	Member uint32 `json:"member"`
	// Acked is how far it acknowledged this member's stream; Unacked
	// how many records it still lacks.
	Acked   uint64 `json:"acked"`
	Unacked uint64 `json:"unacked"`
	// Settled is how far this member's stream is trimmed for it: Acked
	// with a key; without one, what it acknowledged 8 x Retry ago with no
	// lower word of it since (Config.Unkeyed). A member that lags shows
	// Acked and Settled going back to where it is (acks_undone) and
	// Unacked rising, then falling as the records are resent.
	Settled uint64 `json:"settled"`
	// Received is how far its stream was handed on here; HeldBack how
	// many later records wait for a gap to fill (Missing, the first).
	Received uint64 `json:"received"`
	HeldBack int    `json:"held_back"`
	Missing  uint64 `json:"missing,omitempty"`
	// Stable is how far every member holds its stream, as far as this
	// member knows; Kept how many records after it are kept here for the
	// relay, and Relaying whether this member is passing them on (the
	// member has said nothing of them for RelayAfter: crashed?).
	Stable   uint64 `json:"stable"`
	Kept     int    `json:"kept"`
	Relaying bool   `json:"relaying,omitempty"`
}

// Pending is one message received and not delivered, and why.
type Pending struct {
	Order   Order  `json:"order"`
	Sender  uint32 `json:"sender"`
	Seq     uint64 `json:"seq"`
	Lamport uint64 `json:"lamport,omitempty"`
	Waiting string `json:"waiting_for"`
}

// SequencerStatus is the sequencer's total order as this member sees it.
type SequencerStatus struct {
	Sequencer uint32 `json:"sequencer"` // 0: none known
	Role      string `json:"role"`      // sequencer, recovering, member
	// Phase is the election's phase (elect.Status.Phase) while no
	// sequencer is known: why none is, as a member whose claim waits for
	// its state write (its disk failing) says.
	Phase string `json:"election_phase,omitempty"`
	Term  uint64 `json:"term"`
	// Unsaved is the term this member sequences (or recovers: Role)
	// while its state write fails: every frame of it waits for a write
	// that succeeds, so the others may follow another sequencer meanwhile.
	Unsaved    uint64 `json:"unsaved_term,omitempty"`
	LogTerm    uint64 `json:"log_term"`
	Last       uint64 `json:"last"`
	Commit     uint64 `json:"commit"`
	Applied    uint64 `json:"applied"`
	Base       uint64 `json:"compacted"`
	Submits    int    `json:"waiting_submits"`
	Recoveries uint64 `json:"recoveries"`
	// Match is how far each member's log matches (sequencer only).
	Match map[uint32]uint64 `json:"match,omitempty"`
	// LastSkip is the last range of numbers this member did not deliver
	// one by one, having caught up from a snapshot (counters
	// snapshots_installed and skipped_numbers count them all).
	LastSkip *Skipped `json:"last_skip,omitempty"`
}

// Status returns the core's view.
func (c *Core) Status() any { return c.Report() }

// Report is Status, typed.
func (c *Core) Report() Status {
	s := c.st.Stream
	st := Status{ID: c.id, Members: slices.Clone(c.members), Total: c.cfg.Total.String(), StreamSeq: s.Seq,
		CausalVector: slices.Clone(c.st.Causal.V), Delivered: map[string]uint64{},
		Counters: maps.Clone(c.counters), Bugs: maps.Clone(c.bugs.Counts())}
	for o, n := range c.deliveredN {
		st.Delivered[o.String()] = n
	}
	st.Delivered["total_index"] = c.st.Delivered
	for _, p := range c.peers {
		o, in := s.Out[p], s.In[p]
		ss := StreamStatus{Member: p, Acked: o.Acked, Unacked: s.Seq - o.Acked, Settled: o.Settled, Received: in.Next, HeldBack: len(in.held),
			Stable: in.Stable, Kept: len(s.Kept[p]), Relaying: c.relay.asking[p] != nil}
		if len(in.held) > 0 {
			ss.Missing = in.Next + 1
			st.Pending = append(st.Pending, Pending{Order: FIFO, Sender: p, Seq: in.Next + 1,
				Waiting: fmt.Sprintf("record %d of member %d's stream (%d later ones held back)", in.Next+1, p, len(in.held))})
		}
		st.Streams = append(st.Streams, ss)
	}
	for _, m := range c.st.Causal.Pending {
		st.Pending = append(st.Pending, Pending{Order: Causal, Sender: m.Sender, Seq: m.Seq, Waiting: c.causalWaits(m)})
	}
	for i, m := range c.st.Lamport.Queue {
		w := c.lamportWaits(m)
		if i > 0 {
			h := c.st.Lamport.Queue[0]
			w = fmt.Sprintf("the head (member %d's, stamp %d)", h.Sender, h.Stamp)
		}
		st.Pending = append(st.Pending, Pending{Order: TotalOrder, Sender: m.Sender, Seq: m.Seq, Lamport: m.Stamp, Waiting: w})
	}
	if c.cfg.Total == Sequencer {
		l := &c.st.Log
		sr := &c.seqr
		ss := &SequencerStatus{Sequencer: sr.leader, Role: "member", Term: l.Term, LogTerm: l.LogTerm, Last: l.last(),
			Commit: l.Commit, Applied: l.Applied, Base: l.Base, Submits: len(l.Submits), Recoveries: sr.recoveries, LastSkip: c.lastSkip}
		if sr.leader == 0 {
			ss.Phase = c.el.Report().Phase
		}
		if c.unsavedTerm != 0 && c.unsavedTerm == max(sr.leading, sr.recovering) {
			ss.Unsaved = c.unsavedTerm
		}
		switch {
		case sr.leading != 0:
			ss.Role = "sequencer"
			ss.Match = maps.Clone(sr.match)
		case sr.recovering != 0:
			ss.Role = "recovering"
		}
		st.Sequencer = ss
		for i := l.Applied + 1; i <= l.last(); i++ {
			e, _ := l.entry(i)
			w := fmt.Sprintf("commit of number %d by the sequencer (a majority to hold it)", i)
			if i <= l.Commit {
				w = "its turn"
			}
			st.Pending = append(st.Pending, Pending{Order: TotalOrder, Sender: e.Sender, Seq: i, Waiting: w})
		}
		for _, sid := range slices.Sorted(maps.Keys(l.Submits)) {
			st.Pending = append(st.Pending, Pending{Order: TotalOrder, Sender: c.id, Seq: sid,
				Waiting: "a number from the " + c.sequencerText()})
		}
	}
	if c.machine != nil {
		if d, ok := c.machine.(interface{ Describe() string }); ok {
			st.Machine = d.Describe()
		}
	}
	return st
}
