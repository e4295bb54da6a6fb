package permission

import (
	"maps"
	"slices"

	"github.com/synclab/synclab/pkg/wire"
)

// The distributed bakery (Variant Bakery): Lamport's bakery as the notes
// adapt it to message passing, each member the server of its own num and
// choosing of every lock. A member that wants a lock
//
//  1. doorway: is choosing (it defers every read of its choosing) and
//     reads every other member's num (wire.KindBakeryDoorway, answered at
//     once by wire.KindBakeryNumber, the num in Want); its ticket is then
//     1 + the largest num read, or more (below);
//  2. reads every other member's choosing (wire.KindBakeryChoosing,
//     carrying the ticket), answered (wire.KindBakeryChosen) once that
//     member is not choosing: the notes' first wait;
//  3. reads every other member's num against its ticket
//     (wire.KindBakeryTicket), answered (wire.KindBakeryTicketReply) once
//     that member's num is 0 or its (num, ID) comes after (ticket, ID):
//     the notes' second wait. The reply is a leave as Ricart-Agrawala's
//     is, and the rule is Ricart-Agrawala's with the ticket for the stamp
//     (stepRARequest).
//
// The notes' waits are loops that read again and again; here a member
// that would answer "choosing" or "a smaller num" defers its answer until
// it can say otherwise, so a read costs one request and one reply, the
// notes' count: three reads of N-1 members, 6(N-1) messages per entry
// (the notes write 6N), and three round trips, each as slow as the
// slowest member, before the entry.
//
// The ticket. The notes take 1 + the largest num read; here it is the
// member's next Lamport tick once every num is in: each num came in a
// frame stamped at or above it (a num above its frame's Lamport time is
// refused as implausible), which the node merged into the clock, so the
// tick is above every num read, as the notes' ticket is, and the bakery's
// argument holds unchanged. What the tick adds: the notes' tickets go
// back to 1 whenever nobody waits, and a fence must not; a tick is the
// (stamp, ID) of a request as in Ricart-Agrawala, so the fence, leases,
// leaves, incarnations, restarts and the giving up of a member on a
// majority's word are Ricart-Agrawala's (the package doc), and a ticket
// from the wire is bounded by the node's Lamport ceiling: a forged huge
// num is refused (above its frame's Lamport time), or is a Lamport time
// the node let through, which moves the clock no further than any frame
// can (internal/node's LamportRate; wire.MaxPermStamp ends the clock,
// with ErrClockExhausted, after 17 years of it).
//
// Failures, as Ricart-Agrawala's: a member given up is not read (its num
// and choosing count as 0 and false: it has rejoined or stopped, and
// reads again before it enters); a read unanswered for RetryInterval is
// sent again (the answers are idempotent: each names the read it answers
// by its stamp and incarnation); a restarted member answers the doorway
// and choosing reads at once (it holds no ticket and chooses none) and
// the ticket reads, its leaves, only after its restart hold.

// phase is the read a bakery request is at (lock.phase).
type phase uint8

const (
	// phaseDoorway: choosing; reading every num (lock.stamp: the read's
	// own stamp).
	phaseDoorway phase = iota + 1
	// phaseChoosing: the ticket taken (lock.stamp); reading every
	// choosing.
	phaseChoosing
	// phaseTicket: reading every num against the ticket.
	phaseTicket
)

// read is the kind of the frame that reads what the phase reads.
func (p phase) read() wire.Kind {
	switch p {
	case phaseDoorway:
		return wire.KindBakeryDoorway
	case phaseChoosing:
		return wire.KindBakeryChoosing
	}
	return wire.KindBakeryTicket
}

// answers is the phase a kind of answer belongs to.
func answers(k wire.Kind) phase {
	switch k {
	case wire.KindBakeryNumber:
		return phaseDoorway
	case wire.KindBakeryChosen:
		return phaseChoosing
	}
	return phaseTicket
}

func (p phase) String() string {
	switch p {
	case phaseDoorway:
		return "doorway"
	case phaseChoosing:
		return "choosing"
	case phaseTicket:
		return "ticket"
	}
	return ""
}

// allKinds are the kinds of every variant: a frame of one a core's
// variant does not send is of another algorithm (ErrWrongAlgorithm).
var allKinds = slices.Concat(Kinds(RicartAgrawala), Kinds(Lamport), Kinds(Bakery))

// ticket is this member's num of lock l: its request's stamp, but 0 in
// the bakery's doorway (the notes set num at its end).
func (c *Core) ticket(l *lock) uint64 {
	if l.phase == phaseDoorway {
		return 0
	}
	return l.stamp
}

// replyKind is the kind of a leave (Ricart-Agrawala's reply, the
// bakery's ticket reply).
func (c *Core) replyKind() wire.Kind {
	if c.cfg.Variant == Bakery {
		return wire.KindBakeryTicketReply
	}
	return wire.KindRAReply
}

// doorway starts a bakery request for l: this member is choosing, and
// reads every other member's num, stamped once for all of them.
func (c *Core) doorway(l *lock) {
	l.stamp = c.lamport.Send()
	l.phase = phaseDoorway
	l.granted = false
	clear(l.got)
	clear(l.sentAt)
	c.count("requests_sent")
	for _, m := range c.others() {
		c.sendRequest(l, m, l.stamp)
	}
	// Heard by every member: it counts as this member's (busy) heartbeat.
	c.saidBusy = true
	c.beaten()
}

// nextRead moves l's request to its next read once every member not given
// up answered this one: after the doorway the ticket is taken and the
// reads of this member's choosing deferred meanwhile are answered.
func (c *Core) nextRead(l *lock) {
	var stamp uint64
	switch l.phase {
	case phaseDoorway:
		// Every num read came in a frame the clock merged: the next tick
		// is above them all (the notes' 1 + max, or more).
		l.stamp = c.lamport.Send()
		l.phase = phaseChoosing
		stamp = l.stamp
		c.count("tickets_taken")
	case phaseChoosing:
		l.phase = phaseTicket
	default:
		return
	}
	clear(l.got)
	clear(l.sentAt)
	for _, m := range c.others() {
		c.sendRequest(l, m, stamp)
	}
	c.answerChoosing(l) // no longer choosing (a no-op after the first read)
	c.advance(l)        // every other member given up: on at once
}

// stepBakeryRead answers another member's read of this member's num or
// choosing of lock r.Name; a ticket read follows Ricart-Agrawala's rule
// on a request, with this member's ticket (stepRARequest).
func (c *Core) stepBakeryRead(k wire.Kind, from uint32, at uint64, r wire.PermRequest) error {
	if k == wire.KindBakeryTicket {
		return c.stepRARequest(from, at, r)
	}
	l, err := c.lockFor(r.Name, from)
	if err != nil {
		return err
	}
	l.touched = c.now
	l.known = max(l.known, r.Fence)
	c.sawWant(l, from, at, r.Stamp)
	if k == wire.KindBakeryChoosing && l.phase == phaseDoorway {
		if d, ok := l.choosing[from]; !ok || r.Stamp >= d.stamp {
			l.choosing[from] = deferral{stamp: r.Stamp, inc: r.Incarnation}
		}
		c.count("choosing_deferred")
		return nil
	}
	answer := wire.KindBakeryNumber
	if k == wire.KindBakeryChoosing {
		answer = wire.KindBakeryChosen
	}
	c.send(from, answer, wire.PermReply{Name: r.Name, Incarnation: c.inc, Answers: r.Incarnation,
		Stamp: r.Stamp, Fence: l.known, Want: c.ticket(l)}, 0)
	return nil
}

// answerChoosing answers the reads of this member's choosing of l that it
// deferred while in its doorway.
func (c *Core) answerChoosing(l *lock) {
	for _, m := range slices.Sorted(maps.Keys(l.choosing)) {
		d := l.choosing[m]
		delete(l.choosing, m)
		c.send(m, wire.KindBakeryChosen, wire.PermReply{Name: l.name, Incarnation: c.inc, Answers: d.inc,
			Stamp: d.stamp, Fence: l.known, Want: c.ticket(l)}, 0)
	}
}

// stepBakeryAnswer takes an answer to one of this member's reads: it
// counts only if it answers the read under way (its kind, the stamp and
// the incarnation of this member's request).
func (c *Core) stepBakeryAnswer(k wire.Kind, from uint32, at uint64, r wire.PermReply) {
	// Only a ticket reply is a leave, which keeps the entry of the read at
	// its sender: the others are disowned by nothing (their entries are
	// idle once answered).
	leave := k == wire.KindBakeryTicketReply
	l := c.locks[r.Name]
	if l == nil {
		c.stray(nil, from, at, r, leave)
		return
	}
	l.touched = c.now
	l.known = max(l.known, r.Fence)
	c.sawWant(l, from, at, r.Want)
	if l.stamp != 0 && !l.granted && l.phase == answers(k) && r.Stamp == l.stamp && r.Answers == c.inc {
		l.got[from] = true
	} else {
		c.stray(l, from, at, r, leave)
	}
	c.advance(l)
}
