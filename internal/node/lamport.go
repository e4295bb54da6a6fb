package node

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"time"
)

// How far a Lamport stamp read from the wire may move this node's clock.
//
// A stamp is merged into the node's clock before the core sees its frame,
// and the clock only moves forwards: one frame stamped near the end of the
// clock's range would stop the node's logical time (and Ricart-Agrawala's
// and Lamport's requests, whose stamps have 47 bits, far earlier), and a
// node whose clock was pushed ahead is refused by every member that judges
// its stamps. So a stamp is believed only as far as some member can have
// gone since it was last heard: for each member, its last stamp, plus
// LamportRate per second since it was heard, plus a burst of up to
// LamportBurst that jumps beyond the rate spend and the rate refills; a
// frame, whoever sent it, may carry a stamp up to the largest of these
// (the ceiling). Taking a frame never raises the ceiling, which otherwise
// rises by LamportRate a second: over any interval T the stamps of every
// frame taken, forged or not, move this node's clock by at most the
// ceiling's lead at the start plus LamportRate*T.
//
// Why the largest and not the sender's own: a member's stamps follow the
// largest clock it hears of, and that may be another member's, heard by it
// and not yet by this node (the other side of a partition, through a member
// that sits on both; a clock pushed ahead by a forger, through the member
// it pushed). Every member judging by the same members' histories, a clock
// pushed to the ceiling at one member is within the ceiling at the others.
//
// Why an honest cluster never meets the bound:
//
//   - A clock moves by one per event of its member (a send, a receive, a
//     stamp a core takes), or up to a stamp it receives; so the largest
//     clock of the cluster moves at most as fast as one member's loop
//     handles frames. SeqRate bounds a member's frames out, as many again
//     come in, and a loop handles far fewer than either (a frame's own work
//     is a few microseconds): LamportRate, 2^18 a second, is above anything
//     a member can do.
//   - Members' clocks differ by the events one has not heard of yet: a
//     round of heartbeats of a busy cluster, a few thousand; and a member
//     restarted on its state resumes up to one floor chunk
//     (LamportFloorChunk, 2^16) above its last stamp. LamportBurst, 2^26,
//     covers a thousand back-to-back restarts, and a member restarting
//     four times a second for ever (the chunk, saved at every start, is
//     spent by every restart) moves clocks by a quarter of LamportRate.
//   - A partition, or a member silent for a while, is paid by the rate
//     over the time since the member was last heard: the other side's
//     clocks moved at most that much.
//   - After this node restarts, each member is judged from its last stamp
//     and the time it was heard, as saved (Durable.Stamps, at most
//     stampSaveEvery old); with no member saved, from the floor and the
//     time it was saved; on a first start with nothing saved, the first
//     frame is taken as it is and becomes the reference (see "Lamport
//     stamps" in doc.go).
//
// And why a forger gets nowhere: after the ceiling's lead (the burst, or
// what a member silent for a long time could have done meanwhile), stamps
// that step ahead as fast as the bound allows move a clock by LamportRate a
// second: Ricart-Agrawala's 47-bit stamps last 17 years of it, 64-bit
// clocks longer than the sun.
const (
	// LamportRate is how many stamps a second a member's clock may have
	// moved since it was last heard.
	LamportRate = 1 << 18
	// LamportBurst is the most a member's stamps may jump beyond the rate
	// at once, after resting.
	LamportBurst = 1 << 26
	// LamportFloorChunk is how far above the clock the saved floor is put
	// (a restart resumes from it: every stamp of the last life is below);
	// lamportFloorSlack how close the clock may come to it before it is
	// raised (saved first).
	LamportFloorChunk = 1 << 16
	lamportFloorSlack = 1 << 12
	// stampSaveEvery is how often, at most, the members' last stamps are
	// saved while they change: after a restart a member is judged from a
	// time this old at worst.
	stampSaveEvery = time.Minute
)

// Stamps is what a node keeps of Lamport time across restarts
// (Durable.Stamps, Config.Stamps).
type Stamps struct {
	// Floor is above every stamp this node sent or merged; its clock
	// resumes from it after a restart. 0: nothing saved.
	Floor uint64
	// At is the node's local time when Floor and Peers were saved.
	At time.Time
	// Peers is, per member, the last stamp accepted from it and when.
	Peers map[uint32]PeerStamp
}

// PeerStamp is a member's last stamp and when it was heard.
type PeerStamp struct {
	Stamp uint64
	Heard time.Time
}

// Equal reports whether s and o hold the same values.
func (s Stamps) Equal(o Stamps) bool {
	return s.Floor == o.Floor && s.At.Equal(o.At) && maps.EqualFunc(s.Peers, o.Peers, func(a, b PeerStamp) bool {
		return a.Stamp == b.Stamp && a.Heard.Equal(b.Heard)
	})
}

// StampError is a Lamport stamp refused as beyond what any member can
// have reached (it wraps ErrLamportAhead).
type StampError struct {
	Member  uint32 // whose stamp (the frame's sender, or a vector entry's member)
	Sender  uint32 // the frame's sender
	Stamp   uint64 // the stamp refused
	Ceiling uint64 // the highest stamp a member can have reached now
	// By is the member whose history gives the ceiling (0: this node's
	// saved floor), from its stamp Last, heard Since ago.
	By    uint32
	Last  uint64
	Since time.Duration
}

func (e *StampError) Error() string {
	what := fmt.Sprintf("stamp %d from %d", e.Stamp, e.Sender)
	if e.Member != e.Sender {
		what = fmt.Sprintf("member %d's vector entry %d from %d", e.Member, e.Stamp, e.Sender)
	}
	by := fmt.Sprintf("member %d's last stamp %d, %v ago", e.By, e.Last, e.Since.Round(time.Millisecond))
	if e.By == 0 {
		by = fmt.Sprintf("this node's saved floor %d, %v ago", e.Last, e.Since.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v: %s is %d beyond what any member can have reached now (%d, from %s)",
		ErrLamportAhead, what, e.Stamp-min(e.Stamp, e.Ceiling), e.Ceiling, by)
}

func (e *StampError) Unwrap() error { return ErrLamportAhead }

// stampGuard is what a node knows of one member's stamps: the highest it
// accepted (or the reference it starts from), when, and the burst left.
type stampGuard struct {
	last  uint64
	at    time.Time
	carry uint64 // burst left at at, <= LamportBurst
	set   bool
}

// rateOver is LamportRate*dt, saturating.
func rateOver(dt time.Duration) uint64 {
	if dt <= 0 {
		return 0
	}
	if dt >= time.Duration(math.MaxUint64/LamportRate/uint64(time.Second))*time.Second {
		return math.MaxUint64 / 2
	}
	return uint64(dt) * LamportRate / uint64(time.Second)
}

// allowance is how far above last the member can have gone at now.
func (g *stampGuard) allowance(now time.Time) uint64 {
	return g.carry + rateOver(now.Sub(g.at))
}

// ceiling is the highest stamp the member can have reached at now.
func (g *stampGuard) ceiling(now time.Time) uint64 {
	allow := g.allowance(now)
	if g.last > math.MaxUint64-allow {
		return math.MaxUint64
	}
	return g.last + allow
}

// take records stamp s of the member, taken at now: a jump beyond its own
// allowance (s under another member's ceiling) spends it all, so that the
// guard's ceiling is never above what it was, or s.
func (g *stampGuard) take(s uint64, now time.Time) {
	allow := g.allowance(now)
	jump := s - min(s, g.last)
	g.carry = min(LamportBurst, allow-min(allow, jump))
	g.last = max(g.last, s)
	if now.After(g.at) {
		g.at = now
	}
}

// ceiling is the highest stamp any member can have reached at now (see
// LamportRate), and the member whose history says so (0: the saved
// floor); ok false when this node has no reference at all (a first start,
// before any frame was taken).
func (n *Node) ceiling(now time.Time) (c uint64, by uint32, g stampGuard, ok bool) {
	if n.anchor.set {
		c, g, ok = n.anchor.ceiling(now), n.anchor, true
	}
	for id, p := range n.peers {
		if !p.stamp.set {
			continue
		}
		if pc := p.stamp.ceiling(now); !ok || pc > c || pc == c && id < by {
			c, by, g, ok = pc, id, p.stamp, true
		}
	}
	return c, by, g, ok
}

// checkStamp decides whether stamp s of member, carried by a frame of
// sender at now, can be believed: at most this node's clock, or the
// ceiling (see LamportRate).
func (n *Node) checkStamp(member, sender uint32, s uint64, now time.Time) error {
	if s <= n.lamport.Now() {
		return nil
	}
	c, by, g, ok := n.ceiling(now)
	if !ok || s <= c {
		return nil
	}
	return &StampError{Member: member, Sender: sender, Stamp: s, Ceiling: c, By: by, Last: g.last, Since: max(0, now.Sub(g.at))}
}

// takeStamp records stamp s of a frame of sender taken at now. A member
// heard for the first time starts from s with what the ceiling left above
// it (taking a frame never raises the ceiling); on a first start, the
// first frame taken is the reference for everyone, with a full burst.
func (n *Node) takeStamp(sender uint32, s uint64, now time.Time) {
	if sender == n.cfg.ID {
		return
	}
	p := n.peers[sender]
	if !p.stamp.set {
		carry := uint64(LamportBurst)
		if c, _, _, ok := n.ceiling(now); ok {
			carry = min(carry, c-min(c, s))
		}
		p.stamp = stampGuard{last: s, at: now, carry: carry, set: true}
	}
	p.stamp.take(s, now)
	n.anchor.set = false // the members heard since the start say more
	n.stampsChanged = true
}

// refusedStamp counts a refusal of member id's stamp at now, for status.
func (n *Node) refusedStamp(err error, now time.Time) {
	var se *StampError
	if !errors.As(err, &se) {
		return
	}
	p := n.peers[se.Member]
	if p == nil {
		p = &peer{}
		n.peers[se.Member] = p
	}
	p.stampsRefused++
	p.stampRefusedAt = now
}

// stampState is the node's Lamport state as it would be saved now.
func (n *Node) stampState(floor uint64, at time.Time) Stamps {
	st := Stamps{Floor: floor, At: at, Peers: map[uint32]PeerStamp{}}
	for id, p := range n.peers {
		if p.stamp.set {
			st.Peers[id] = PeerStamp{Stamp: p.stamp.last, Heard: p.stamp.at}
		}
	}
	return st
}

// saveStamps raises the floor when the clock, with pending more stamps to
// take, comes within lamportFloorSlack of it, and saves the members' last
// stamps when they changed and stampSaveEvery passed since the last save.
// It reports whether the clock may take pending stamps: false when they
// would pass a floor that could not be saved.
func (n *Node) saveStamps(pending int, now time.Time) bool {
	if len(n.others) == 0 {
		return true
	}
	need := n.lamport.Now() + uint64(pending)
	raise := need+lamportFloorSlack >= n.floor
	due := n.stampsChanged && (n.stampsAt.IsZero() || now.Sub(n.stampsAt) >= stampSaveEvery || now.Before(n.stampsAt))
	if !raise && !due {
		return true
	}
	floor := n.floor
	if raise {
		floor = min(need, math.MaxUint64-LamportFloorChunk) + LamportFloorChunk
	}
	d := n.durable()
	d.Stamps = n.stampState(floor, now)
	if err := n.save(d); err != nil {
		n.stats.drop("lamport_unsaved")
		return need < n.floor
	}
	n.floor, n.stampsAt, n.stampsChanged = floor, now, false
	return true
}

// SaveStamps saves the Lamport state now if it changed since the last save
// (a driver calls it when it stops cleanly: after a restart, the members
// are judged from their stamps as of the stop). It reports the save's
// error.
func (n *Node) SaveStamps(now time.Time) error {
	if len(n.others) == 0 || !n.stampsChanged || n.floor == 0 {
		return nil
	}
	d := n.durable()
	d.Stamps = n.stampState(n.floor, now)
	if err := n.save(d); err != nil {
		n.stats.drop("lamport_unsaved")
		return err
	}
	n.stampsAt, n.stampsChanged = now, false
	return nil
}

// durable is the node's durable state as last saved.
func (n *Node) durable() Durable {
	return Durable{Incarnation: n.inc, Epochs: n.epochs, Stamps: n.stampState(n.floor, n.stampsAt)}
}

// restoreStamps takes the saved Lamport state: the clock resumes from the
// floor, each member is judged from its last stamp, and a member never
// heard from the floor at the time it was saved.
func (n *Node) restoreStamps(s Stamps) {
	if s.Floor == 0 || s.At.IsZero() {
		return
	}
	n.lamport.Restore(s.Floor)
	n.floor, n.stampsAt = s.Floor, s.At
	n.anchor = stampGuard{last: s.Floor, at: s.At, set: true}
	for id, ps := range s.Peers {
		if _, ok := n.cfg.Members[id]; !ok || id == n.cfg.ID {
			continue
		}
		n.peers[id] = &peer{stamp: stampGuard{last: ps.Stamp, at: ps.Heard, carry: LamportBurst, set: true}}
	}
}

// checkEntry decides on entry got of member id in a vector carried by a
// frame of sender at now: an entry counts the member's events, which its
// Lamport clock counts too, so it is judged as a stamp of the member.
func (n *Node) checkEntry(id, sender uint32, got uint64, now time.Time) error {
	return n.checkStamp(id, sender, got, now)
}
