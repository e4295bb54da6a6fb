package node

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Plausibility bounds on what a frame's header may claim, relative to what
// this node knows. A frame beyond them is refused and counted; it changes
// nothing, so the sender's real frames are judged as if it never came.
const (
	// SeqBurst and SeqRate bound how far a sender's counter may have moved
	// since the last frame accepted from it, dt earlier on this node's
	// clock: SeqBurst + SeqRate*dt. Every frame a sender writes, to anyone,
	// takes a number, so the counter moves by what the sender sent to the
	// whole cluster: 100,000 frames a second is several times what a
	// daemon's loop can encode, and 4096 covers a round of broadcasts to a
	// large lab between two frames to us. A partition lengthens dt, so a
	// sender heard again after a long silence is believed, and a refusal
	// moves nothing, so a frame refused now passes once enough time has
	// gone by: the bound can delay a genuine sender, never shut it out.
	SeqBurst = 4096
	SeqRate  = 100_000

	// IncarnationSlack bounds a sender's incarnation to this many above the
	// highest this node knows of: its own, or the sender's last. Incarnations
	// count starts (and, after a lost state directory, the minutes since
	// 2025), so 65,536 is decades of restarts or a month and a half of a
	// machine whose state was wiped; a forged incarnation of 2^24-1 is
	// refused instead of making every later real frame look old.
	IncarnationSlack = 1 << 16
)

// Errors for frames refused by the node's own checks (wire's sentinels
// cover the rest). Their drop reasons are in reasonOf.
var (
	// ErrWrongSource: the frame claims a member but comes from another
	// address (UDP: the member's address and port; TCP: its IP).
	ErrWrongSource = errors.New("node: frame from an address that is not its sender's")
	// ErrImplausibleSeq: the sequence number is beyond what the sender can
	// have reached (see SeqBurst, IncarnationSlack).
	ErrImplausibleSeq = errors.New("node: implausible sequence number")
	// ErrPreRestart: the frame belongs to an epoch of its sender that this
	// node had accepted before it restarted; it may be a recorded frame
	// played back. The node tells the sender (KindEpochRefused), which moves
	// to a new series.
	ErrPreRestart = errors.New("node: frame of an epoch accepted before this node restarted")
	// ErrBadVector: the frame's vector timestamp names a non-member, has
	// more entries than members, or an entry beyond what its member can
	// have reached ("bad_vector").
	ErrBadVector = errors.New("node: vector timestamp refused")
	// ErrLamportAhead: the Lamport stamp is beyond what its sender can have
	// reached since it was last heard (see LamportRate; a *StampError says
	// by how much).
	ErrLamportAhead = errors.New("node: Lamport stamp too far ahead")
	// ErrUnsaved: the frame opens a new epoch of its sender and this
	// node could not persist it (Config.Save failed).
	ErrUnsaved = errors.New("node: new epoch not persisted")
	// ErrUnkeyedRefusal: a KindEpochRefused reached a node that runs
	// without keys, where no epoch is ever refused: anyone can send one,
	// and each would move the node to a new series (and every 255 of
	// them to a new incarnation, written to disk) until its incarnations
	// ran out ("unkeyed_refusal").
	ErrUnkeyedRefusal = errors.New("node: epoch refusal without keys")
)

// Durable is what a node must find again after a crash to keep its promises
// about sequence numbers: Config.Save is given it, the driver restores it
// through Config.Incarnation and Config.Epochs.
type Durable struct {
	// Incarnation is this node's incarnation: a node raises it while
	// running when its series run out, and must not send under the new one
	// before it is saved.
	Incarnation uint32
	// Epochs holds, per peer, the highest epoch (wire.SeqEpoch) accepted
	// from it with authentication. After a restart, every frame of those
	// epochs is refused (ErrPreRestart): whatever was captured before the
	// restart cannot be played back after it.
	Epochs map[uint32]uint32
	// Stamps is the Lamport floor this node's clock resumes from and each
	// member's last stamp (see LamportRate). Its Floor is 0 until the
	// node first raised it.
	Stamps Stamps
}

// peer is what the node knows of one member's sequence numbers since it
// started.
type peer struct {
	seen  bool           // a frame of this peer was accepted since the node started
	epoch uint32         // epoch of win
	win   wire.SeqWindow // sequence numbers accepted in that epoch
	at    time.Time      // local time of the last accepted frame
	// The last KindEpochRefused sent to the peer: one per epoch and
	// refusalInterval, however many recordings are played back at us.
	refused   uint32
	refusedAt time.Time
	// The member's Lamport stamps (lamport.go), and how many of its
	// stamps this node refused, the last when.
	stamp          stampGuard
	stampsRefused  uint64
	stampRefusedAt time.Time
	// The transport's hints that the member's port closed (hint.go): how
	// many, the latest's cause and when.
	hints     uint64
	hintCause core.HintCause
	hintAt    time.Time
}

// refusalInterval spaces the KindEpochRefused a node sends one peer about
// one epoch: the first may be lost.
const refusalInterval = 200 * time.Millisecond

// restartNotices is how many times, refusalInterval apart, a node that
// restarted with keys tells each member whose epoch it saved that frames
// of that epoch are refused here, before the member sends any
// (announceRestart): the first may be lost.
const restartNotices = 3

// seqPlan is what accepting a frame will change, decided before anything is
// changed: a frame is refused whole or accepted whole.
type seqPlan struct {
	p        *peer
	seq      uint64
	reset    bool // start a new window at seq
	resync   bool // without keys: a stale frame taken, the window restarted
	persist  bool // save the new epoch first
	senderID uint32
	// renew: the frame was refused, and the sender should move to a new
	// series (KindEpochRefused) to be heard again at once.
	renew bool
}

// maxAdvance is how far a counter may have moved in dt (SeqBurst+SeqRate*dt,
// saturating).
func maxAdvance(dt time.Duration) uint64 {
	if dt <= 0 {
		return SeqBurst
	}
	const limit = wire.MaxCounter
	if dt >= time.Duration(limit/SeqRate)*time.Second {
		return limit
	}
	return SeqBurst + uint64(dt.Seconds()*SeqRate)
}

// checkSeq decides whether f's sequence number may be accepted from
// sender, at local time now. With keys, only key holders make frames, so
// the window is strict: a replay, a frame below the window or of an older
// epoch is refused, and so is an epoch accepted before this node restarted.
// Without keys anyone can make any frame and no window can tell a replay
// from the sender, so it only refuses exact duplicates and absurd values:
// a frame below the window restarts the window there (resync), and a
// forger's numbers can never lock the real sender out.
func (n *Node) checkSeq(f *wire.Frame, now time.Time) (seqPlan, error) {
	p := n.peers[f.Sender]
	if p == nil {
		p = &peer{}
		n.peers[f.Sender] = p
	}
	plan := seqPlan{p: p, seq: f.Seq, senderID: f.Sender}
	epoch := wire.SeqEpoch(f.Seq)
	inc, _, counter := wire.SeqParts(f.Seq)
	saved, hadSaved := n.epochs[f.Sender]
	known := n.inc
	if p.seen {
		known = max(known, p.epoch>>wire.SeriesBits)
	}
	if hadSaved {
		known = max(known, saved>>wire.SeriesBits)
	}
	if uint64(inc) > uint64(known)+IncarnationSlack {
		return plan, fmt.Errorf("%w: incarnation %d from %d, known %d", ErrImplausibleSeq, inc, f.Sender, known)
	}
	strict := len(n.cfg.Keys) > 0
	dt := now.Sub(p.at)
	switch {
	case !p.seen:
		if hadSaved && epoch <= saved && strict {
			return plan, fmt.Errorf("%w: epoch %#x from %d, %#x accepted before", ErrPreRestart, epoch, f.Sender, saved)
		}
		plan.reset = true
		plan.persist = strict && (!hadSaved || epoch > saved)
	case epoch == p.epoch:
		top := p.win.Top()
		if f.Seq > top && f.Seq-top > maxAdvance(dt) {
			return plan, fmt.Errorf("%w: %#x from %d, newest %#x %v ago", ErrImplausibleSeq, f.Seq, f.Sender, top, dt)
		}
		switch err := p.win.Check(f.Seq); {
		case err == nil:
		case errors.Is(err, wire.ErrStale) && !strict:
			plan.reset, plan.resync = true, true
		default:
			return plan, fmt.Errorf("%w: seq %#x from %d, newest %#x", err, f.Seq, f.Sender, top)
		}
	case epoch > p.epoch:
		if strict && uint64(counter) > maxAdvance(dt) {
			// Refused, and the sender is asked for a new series, whose
			// counter starts again from 0. A genuine sender is only
			// here when the window moved to an older epoch of its
			// shortly before (a recording of it taken after this node
			// restarted, or, without keys, a forged frame: both pass);
			// its counter says how long it has been in its epoch, which
			// may be months of frames, and waiting for counter/SeqRate
			// seconds to pass held it out for as long (12 hours at
			// most), where one round trip now brings it back. Without
			// keys the window is taken wherever a frame puts it (an
			// older epoch restarts it, below), so a forged newer epoch
			// holds nobody out and there is nothing to refuse: a node
			// without keys neither sends nor obeys an epoch refusal.
			plan.renew = true
			return plan, fmt.Errorf("%w: counter %d opening epoch %#x from %d", ErrImplausibleSeq, counter, epoch, f.Sender)
		}
		plan.reset = true
		plan.persist = strict && (!hadSaved || epoch > saved)
	default: // an older epoch of the sender
		if strict {
			return plan, fmt.Errorf("%w: epoch %#x from %d, now %#x", wire.ErrStale, epoch, f.Sender, p.epoch)
		}
		plan.reset, plan.resync = true, true
	}
	return plan, nil
}

// commitSeq applies a plan checkSeq returned: it saves a new epoch first
// (and refuses the frame if that fails), then records the sequence number.
func (n *Node) commitSeq(plan seqPlan, now time.Time) error {
	p := plan.p
	epoch := wire.SeqEpoch(plan.seq)
	if plan.persist {
		next := maps.Clone(n.epochs)
		if next == nil {
			next = map[uint32]uint32{}
		}
		next[plan.senderID] = epoch
		d := n.durable()
		d.Epochs = next
		if err := n.save(d); err != nil {
			return fmt.Errorf("%w: epoch %#x of %d: %v", ErrUnsaved, epoch, plan.senderID, err)
		}
		n.epochs = next
	}
	if plan.reset {
		p.epoch = epoch
		p.win.Reset(plan.seq)
	} else {
		p.win.Mark(plan.seq)
	}
	if plan.resync {
		n.stats.Resynced++
	}
	p.seen, p.at = true, now
	return nil
}

// refuseEpoch queues a KindEpochRefused to sender about epoch, unless one
// went out for it lately.
func (n *Node) refuseEpoch(sender, epoch uint32, now time.Time) {
	p := n.peers[sender]
	if p.refused == epoch && now.Sub(p.refusedAt) >= 0 && now.Sub(p.refusedAt) < refusalInterval {
		return
	}
	p.refused, p.refusedAt = epoch, now
	b, _ := wire.EpochRefused{Epoch: epoch}.AppendBinary(nil)
	n.own = append(n.own, core.Message{To: sender, Kind: wire.KindEpochRefused, Payload: b})
}

// epochRefused handles a peer's KindEpochRefused: if it names this node's
// current epoch, the peer restarted and remembers it, so this node moves to
// a new series (an older epoch named is a stale message: nothing to do).
func (n *Node) epochRefused(e wire.EpochRefused) {
	if e.Epoch == wire.SeqEpoch(n.seq) {
		n.newSeries()
	}
}

// announceRestart tells, at local time now, every member whose epoch this
// node saved before it restarted (and that it has not heard in a newer
// epoch since) that frames of that epoch are refused here: the member
// moves to a new series at once, instead of losing its first frame after
// the restart to the refusal (for bully that frame may be an ELECTION or
// an ANSWER) and moving only when told then. Sent with keys only (without
// them nothing is refused), authenticated like every frame, at the first
// Tick and restartNotices-1 more times refusalInterval apart to members
// still unheard: a handful of frames per member per restart.
func (n *Node) announceRestart(now time.Time) {
	if n.noticesLeft == 0 {
		return
	}
	if !n.noticeAt.IsZero() && !now.Before(n.noticeAt) && now.Sub(n.noticeAt) < refusalInterval {
		return
	}
	n.noticesLeft--
	n.noticeAt = now
	for _, id := range n.others {
		saved, ok := n.epochs[id]
		if !ok {
			continue
		}
		p := n.peers[id]
		if p == nil {
			p = &peer{}
			n.peers[id] = p
		}
		if p.seen {
			continue // heard in a newer epoch: it moved on
		}
		n.refuseEpoch(id, saved, now)
		n.stats.RestartNotices++
	}
}

// noticeDue is when announceRestart next has something to do (zero: never).
func (n *Node) noticeDue() time.Time {
	if n.noticesLeft == 0 || n.noticeAt.IsZero() {
		return time.Time{}
	}
	return n.noticeAt.Add(refusalInterval)
}

// save hands d to Config.Save, if there is one.
func (n *Node) save(d Durable) error {
	if n.cfg.Save == nil {
		return nil
	}
	return n.cfg.Save(d)
}

// newSeries moves this node's sequence numbers to the next series, or to a
// new incarnation (saved first) when the series have run out. It reports
// whether the node moved; if the save failed it stays where it is, and is
// asked again at the next occasion.
func (n *Node) newSeries() bool {
	if n.series < wire.MaxSeries {
		n.series++
		n.seq = wire.Seq(n.inc, n.series, 0)
		n.stats.NewSeries++
		return true
	}
	if n.inc >= MaxIncarnation {
		n.stats.drop("sequence_exhausted")
		return false
	}
	d := n.durable()
	d.Incarnation = n.inc + 1
	if err := n.save(d); err != nil {
		n.stats.drop("incarnation_unsaved")
		return false
	}
	n.inc++
	n.series = 0
	n.seq = wire.Seq(n.inc, 0, 0)
	n.stats.NewSeries++
	if n.agree != nil {
		// The members know this node's configuration by incarnation.
		n.announce(0, false)
	}
	return true
}

// nextSeq takes the next sequence number, moving to a new series when the
// counter has run out; ok false when no number can be taken safely.
func (n *Node) nextSeq() (uint64, bool) {
	if uint32(n.seq) == wire.MaxCounter && !n.newSeries() {
		return 0, false
	}
	n.seq++
	return n.seq, true
}

// PeerSeq is the node's view of one peer's sequence numbers, for status.
type PeerSeq struct {
	ID          uint32 `json:"id"`
	Incarnation uint32 `json:"incarnation"`
	Series      uint8  `json:"series"`
	Seq         uint64 `json:"seq"`             // highest accepted since this node started
	Saved       uint32 `json:"saved,omitempty"` // highest epoch persisted
	// Stamp is the member's last Lamport stamp taken (or the one it is
	// judged from); StampsRefused counts its stamps (or vector entries)
	// refused as beyond what it can have reached, the last at
	// StampRefusedAt (local time).
	Stamp          uint64    `json:"stamp,omitempty"`
	StampsRefused  uint64    `json:"stamps_refused,omitempty"`
	StampRefusedAt time.Time `json:"stamp_refused_at,omitzero"`
	// Hints counts the transport's hints that the member's port closed
	// (Node.Hint: its link closed or reset, a connection refused); the
	// latest was HintCause, at HintAt (local time). A hint is no proof
	// of death: a core that acts on it probes the member first.
	Hints     uint64    `json:"port_hints,omitempty"`
	HintCause string    `json:"port_hint_cause,omitempty"`
	HintAt    time.Time `json:"port_hint_at,omitzero"`
}
