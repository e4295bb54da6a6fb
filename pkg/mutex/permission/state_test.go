package permission

import (
	"errors"
	"testing"
)

// TestStateIncarnationBelowAnswersNone: a stored incarnation from
// maxStoredIncarnation on is refused, so that no running member, however
// many times it stalls in one life (each stall is one more), reaches
// answersNone (the incarnation a disowning answers) and takes a disowning
// as its permission.
func TestStateIncarnationBelowAnswersNone(t *testing.T) {
	for inc, ok := range map[uint32]bool{1: true, maxStoredIncarnation - 1: true, maxStoredIncarnation: false, answersNone - 2: false, answersNone - 1: false, answersNone: false} {
		_, err := decodeState(encodeState(savedState{incarnation: inc, floor: 1}))
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrState) {
			t.Errorf("stored incarnation %d: %v", inc, err)
		}
	}
}
