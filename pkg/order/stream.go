package order

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// The reliable FIFO stream: every member numbers the records it
// multicasts 1, 2, 3, ... and sends each to every other member; a
// receiver hands records on strictly in that order, exactly once, holding
// back those that arrive early (at most Window ahead), and acknowledges
// cumulatively the last record it handed on; a sender resends, from the
// first unacknowledged record, to a member whose acknowledgement does not
// come within Retry, doubling the wait while the member stays silent.
// Both ends are persisted (the sender's unacknowledged records, the
// receiver's position and everything it handed on), and an
// acknowledgement leaves only after the state it reports is on disk, so a
// record is handed on once per member across crashes.
//
// The cumulative acknowledgement makes pkg/delivery's per-message Outbox
// unnecessary here: one number per member says what is missing, and a
// silent member gets one resend burst per backoff, not one per record.

// maxBurst is how many records a resend sends at once.
const maxBurst = 16

// sentRecord is one record of this member's stream, kept until every
// member acknowledged it.
type sentRecord struct {
	Seq     uint64 `json:"seq"`
	Payload []byte `json:"payload"` // the encoded wire.OrderRecord
}

// peerOut is what the stream knows of one member as a receiver.
type peerOut struct {
	Acked uint64 `json:"acked"` // highest cumulative ack
	// Settled is how far the records are trimmed for this member: Acked
	// with a key; without one (Config.Unkeyed), an Acked that stood
	// settle with no lower word of the member stamped after it (see
	// "Acknowledgements without a key" below).
	Settled uint64    `json:"settled,omitempty"`
	due     time.Time // next resend
	backoff time.Duration

	// Without a key: Acked's rises not yet settled (oldest first), the
	// stamp of the frame whose rise last settled (0: none since the
	// start), and when the member was last asked how far it holds this
	// stream.
	raises  []ackRaise
	settled uint64
	probed  time.Time
	// warned: the settled rise (its stamp) an undoing was last warned of;
	// later low words against it are counted, not warned again (a forger
	// would otherwise write a WARN line, and run the hooks, per frame).
	warned uint64
}

// ackRaise is a rise of a member's acknowledgement to upto, at a time,
// by a frame stamped stamp.
type ackRaise struct {
	at    time.Time
	stamp uint64
	upto  uint64
}

// Acknowledgements without a key. Anyone can send a frame in a member's
// name then, so an acknowledgement saying that member 2 holds this
// member's stream further than it does, if the record it lacks was lost
// on its way, would let this member trim the record: member 2's stream
// from it would stall for good (nobody has the record any more). No word
// of member 2 can prove it is member 2's (a forger on the LAN reads the
// frames, so it can echo any nonce or digest), but the real member 2
// speaks too, and its word is stamped in the order it says it: a word
// lower than one believed, stamped after the frame that said it, is
// member 2's own, and the one believed was never its (acks_undone, as
// pkg/epoch undoes incarnations). So without a key:
//
//   - the lower word stamped after a rise undoes every rise not yet
//     settled (a forger who raises again after the member's answer is
//     undone by its next answer), and what the member lacks is resent
//     within a Retry (at the pace of resends: a flood of low words costs
//     no more than maxBurst records a Retry);
//   - a rise is asked back: the member is sent this member's holding
//     (answered, in the unkeyed cluster, with its own: stamped after the
//     rise) at once and every Retry while a rise is not settled;
//   - a record is trimmed only once every member's acknowledgement of it
//     stood settleRetries x Retry with no lower word after it (Settled),
//     so that the real member's answer has come and undone a forged
//     rise before anything it lacks is gone;
//   - memory stays bounded: a multicast is refused (ErrBusy) once
//     settleWindows x Window records wait to be settled, as it is once
//     Window wait for an acknowledgement; Window is at most
//     MaxUnkeyedWindow, so that is MaxWindow records at most, as with a
//     key.
//
// What remains: a forger who speaks for a member that stays silent for
// the whole settle time (down, or cut off from this member) can still
// have a record it lacks trimmed. With a key nothing of this runs:
// Settled is Acked, as before.
const (
	settleRetries = 8
	settleWindows = 8
)

// peerIn is what the stream knows of one member as a sender.
type peerIn struct {
	Next uint64 `json:"next"` // records handed on: 1..Next
	// Stable: every member holds records 1..Stable (never after Next), as
	// the member announced or the relay learned; the records after it
	// that this member handed on are kept to be relayed (relay.go).
	Stable uint64                      `json:"stable,omitempty"`
	held   map[uint64]wire.OrderRecord // early records, Next+1..Next+Window
	ack    bool                        // an ack is owed
}

type stream struct {
	Seq  uint64              `json:"seq"` // last record numbered
	Sent []sentRecord        `json:"sent,omitempty"`
	Out  map[uint32]*peerOut `json:"out"`
	In   map[uint32]*peerIn  `json:"in"`
	// Kept are the records of each other member's stream handed on here
	// and not known to be held by every member: Stable+1..Next, at most
	// the last Window (relay.go).
	Kept map[uint32][]sentRecord `json:"kept,omitempty"`
}

func newStream(peers []uint32) *stream {
	s := &stream{Out: map[uint32]*peerOut{}, In: map[uint32]*peerIn{}}
	s.fill(peers)
	return s
}

// fill adds the members a restored stream lacks and drops the ones that
// left the member list.
func (s *stream) fill(peers []uint32) {
	if s.Out == nil {
		s.Out = map[uint32]*peerOut{}
	}
	if s.In == nil {
		s.In = map[uint32]*peerIn{}
	}
	if s.Kept == nil {
		s.Kept = map[uint32][]sentRecord{}
	}
	keep := map[uint32]bool{}
	for _, p := range peers {
		keep[p] = true
		if s.Out[p] == nil {
			s.Out[p] = &peerOut{}
		}
		if s.In[p] == nil {
			s.In[p] = &peerIn{}
		}
		s.In[p].held = map[uint64]wire.OrderRecord{}
	}
	for p := range s.Out {
		if !keep[p] {
			delete(s.Out, p)
		}
	}
	for p := range s.In {
		if !keep[p] {
			delete(s.In, p)
		}
	}
	for p := range s.Kept {
		if !keep[p] {
			delete(s.Kept, p)
		}
	}
}

// minAcked is the highest record every member acknowledged.
func (s *stream) minAcked() uint64 {
	m := s.Seq
	for _, o := range s.Out {
		m = min(m, o.Acked)
	}
	return m
}

// minSettled is the highest record every member's acknowledgement of
// which settled (with a key: minAcked).
func (s *stream) minSettled() uint64 {
	m := s.Seq
	for _, o := range s.Out {
		m = min(m, o.Settled)
	}
	return m
}

// room reports whether a new record fits the window, and the records
// waiting to be settled their bound.
func (s *stream) room(window int) bool {
	return s.Seq-s.minAcked() < uint64(window) && s.Seq-s.minSettled() < uint64(settleWindows*window)
}

// slow says whether member p's acknowledgements keep a new record out.
func (s *stream) slow(p uint32, window int) bool {
	o := s.Out[p]
	return s.Seq-o.Acked >= uint64(window) || s.Seq-o.Settled >= uint64(settleWindows*window)
}

// trim drops the records every member's acknowledgement of which
// settled.
func (s *stream) trim() {
	m := s.minSettled()
	i := 0
	for i < len(s.Sent) && s.Sent[i].Seq <= m {
		i++
	}
	if i > 0 {
		s.Sent = append(s.Sent[:0:0], s.Sent[i:]...)
	}
}

// gone is the last record trimmed (0: none).
func (s *stream) gone() uint64 {
	if len(s.Sent) > 0 {
		return s.Sent[0].Seq - 1
	}
	return s.Seq
}

// record returns the kept record numbered seq.
func (s *stream) record(seq uint64) ([]byte, bool) {
	if len(s.Sent) == 0 || seq < s.Sent[0].Seq || seq > s.Sent[len(s.Sent)-1].Seq {
		return nil, false
	}
	r := s.Sent[seq-s.Sent[0].Seq]
	return r.Payload, r.Seq == seq
}

// raised notes, without a key, that member p's acknowledgement rose to
// o.Acked in a frame stamped at: it settles settleRetries x Retry from
// now unless a lower word of p stamped after it comes first, and p is
// asked how far it holds this stream (at most once a Retry), so that its
// own word comes.
func (c *Core) raised(p uint32, o *peerOut, at uint64) {
	if n := len(o.raises); n > 0 && c.now.Sub(o.raises[n-1].at) < c.cfg.Retry/2 {
		// Rises closer than Retry/2 settle together (at most
		// 2 x settleRetries + 1 are kept); the member's answer to a probe
		// sent after the last undoes them.
		o.raises[n-1].upto, o.raises[n-1].stamp = o.Acked, at
	} else {
		o.raises = append(o.raises, ackRaise{at: c.now, stamp: at, upto: o.Acked})
	}
	c.wake(o.raises[0].at.Add(c.settle()))
	c.probe(p, o)
}

func (c *Core) settle() time.Duration { return settleRetries * c.cfg.Retry }

// probe asks member p how far it holds this member's stream (its answer
// is an acknowledgement), unless it was asked less than a Retry ago.
func (c *Core) probe(p uint32, o *peerOut) {
	if !o.probed.IsZero() && c.now.Sub(o.probed) < c.cfg.Retry {
		c.wake(o.probed.Add(c.cfg.Retry))
		return
	}
	o.probed = c.now
	c.sendHolding(p, c.id, 0)
	c.count("acks_probed")
	c.wake(c.now.Add(c.cfg.Retry))
}

// undoAck takes member p's word, in a frame stamped at, that it holds
// this member's stream only up to upto, below what is believed. Stamped
// after a frame that said more (a rise not yet settled, or the one that
// settled last), it is the member's own, and that rise was not: every
// rise not settled above upto is undone, and what it lacks is resent
// within a Retry. Stamped before, it is a late copy of an earlier word of the member.
func (c *Core) undoAck(p uint32, o *peerOut, upto, at uint64) {
	s := c.st.Stream
	undone := upto < o.Settled && o.settled != 0 && at > o.settled
	for _, r := range o.raises {
		undone = undone || r.upto > upto && r.stamp < at
	}
	if !undone {
		return
	}
	c.count("acks_undone")
	if upto < o.Settled && o.settled != 0 && at > o.settled {
		// Settled already: the records between may be trimmed (the
		// forger spoke for a member silent for the whole settle time).
		// Settled never falls below what is trimmed: the trimmed records
		// cannot be resent, and an acknowledgement below them would
		// keep the window shut for good (and the stored state would be
		// refused as records missing); a low word forged after a rise
		// the member's own word settled stops nothing.
		c.count("acks_undone_settled")
		if o.warned != o.settled {
			o.warned = o.settled
			c.events = append(c.events, core.Event{Name: EventAckUndone, Warn: true, Msg: fmt.Sprintf(
				"member %d holds this member's stream up to %d, not %d as frames in its name said for %v: the records it lacks may be trimmed and its stream from here stalled "+
					"(without a key anyone can forge its frames: give the cluster a key)", p, upto, o.Settled, c.settle()),
				Args: []any{"member", p, "holds", upto, "said", o.Settled}})
		}
		o.Settled = max(upto, min(s.gone(), o.Settled))
	}
	o.Acked = max(upto, o.Settled)
	kept := o.raises[:0]
	for _, r := range o.raises {
		if r.upto = min(r.upto, o.Acked); r.upto > o.Settled {
			kept = append(kept, r)
		}
	}
	o.raises = kept
	// What it lacks goes at the next resend, a Retry away at most (Tick
	// paces it): not at once, or each forged low word would cost a burst.
	o.backoff = c.cfg.Retry
	if next := c.now.Add(c.cfg.Retry); o.due.IsZero() || next.Before(o.due) {
		o.due = next
	}
	c.wake(o.due)
}

// settleTick settles, without a key, the acknowledgements that stood
// settle, trims what every member's settled acknowledgement covers, and
// asks again the members whose rises are not settled yet.
func (c *Core) settleTick(now time.Time) {
	if !c.cfg.Unkeyed {
		return
	}
	s := c.st.Stream
	moved := false
	for _, p := range c.peers {
		o := s.Out[p]
		if o.Acked > o.Settled && len(o.raises) == 0 {
			o.raises = append(o.raises, ackRaise{at: now, upto: o.Acked}) // restored from disk
		}
		for len(o.raises) > 0 && !now.Before(o.raises[0].at.Add(c.settle())) {
			if r := o.raises[0]; r.upto > o.Settled {
				o.Settled, o.settled, moved = r.upto, max(o.settled, r.stamp), true
			}
			o.raises = o.raises[1:]
		}
		if len(o.raises) > 0 {
			c.wake(o.raises[0].at.Add(c.settle()))
			c.probe(p, o)
		}
	}
	if moved {
		old := len(s.Sent)
		s.trim()
		if len(s.Sent) != old {
			c.durable.Change(false)
		}
		if due := c.announceDue(); !due.IsZero() {
			c.wake(due)
		}
	}
}
