package yoyo_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/yoyo"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzYoYo drives one Yo-Yo core (member self of the path 1-2-3-4 or the
// ring 1-2-3-4-1) through a program: every kind from neighbours,
// non-neighbours, itself and strangers, rounds around its own or absurd,
// wrong digests, iterations out of turn, values and leaders that are not
// members, garbage payloads; ticks; restarts from its disk; failed
// writes. It never panics, and:
//   - it sends to its neighbours only, nothing with a round its disk does
//     not hold, and starts rounds it owns only;
//   - its round never goes back, within a life or below its disk;
//   - it leads only a round it is in, and names only members;
//   - it never leads one round in two lives (its own flood of the round
//     of its disk, relayed back to it after a restart).
func FuzzYoYo(f *testing.F) {
	corefuzz.Fuzz(f, yoYoSeeds, runYoYo)
}

// BenchmarkFuzzYoYo is FuzzYoYo's cost per execution (execs/s).
func BenchmarkFuzzYoYo(b *testing.B) {
	corefuzz.Bench(b, "FuzzYoYo", yoYoSeeds, runYoYo)
}

var yoYoSeeds = [][]byte{
	{},
	{0, 0, 0, 3, 0, 1, 2, 2, 1, 0, 0, 4, 4, 0},
}

// yoyoSteps bounds a program (corefuzz's doc, "What a program costs"):
// Yo-Yo's iterations, votes and pruning take long programs to reach
// (random programs cover 65% of the package at 300 steps, 75% at 400), so
// it keeps 400 and pays for it in speed.
const yoyoSteps = 400

// runYoYo runs one program of FuzzYoYo.
func runYoYo(t testing.TB, in []byte) {
	p := corefuzz.NewProgram(in)
	ids := []uint32{1, 2, 3, 4}
	edges := []yoyo.Edge{{1, 2}, {2, 3}, {3, 4}}
	if p.Bool() {
		edges = append(edges, yoyo.Edge{4, 1})
	}
	self := uint32(1 + p.Intn(4))
	nb := map[uint32]bool{}
	for _, e := range edges {
		if e[0] == self {
			nb[e[1]] = true
		}
		if e[1] == self {
			nb[e[0]] = true
		}
	}
	cfg := yoyo.DefaultLANConfig()
	cfg.Topology = edges
	lim := epoch.Spaced(epoch.MaxRound, yoyo.RoundBurst, 1)
	// led is, per round, the life that flooded it as its leader: a round
	// led in two lives hands one fencing token to two leaderships.
	led := map[uint64]int{}
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			return yoyo.New(core.Env{ID: self, Members: ids, Now: d.Now, State: disk}, cfg)
		},
		Sent: func(m core.Message, disk []byte) error {
			stored, err := elect.DecodeWord("yoyo", 'Y', disk)
			switch {
			case err != nil || m.Term > stored:
				return fmt.Errorf("%v of round %#x left with %#x stored (%v)", m.Kind, m.Term, stored, err)
			case !nb[m.To]:
				return fmt.Errorf("%v to %d, not a neighbour", m.Kind, m.To)
			}
			var l wire.YoYoLeader
			if m.Kind != wire.KindYoYoLeader || l.UnmarshalBinary(m.Payload) != nil || l.Leader != self {
				return nil
			}
			if life, ok := led[m.Term]; ok && life != d.Life {
				return fmt.Errorf("round %#x led in lives %d and %d", m.Term, life, d.Life)
			}
			led[m.Term] = d.Life
			return nil
		},
	}
	c := func() *yoyo.Core { return d.Core.(*yoyo.Core) }
	d.Inspect = func() error { _ = c().Report(); return nil } // at the end (corefuzz.Driver.Inspect)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	digest := uint32(0)
	fmt.Sscanf(c().Detail().Digest, "%x", &digest)
	last := uint64(0)
	for steps := 0; p.More() && steps < yoyoSteps; steps++ {
		fail := p.Intn(6) == 0
		var err error
		switch p.Intn(7) {
		case 0, 1:
			err = d.Tick(time.Duration(1+p.Intn(400))*5*time.Millisecond, fail)
		case 2:
			if err = d.Restart(); err == nil {
				last, _ = elect.DecodeWord("yoyo", 'Y', d.Disk)
			}
		default:
			_, r, _ := c().Leader()
			err = d.Step(corefuzz.YoYoFrame(p, r, lim, ids, self, digest), fail)
		}
		if err != nil {
			t.Fatal(err)
		}
		l, r, ok := c().Leader()
		if r < last {
			t.Fatalf("round went back %#x -> %#x", last, r)
		}
		last = r
		if stored, err := elect.DecodeWord("yoyo", 'Y', d.Disk); err != nil || r < stored || lim.CheckRestored(stored) != nil {
			t.Fatalf("disk %#x (%v), round %#x", stored, err, r)
		}
		if ok && (l < 1 || l > 4 || (l == self) != (c().Role() == elect.RoleLeader)) {
			t.Fatalf("leader %d as %v", l, c().Role())
		}
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
}
