package permission

import (
	"maps"
	"slices"

	"github.com/synclab/synclab/pkg/wire"
)

// stepRARequest is Ricart-Agrawala's rule on a request (the notes'
// pseudo-code, and their one queue per resource): defer it while this
// member holds the lock or asked for it first by (stamp, ID); else reply at
// once. A restarted member in its hold answers nothing (the requester asks
// again).
func (c *Core) stepRARequest(from uint32, at uint64, r wire.PermRequest) error {
	// Requests and replies of Ricart-Agrawala are idempotent (a reply
	// names the request it answers, a deferral keeps the newest request),
	// so a late frame needs no filter: it is answered like any other.
	l, err := c.lockFor(r.Name, from) // where the reply, a leave, is noted
	if err != nil {
		return err
	}
	l.touched = c.now
	l.known = max(l.known, r.Fence)
	c.sawWant(l, from, at, r.Stamp)
	if c.inHold() {
		c.count("held_back")
		return nil
	}
	if mine := c.ticket(l); l.granted || mine != 0 && before(mine, c.self, r.Stamp, from) {
		if d, ok := l.deferred[from]; !ok || r.Stamp >= d.stamp {
			l.deferred[from] = deferral{stamp: r.Stamp, inc: r.Incarnation}
		}
		c.count("deferred")
		return nil
	}
	c.lend(l, from, c.send(from, c.replyKind(), wire.PermReply{Name: r.Name, Incarnation: c.inc, Answers: r.Incarnation,
		Stamp: r.Stamp, Fence: l.known, Want: c.ticket(l)}, 0))
	return nil
}

// answerDeferred replies to the requests l deferred: all of them when this
// member's request ended (all true), else those that now come before its
// (new) request.
func (c *Core) answerDeferred(l *lock, all bool) {
	for _, m := range slices.Sorted(maps.Keys(l.deferred)) {
		d := l.deferred[m]
		if mine := c.ticket(l); !all && mine != 0 && before(mine, c.self, d.stamp, m) {
			continue
		}
		delete(l.deferred, m)
		c.lend(l, m, c.send(m, c.replyKind(), wire.PermReply{Name: l.name, Incarnation: c.inc, Answers: d.inc,
			Stamp: d.stamp, Fence: l.known, Want: c.ticket(l)}, 0))
	}
}

// stepLamportRequest is the rule of Lamport's queue on a request: queue it
// and acknowledge it (the acknowledgement carries this member's own
// request, if any). A restarted member in its hold queues it but
// acknowledges nothing.
func (c *Core) stepLamportRequest(from uint32, at uint64, r wire.PermRequest) error {
	l, err := c.lockFor(r.Name, from)
	if err != nil {
		return err
	}
	if !c.fresh(l, from, at) {
		// A newer frame of the sender was taken first (datagrams
		// reorder): it said where the sender stands. The request is still
		// acknowledged if it is the sender's current one and was not yet.
		if r.Stamp == l.want[from] {
			c.ackLamport(l, from, r.Incarnation)
		}
		return nil
	}
	l.known = max(l.known, r.Fence)
	l.want[from] = r.Stamp
	c.sawWant(l, from, at, r.Stamp)
	if l.stamp != 0 && at > l.stamp {
		l.got[from] = true
	}
	delete(l.acked, from) // a new or resent request: acknowledge it again
	c.ackLamport(l, from, r.Incarnation)
	c.advance(l)
	return nil
}

// ackLamport acknowledges member from's current request for l, once (a
// resend clears the mark: the sender lacks the acknowledgement). A
// restarted member in its hold acknowledges nothing.
func (c *Core) ackLamport(l *lock, from uint32, inc uint32) {
	w := l.want[from]
	if w == 0 || l.acked[from] == w {
		return
	}
	if c.inHold() {
		c.count("held_back")
		return
	}
	l.acked[from] = w
	c.lend(l, from, c.send(from, wire.KindLamportAck, wire.PermReply{Name: l.name, Incarnation: c.inc, Answers: inc,
		Stamp: w, Fence: l.known, Want: l.stamp}, 0))
}

// stepLamportRelease takes the sender's request out of the queue.
func (c *Core) stepLamportRelease(from uint32, at uint64, r wire.PermRequest) {
	l := c.locks[r.Name]
	if l == nil {
		c.count("stray_releases")
		return
	}
	if !c.fresh(l, from, at) {
		return
	}
	l.known = max(l.known, r.Fence)
	l.want[from] = 0
	c.sawWant(l, from, at, 0)
	if l.stamp != 0 && at > l.stamp {
		l.got[from] = true
	}
	c.advance(l)
}

// stepAnswer takes a Ricart-Agrawala reply or a Lamport acknowledgement.
// Both carry the sender's knowledge of the lock's fences; a reply counts for
// this member's request only if it answers that very request (stamp and
// incarnation). An acknowledgement is, as the notes require, a message
// stamped after the request, and it carries the sender's own request: the
// newest frame of each member says where it stands in the queue.
func (c *Core) stepAnswer(from uint32, at uint64, r wire.PermReply) {
	l := c.locks[r.Name]
	if l == nil {
		c.stray(nil, from, at, r, true)
		return
	}
	if c.cfg.Variant == Lamport && !c.fresh(l, from, at) {
		return
	}
	l.touched = c.now
	l.known = max(l.known, r.Fence)
	c.sawWant(l, from, at, r.Want)
	if c.cfg.Variant == RicartAgrawala {
		if l.stamp != 0 && !l.granted && r.Stamp == l.stamp && r.Answers == c.inc {
			l.got[from] = true
		} else {
			c.stray(l, from, at, r, true)
		}
	} else {
		l.want[from] = r.Want
		if l.stamp != 0 && at > l.stamp {
			l.got[from] = true
		}
		// The acknowledgement may reveal a request of its sender whose
		// own frame was lost or overtaken: acknowledge it now.
		c.ackLamport(l, from, r.Incarnation)
		c.disown(l, from, r)
	}
	c.advance(l)
}

// stray takes member from's answer r, in a frame stamped at, about lock
// l (nil: none here), which answers no request of this member's under
// way. A leave (a Ricart-Agrawala reply, the bakery's ticket reply) or a
// Lamport acknowledgement is disowned; a leave stamped as the request it
// names answers none: it is a disowning, never disowned in turn (a reply
// is stamped after what it answers).
func (c *Core) stray(l *lock, from uint32, at uint64, r wire.PermReply, leave bool) {
	if c.cfg.Variant != Lamport && leave && r.Stamp == at {
		c.count("disownings_in")
		return
	}
	c.count("stray_answers")
	if leave {
		c.disown(l, from, r)
	}
}

// disown answers member from's answer r about lock l (nil: none here)
// when this member has no request of that lock open: the answer is to a
// request this member never made (forged in its name: without a key
// anyone can) or to one that ended (a late copy). Its word that it asks
// for nothing ends that request at from at once, where only its next
// heartbeat would (a busy one ends only what is stamped before its oldest
// open request, and a forger who keeps sending requests in its name
// stamps them later), so a flood of forged requests does not hold its
// share of from's lock table while it asks. The word is what this member
// would say anyway: Lamport's release of the request (from takes it only
// if stamped after every frame of this member about l it took, and it is:
// it is sent after the answer, which is stamped after the request), or a
// Ricart-Agrawala reply (the bakery's ticket reply) that asks for nothing
// (Want 0), stamped as the request it names so that it is never disowned
// in turn, and answering incarnation answersNone, which no member runs:
// it is never taken as this member's permission, even by a request of
// from's own stamped exactly there (this member lent nothing for it, so
// it would give from up on its silence, not after its leases: two
// holders). It spends the leave from lent for the request (sawWant). One
// frame per answer: a forger
// gets from one frame for each frame it sends, no more. Not while in the
// hold after a restart, when this member answers nobody, nor with a key
// (Config.Authenticated): nobody forges then, and a late copy of an
// answer is left alone as before.
func (c *Core) disown(l *lock, from uint32, r wire.PermReply) {
	if c.cfg.Authenticated || c.inHold() || l != nil && (l.stamp != 0 || c.releasing(l.name)) {
		return
	}
	var fence uint64
	if l != nil {
		fence = l.known
	}
	c.count("answers_disowned")
	if c.cfg.Variant == Lamport {
		c.send(from, wire.KindLamportRelease, wire.PermRequest{Name: r.Name, Incarnation: c.inc, Stamp: r.Stamp, Fence: fence}, 0)
		return
	}
	at := c.lamport.Send()
	c.send(from, c.replyKind(), wire.PermReply{Name: r.Name, Incarnation: c.inc, Answers: answersNone, Stamp: at, Fence: fence}, at)
}

// answersNone is the incarnation a disowning answers: none that runs (the
// wire takes no 0). A life's incarnation grows by one at each restart and
// each stall (stalled); decodeState refuses a stored one from
// maxStoredIncarnation on, which leaves 2^31 stalls in one life before a
// running member could reach answersNone.
const (
	answersNone          = 1<<32 - 1
	maxStoredIncarnation = 1 << 31
)

// releasing says whether the release of this member's request for name
// is held back (it goes with the next frame).
func (c *Core) releasing(name string) bool {
	for _, r := range c.releases {
		if r.name == name {
			return true
		}
	}
	return false
}
