package ring_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzRing drives one ring core of any variant through a program read
// from the input: election, announcement, ack and heartbeat frames from
// members, itself and strangers, with terms around its own or absurd,
// forged announcements, lists of strangers, repeated or too many IDs,
// rounds and attempts from zero to 2^32-1, garbage payloads; ticks;
// resignations; restarts from what it persisted; failed writes. It must
// never panic, and:
//   - no message leaves with a term its disk does not hold;
//   - it heartbeats only terms it owns, announces only a term's owner,
//     and lists no more IDs than the ring has;
//   - its term never goes back within a life, and never below its disk;
//   - it leads only terms it owns, and never the term it started a life
//     from (one it may have led in the life before);
//   - what it persists it can restart from;
//   - its unacknowledged hops stay bounded.
func FuzzRing(f *testing.F) {
	corefuzz.Fuzz(f, ringSeeds, runRing)
}

// BenchmarkFuzzRing is FuzzRing's cost per execution (execs/s).
func BenchmarkFuzzRing(b *testing.B) {
	corefuzz.Bench(b, "FuzzRing", ringSeeds, runRing)
}

var ringSeeds = [][]byte{
	{},
	{3, 1, 0, 0, 2, 0, 7, 0, 5, 0, 0, 1, 2},
	[]byte("\x04\x02\x00\x02\x07\x07\x07\x07\x03\x00\x05\x10\x00\x01\x01\x01"),
}

// FuzzRingRestored is FuzzRing from a state file the program picks
// (corefuzz.StateFile): a member that ran bully, whose state is in
// bully's second format, now runs a ring election. The core refuses
// exactly the files it cannot trust (core.ErrState); from one it takes it
// starts at or above the reservation and heartbeats or announces itself
// only above it, then runs as FuzzRing's. FuzzRing starts only from
// nothing, and its stored programs keep their meaning.
func FuzzRingRestored(f *testing.F) {
	corefuzz.Fuzz(f, ringRestoredSeeds, runRingRestored)
}

var ringRestoredSeeds = [][]byte{
	{},
	{3, 1, 0, 0, 1, 0, 3, 0, 2, 0, 7, 0, 5, 0, 0, 1, 2},
	{2, 3, 0, 1, 1, 7, 1, 7, 5, 1, 7, 0, 2, 0, 7},
}

// runRing runs one program of FuzzRing.
func runRing(t testing.TB, in []byte) { runRingFrom(t, in, false) }

// runRingRestored runs one program of FuzzRingRestored.
func runRingRestored(t testing.TB, in []byte) { runRingFrom(t, in, true) }

// runRingFrom runs a program, restored from a state file the program
// picks first when restored.
func runRingFrom(t testing.TB, in []byte, restored bool) {
	p := corefuzz.NewProgram(in)
	v := ring.Variant(1 + p.Intn(5))
	ids := []uint32{1, 2, 3, 4}
	self := uint32(1 + p.Intn(4))
	textbook := v == ring.Naive && p.Intn(4) == 0
	lim := epoch.Spaced(epoch.MaxRound, bully.TermBurst, 1)
	// floor is the term this life started from when the member owns it
	// (its last term, or a reservation): one it may have led in an
	// earlier life, which it never leads again.
	var floor uint64
	// heartbeated is, per term, the life that heartbeat it as leader: a
	// term led in two lives hands one fencing token to two leaderships.
	heartbeated := map[uint64]int{}
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			cfg := ring.DefaultLANConfig()
			cfg.Variant, cfg.Textbook = v, textbook
			term, reserved, _ := bully.RestoreReserved(disk)
			if floor = max(term, reserved); epoch.Owner(floor) != self {
				floor = 0
			}
			return ring.New(core.Env{ID: self, Members: ids, Now: d.Now, Rand: rand.New(rand.NewPCG(1, 2)), State: disk}, cfg)
		},
		Sent: func(m core.Message, disk []byte) error {
			// A reservation bully left is a term the member may have
			// sent: the larger of the two bounds what it sends.
			saved, reserved, _ := bully.RestoreReserved(disk)
			if m.Term > max(saved, reserved) {
				return fmt.Errorf("%v of term %#x left with %#x on disk (reserved %#x)", m.Kind, m.Term, saved, reserved)
			}
			switch m.Kind {
			case wire.KindRingHeartbeat:
				if epoch.Owner(m.Term) != self {
					return fmt.Errorf("heartbeat of term %#x, owned by %d", m.Term, epoch.Owner(m.Term))
				}
				if m.Term <= floor {
					return fmt.Errorf("heartbeat of term %#x, at or below %#x of the state file it started from", m.Term, floor)
				}
				if life, ok := heartbeated[m.Term]; ok && life != d.Life {
					return fmt.Errorf("term %#x heartbeated in lives %d and %d", m.Term, life, d.Life)
				}
				heartbeated[m.Term] = d.Life
			case wire.KindRingCoordinator:
				var c wire.RingCoordinator
				if err := c.UnmarshalBinary(m.Payload); err != nil || c.Leader != epoch.Owner(m.Term) {
					return fmt.Errorf("announcement %+v of term %#x (%v)", c, m.Term, err)
				}
			case wire.KindRingElection:
				var e wire.RingElection
				if err := e.UnmarshalBinary(m.Payload); err != nil || len(e.IDs) > len(ids) {
					return fmt.Errorf("election %+v (%v)", e, err)
				}
			}
			return nil
		},
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if restored {
		start, ok, err := d.RestartFrom(p.StateFile(self, ids, lim), func(term, reserved uint64) bool {
			return bully.CheckTerm(max(term, reserved)) == nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if tm := d.Core.(*ring.Core).Term(); tm < start {
			t.Fatalf("started at term %#x, below %#x of its state file", tm, start)
		}
	}
	corefuzz.ElectionSteps(t, p, d, self, func(term uint64) core.Message {
		return corefuzz.RingFrame(p, term, lim, ids, self)
	}, func() error {
		if n := d.Core.(*ring.Core).Detail().Unacknowledged; n > 2*(4*len(ids)+64) {
			return fmt.Errorf("%d hops unacknowledged", n)
		}
		return nil
	})
}
