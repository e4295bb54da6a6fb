package majority_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/majority"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzMajority drives one majority core through a program read from the
// input: frames of every kind from members, itself and strangers, with
// terms around its own, a burst away or absurd, right or wrong weights,
// any sequence numbers, verdicts and holders, garbage payloads; ticks of
// any length; resignations; restarts from what it persisted; failed
// writes. It must never panic, and:
//   - no message leaves with a term its disk does not hold;
//   - it asks (vote request, renewal) only in terms it owns, never the
//     same term from two lives;
//   - its term never goes back, within a life or below its disk;
//   - it believes it leads only as leader of a term it owns, and never
//     for longer than a lease from now;
//   - what it persists it can restart from.
func FuzzMajority(f *testing.F) {
	corefuzz.Fuzz(f, majoritySeeds, runMajority)
}

// BenchmarkFuzzMajority is FuzzMajority's cost per execution (execs/s).
func BenchmarkFuzzMajority(b *testing.B) {
	corefuzz.Bench(b, "FuzzMajority", majoritySeeds, runMajority)
}

var majoritySeeds = [][]byte{
	{},
	{0, 0, 0, 5, 2, 2, 0, 0, 0, 3, 1, 0, 4, 4},
	[]byte("\x00\x00\x02\x05\x07\x07\x03\x02\x00\x05\x10\x00\x01"),
}

// majoritySteps bounds a program (corefuzz's doc, "What a program costs").
const majoritySteps = 150

// runMajority runs one program of FuzzMajority.
func runMajority(t testing.TB, in []byte) {
	p := corefuzz.NewProgram(in)
	ids := []uint32{1, 2, 3}
	weights := map[uint32]uint32{1: 1, 2: 1, 3: 1}
	if p.Bool() {
		weights[2] = 3
	}
	self := uint32(1 + p.Intn(3))
	cfg := majority.DefaultLANConfig()
	for _, id := range ids {
		cfg.Members = append(cfg.Members, majority.Member{ID: id, Weight: weights[id]})
	}
	lim := epoch.Spaced(epoch.MaxRound, majority.TermBurst, 1)
	claimed := map[uint64]int{}
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			return majority.New(core.Env{ID: self, Members: ids, Now: d.Now, Rand: rand.New(rand.NewPCG(1, 2)), State: disk}, cfg)
		},
		Sent: func(m core.Message, disk []byte) error {
			saved, err := elect.DecodeWord("majority", 'M', disk)
			if err != nil || m.Term > saved {
				return fmt.Errorf("%v of term %#x left with %#x on disk (%v)", m.Kind, m.Term, saved, err)
			}
			if m.Kind == wire.KindVoteRequest || m.Kind == wire.KindLeaseRenew {
				if epoch.Owner(m.Term) != self {
					return fmt.Errorf("request in term %#x of %d", m.Term, epoch.Owner(m.Term))
				}
				if life, ok := claimed[m.Term]; ok && life != d.Life {
					return fmt.Errorf("term %#x asked in lives %d and %d", m.Term, life, d.Life)
				}
				claimed[m.Term] = d.Life
			}
			return nil
		},
	}
	c := func() *majority.Core { return d.Core.(*majority.Core) }
	d.Inspect = func() error { _ = c().Report(); return nil } // at the end (corefuzz.Driver.Inspect)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	last := c().Term()
	for steps := 0; p.More() && steps < majoritySteps; steps++ {
		fail := p.Intn(6) == 0
		var err error
		switch p.Intn(8) {
		case 0, 1:
			err = d.Tick(time.Duration(1+p.Intn(100))*5*time.Millisecond, fail)
		case 2:
			if err = d.Restart(); err == nil {
				last, _ = elect.DecodeWord("majority", 'M', d.Disk)
			}
		case 3:
			c().Resign(d.Now)
			err = d.Drain(fail)
		default:
			err = d.Step(corefuzz.MajorityFrame(p, c().Term(), lim, ids, weights, self), fail)
		}
		if err != nil {
			t.Fatal(err)
		}
		tm := c().Term()
		if tm < last {
			t.Fatalf("term went back %#x -> %#x", last, tm)
		}
		last = tm
		if saved, err := elect.DecodeWord("majority", 'M', d.Disk); err != nil || tm < saved || lim.CheckRestored(saved) != nil {
			t.Fatalf("disk %#x (%v), term %#x", saved, err, tm)
		}
		if c().Leads(d.Now) {
			if c().Role() != elect.RoleLeader || epoch.Owner(tm) != self {
				t.Fatalf("believes it leads term %#x as %v", tm, c().Role())
			}
			if left := c().Detail().LeaseLeft; left > cfg.Lease {
				t.Fatalf("lease of %v left, more than a lease", left)
			}
		}
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
}
