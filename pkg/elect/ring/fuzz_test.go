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
//   - it leads only terms it owns; what it persists it can restart from;
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

// runRing runs one program of FuzzRing.
func runRing(t testing.TB, in []byte) {
	p := corefuzz.NewProgram(in)
	v := ring.Variant(1 + p.Intn(5))
	ids := []uint32{1, 2, 3, 4}
	self := uint32(1 + p.Intn(4))
	textbook := v == ring.Naive && p.Intn(4) == 0
	lim := epoch.Spaced(epoch.MaxRound, bully.TermBurst, 1)
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			cfg := ring.DefaultLANConfig()
			cfg.Variant, cfg.Textbook = v, textbook
			return ring.New(core.Env{ID: self, Members: ids, Now: d.Now, Rand: rand.New(rand.NewPCG(1, 2)), State: disk}, cfg)
		},
		Sent: func(m core.Message, disk []byte) error {
			saved, _ := bully.Restore(disk)
			if m.Term > saved {
				return fmt.Errorf("%v of term %#x left with %#x on disk", m.Kind, m.Term, saved)
			}
			switch m.Kind {
			case wire.KindRingHeartbeat:
				if epoch.Owner(m.Term) != self {
					return fmt.Errorf("heartbeat of term %#x, owned by %d", m.Term, epoch.Owner(m.Term))
				}
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
	corefuzz.ElectionSteps(t, p, d, self, func(term uint64) core.Message {
		return corefuzz.RingFrame(p, term, lim, ids, self)
	}, func() error {
		if n := d.Core.(*ring.Core).Detail().Unacknowledged; n > 2*(4*len(ids)+64) {
			return fmt.Errorf("%d hops unacknowledged", n)
		}
		return nil
	})
}
