package quorum

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Result is where a vote stands.
type Result uint8

// Results.
const (
	Pending Result = iota + 1 // neither side can be sure yet
	Won                       // yes votes hold more than half the weight
	Lost                      // yes votes can no longer reach more than half
)

func (r Result) String() string {
	switch r {
	case Pending:
		return "pending"
	case Won:
		return "won"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// ErrVoters: a voter set no vote can be held over.
var ErrVoters = errors.New("quorum: invalid voters")

// Voters is a set of members with their weights.
type Voters struct {
	weight map[uint32]uint64
	total  uint64
	all    bool // every voter's yes is needed (Unanimous)
}

// Majority returns the voters ids, each of weight 1.
func Majority(ids ...uint32) (Voters, error) {
	w := make(map[uint32]uint64, len(ids))
	for _, id := range ids {
		w[id] = 1
	}
	if len(w) != len(ids) {
		return Voters{}, fmt.Errorf("%w: a member is listed twice in %v", ErrVoters, ids)
	}
	return Weighted(w)
}

// Weighted returns the voters of weights (member -> weight). Every weight
// must be positive, and the total must fit in 63 bits.
func Weighted(weights map[uint32]uint64) (Voters, error) {
	if len(weights) == 0 {
		return Voters{}, fmt.Errorf("%w: no voters", ErrVoters)
	}
	v := Voters{weight: maps.Clone(weights)}
	for id, w := range weights {
		if w == 0 || w > 1<<62 || v.total+w > 1<<62 {
			return Voters{}, fmt.Errorf("%w: member %d weight %d (total so far %d)", ErrVoters, id, w, v.total)
		}
		v.total += w
	}
	return v, nil
}

// Unanimous returns the voters ids, each of weight 1, whose vote is won
// only when every one says yes and lost at the first no (no core uses it
// yet: see the package doc).
func Unanimous(ids ...uint32) (Voters, error) {
	v, err := Majority(ids...)
	v.all = true
	return v, err
}

// Total is the sum of the weights.
func (v Voters) Total() uint64 { return v.total }

// Needed is the least yes weight that wins: more than half the total, or
// all of it for Unanimous voters.
func (v Voters) Needed() uint64 {
	if v.all {
		return v.total
	}
	return v.total/2 + 1
}

// Weight is id's weight, 0 if it is not a voter.
func (v Voters) Weight(id uint32) uint64 { return v.weight[id] }

// IDs returns the voters, sorted.
func (v Voters) IDs() []uint32 { return slices.Sorted(maps.Keys(v.weight)) }

// Tally counts one vote over Voters. The zero value is not usable: use
// NewTally.
type Tally struct {
	voters  Voters
	votes   map[uint32]bool
	yes, no uint64
	ignored int
}

// NewTally starts a vote over v.
func NewTally(v Voters) *Tally { return &Tally{voters: v, votes: map[uint32]bool{}} }

// Vote records id's vote and reports whether it counted: a non-voter's
// vote, or a second vote of the same member, does not (a duplicate
// datagram must not count twice).
func (t *Tally) Vote(id uint32, yes bool) bool {
	w := t.voters.Weight(id)
	if _, voted := t.votes[id]; voted || w == 0 {
		t.ignored++
		return false
	}
	t.votes[id] = yes
	if yes {
		t.yes += w
	} else {
		t.no += w
	}
	return true
}

// Result is where the vote stands.
func (t *Tally) Result() Result {
	switch need := t.voters.Needed(); {
	case t.yes >= need:
		return Won
	case t.voters.Total()-t.no < need:
		return Lost
	}
	return Pending
}

// Yes and No are the weights of the votes cast each way.
func (t *Tally) Yes() uint64 { return t.yes }
func (t *Tally) No() uint64  { return t.no }

// Voted reports whether id voted, and how.
func (t *Tally) Voted(id uint32) (yes, voted bool) {
	yes, voted = t.votes[id]
	return yes, voted
}

// Silent returns the voters that have not voted, sorted.
func (t *Tally) Silent() []uint32 {
	var out []uint32
	for _, id := range t.voters.IDs() {
		if _, ok := t.votes[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// Ignored counts the votes that did not count (non-voters, repeats).
func (t *Tally) Ignored() int { return t.ignored }
