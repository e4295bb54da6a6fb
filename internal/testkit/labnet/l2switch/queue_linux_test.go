//go:build linux

package l2switch

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// The transmit queue hands frames out by deadline, and in arrival order
// among equal deadlines (duplicates and zero-jitter bursts must not be
// reordered).
func TestFrameQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q frameQueue
	for seq := uint64(1); seq <= 1000; seq++ {
		heap.Push(&q, queued{due: rng.Int64N(50), seq: seq})
	}
	prev := queued{due: -1}
	for q.Len() > 0 {
		it := heap.Pop(&q).(queued)
		if it.due < prev.due || (it.due == prev.due && it.seq < prev.seq) {
			t.Fatalf("popped (due %d, seq %d) after (due %d, seq %d)", it.due, it.seq, prev.due, prev.seq)
		}
		prev = it
	}
}
