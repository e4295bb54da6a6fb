package omega_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/omega"
)

// FuzzOmega drives one Ω core through a program: heartbeats from members,
// itself and strangers with any incarnation and fields, garbage payloads,
// ticks of any length, restarts from its disk, failed writes, with or
// without asks (DefaultLANConfig or electd's Probed). It never
// panics, and:
//   - every heartbeat carries the incarnation on its disk (a life whose
//     incarnation was not stored sends nothing);
//   - the incarnation grows by one per stored life, never back;
//   - the window stays within Interval..MaxInterval;
//   - the leader it trusts is a member, and itself only as leader.
func FuzzOmega(f *testing.F) {
	corefuzz.Fuzz(f, omegaSeeds, runOmega)
}

// BenchmarkFuzzOmega is FuzzOmega's cost per execution (execs/s).
func BenchmarkFuzzOmega(b *testing.B) {
	corefuzz.Bench(b, "FuzzOmega", omegaSeeds, runOmega)
}

var omegaSeeds = [][]byte{
	{},
	{0, 0, 2, 1, 3, 3, 0, 0, 2, 1, 0, 0},
}

// omegaSteps bounds a program (corefuzz's doc, "What a program costs").
const omegaSteps = 150

// runOmega runs one program of FuzzOmega.
func runOmega(t testing.TB, in []byte) {
	p := corefuzz.NewProgram(in)
	ids := []uint32{1, 2, 3}
	self := uint32(1 + p.Intn(3))
	cfg := omega.DefaultLANConfig()
	if p.Intn(2) == 0 {
		cfg = omega.FromOptions(ids, omega.Probed) // electd's: asks, answers
	}
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			return omega.New(core.Env{ID: self, Members: ids, Now: d.Now, State: disk}, cfg)
		},
		Sent: func(m core.Message, disk []byte) error {
			stored, err := elect.DecodeWord("omega", 'O', disk)
			if err != nil || m.Term != stored {
				return fmt.Errorf("%v of incarnation %d left with %d stored (%v)", m.Kind, m.Term, stored, err)
			}
			return nil
		},
	}
	c := func() *omega.Core { return d.Core.(*omega.Core) }
	d.Inspect = func() error { _ = c().Report(); return nil } // at the end (corefuzz.Driver.Inspect)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	for steps := 0; p.More() && steps < omegaSteps; steps++ {
		fail := p.Intn(6) == 0
		var err error
		switch p.Intn(6) {
		case 0, 1:
			err = d.Tick(time.Duration(1+p.Intn(200))*5*time.Millisecond, fail)
		case 2:
			stored, _ := elect.DecodeWord("omega", 'O', d.Disk)
			if err = d.Restart(); err == nil && c().Incarnation() != stored+1 {
				t.Fatalf("restarted with %d stored: incarnation %d", stored, c().Incarnation())
			}
		default:
			err = d.Step(corefuzz.OmegaFrame(p, c().Incarnation(), ids, self), fail)
		}
		if err != nil {
			t.Fatal(err)
		}
		if iv := c().Interval(); iv < cfg.Interval || iv > cfg.MaxInterval {
			t.Fatalf("window %v outside %v..%v", iv, cfg.Interval, cfg.MaxInterval)
		}
		if l, _, ok := c().Leader(); ok && (l < 1 || l > 3 || (l == self) != (c().Role() == elect.RoleLeader)) {
			t.Fatalf("trusts %d as %v", l, c().Role())
		}
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
}
