package bully_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzBully drives one bully core through a program read from the input:
// frames of every election kind from members, itself and strangers, with
// terms around its own, a burst away, at the end of the term space or
// anything at all, right or wrong priorities and flags, garbage payloads;
// ticks; resignations; restarts from what it persisted; failed writes. It
// must never panic, and:
//   - no message leaves with a term its disk does not hold;
//   - it claims (COORDINATOR, heartbeat) only terms it owns, and never the
//     same term from two lives;
//   - its term never goes back within a life, and never below its disk;
//   - what it persists it can restart from (no absurd term on disk).
func FuzzBully(f *testing.F) {
	corefuzz.Fuzz(f, bullySeeds, runBully)
}

// BenchmarkFuzzBully is FuzzBully's cost per execution (execs/s).
func BenchmarkFuzzBully(b *testing.B) {
	corefuzz.Bench(b, "FuzzBully", bullySeeds, runBully)
}

var bullySeeds = [][]byte{
	{},
	{1, 2, 0, 2, 0, 7, 0, 5, 0, 0, 1, 2},
	[]byte("\x01\x02\x00\x02\x07\x07\x07\x07\x03\x00\x05\x10\x00"),
}

// FuzzBullyRestored is FuzzBully from a state file the program picks
// (corefuzz.StateFile: bully's two formats, a reservation another
// member's, at the end of the term space or not above the term, flipped
// bits, cut short): the core refuses exactly the files it cannot trust
// (core.ErrState), and from one it takes it claims only above the larger
// of its term and reservation, then runs as FuzzBully's. FuzzBully starts
// only from nothing and restarts only from what the core itself wrote,
// and its stored programs keep their meaning.
func FuzzBullyRestored(f *testing.F) {
	corefuzz.Fuzz(f, bullyRestoredSeeds, runBullyRestored)
}

var bullyRestoredSeeds = [][]byte{
	{},
	{0, 1, 0, 0, 3, 0, 0, 2, 0, 7, 0, 5, 0, 0, 1, 2},                      // reserved, own, a few rounds up
	{0, 1, 0, 0, 1, 7, 2, 7, 5, 1, 7, 0, 2, 0, 7},                         // reservation at the end of the space
	{1, 1, 0, 1, 9, 0, 3, 0, 9, 1, 5, 0, 3, 0, 0, 7, 0, 5, 0, 0, 1, 2, 3}, // flipped
}

// runBully runs one program of FuzzBully.
func runBully(t testing.TB, in []byte) { runBullyFrom(t, in, false) }

// runBullyRestored runs one program of FuzzBullyRestored.
func runBullyRestored(t testing.TB, in []byte) { runBullyFrom(t, in, true) }

// runBullyFrom runs a program, restored from a state file the program
// picks first when restored.
func runBullyFrom(t testing.TB, in []byte, restored bool) {
	p := corefuzz.NewProgram(in)
	members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}}
	if p.Bool() {
		members[0].Priority = 2 // ranks above 2, below... by priority
	}
	reserve := p.Bool() // electd's (Config.Reserve)
	self := uint32(1 + p.Intn(3))
	lim := epoch.Spaced(epoch.MaxRound, bully.TermBurst, 1)
	claimed := map[uint64]int{}
	var floor uint64 // a restored file's: every claim is above it
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			cfg := bully.DefaultLANConfig()
			cfg.Members = members
			cfg.Reserve = reserve
			return bully.New(core.Env{ID: self, Now: d.Now, Rand: rand.New(rand.NewPCG(1, 2)), State: disk}, cfg)
		},
		Sent: func(m core.Message, disk []byte) error {
			saved, reserved, _ := bully.RestoreReserved(disk)
			if m.Term > max(saved, reserved) {
				// A claim, and what follows it until the write that
				// brings the term up to it, may leave on the reservation
				// (Config.Reserve): a restart claims above it.
				return fmt.Errorf("%v of term %#x left with %#x on disk (reserved %#x)", m.Kind, m.Term, saved, reserved)
			}
			if m.Kind == wire.KindCoordinator || m.Kind == wire.KindLeaderHeartbeat {
				if bully.TermOwner(m.Term) != self {
					return fmt.Errorf("claim of term %#x, owned by %d", m.Term, bully.TermOwner(m.Term))
				}
				if m.Term <= floor {
					return fmt.Errorf("claim of term %#x, at or below %#x of the state file it started from", m.Term, floor)
				}
				if life, ok := claimed[m.Term]; ok && life != d.Life {
					return fmt.Errorf("term %#x claimed in lives %d and %d", m.Term, life, d.Life)
				}
				claimed[m.Term] = d.Life
			}
			return nil
		},
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if restored {
		var ok bool
		var err error
		floor, ok, err = d.RestartFrom(p.StateFile(self, []uint32{1, 2, 3}, lim), func(term, reserved uint64) bool {
			return bully.CheckTerm(term) == nil && bully.CheckTerm(reserved) == nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
	}
	corefuzz.ElectionSteps(t, p, d, self, func(term uint64) core.Message {
		return corefuzz.ElectionFrame(p, term, lim, members, self)
	}, nil)
}
