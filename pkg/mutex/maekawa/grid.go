package maekawa

import (
	"math"
	"slices"
)

// Grid places the members (sorted by ID) row by row on a grid of
// ceil(sqrt(N)) columns; the last row may be short. A member's voting set
// is a cross: its own row and its own column. Any two crosses intersect:
// cross (r1, c1) and cross (r2, c2) share the cell (r1, c2) or the cell
// (r2, c1); a cell is missing only in the short last row, so both are
// missing only if r1 and r2 are both that row, and then they share it. So crosses of ANY
// rows and columns intersect, not only the members' own: that is what
// lets a requester whose row or column has a dead member take another
// cross that is wholly alive (Cheung, Ammar and Ahamad's grid protocol).
type Grid struct {
	members []uint32 // sorted
	cols    int
	rows    int
}

// NewGrid lays out members (any order; they are sorted).
func NewGrid(members []uint32) *Grid {
	ms := slices.Sorted(slices.Values(members))
	n := len(ms)
	cols := int(math.Ceil(math.Sqrt(float64(n))))
	if cols < 1 {
		cols = 1
	}
	return &Grid{members: ms, cols: cols, rows: (n + cols - 1) / cols}
}

// Rows and Cols are the grid's dimensions.
func (g *Grid) Rows() int { return g.rows }
func (g *Grid) Cols() int { return g.cols }

// Cell returns member id's row and column, false if id is not a member.
func (g *Grid) Cell(id uint32) (row, col int, ok bool) {
	i, ok := slices.BinarySearch(g.members, id)
	if !ok {
		return 0, 0, false
	}
	return i / g.cols, i % g.cols, true
}

// Row and Col return the members in row r and column c, by ID.
func (g *Grid) Row(r int) []uint32 {
	lo := r * g.cols
	return slices.Clone(g.members[lo:min(lo+g.cols, len(g.members))])
}

func (g *Grid) Col(c int) []uint32 {
	var out []uint32
	for i := c; i < len(g.members); i += g.cols {
		out = append(out, g.members[i])
	}
	return out
}

// Cross is row r and column c, sorted, without duplicates.
func (g *Grid) Cross(r, c int) []uint32 {
	out := append(g.Row(r), g.Col(c)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// VotingSet is member id's own cross (Maekawa's V_i, the member itself
// included); nil if id is not a member.
func (g *Grid) VotingSet(id uint32) []uint32 {
	r, c, ok := g.Cell(id)
	if !ok {
		return nil
	}
	return g.Cross(r, c)
}

// LiveSet is the cross a requester uses when some members are down: its
// own if every member of it is alive; else its own row or column kept
// where that is alive, the other replaced by the first wholly alive one
// (rows top down, columns left to right); nil if no row or no column is
// wholly alive (then no cross is, and the requester waits).
func (g *Grid) LiveSet(id uint32, alive func(uint32) bool) []uint32 {
	r, c, ok := g.Cell(id)
	if !ok {
		return nil
	}
	all := func(ms []uint32) bool {
		for _, m := range ms {
			if !alive(m) {
				return false
			}
		}
		return true
	}
	if !all(g.Row(r)) {
		r = -1
		for i := range g.rows {
			if all(g.Row(i)) {
				r = i
				break
			}
		}
	}
	if !all(g.Col(c)) {
		c = -1
		for i := range g.cols {
			if all(g.Col(i)) {
				c = i
				break
			}
		}
	}
	if r < 0 || c < 0 {
		return nil
	}
	return g.Cross(r, c)
}
