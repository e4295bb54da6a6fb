package bully

import (
	"testing"
	"testing/quick"
	"time"
)

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestNextTerm(t *testing.T) {
	for _, tc := range []struct {
		after uint64
		id    uint32
		want  uint64
	}{
		{0, 1, MakeTerm(0, 1)},
		{MakeTerm(0, 1), 5, MakeTerm(0, 5)},
		{MakeTerm(0, 5), 5, MakeTerm(1, 5)},
		{MakeTerm(0, 7), 5, MakeTerm(1, 5)},
		{MakeTerm(3, 2), 2, MakeTerm(4, 2)},
	} {
		if got := nextTerm(tc.after, tc.id); got != tc.want {
			t.Errorf("nextTerm(%d, %d) = %d, want %d", tc.after, tc.id, got, tc.want)
		}
	}
}

// TestNextTermProperties: the claimed term is owned by the claimer, above
// what it has seen, and the smallest such term.
func TestNextTermProperties(t *testing.T) {
	f := func(round uint32, owner, id uint32) bool {
		round %= 1 << 31
		if id == 0 {
			id = 1
		}
		after := MakeTerm(round, owner)
		got := nextTerm(after, id)
		if TermOwner(got) != id || got <= after {
			return false
		}
		// It is the smallest: id's term of the round before is not above
		// after.
		return TermRound(got) == 0 || MakeTerm(TermRound(got)-1, id) <= after
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}

func TestNextTermExhausted(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic at the end of the term space")
		}
	}()
	nextTerm(MakeTerm(1<<32-1, 9), 3)
}
