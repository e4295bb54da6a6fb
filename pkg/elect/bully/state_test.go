package bully

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

func TestStateRoundTrip(t *testing.T) {
	for _, term := range []uint64{0, 1, MakeTerm(3, 7), ^uint64(0)} {
		got, err := Restore(appendState(nil, term))
		if err != nil || got != term {
			t.Errorf("Restore(appendState(%d)) = %d, %v", term, got, err)
		}
	}
	if got, err := Restore(nil); got != 0 || err != nil {
		t.Errorf("Restore(nil) = %d, %v; want a fresh node", got, err)
	}
}

func TestStateCorrupt(t *testing.T) {
	// Both formats: the first, and the second with its reservation.
	for _, good := range [][]byte{appendState(nil, MakeTerm(5, 2)), appendReserved(nil, MakeTerm(5, 3), MakeTerm(6, 2))} {
		flip := func(i int) []byte {
			b := append([]byte(nil), good...)
			b[i] ^= 0x10
			return b
		}
		for name, b := range map[string][]byte{
			"truncated": good[:len(good)-1],
			"longer":    append(append([]byte(nil), good...), 0),
			"version":   flip(stateVersionOff),
			"term bit":  flip(stateTermOff + 7),
			"last bit":  flip(len(good) - 5), // the reservation's, or the term's
			"crc bit":   flip(len(good) - 4),
		} {
			if _, err := Restore(b); !errors.As(err, new(*StateError)) {
				t.Errorf("version %d, %s: Restore = %v, want a *StateError", good[0], name, err)
			}
		}
	}
}

// TestNewNeverClaimsPersistedTerm: a node restarted from term T claims above
// T even when it is alone and nobody tells it the current term.
func TestNewNeverClaimsPersistedTerm(t *testing.T) {
	persisted := MakeTerm(9, 4) // a term of another member
	b, err := New(core.Env{ID: 2, Now: testEpoch, State: appendState(nil, persisted)}, Config{Members: []Member{{ID: 2}, {ID: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ready()
	for i := 1; i < 100 && b.Role() != RoleLeader; i++ {
		b.Tick(testEpoch.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	if b.Role() != RoleLeader {
		t.Fatal("never claimed")
	}
	if got := b.Term(); got != MakeTerm(10, 2) {
		t.Errorf("claimed %d (round %d owner %d), want round 10 owned by 2", got, TermRound(got), TermOwner(got))
	}
	rd := b.Ready()
	if got, _ := Restore(rd.State); got != b.Term() {
		t.Errorf("claim not persisted: state %d, term %d", got, b.Term())
	}
}
