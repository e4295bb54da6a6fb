package sim

import (
	"container/heap"
	"time"
)

// item is one scheduled action. Items fire in (at, seq) order: seq is the
// insertion counter, so two actions due at the same virtual instant fire in
// the order they were scheduled. Nothing else (map order, pointer values)
// can influence the order, which is what makes a run a pure function of its
// seed.
type item struct {
	at  time.Duration // virtual time since Config.Start
	seq uint64
	fn  func()
}

type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return it
}

// schedule runs fn at virtual time at (never before now).
func (s *Sim) schedule(at time.Duration, fn func()) {
	if at < s.now {
		at = s.now
	}
	s.seq++
	heap.Push(&s.q, &item{at: at, seq: s.seq, fn: fn})
}

// next pops the earliest item if it is due at or before limit.
func (s *Sim) next(limit time.Duration) (*item, bool) {
	if len(s.q) == 0 || s.q[0].at > limit {
		return nil, false
	}
	return heap.Pop(&s.q).(*item), true
}
