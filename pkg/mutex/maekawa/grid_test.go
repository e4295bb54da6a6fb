package maekawa

import (
	"math"
	"slices"
	"testing"
)

func ids(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(10 * (i + 1)) // not 1..N: the grid works on any IDs
	}
	return out
}

func intersect(a, b []uint32) bool {
	return slices.ContainsFunc(a, func(x uint32) bool { return slices.Contains(b, x) })
}

// TestGridIntersection proves the grid's property for N = 1..64 by
// exhaustion: every cross (any row with any column, not only a member's
// own) meets every other cross, so every two voting sets meet, and so do
// the live sets chosen around dead members. Each member is in its own
// set, and a set has at most 2 ceil(sqrt N) - 1 members.
func TestGridIntersection(t *testing.T) {
	for n := 1; n <= 64; n++ {
		g := NewGrid(ids(n))
		var crosses [][]uint32
		for r := range g.Rows() {
			for c := range g.Cols() {
				crosses = append(crosses, g.Cross(r, c))
			}
		}
		for i, a := range crosses {
			for j, b := range crosses[i:] {
				if !intersect(a, b) {
					t.Fatalf("N=%d: crosses %d %v and %d %v do not meet", n, i, a, i+j, b)
				}
			}
		}
		k := int(math.Ceil(math.Sqrt(float64(n))))
		for _, id := range ids(n) {
			set := g.VotingSet(id)
			if !slices.Contains(set, id) || len(set) > 2*k-1 {
				t.Fatalf("N=%d: voting set of %d: %v", n, id, set)
			}
		}
		if n >= 4 && float64(g.Cols()) > math.Sqrt(float64(n))+1 {
			t.Fatalf("N=%d: %d columns", n, g.Cols())
		}
	}
}

// TestLiveSet: a dead member's row and column are avoided while a whole
// row and a whole column are alive; there is no set only when no row (or
// no column) is whole.
func TestLiveSet(t *testing.T) {
	g := NewGrid([]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}) // 3x3: rows 1-3, 4-6, 7-9
	all := func(uint32) bool { return true }
	if got := g.LiveSet(5, all); !slices.Equal(got, []uint32{2, 4, 5, 6, 8}) {
		t.Errorf("own cross of 5: %v", got)
	}
	down := func(dead ...uint32) func(uint32) bool {
		return func(m uint32) bool { return !slices.Contains(dead, m) }
	}
	// 6 down: 5's row (4,5,6) is not whole; the first whole row is 1,2,3;
	// its column (2,5,8) is.
	if got := g.LiveSet(5, down(6)); !slices.Equal(got, []uint32{1, 2, 3, 5, 8}) {
		t.Errorf("5 with 6 down: %v", got)
	}
	for _, dead := range [][]uint32{{6}, {1, 5}, {2, 4}} {
		set := g.LiveSet(5, down(dead...))
		if set == nil || slices.ContainsFunc(set, func(m uint32) bool { return slices.Contains(dead, m) }) {
			t.Errorf("5 with %v down: %v", dead, set)
		}
	}
	// One dead member in every row: no whole row, no cross.
	if got := g.LiveSet(5, down(1, 5, 9)); got != nil {
		t.Errorf("5 with the diagonal down: %v, want none", got)
	}
	if g.LiveSet(99, all) != nil || g.VotingSet(99) != nil {
		t.Error("a non-member has a voting set")
	}
}
