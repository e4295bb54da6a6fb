package order

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// The sequencer's total order (see doc.go for why each rule is there).
//
// A sender hands its message to the sequencer (Submit, resent until the
// message is delivered); the sequencer gives it the next number, keeps it
// in its log and sends it to every member (Append); each member keeps it
// in its log and says how far its log matches (AppendAck); once a
// majority holds a number the sequencer commits it and says so in its
// next Append; members deliver committed numbers in order. The
// sequencer's term is its election term (bully's owned epoch); a member
// takes a term's Appends only from the term's owner, and only for the term
// its own election knows.
//
// A newly elected sequencer first asks every member for its log
// (Recover); each promises the term (refusing older terms' Appends from
// then on) and says which term's log it holds whole (LogTerm), its last
// number and commit point. With a majority of answers the sequencer
// adopts the log of the most advanced one (highest LogTerm, then longest),
// fetching the entries it lacks (Fetch), and only then numbers anything.
// A committed number is held by a majority, any two majorities meet, and
// a member's LogTerm only moves to a term once it holds that term's whole
// initial log: so the adopted log holds every committed number, and the
// new sequencer continues after the last of them, without gap or
// duplicate. Numbers that only the dead sequencer (or a minority) held
// and that nobody delivered may be renumbered; their senders resend them
// until they are delivered, and the sequencer takes each sender's
// submissions in order and once (SIDs, in eras: see submit), so nothing
// is doubled, and nothing answered (committed) is lost.

type logEntry struct {
	Sender  uint32 `json:"sender"`
	SID     uint64 `json:"sid"`
	Message []byte `json:"message"`
}

type logState struct {
	Term       uint64     `json:"term"`        // highest term promised
	LogTerm    uint64     `json:"log_term"`    // term whose whole initial log this log holds
	AppendTerm uint64     `json:"append_term"` // term whose sequencer shaped this log's tail
	Base       uint64     `json:"base"`        // entries up to Base are compacted away
	Entries    []logEntry `json:"entries,omitempty"`
	Commit     uint64     `json:"commit"`
	Applied    uint64     `json:"applied"`
	Machine    []byte     `json:"machine,omitempty"` // state machine at Applied
	// BaseSIDs are the senders' highest SIDs in the compacted entries.
	BaseSIDs map[uint32]uint64 `json:"base_sids,omitempty"`
	// HeardAt is when this member last took an Append whose commit
	// point was within snapshotBurst of its own (its local clock):
	// snapshots are judged by the time since (snapshotRate), also after a
	// restart. Soft: written with the next change. Zero: not known (a
	// state of an older build: the time since the start counts).
	HeardAt time.Time `json:"heard_at,omitzero"`
	// Era is this member's submission era: the high 32 bits of its SIDs,
	// one more at every start (written before any submission of it
	// leaves). SID is its last submission, Submits those not yet
	// delivered: volatile (see submit).
	Era     uint64            `json:"era"`
	SID     uint64            `json:"-"`
	Submits map[uint64][]byte `json:"-"`

	// changed is the first entry changed (added, replaced or cut) since
	// the state was last written; 0: none. A log record carries the
	// entries from there on (see record.go).
	changed uint64
}

// touch notes that entries from i on changed.
func (l *logState) touch(i uint64) {
	if l.changed == 0 || i < l.changed {
		l.changed = i
	}
}

// add appends an entry.
func (l *logState) add(e logEntry) {
	l.touch(l.last() + 1)
	l.Entries = append(l.Entries, e)
}

func (l *logState) last() uint64 { return l.Base + uint64(len(l.Entries)) }

func (l *logState) entry(i uint64) (logEntry, bool) {
	if i <= l.Base || i > l.last() {
		return logEntry{}, false
	}
	return l.Entries[i-l.Base-1], true
}

// truncate drops the entries after i (never a committed one).
func (l *logState) truncate(i uint64) {
	if i < l.last() && i >= l.Base {
		l.touch(i + 1)
		l.Entries = l.Entries[:i-l.Base]
	}
}

// compact drops the delivered entries but the last keep, once a quarter
// more has piled up. Never those changed since the last write: the next
// record carries the log from the first changed entry on (record.go), and
// a restart applies to the state machine, from that record, the entries
// applied since; an entry cut before it was written would be missing on
// replay (and one rewritten in the meantime replayed with its old
// content). Those go at a later commit, once written.
func (l *logState) compact(keep uint64) {
	if l.Applied <= l.Base+keep+keep/4+1 {
		return
	}
	cut := l.Applied - keep
	if l.changed != 0 {
		cut = min(cut, l.changed-1)
	}
	if cut <= l.Base {
		return
	}
	if l.BaseSIDs == nil {
		l.BaseSIDs = map[uint32]uint64{}
	}
	for _, e := range l.Entries[:cut-l.Base] {
		l.BaseSIDs[e.Sender] = max(l.BaseSIDs[e.Sender], e.SID)
	}
	l.Entries = append(l.Entries[:0:0], l.Entries[cut-l.Base:]...)
	l.Base = cut
}

// lastOfEra is sender's highest SID of era era numbered in this log, as
// far as it can tell (upto: the SID of a submission at hand): the
// entries kept, and the compacted ones' highest (BaseSIDs) when it is of
// that era; era<<32 (the era's first comes next) when nothing of the era
// was numbered. When a higher era's SID was compacted over the sender's
// (one forged in its name, KeepLog entries ago), what the era numbered
// before is not known: upto is then taken as the next.
func (l *logState) lastOfEra(sender uint32, era, upto uint64) uint64 {
	last := era << 32
	for _, e := range l.Entries {
		if e.Sender == sender && sidEra(e.SID) == era && e.SID <= upto {
			last = max(last, e.SID)
		}
	}
	if base, ok := l.BaseSIDs[sender]; ok {
		switch {
		case sidEra(base) == era:
			last = max(last, base)
		case sidEra(base) > era && last == era<<32:
			return upto - 1
		}
	}
	return last
}

// sids returns each sender's highest SID in the log.
func (l *logState) sids() map[uint32]uint64 {
	s := map[uint32]uint64{}
	for k, v := range l.BaseSIDs {
		s[k] = v
	}
	for _, e := range l.Entries {
		s[e.Sender] = max(s[e.Sender], e.SID)
	}
	return s
}

// seqRole is the sequencer's volatile state: rebuilt after a restart by
// a new recovery.
type seqRole struct {
	leading    uint64 // term this member numbers in (recovered)
	recovering uint64 // term being recovered
	replies    map[uint32]wire.OrderRecoverReply
	best       uint32 // member whose log is adopted
	source     uint32 // member fetched from: best, or one that holds the tail
	fetchNext  uint64
	bestLast   uint64
	// tailTo is, while a recovering sequencer whose log starts at a
	// snapshot's number fetches the entries before it (the part of the
	// log the others keep, for the members a few entries behind), that
	// number; tail holds those fetched, from tailFrom. tailDone:
	// fetched, or given up, once in this recovery.
	tailTo, tailFrom uint64
	tail             []logEntry
	tailDone         bool
	retryAt          time.Time
	start            uint64
	match            map[uint32]uint64
	next             map[uint32]uint64
	// held is how far each member holds this log by its own last word
	// in the term (its recovery reply's commit point, then its
	// acknowledgements; the sequencer's guess, its own commit point,
	// until it says): what goes to it again after a silence starts
	// there. Only a member that said it holds nothing past the
	// compacted part of the log is sent a snapshot.
	held map[uint32]uint64
	// snapDue is when member p may be sent another snapshot, snapWait
	// the wait after the next one: a snapshot is the whole state, one
	// frame, and goes again only after Heartbeat, doubling up to 16
	// times while the member does not take it.
	snapDue    map[uint32]time.Time
	snapWait   map[uint32]time.Duration
	sentCommit map[uint32]uint64
	due        map[uint32]time.Time
	sids       map[uint32]uint64
	// sidStamps bounds, per sender, the Lamport stamp of the submission
	// that brought its highest SID in sids (the frame's stamp, or this
	// member's clock when it adopted the log, which merged every such
	// frame's): see takeSubmit.
	sidStamps  map[uint32]uint64
	leader     uint32 // the sequencer as the election knows it
	submitDue  time.Time
	recoveries uint64
	// commitDue is when a commit point that no Append carried yet goes
	// alone (Config.CommitDelay after it moved); zero: none waits.
	commitDue time.Time
	flush     bool // entries wait for flushAppends
	// handed is the log's last number when the last Ready was taken: once
	// its write is confirmed (Advance), the sequencer holds it.
	handed uint64
	// heard is the last term whose sequencer's Append (or snapshot) this
	// member took since it started, heardAt when its last Append came;
	// until it hears the known term's, or while no Append came for a
	// Heartbeat, a member holding entries past its commit point asks for
	// it (askCommit) every askDue.
	heard   uint64
	heardAt time.Time
	askDue  time.Time
}

func (r *seqRole) reset() {
	*r = seqRole{recoveries: r.recoveries, leader: r.leader, heard: r.heard, heardAt: r.heardAt}
}

func (c *Core) majority() int { return len(c.members)/2 + 1 }

// followElection starts recovering when this member is elected, and stops
// sequencing when it is not the leader any more.
func (c *Core) followElection() {
	if c.cfg.Total != Sequencer {
		return
	}
	lead, term, ok := c.el.Leader()
	if !ok {
		lead = 0
	}
	if lead != c.seqr.leader {
		c.seqr.leader = lead
		c.seqr.submitDue = c.now // hand pending submissions to the new one at once
		c.wake(c.now)
	}
	me := ok && lead == c.id && c.el.Role() == elect.RoleLeader
	switch {
	case !me:
		if c.seqr.leading != 0 || c.seqr.recovering != 0 {
			c.seqr.reset()
		}
	case c.seqr.leading == term || c.seqr.recovering == term:
	default:
		c.startRecovery(term)
	}
}

func (c *Core) startRecovery(term uint64) {
	c.seqr.reset()
	c.seqr.recovering = term
	c.seqr.recoveries++
	l := &c.st.Log
	if term > l.Term {
		l.Term = term
		c.durable.Change(true)
	}
	c.seqr.replies = map[uint32]wire.OrderRecoverReply{c.id: {LogTerm: l.LogTerm, Last: l.last(), Commit: l.Commit}}
	c.sendRecover()
	c.maybeRecovered()
}

func (c *Core) sendRecover() {
	b, _ := wire.OrderRecover{Last: c.st.Log.last()}.AppendBinary(nil)
	for _, p := range c.peers {
		if _, ok := c.seqr.replies[p]; !ok {
			c.msgs = append(c.msgs, c.termMsg(p, wire.KindOrderRecover, b))
		}
	}
	c.seqr.retryAt = c.now.Add(4 * c.cfg.Retry)
	c.wake(c.seqr.retryAt)
}

func (c *Core) termMsg(to uint32, k wire.Kind, b []byte) msgT {
	return msgT{To: to, Kind: k, Term: c.st.Log.Term, Payload: b}
}

// promiseTerm checks a sequencer's term from the wire (owned by its
// sender, and the one this member's election knows: an older one is
// stale, a newer one the election has not confirmed yet, and the sender
// retries) and promises it: no Append of an older term is taken from now
// on.
func (c *Core) promiseTerm(from uint32, term uint64) error {
	_, known, _ := c.el.Leader()
	switch {
	case epoch.Owner(term) != from:
		return fmt.Errorf("%w: term %d is not member %d's", ErrImplausible, term, from)
	case term < c.st.Log.Term || term < known:
		return fmt.Errorf("%w: term %d from %d, this member knows %d and promised %d", ErrTerm, term, from, known, c.st.Log.Term)
	case term != known:
		// Newer than the election has told this member of: its message
		// (the sequencer's announcement) is still on the way, or lost and
		// resent. Not bad input: the sender retries.
		return fmt.Errorf("%w: term %d from %d, this member knows %d", errEarlyTerm, term, from, known)
	}
	if term > c.st.Log.Term {
		c.st.Log.Term = term
		c.durable.Change(true)
	}
	return nil
}

func (c *Core) stepRecover(m msgT) error {
	var r wire.OrderRecover
	if err := r.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if err := c.promiseTerm(m.From, m.Term); err != nil {
		return err
	}
	l := &c.st.Log
	b, _ := wire.OrderRecoverReply{LogTerm: l.LogTerm, Last: l.last(), Commit: l.Commit}.AppendBinary(nil)
	c.msgs = append(c.msgs, c.termMsg(m.From, wire.KindOrderRecoverReply, b))
	return nil
}

func (c *Core) stepRecoverReply(m msgT) error {
	var r wire.OrderRecoverReply
	if err := r.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if c.seqr.recovering == 0 || m.Term != c.seqr.recovering {
		if epoch.Owner(m.Term) == c.id && m.Term <= c.st.Log.Term {
			// An answer to this member's own request that came after a
			// majority's (a fresh cluster's every start has one) or after
			// a newer election overtook it: nothing wrong with the sender.
			c.count("late_recover_replies")
			return nil
		}
		return fmt.Errorf("%w: recover reply for term %d", ErrStale, m.Term)
	}
	if r.LogTerm > m.Term {
		return fmt.Errorf("%w: member %d holds a log of term %d, after %d", ErrImplausible, m.From, r.LogTerm, m.Term)
	}
	if c.seqr.best != 0 {
		return nil // already adopting
	}
	c.seqr.replies[m.From] = r
	c.maybeRecovered()
	return nil
}

// maybeRecovered picks the log to adopt once a majority answered.
func (c *Core) maybeRecovered() {
	sr := &c.seqr
	if len(sr.replies) < c.majority() || sr.best != 0 {
		return
	}
	best := c.id
	for _, id := range c.members {
		r, ok := sr.replies[id]
		if !ok {
			continue
		}
		b := sr.replies[best]
		if r.LogTerm > b.LogTerm || r.LogTerm == b.LogTerm && r.Last > b.Last {
			best = id
		}
	}
	sr.best, sr.source = best, best
	br := sr.replies[best]
	l := &c.st.Log
	if best == c.id || br.Last <= l.Commit {
		if best != c.id {
			l.truncate(max(br.Last, l.Commit))
		}
		c.recovered()
		return
	}
	sr.bestLast = br.Last
	sr.fetchNext = l.Commit + 1
	c.sendFetch()
}

func (c *Core) sendFetch() {
	b, _ := wire.OrderFetch{From: c.seqr.fetchNext}.AppendBinary(nil)
	c.msgs = append(c.msgs, c.termMsg(c.seqr.source, wire.KindOrderFetch, b))
	c.seqr.retryAt = c.now.Add(4 * c.cfg.Retry)
	c.wake(c.seqr.retryAt)
}

func (c *Core) stepFetch(m msgT) error {
	var f wire.OrderFetch
	if err := f.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	l := &c.st.Log
	if f.From <= l.Base {
		c.sendSnapshot(m.From, m.Term)
		return nil
	}
	out := wire.OrderEntries{Prev: f.From - 1, Commit: l.Commit, Start: l.last()}
	out.Entries = c.entriesFrom(f.From)
	b, ok := c.bugs.Encode(&c.events, "order_entries", out, nil)
	if ok {
		c.msgs = append(c.msgs, msgT{To: m.From, Kind: wire.KindOrderFetchReply, Term: m.Term, Payload: b})
	}
	return nil
}

// entriesFrom returns up to MaxOrderEntries entries from i, within a
// frame's bytes.
func (c *Core) entriesFrom(i uint64) []wire.OrderEntry {
	var out []wire.OrderEntry
	size := 0
	for ; len(out) < wire.MaxOrderEntries; i++ {
		e, ok := c.st.Log.entry(i)
		if !ok || size+len(e.Message) > 16<<10 {
			break
		}
		size += len(e.Message) + 14
		out = append(out, wire.OrderEntry{Sender: e.Sender, SID: e.SID, Message: e.Message})
	}
	return out
}

func (c *Core) stepFetchReply(m msgT) error {
	var r wire.OrderEntries
	if err := r.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	sr := &c.seqr
	if sr.recovering == 0 || m.Term != sr.recovering || m.From != sr.source || r.Prev+1 != sr.fetchNext {
		return fmt.Errorf("%w: fetch reply from %d for %d", ErrStale, m.From, r.Prev+1)
	}
	if sr.tailTo != 0 {
		return c.takeTail(r)
	}
	if len(r.Entries) == 0 {
		// The member compacted or lost what it announced: start over.
		c.startRecovery(sr.recovering)
		return nil
	}
	l := &c.st.Log
	l.truncate(r.Prev)
	for _, e := range r.Entries {
		if l.last() >= sr.bestLast {
			break
		}
		if _, ok := c.pos[e.Sender]; !ok {
			return fmt.Errorf("%w: entry from non-member %d", ErrImplausible, e.Sender)
		}
		l.add(logEntry{Sender: e.Sender, SID: e.SID, Message: slices.Clone(e.Message)})
	}
	c.durable.Change(true)
	c.fetchRest()
	return nil
}

// fetchRest fetches the adopted log after what this member holds, and
// goes on once it holds it all.
func (c *Core) fetchRest() {
	sr := &c.seqr
	l := &c.st.Log
	sr.fetchNext = l.last() + 1
	if l.last() >= sr.bestLast {
		c.recovered()
		return
	}
	c.sendFetch()
}

// recovered: this member holds the adopted log. If its log starts at a
// snapshot's number it caught up from (fewer than KeepLog delivered
// entries kept), it first fetches the KeepLog entries before that
// number from a member that committed them (members compact only
// entries older than that): without them, every member even one entry
// behind that number would be sent a snapshot, and skip numbers it
// could have delivered one by one. Then it numbers.
func (c *Core) recovered() {
	sr := &c.seqr
	l := &c.st.Log
	if !sr.tailDone && l.Base > 0 && l.Applied-l.Base < uint64(c.cfg.KeepLog) {
		sr.tailDone = true
		var src uint32
		var most uint64
		for _, id := range c.peers {
			if r, ok := sr.replies[id]; ok && r.Commit >= l.Base && r.Commit > most {
				src, most = id, r.Commit
			}
		}
		if src != 0 {
			sr.source = src
			sr.tailTo, sr.tailFrom, sr.tail = l.Base, l.Base-min(uint64(c.cfg.KeepLog), l.Base)+1, nil
			sr.fetchNext = sr.tailFrom
			c.count("tail_fetches")
			c.sendFetch()
			return
		}
	}
	c.becomeSequencer()
}

// takeTail takes entries fetched for the tail before the log's start.
// An empty answer (the member compacted them meanwhile) gives it up.
func (c *Core) takeTail(r wire.OrderEntries) error {
	sr := &c.seqr
	l := &c.st.Log
	for _, e := range r.Entries {
		if sr.fetchNext > sr.tailTo {
			break
		}
		if _, ok := c.pos[e.Sender]; !ok {
			return fmt.Errorf("%w: entry from non-member %d", ErrImplausible, e.Sender)
		}
		sr.tail = append(sr.tail, logEntry{Sender: e.Sender, SID: e.SID, Message: slices.Clone(e.Message)})
		sr.fetchNext++
	}
	if sr.fetchNext <= sr.tailTo && len(r.Entries) > 0 {
		c.sendFetch()
		return nil
	}
	if sr.fetchNext > sr.tailTo && l.Base == sr.tailTo {
		// Committed entries, the same at every member: the log now
		// holds them before its old start, as the others' does (written
		// whole: a record only appends).
		l.Entries = append(sr.tail, l.Entries...)
		l.Base = sr.tailFrom - 1
		c.rec.whole = true
		c.durable.Change(false)
	}
	sr.tailTo, sr.tail = 0, nil
	c.recovered()
	return nil
}

// becomeSequencer starts numbering in the recovered term.
func (c *Core) becomeSequencer() {
	sr := &c.seqr
	l := &c.st.Log
	term := sr.recovering
	replies := sr.replies
	sr.recovering, sr.leading = 0, term
	l.LogTerm, l.AppendTerm = term, term
	sr.start = l.last()
	sr.match = map[uint32]uint64{}
	sr.handed = 0
	sr.next, sr.sentCommit, sr.due = map[uint32]uint64{}, map[uint32]uint64{}, map[uint32]time.Time{}
	sr.held, sr.snapDue, sr.snapWait = map[uint32]uint64{}, map[uint32]time.Time{}, map[uint32]time.Duration{}
	for _, p := range c.peers {
		// Its commit point, as it answered; for a member that did not
		// answer, this one's: its acknowledgement corrects the guess.
		n := l.Commit
		if r, ok := replies[p]; ok {
			n = min(r.Commit, l.last())
		}
		sr.held[p] = n
		sr.next[p] = n + 1
	}
	sr.sids = l.sids()
	sr.sidStamps = map[uint32]uint64{}
	for id := range sr.sids {
		// Every entry of this log came here in frames this member
		// merged: its clock is past their submissions' stamps.
		sr.sidStamps[id] = c.lamport.Now()
	}
	c.durable.Change(true)
	c.events = append(c.events, eventf(EventSequencer, "sequencer of term %s from number %d", epoch.Format(term), l.last()+1,
		"term", term, "last", l.last(), "commit", l.Commit))
	for _, p := range c.peers {
		c.sendAppend(p)
	}
	c.advanceCommit()
}

// seqUnsaved notes, after the driver's report on a write, whether the
// term this member sequences or recovers waits for its disk. Its election
// may lead without a write (the claim covered by the reservation on
// disk), but the term the log then promises (Log.Term, a promise) is
// written at the recovery's start: while that write fails, every frame
// of this member stays home (its Recover and Appends, and the election's
// own), the others elect without it, and its recovery, its role and its
// term say nothing true of the cluster. Status says so (Unsaved) until a
// write succeeds, when the frames go and the recovery goes on where it
// was (TestSimCoveredClaimUnsavedRecovery). Not an event: an appending
// core's events wait for a write that succeeds (internal/daemon), so it
// would come once no longer true; the daemon's ERROR about the failed
// write says that nothing depending on it is sent.
//
// Only the term's own write: once a write left nothing pending with the
// term current (savedTerm), a later failure (an entry's, a FIFO record's)
// holds frames too, but the term is on disk, and the daemon's ERROR about
// that write says what waits (review-order4: the line used to name a term
// written seconds before).
func (c *Core) seqUnsaved(saved bool) {
	c.unsavedTerm = 0
	term := max(c.seqr.leading, c.seqr.recovering)
	if saved && !c.durable.Pending() {
		c.savedTerm = term
	}
	if !saved && term != 0 && term != c.savedTerm && c.durable.PromisePending() {
		c.unsavedTerm = term
	}
}

// Submission IDs: a sender numbers its submissions era<<32 | count,
// count from 1 in each era. The era is written once per start, before any
// submission of it leaves (newEra), so a restarted sender never reuses an
// ID it may have sent before the crash, whatever it wrote.
const (
	sidCount = 1<<32 - 1
	maxEra   = 1<<32 - 1
)

func sidEra(sid uint64) uint64 { return sid >> 32 }

// newEra starts a submission era: a promise, so that it is on disk before
// any submission of it leaves.
func (c *Core) newEra() error {
	l := &c.st.Log
	if l.Era >= maxEra {
		return fmt.Errorf("%w: submission era %d, the last", core.ErrState, l.Era)
	}
	l.Era++
	l.SID = l.Era << 32
	c.durable.Change(true)
	return nil
}

// Era is this core's submission era (a sequenced send's ID is
// Era<<32 | count), read back from its state at New and raised there.
func (c *Core) Era() uint64 { return c.st.Log.Era }

// EraAfter makes a core built afresh in a running process (a step back's
// rebuild, daemon.rebuildCore) number its submissions in an era after
// era, the one the core it replaces was using. Read back from a disk
// whose last write failed, its own era may be that one again, and its
// first submission would carry the ID of one the old core took and never
// sent: a control call of the old core still waiting for that ID takes
// the new message's delivery for its own, and answers sent for a message
// delivered nowhere (review-order4). Call it before the core's first
// Ready; the era's write is the promise New made.
func (c *Core) EraAfter(era uint64) error {
	l := &c.st.Log
	if c.cfg.Total != Sequencer || l.Era > era {
		return nil
	}
	if era >= maxEra {
		return fmt.Errorf("%w: submission era %d, the last", core.ErrState, era)
	}
	l.Era = era + 1
	l.SID = l.Era << 32
	return nil
}

// submit hands a message to the sequencer.
//
// A submission is not written: it leaves at once, and the sequencer's
// log is what keeps it (a send is answered once its entry is committed,
// on a majority of disks: Submitted). A sender that crashes before that
// loses its submissions with its memory, unanswered, as a crash before
// the write would lose them anyway; those already numbered are delivered
// as any other. It restarts in a new era, whose first submission the
// sequencer takes after any of the old era (takeSubmit): none is numbered
// twice, and an old one still in flight is not numbered after a new one.
func (c *Core) submit(msg []byte) error {
	l := &c.st.Log
	if len(l.Submits) >= c.cfg.MaxSubmits {
		c.count("busy")
		return fmt.Errorf("%w: %d messages wait for the sequencer (%s)", ErrBusy, len(l.Submits), c.sequencerText())
	}
	if l.SID&sidCount == sidCount {
		// This era's IDs are used up (4 billion submissions since the
		// start): the next era's first is taken after those still waiting
		// only if none is.
		if len(l.Submits) > 0 {
			c.count("busy")
			return fmt.Errorf("%w: submission era %d is used up; %d submissions wait for the sequencer", ErrBusy, l.Era, len(l.Submits))
		}
		if err := c.newEra(); err != nil {
			return err
		}
	}
	l.SID++
	if l.Submits == nil {
		l.Submits = map[uint64][]byte{}
	}
	l.Submits[l.SID] = slices.Clone(msg)
	c.wd.submitted = true
	c.sendSubmit(l.SID)
	if c.seqr.submitDue.IsZero() {
		c.seqr.submitDue = c.now.Add(c.cfg.Retry)
		c.wake(c.seqr.submitDue)
	}
	return nil
}

// ownDelivered takes an entry of this member's numbered sid as delivered:
// its submissions up to sid are done. One above the last this member
// made was forged in its name (without a key anyone can submit as any
// member): it says nothing of this member's own submissions, which
// would otherwise be taken for delivered, unanswered, and never
// numbered (counted forged_own_entries).
func (c *Core) ownDelivered(sid uint64) {
	l := &c.st.Log
	if sid > l.SID {
		c.count("forged_own_entries")
		return
	}
	for s := range l.Submits {
		if s <= sid {
			delete(l.Submits, s)
		}
	}
}

// Submission returns the ID of this member's last submission to the
// sequencer (the last total-order Multicast taken, with Total Sequencer):
// its Delivery carries it once committed. What answers a send waits for
// that delivery here, not for a write of its own: a committed entry is on
// a majority of disks, a stronger promise than this one's.
func (c *Core) Submission() uint64 { return c.st.Log.SID }

// LastIndex is the index of the last delivery here (Delivery.Index): a
// caller waiting for a delivery looks at History after it.
func (c *Core) LastIndex() uint64 { return c.st.Delivered }

// Submitting reports whether submission sid still waits for its entry's
// commit here (false once delivered, or lost with a restart).
func (c *Core) Submitting(sid uint64) bool {
	_, ok := c.st.Log.Submits[sid]
	return ok
}

func (c *Core) sequencerText() string {
	if c.seqr.leader == 0 {
		return "no sequencer known: an election is running"
	}
	return fmt.Sprintf("sequencer %d", c.seqr.leader)
}

func (c *Core) sendSubmit(sid uint64) {
	lead := c.seqr.leader
	if lead == 0 {
		return
	}
	msg := c.st.Log.Submits[sid]
	if lead == c.id {
		c.takeSubmit(c.id, sid, msg, 0)
		return
	}
	b, ok := c.bugs.Encode(&c.events, "order_submit", wire.OrderSubmit{SID: sid, Message: msg}, nil)
	if ok {
		c.msgs = append(c.msgs, msgT{To: lead, Kind: wire.KindOrderSubmit, Payload: b})
	}
}

func (c *Core) stepSubmit(m msgT) error {
	var s wire.OrderSubmit
	if err := s.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	return c.takeSubmit(m.From, s.SID, s.Message, m.Lamport)
}

// takeSubmit numbers a sender's next submission, which came in a frame
// stamped at (its Lamport time; 0: this member's own).
//
// An era is the sender's own number: only it moves to a new one (at a
// start), and nobody else may. Without a key anyone can submit in a
// member's name, and a submission forged in a far era used to be
// numbered and kept in the log for good: every real submission of the
// sender after it, of a lower era, was "numbered already" and never
// delivered, through its restarts and every new sequencer's. So a
// submission of an older era than the sender's highest is judged by its
// stamp, as incarnations are (pkg/epoch's Life): a sender's eras only
// ever rise with its stamps (its clock resumes above every stamp of its
// last run), so one stamped after the submission that brought the higher
// era says that era was never the sender's (counted eras_undone); the
// sender's own submissions are numbered again from there. A late frame
// of a real earlier era is stamped before, and stays numbered already.
func (c *Core) takeSubmit(from uint32, sid uint64, msg []byte, at uint64) error {
	sr := &c.seqr
	l := &c.st.Log
	last := sr.sids[from]
	switch era := sidEra(sid); {
	case sr.leading == 0 || era == sidEra(last):
	case era < sidEra(last) && at > sr.sidStamps[from]:
		c.count("eras_undone")
		last = l.lastOfEra(from, era, sid)
		sr.sids[from], sr.sidStamps[from] = last, at
	case era > sidEra(last):
		// The sender's submissions of this era numbered before, if any
		// (the highest was put back by one forged in an older era):
		// the next of them is taken in turn, not only the era's first.
		if k := l.lastOfEra(from, era, sid); k > era<<32 {
			last = k
		}
	}
	switch {
	case sr.leading == 0:
		return fmt.Errorf("%w (%s)", ErrNotLeading, c.sequencerText())
	case sid <= last:
		return nil // numbered already: its delivery will tell the sender
	case sid&sidCount == 0:
		return fmt.Errorf("%w: submission %x from %d: no era's count is 0", ErrImplausible, sid, from)
	case sidEra(sid) == sidEra(last) && sid != last+1, sidEra(sid) > sidEra(last) && sid&sidCount != 1:
		// Arrived before an earlier one: the sender resends it in turn.
		// (A new era's first is taken after any of the old era: the
		// sender restarted, or used up an era with nothing waiting. What
		// it submitted before and is not numbered yet was lost with its
		// memory, unanswered; numbering the new era's first refuses any
		// of it still in flight.)
		return fmt.Errorf("%w: submission %x from %d before its %x", ErrStale, sid, from, last+1)
	case l.last()-l.Commit >= uint64(c.cfg.MaxUncommitted):
		return fmt.Errorf("%w: %d numbers uncommitted", ErrFull, l.last()-l.Commit)
	}
	l.add(logEntry{Sender: from, SID: sid, Message: slices.Clone(msg)})
	sr.sids[from] = sid
	sr.sidStamps[from] = max(sr.sidStamps[from], at)
	// Not a promise: the Appends may leave while the entry is written
	// here (as Raft's leader replicates while it writes its own log). The
	// sequencer counts itself among the holders only once its write is
	// confirmed (Advance).
	c.durable.Change(false)
	sr.flush = true // at the Ready: one Append per member for every entry numbered meanwhile
	c.advanceCommit()
	return nil
}

// flushAppends sends every member the entries it has not been sent, with
// the commit point: called at the Ready, so that the entries numbered
// from every frame the daemon took in one batch go in one Append per
// member.
func (c *Core) flushAppends() {
	sr := &c.seqr
	if sr.leading == 0 {
		return
	}
	defer func() {
		// An idle sequencer's commit point goes now, in this Ready.
		if !sr.commitDue.IsZero() && !c.now.Before(sr.commitDue) {
			c.sendCommits()
		}
	}()
	if !sr.flush {
		return
	}
	sr.flush = false
	for _, p := range c.peers {
		for k := 0; k < maxAppends && sr.next[p] <= c.st.Log.last(); k++ {
			before := sr.next[p]
			c.sendAppend(p)
			if sr.next[p] == before {
				break // a snapshot, or nothing fitted
			}
		}
	}
}

// savedThrough is the driver's confirmation that the log up to handed is
// on disk: the sequencer counts itself as its holder from now on.
func (c *Core) savedThrough() {
	sr := &c.seqr
	if sr.leading == 0 || sr.handed <= sr.match[c.id] {
		return
	}
	sr.match[c.id] = sr.handed
	c.advanceCommit()
}

// maxAppends bounds the Appends one flush sends a member; the rest go as
// it acknowledges.
const maxAppends = 4

// sendAppend sends member p the entries from its next number on (none:
// a heartbeat with the commit point).
func (c *Core) sendAppend(p uint32) {
	sr := &c.seqr
	l := &c.st.Log
	n := sr.next[p]
	if n <= l.Base {
		// It said it lacks entries no longer kept: the state they built
		// instead, once per snapshot wait (it is the whole state).
		if !c.now.Before(sr.snapDue[p]) {
			c.sendSnapshot(p, l.Term)
			wait := sr.snapWait[p]
			if wait == 0 {
				wait = c.cfg.Heartbeat
			}
			sr.snapDue[p] = c.now.Add(wait)
			sr.snapWait[p] = min(2*wait, 16*c.cfg.Heartbeat)
		}
		sr.due[p] = c.now.Add(c.cfg.Heartbeat)
		c.wake(sr.due[p])
		return
	}
	out := wire.OrderEntries{Prev: n - 1, Commit: l.Commit, Start: sr.start, Entries: c.entriesFrom(n)}
	b, ok := c.bugs.Encode(&c.events, "order_entries", out, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, c.termMsg(p, wire.KindOrderAppend, b))
	sr.next[p] = n + uint64(len(out.Entries))
	sr.sentCommit[p] = l.Commit
	sr.due[p] = c.now.Add(c.cfg.Heartbeat)
	c.wake(sr.due[p])
}

func (c *Core) stepAppend(m msgT) error {
	var a wire.OrderEntries
	if err := a.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if err := c.promiseTerm(m.From, m.Term); err != nil {
		return err
	}
	c.seqr.heard, c.seqr.heardAt = m.Term, c.now
	l := &c.st.Log
	commit := l.Commit
	for _, e := range a.Entries {
		if _, ok := c.pos[e.Sender]; !ok {
			return fmt.Errorf("%w: entry from non-member %d", ErrImplausible, e.Sender)
		}
	}
	// A sequencer's first Append taken here must start within what is
	// committed: the numbers after the commit point held here may be an
	// older sequencer's, and a later Append of this term (its first lost
	// or overtaken) cannot vouch for them, as it carries no term per
	// entry. Such an Append is not taken; the ack's match, the commit
	// point, sends the sequencer back to the first number not committed.
	vouched := l.AppendTerm == m.Term || a.Prev <= l.Commit
	taken, changed := false, false
	if a.Prev <= l.last() && vouched {
		taken = true
		// The ack below says this log holds what changed: a promise. An
		// Append that changes nothing (the commit point alone, a
		// heartbeat, a resend) promises what an earlier write holds, and
		// core.Durable keeps a failed earlier write's promise pending.
		i := a.Prev
		for _, e := range a.Entries {
			i++
			if i <= l.Commit || i <= l.Base {
				continue // committed: the same everywhere
			}
			if old, ok := l.entry(i); ok && l.AppendTerm == m.Term && old.Sender == e.Sender && old.SID == e.SID {
				continue
			}
			l.truncate(i - 1)
			l.add(logEntry{Sender: e.Sender, SID: e.SID, Message: slices.Clone(e.Message)})
			changed = true
		}
		if l.AppendTerm != m.Term {
			// Anything after what this sequencer sent is another term's.
			l.truncate(max(i, l.Commit))
			l.AppendTerm = m.Term
			changed = true
		}
		if l.last() >= a.Start && l.LogTerm != m.Term {
			l.LogTerm = m.Term
			changed = true
		}
		if changed {
			c.durable.Change(true)
		}
	}
	match := l.Commit
	if l.AppendTerm == m.Term {
		match = l.last()
	}
	if a.Commit > l.Commit {
		c.commitTo(min(a.Commit, match))
	}
	if a.Commit <= l.Commit+snapshotBurst {
		// Within a burst of the sequencer's commit point: caught up, as
		// of now (snapshotAllowance).
		l.HeardAt, c.snapJumped = c.now, 0
	}
	if taken && !changed && len(a.Entries) == 0 && match == a.Prev && a.Commit > commit && l.Commit == a.Commit {
		// The commit point alone, and it taught this member everything:
		// its log ends where the sequencer's Appends to it did, and its
		// commit point is now the sequencer's. An acknowledgement would
		// tell the sequencer only what it sent (N-1 frames per isolated
		// multicast for nothing): none goes. If this frame is lost, the
		// member holds entries past its commit point and hears no Append
		// for a Heartbeat, and asks (askCommit). An Append that taught
		// nothing new (the commit point already held: a sequencer's
		// resend, which waits for a word) is acknowledged, as any other.
		c.count("commits_unacked")
		if l.Commit < l.last() {
			c.wake(c.now.Add(c.cfg.Heartbeat))
		}
		return nil
	}
	if l.Commit < l.last() {
		c.wake(c.now.Add(c.cfg.Heartbeat)) // askCommit, if no Append commits them
	}
	b, _ := wire.OrderAppendAck{Match: match, Commit: l.Commit}.AppendBinary(nil)
	c.msgs = append(c.msgs, msgT{To: m.From, Kind: wire.KindOrderAppendAck, Term: m.Term, Payload: b})
	return nil
}

func (c *Core) stepAppendAck(m msgT) error {
	var a wire.OrderAppendAck
	if err := a.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	sr := &c.seqr
	l := &c.st.Log
	if sr.leading == 0 || m.Term != sr.leading {
		return fmt.Errorf("%w: append ack for term %d", ErrStale, m.Term)
	}
	if a.Match > l.last() {
		return fmt.Errorf("%w: member %d matches up to %d, the log ends at %d", ErrImplausible, m.From, a.Match, l.last())
	}
	progress := a.Match > sr.match[m.From]
	sr.match[m.From] = max(sr.match[m.From], a.Match)
	sr.held[m.From] = a.Match // its word, also when it says less than before (a restart)
	if a.Match >= l.Base {
		delete(sr.snapWait, m.From) // it holds what the log keeps: no snapshot waits
	}
	switch {
	case a.Match+1 < sr.next[m.From] && !progress:
		// It lacks what was sent (lost, or it was behind): go back. An
		// ack that moved on answers an earlier Append while later ones
		// are in flight: nothing to resend.
		sr.next[m.From] = a.Match + 1
	case a.Match+1 > sr.next[m.From]:
		// It has more than was sent to it (a snapshot, or an earlier term).
		sr.next[m.From] = a.Match + 1
	}
	if sr.next[m.From] <= l.last() {
		sr.flush = true
	} else if !progress && a.Commit < l.Commit {
		// It holds everything sent to it and says its commit point is
		// behind: the commit point sent alone (not acknowledged) was
		// lost, or it restarted before writing it, and it asks
		// (askCommit). One frame with the commit point answers; the
		// entries it holds are not sent again.
		c.sendAppend(m.From)
		c.count("commits_resent")
	}
	c.advanceCommit()
	return nil
}

// advanceCommit commits what a majority holds in this term.
func (c *Core) advanceCommit() {
	sr := &c.seqr
	l := &c.st.Log
	ms := make([]uint64, 0, len(c.members))
	for _, id := range c.members {
		ms = append(ms, sr.match[id])
	}
	slices.Sort(ms)
	slices.Reverse(ms)
	maj := ms[c.majority()-1]
	if maj > l.Commit {
		c.commitTo(maj)
		// The commit point rides on the next Append to each member (as
		// Raft's commit index on AppendEntries). While numbers are in
		// flight more Appends follow, and one that none carries within
		// CommitDelay goes alone; once everything numbered is committed
		// the sequencer is idle, and it goes alone at once (after the
		// frames waiting on the loop, which may bring new submissions).
		due := c.now.Add(c.cfg.CommitDelay)
		if l.Commit == l.last() {
			due = c.now
		}
		if sr.commitDue.IsZero() || due.Before(sr.commitDue) {
			sr.commitDue = due
			c.wake(due)
		}
	}
}

// sendCommits sends the commit point alone to the members no Append told
// it since it moved.
func (c *Core) sendCommits() {
	sr := &c.seqr
	sr.commitDue = time.Time{}
	for _, p := range c.peers {
		if sr.sentCommit[p] < c.st.Log.Commit {
			c.sendAppend(p)
			c.count("commits_alone")
		}
	}
}

// commitTo commits and applies the log up to i.
func (c *Core) commitTo(i uint64) {
	l := &c.st.Log
	if i <= l.Commit {
		return
	}
	l.Commit = min(i, l.last())
	for l.Applied < l.Commit {
		l.Applied++
		e, _ := l.entry(l.Applied)
		if e.Sender == c.id {
			c.ownDelivered(e.SID)
		}
		c.applyTotal(Delivery{Order: TotalOrder, Sender: e.Sender, Seq: l.Applied, SID: e.SID, Message: e.Message})
	}
	l.compact(uint64(c.cfg.KeepLog))
	// Not a promise: a commit point is held by a majority whatever
	// happens to this member, which learns it again after a crash
	// (askCommit); its record may wait for the next write (lazy.go).
	c.durable.Lazy()
}

// seqTick resends what is due.
func (c *Core) seqTick(now time.Time) {
	if c.cfg.Total != Sequencer {
		return
	}
	sr := &c.seqr
	l := &c.st.Log
	if sr.recovering != 0 && !now.Before(sr.retryAt) {
		if sr.best == 0 {
			c.sendRecover()
		} else {
			c.sendFetch()
		}
	}
	if sr.recovering != 0 {
		c.wake(sr.retryAt)
	}
	if sr.leading != 0 && !sr.commitDue.IsZero() {
		if now.Before(sr.commitDue) {
			c.wake(sr.commitDue)
		} else {
			c.sendCommits()
		}
	}
	if sr.leading != 0 {
		for _, p := range c.peers {
			if sr.match[p] >= l.last() && sr.sentCommit[p] >= l.Commit {
				// Up to date: bully's heartbeats say the sequencer lives.
				// A commit point sent alone is not acknowledged: a member
				// that lost it asks (askCommit).
				continue
			}
			if !now.Before(sr.due[p]) {
				// Silent for a heartbeat: again from what it said it
				// holds (not from what it acknowledged in this term:
				// a member whose first acknowledgement was lost has
				// acknowledged nothing, and number 1 is long compacted).
				if sr.next[p] > sr.held[p]+1 {
					sr.next[p] = sr.held[p] + 1
					c.count("resent_appends")
				}
				c.sendAppend(p)
			}
			c.wake(sr.due[p])
		}
	}
	c.askCommit(now)
	if len(l.Submits) > 0 {
		if sr.submitDue.IsZero() || !now.Before(sr.submitDue) {
			sids := make([]uint64, 0, len(l.Submits))
			for sid := range l.Submits {
				sids = append(sids, sid)
			}
			slices.Sort(sids)
			for _, sid := range sids[:min(len(sids), maxBurst)] {
				c.sendSubmit(sid)
			}
			sr.submitDue = now.Add(c.cfg.Retry)
		}
		c.wake(sr.submitDue)
	} else {
		sr.submitDue = time.Time{}
	}
}

// askCommit has a member that holds entries past its commit point say
// where it stands, when it has not heard the sequencer of the known term
// since it started, or has heard no Append for a Heartbeat.
//
// A member takes an Append that carries only the commit point before its
// record of it is written (the commit point is not a promise); one that
// crashes in between restarts behind, and the sequencer, which sent it
// the newer commit point, sends it nothing while the cluster is idle: its
// state machine would lag until the next multicast. Nor is the commit
// point sent alone acknowledged (it would tell the sequencer only what it
// sent: N-1 frames per isolated multicast), so a member that lost it
// would wait as long. The question is an AppendAck with its match (its
// whole log if the known term's sequencer shaped its tail, else its
// commit point: the part it knows is everyone's) and its commit point:
// a sequencer that sent it everything answers with the commit point
// alone (stepAppendAck), one that sent more goes back to the number
// after its match, as for any member that lacks what was sent.
// Asked every Heartbeat until an Append of the term arrives (after a
// start) or while the commit point stays behind the log (a lost one, or
// a sequencer that cannot commit: a majority down).
func (c *Core) askCommit(now time.Time) {
	sr := &c.seqr
	l := &c.st.Log
	if sr.leader == 0 || sr.leader == c.id || l.Commit >= l.last() {
		return
	}
	_, term, ok := c.el.Leader()
	if !ok {
		return
	}
	if term == sr.heard {
		if quiet := sr.heardAt.Add(c.cfg.Heartbeat); now.Before(quiet) {
			c.wake(quiet)
			return
		}
	}
	if now.Before(sr.askDue) {
		c.wake(sr.askDue)
		return
	}
	// Its match, as its acknowledgements say it: the whole log if the
	// term's sequencer shaped its tail (those entries are on its disk),
	// else only what it knows is everyone's.
	match := l.Commit
	if l.AppendTerm == term {
		match = l.last()
	}
	b, _ := wire.OrderAppendAck{Match: match, Commit: l.Commit}.AppendBinary(nil)
	c.msgs = append(c.msgs, msgT{To: sr.leader, Kind: wire.KindOrderAppendAck, Term: term, Payload: b})
	c.count("commit_asks")
	sr.askDue = now.Add(c.cfg.Heartbeat)
	c.wake(sr.askDue)
}

// snapshotData is what an OrderSnapshot carries: the state machine after
// the snapshot's number, and each sender's last submission up to it (so
// that nothing is numbered twice after it).
type snapshotData struct {
	Machine json.RawMessage   `json:"machine"`
	SIDs    map[uint32]uint64 `json:"sids"`
}

// sendSnapshot sends the state at the applied number to a member that
// needs entries no longer kept (sequencer), or to a new sequencer that
// fetches them.
func (c *Core) sendSnapshot(to uint32, term uint64) {
	l := &c.st.Log
	if c.machine == nil || l.Applied == 0 {
		c.count("snapshot_unavailable")
		return
	}
	sids := map[uint32]uint64{}
	for k, v := range l.BaseSIDs {
		sids[k] = v
	}
	for i := l.Base + 1; i <= l.Applied; i++ {
		e, _ := l.entry(i)
		sids[e.Sender] = max(sids[e.Sender], e.SID)
	}
	data, err := json.Marshal(snapshotData{Machine: c.machine.Snapshot(), SIDs: sids})
	if err != nil {
		c.bugs.Report(&c.events, "encode_snapshot", err)
		return
	}
	b, ok := c.bugs.Encode(&c.events, "order_snapshot", wire.OrderSnapshot{Index: l.Applied, Data: data}, nil)
	if ok {
		c.msgs = append(c.msgs, msgT{To: to, Kind: wire.KindOrderSnapshot, Term: term, Payload: b})
		c.count("snapshots_sent")
	}
}

// How far snapshots may move this member's commit point: by what a
// sequencer can have numbered since this member was last caught up. A
// snapshot numbered 2^64-1 stopped a member for good, its state refused
// at the next start; bounded by a fixed distance (2^40), 2^24 forged
// snapshots in a row still ended the number space, and one forged 2^40
// ahead stopped a member's deliveries for as long as the cluster took to
// number that far. So the snapshots a member installs may move its commit
// point by snapshotBurst plus snapshotRate a second since it last took an
// Append whose commit point was within snapshotBurst of its own (HeardAt,
// persisted: a member that was down or cut off for a day takes a day's
// numbers at once, and one that falls behind while it hears the
// sequencer stops the clock when it falls behind). A sequencer numbers
// far fewer than 2^20 a second (one entry per submission its loop
// handles). Forged snapshots move a commit point by the rate, and by
// snapshotBurst per Append the member takes in between (forged ones
// too): 2^64 lasts 90 years of 100,000 forged pairs a second.
const (
	snapshotBurst = 1 << 16
	snapshotRate  = 1 << 20
)

// snapshotAllowance is how far snapshots may move the commit point at
// now (see snapshotBurst).
func (c *Core) snapshotAllowance() uint64 {
	since := c.st.Log.HeardAt
	if since.IsZero() || since.After(c.now) {
		since = c.started
	}
	allow := uint64(snapshotBurst)
	if dt := c.now.Sub(since); dt > 0 {
		allow += uint64(min(dt.Seconds(), 1<<40) * snapshotRate)
	}
	return allow - min(allow, c.snapJumped)
}

// skipped reports numbers this member will never deliver one by one,
// having installed a snapshot past them: to the operator (a WARN event),
// to the status (counters, the last skip) and to whoever reads the
// deliveries (orderd log, the hooks: a delivery record that says which
// numbers, so that a consumer never passes over one in silence).
func (c *Core) skipped(k Skipped) {
	c.count("snapshots_installed")
	c.counters["skipped_numbers"] += k.To - k.From + 1
	c.lastSkip = &k
	c.events = append(c.events, core.Event{Name: EventSnapshot, Warn: true,
		Msg: fmt.Sprintf("caught up from member %d's snapshot at number %d: numbers %d to %d are not delivered here one by one "+
			"(their effect is in the state; orderd log and the hooks show the skip); this member was more than the log's %d entries behind",
			k.Via, k.To, k.From, k.To, c.cfg.KeepLog),
		Args: []any{"from", k.Via, "index", k.To, "skipped_from", k.From, "skipped_to", k.To}})
	c.deliver(Delivery{Order: TotalOrder, Seq: k.To, Skipped: &k})
}

func (c *Core) stepSnapshot(m msgT) error {
	var s wire.OrderSnapshot
	if err := s.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if commit := c.st.Log.Commit; s.Index > commit {
		if allow := c.snapshotAllowance(); s.Index-commit > allow {
			return fmt.Errorf("%w: snapshot at number %d from %d, %d past this member's commit point %d: at most %d now (a sequencer numbers at most %d a second since this member took its last Append)",
				ErrImplausible, s.Index, m.From, s.Index-commit, commit, allow, uint64(snapshotRate))
		}
	}
	sr := &c.seqr
	fetching := sr.recovering != 0 && m.Term == sr.recovering && m.From == sr.source
	if fetching && sr.tailTo != 0 {
		// The answer to the tail's fetch: the member compacted past it
		// meanwhile. Go on without (never installed: it would drop the
		// log fetched after this member's snapshot).
		sr.tailTo, sr.tail = 0, nil
		c.recovered()
		return nil
	}
	if !fetching {
		if err := c.promiseTerm(m.From, m.Term); err != nil {
			return err
		}
		sr.heard, sr.heardAt = m.Term, c.now
	}
	l := &c.st.Log
	if c.machine == nil {
		return fmt.Errorf("%w: a snapshot, and no state machine here", core.ErrUnexpectedKind)
	}
	installed := s.Index > l.Commit
	if installed {
		var d snapshotData
		if err := json.Unmarshal(s.Data, &d); err != nil {
			return fmt.Errorf("%w: snapshot: %w", ErrImplausible, err)
		}
		for id := range d.SIDs {
			if _, ok := c.pos[id]; !ok {
				return fmt.Errorf("%w: snapshot names non-member %d", ErrImplausible, id)
			}
		}
		if err := c.machine.Restore(d.Machine); err != nil {
			return fmt.Errorf("%w: snapshot: %w", ErrImplausible, err)
		}
		c.snapJumped += s.Index - l.Commit
		skip := Skipped{From: l.Applied + 1, To: s.Index, Via: m.From}
		l.Entries, l.Base, l.Commit, l.Applied = nil, s.Index, s.Index, s.Index
		l.BaseSIDs = d.SIDs
		c.rec.whole = true // the machine changed by other means than entries
		if own, ok := d.SIDs[c.id]; ok {
			c.ownDelivered(own)
		}
		if !fetching {
			l.AppendTerm = m.Term
		}
		c.durable.Change(true)
		c.skipped(skip)
	}
	if fetching {
		c.fetchRest()
		return nil
	}
	match := l.Commit
	if l.AppendTerm == m.Term {
		match = l.last()
	}
	b, _ := wire.OrderAppendAck{Match: match, Commit: l.Commit}.AppendBinary(nil)
	c.msgs = append(c.msgs, msgT{To: m.From, Kind: wire.KindOrderAppendAck, Term: m.Term, Payload: b})
	return nil
}
