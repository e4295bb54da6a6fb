package clock

import (
	"math"
	"sync/atomic"
)

// Lamport is a Lamport logical clock (Lamport 1978, "Time, Clocks, and the
// Ordering of Events in a Distributed System"): a counter with no relation
// to physical time such that if event a happens before event b, then
// L(a) < L(b). The zero value is a clock at 0, ready to use.
//
// The rules, as in the course notes:
//
//	internal event   L = L + 1                      Tick
//	send m           L = L + 1, stamp m with L      Send
//	receive m (t)    L = max(L, t) + 1              Receive
//
// The notes' first example instead lets each processor's clock advance by a
// fixed amount per period (P1 by 6, P2 by 8, P3 by 10) and stamps a receive
// with the current value, corrected to t+1 only when it is not already
// greater (Lamport's IR2'): that is Advance and Witness.
//
// The counter saturates at math.MaxUint64 instead of wrapping to 0: a
// wrapped clock would order every later event before every earlier one.
// A node should refuse (authenticated) frames whose stamp is absurdly far
// ahead rather than let a single peer exhaust the space.
//
// A Lamport clock is safe for concurrent use: the node stamps frames from
// transport goroutines while the core ticks it.
type Lamport struct {
	v atomic.Uint64
}

// satAdd returns a+b saturated at math.MaxUint64.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// update applies f atomically and returns the new value.
func (l *Lamport) update(f func(uint64) uint64) uint64 {
	for {
		old := l.v.Load()
		n := f(old)
		if l.v.CompareAndSwap(old, n) {
			return n
		}
	}
}

// Now returns the clock's current value without advancing it.
func (l *Lamport) Now() uint64 { return l.v.Load() }

// Tick records a local event: L = L + 1. It returns the event's stamp.
func (l *Lamport) Tick() uint64 {
	return l.update(func(v uint64) uint64 { return satAdd(v, 1) })
}

// Send records a send event and returns the stamp to put on the message:
// like Tick, named for what the caller does.
func (l *Lamport) Send() uint64 { return l.Tick() }

// Receive records the receipt of a message stamped remote:
// L = max(L, remote) + 1. It returns the receive event's stamp.
func (l *Lamport) Receive(remote uint64) uint64 {
	return l.update(func(v uint64) uint64 { return satAdd(max(v, remote), 1) })
}

// Advance moves the clock forward by n without an event: the periodic
// increment of the notes' per-processor clocks. It returns the new value.
func (l *Lamport) Advance(n uint64) uint64 {
	return l.update(func(v uint64) uint64 { return satAdd(v, n) })
}

// Witness stamps the receipt of a message stamped remote at the clock's
// current value, first raising the clock to remote+1 if it is not already
// greater (Lamport's IR2'). It returns the receive event's stamp.
func (l *Lamport) Witness(remote uint64) uint64 {
	return l.update(func(v uint64) uint64 { return max(v, satAdd(remote, 1)) })
}

// Set forces the clock to v, even backwards. Only for tests and
// simulations that build a scenario; a running node uses Restore.
func (l *Lamport) Set(v uint64) { l.v.Store(v) }

// Restore raises the clock to at least v (a value persisted before a
// restart), never lowering it: stamps issued since must stay ordered after
// those issued before the crash.
func (l *Lamport) Restore(v uint64) {
	l.update(func(cur uint64) uint64 { return max(cur, v) })
}

// LamportLess is the total order on events the notes build from Lamport
// stamps: event (t1 at process id1) comes before event (t2 at id2) iff
// t1 < t2, or t1 == t2 and id1 < id2. It is what Lamport's and
// Ricart-Agrawala's mutual exclusion use to order requests.
func LamportLess(t1 uint64, id1 uint32, t2 uint64, id2 uint32) bool {
	return t1 < t2 || (t1 == t2 && id1 < id2)
}
