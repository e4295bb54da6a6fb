package ntp

import (
	"fmt"
	"time"
)

// CristianRound is one request/response round of Cristian's algorithm: the
// client sends a request at Sent, the server answers with its time Server,
// the answer arrives at Received. Sent and Received are read on the local
// clock.
type CristianRound struct {
	Sent     time.Time
	Server   time.Time
	Received time.Time
}

// RTT returns the round's round-trip time, Received - Sent.
func (r CristianRound) RTT() time.Duration { return r.Received.Sub(r.Sent) }

// CristianEstimate is the result of a burst of Cristian rounds.
type CristianEstimate struct {
	// Time is the server's time when the best reply arrived: Server +
	// RTT/2.
	Time time.Time
	// Received is the local time the best reply arrived.
	Received time.Time
	// Offset is Time - Received: the server's clock minus the local clock
	// (positive: the local clock is behind).
	Offset time.Duration
	// RTT is the best (minimum) round-trip time of the burst.
	RTT time.Duration
	// Accuracy bounds the error of Time and Offset: ±(RTT/2 - min), min
	// being the smallest possible one-way transmission time.
	Accuracy time.Duration
	// Rounds is the number of rounds considered.
	Rounds int
}

// Cristian accumulates a burst of Cristian rounds and keeps the one with the
// minimum round trip (the least queueing, so the tightest bound). From the
// course notes' chapter on physical clocks:
//
//	p --m_r--> S         S puts its time t in m_t no earlier than min
//	p <--m_t-- S         after p sent m_r, and no later than min before
//	                     m_t arrives at p
//
//	estimate  = t + T_round/2
//	accuracy  = ±(T_round/2 - min)
//
// min is the smallest one-way transmission time known for the path (0 when
// unknown, the safe choice: the bound is then RTT/2). The zero Cristian has
// min 0. Not safe for concurrent use.
type Cristian struct {
	minOneWay time.Duration
	best      CristianRound
	rounds    int
}

// NewCristian returns an empty burst with the given minimum one-way delay
// (negative values count as 0).
func NewCristian(minOneWay time.Duration) *Cristian {
	return &Cristian{minOneWay: max(minOneWay, 0)}
}

// Add considers one round. It refuses rounds with zero times or a negative
// round trip (the local clock stepped backwards in between, or the
// timestamps are mixed up) with ErrCristianRound.
func (c *Cristian) Add(r CristianRound) error {
	if r.Sent.IsZero() || r.Received.IsZero() || r.Server.IsZero() {
		return fmt.Errorf("%w: zero timestamp", ErrCristianRound)
	}
	if rtt := r.RTT(); rtt < 0 {
		return fmt.Errorf("%w: negative round trip %v", ErrCristianRound, rtt)
	}
	if c.rounds == 0 || r.RTT() < c.best.RTT() {
		c.best = r
	}
	c.rounds++
	return nil
}

// Rounds returns the number of rounds added.
func (c *Cristian) Rounds() int { return c.rounds }

// Reset forgets the burst (keeping min) to start the next one.
func (c *Cristian) Reset() { c.best, c.rounds = CristianRound{}, 0 }

// Estimate returns the estimate from the minimum-RTT round, and false if no
// round was added. When min exceeds RTT/2 (a misconfigured min, or a path
// faster than claimed) the accuracy is 0: the round proves min wrong, and
// the estimate is still the midpoint.
func (c *Cristian) Estimate() (CristianEstimate, bool) {
	if c.rounds == 0 {
		return CristianEstimate{}, false
	}
	rtt := c.best.RTT()
	half := rtt / 2
	t := c.best.Server.Add(half)
	return CristianEstimate{
		Time:     t,
		Received: c.best.Received,
		Offset:   t.Sub(c.best.Received),
		RTT:      rtt,
		Accuracy: max(rtt-half-c.minOneWay, 0), // rtt-half rounds RTT/2 up
		Rounds:   c.rounds,
	}, true
}
