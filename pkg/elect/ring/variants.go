package ring

import (
	"slices"

	"github.com/synclab/synclab/pkg/wire"
)

// What differs between the variants: what a member that suspects the
// leader sends (initiate, and whether it does once it has joined an
// election: initiates), and what a member does with an election message
// of its election (step). Everything else, the ring order, the acked hops
// and the skipping of dead members, the terms, the announcement and the
// leader's heartbeats, is the same for all of them (ring.go).

// initiates reports whether a member that suspects the leader sends a
// message of its own, given what it has done in this election so far.
// The notes' rings (naive, id-list) and Chang-Roberts let every suspecting
// member send one; Franklin and Fredrickson-Lynch do not start a second
// election in a member that has already seen one ("a process does not
// start more than one election at a time", the notes).
func (c *Core) initiates() bool {
	switch c.cfg.Variant {
	case Franklin, FredricksonLynch:
		return !c.el.joined
	}
	return !c.el.active
}

// initiate sends this member's own message.
func (c *Core) initiate() {
	c.el.active = true
	switch c.cfg.Variant {
	case Naive, ChangRoberts:
		c.forward(wire.RingElection{Attempt: c.el.attempt, Origin: c.id, Candidate: c.id}, +1)
	case IDList, FredricksonLynch:
		c.forward(wire.RingElection{Attempt: c.el.attempt, Origin: c.id, IDs: []uint32{c.id}}, +1)
	case Franklin:
		c.el.round = 1
		c.franklinSend()
	}
}

// step is an election message of this member's election.
func (c *Core) step(from uint32, e wire.RingElection, dir int) {
	switch c.cfg.Variant {
	case Naive:
		c.stepNaive(e)
	case IDList, FredricksonLynch:
		c.stepList(e)
	case ChangRoberts:
		c.stepChangRoberts(e)
	case Franklin:
		c.stepFranklin(e, dir)
	}
}

// dead reports whether a message speaks for a member known dead (it did not
// acknowledge a hop): its message would go round forever, as nobody it
// could reach stops it.
func (c *Core) dead(id uint32) bool {
	if id != c.id && c.isSkipped(id) {
		c.counts.deadDropped++
		return true
	}
	return false
}

// stepNaive: the notes' ring 1. A follower relays every vote. In the
// notes (Textbook), a candidate that receives a vote, anybody's, is
// elected: two members that run at once are both elected. In the real mode
// a vote names its candidate: only a candidate's own vote elects it, a
// candidate withdraws for a higher one's vote and drops a lower one's.
func (c *Core) stepNaive(e wire.RingElection) {
	if c.cfg.Textbook {
		if c.el.active {
			c.el.active = false
			c.decide(c.id) // Eleito: announces itself (HabemosLider)
			return
		}
		c.forward(e, +1)
		return
	}
	q := e.Candidate
	switch {
	case q == c.id:
		if c.el.active {
			c.decide(c.id)
		} else {
			c.counts.swallowed++ // a vote it withdrew
		}
	case !c.el.active:
		if !c.dead(q) {
			c.forward(e, +1)
		}
	case q > c.id:
		c.el.active = false // withdraws for the higher candidate
		c.forward(e, +1)
	default:
		c.counts.swallowed++
	}
}

// stepList: the id-list ring and Fredrickson-Lynch. A member adds its ID
// and passes the list on; a member that finds itself in the list (its own
// list back, or one whose initiator died) picks the highest ID in it and
// announces it. A resigned member passes lists on without adding itself.
func (c *Core) stepList(e wire.RingElection) {
	for _, id := range e.IDs {
		delete(c.skipped, id) // each added itself on the way: alive
	}
	if slices.Contains(e.IDs, c.id) {
		c.decide(slices.Max(e.IDs))
		return
	}
	if !c.yielding {
		e.IDs = append(slices.Clip(e.IDs), c.id)
	}
	c.forward(e, +1)
}

// stepChangRoberts: a member forwards a higher ID, replaces a lower one by
// its own if it does not take part yet (and drops it if it does), and is
// elected when its own ID comes back.
func (c *Core) stepChangRoberts(e wire.RingElection) {
	q := e.Candidate
	switch {
	case q == c.id:
		if c.el.active {
			c.decide(c.id)
		} else {
			c.counts.swallowed++
		}
	case q > c.id || c.yielding:
		if !c.dead(q) {
			c.el.active = !c.yielding // a participant now: it sends no ID of its own
			c.forward(e, +1)
		}
	case !c.el.active:
		c.counts.swallowed++
		c.initiate()
	default:
		c.counts.swallowed++
	}
}

// Franklin's sides: a message travelling clockwise came from the left
// (the predecessor's side).
const (
	left  = 0
	right = 1
)

// franklinSend sends this active member's ID both ways in its round.
func (c *Core) franklinSend() {
	e := wire.RingElection{Attempt: c.el.attempt, Origin: c.id, Candidate: c.id, Round: c.el.round}
	c.forward(e, +1)
	e.Flags = wire.RingCounterclockwise
	c.forward(e, -1)
}

// stepFranklin: an active member collects the IDs of its two active
// neighbours for its round: the highest of the three stays active (next
// round), the others turn passive and relay; the member whose own ID comes
// back from both sides is the only active one left: the leader. A member
// woken by a round-1 message takes part; one woken later only relays (the
// election is past its first round; if it should lead, it preempts the
// winner).
func (c *Core) stepFranklin(e wire.RingElection, dir int) {
	if !c.el.active && c.el.round == 0 && !c.yielding && e.Round == 1 && !c.el.decided {
		c.el.round = 1
		c.el.active = true
		c.franklinSend()
	}
	if !c.el.active {
		if e.Candidate == c.id || c.dead(e.Candidate) {
			c.counts.swallowed++
			return
		}
		c.el.round = max(c.el.round, 1)
		e.Flags |= wire.RingRelayed
		c.forward(e, dir)
		return
	}
	side := left
	if dir < 0 {
		side = right
	}
	switch e.Round {
	case c.el.round:
		c.el.got[0][side] = e.Candidate
	case c.el.round + 1:
		c.el.got[1][side] = e.Candidate
	default:
		c.counts.staleRound++
		return
	}
	for c.el.active {
		l, r := c.el.got[0][left], c.el.got[0][right]
		if l == 0 || r == 0 {
			return
		}
		switch {
		case l == c.id && r == c.id:
			c.el.active = false
			c.decide(c.id)
			return
		case max(l, r) > c.id:
			// Beaten: passive from now on. What arrived early for the next
			// round goes on to the members it was meant for.
			c.el.active = false
			for s, q := range c.el.got[1] {
				if q != 0 {
					flags, d := wire.RingRelayed, +1
					if s == right {
						flags, d = flags|wire.RingCounterclockwise, -1
					}
					c.forward(wire.RingElection{Attempt: c.el.attempt, Origin: q, Candidate: q, Round: c.el.round + 1, Flags: flags}, d)
				}
			}
			return
		}
		if c.el.round >= maxRounds(len(c.ring)) {
			c.counts.staleRound++ // cannot happen in a ring that follows the rules
			return
		}
		c.el.round++
		c.el.got[0], c.el.got[1] = c.el.got[1], [2]uint32{}
		c.franklinSend()
	}
}
