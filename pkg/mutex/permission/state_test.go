package permission

import (
	"errors"
	"testing"
)

// TestStateIncarnationBelowAnswersNone: a stored incarnation whose next
// life would run as answersNone (the incarnation a disowning answers) is
// refused, so no running member ever takes a disowning as its permission.
func TestStateIncarnationBelowAnswersNone(t *testing.T) {
	for inc, ok := range map[uint32]bool{1: true, answersNone - 2: true, answersNone - 1: false, answersNone: false} {
		_, err := decodeState(encodeState(savedState{incarnation: inc, floor: 1}))
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrState) {
			t.Errorf("stored incarnation %d: %v", inc, err)
		}
	}
}
