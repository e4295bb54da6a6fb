package order

import (
	"time"

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
	Acked   uint64    `json:"acked"` // highest cumulative ack
	due     time.Time // next resend
	backoff time.Duration
}

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

// room reports whether a new record fits the window.
func (s *stream) room(window int) bool { return s.Seq-s.minAcked() < uint64(window) }

// trim drops the records every member acknowledged.
func (s *stream) trim() {
	m := s.minAcked()
	i := 0
	for i < len(s.Sent) && s.Sent[i].Seq <= m {
		i++
	}
	if i > 0 {
		s.Sent = append(s.Sent[:0:0], s.Sent[i:]...)
	}
}

// record returns the kept record numbered seq.
func (s *stream) record(seq uint64) ([]byte, bool) {
	if len(s.Sent) == 0 || seq < s.Sent[0].Seq || seq > s.Sent[len(s.Sent)-1].Seq {
		return nil, false
	}
	r := s.Sent[seq-s.Sent[0].Seq]
	return r.Payload, r.Seq == seq
}
