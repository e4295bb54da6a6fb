package maekawa_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzVoting drives one member of Maekawa or of the majority quorum
// (first input byte) through a program read from the input: vote frames
// of every op from members, itself and strangers, about known and made-up
// locks, with attempts, stamps, fences and leases at their extremes;
// heartbeats; its clients' acquires (exclusive and shared), renewals and
// releases; ticks; restarts from what it persisted; failed writes. It must
// never panic, and:
//   - nothing leaves before its era is on disk, and no locked or
//     commit_ok carries a fence of an era above the one on disk (a
//     restart starts above every fence of that era);
//   - the voter's table stays within MaxLocks;
//   - fences granted to its clients grow with every grant of a lock in a
//     life;
//   - what it persists it can restart from.
func FuzzVoting(f *testing.F) {
	corefuzz.Fuzz(f, votingSeeds, func(t testing.TB, in []byte) { runVoting(t, in) })
}

// BenchmarkFuzzVoting is FuzzVoting's cost per execution (execs/s).
func BenchmarkFuzzVoting(b *testing.B) {
	corefuzz.Bench(b, "FuzzVoting", votingSeeds, func(t testing.TB, in []byte) { runVoting(t, in) })
}

var votingSeeds = [][]byte{
	{},
	{0, 1, 3, 0, 0, 9, 1, 2, 0, 0, 2, 1, 7, 0, 1, 0, 9, 9},
	{1, 2, 3, 1, 0, 5, 5, 5, 2, 2, 2, 8, 8, 8, 0, 1, 1, 6},
}

// TestFuzzVotingReachesGrants: the programs FuzzVoting starts from drive
// the member (Maekawa and majority) to grants, so its fence checks run.
func TestFuzzVotingReachesGrants(t *testing.T) {
	corefuzz.MustReach(t, "FuzzVoting", votingSeeds, []string{"Maekawa", "majority"}, runVoting)
}

// votingSteps bounds a program (corefuzz's doc, "What a program costs").
const votingSteps = 120

// runVoting runs one program of FuzzVoting and returns the algorithm it
// ran and the grants it reached.
func runVoting(t testing.TB, in []byte) (algo string, grants int) {
	return runVotingFrom(t, in, false)
}

// FuzzVotingLate is FuzzVoting with its frames read late (corefuzz.Driver.Late: stamped at the clock's last
// reading, read after a loop's stall or a long pause): a grant or a
// confirmation found due in such a Step waits for a reading of the clock,
// and none is reported with its lease over (the Driver's check, which
// every target runs).
func FuzzVotingLate(f *testing.F) {
	corefuzz.Fuzz(f, votingSeeds, func(t testing.TB, in []byte) { runVotingFrom(t, in, true) })
}

// runVotingFrom runs a program whose frames are stamped late (Late) when
// late.
func runVotingFrom(t testing.TB, in []byte, late bool) (algo string, grants int) {
	{
		p := corefuzz.NewProgram(in)
		majority := p.Bool()
		algo = "Maekawa"
		if majority {
			algo = "majority"
		}
		ids := []uint32{1, 2, 3, 4, 5}
		self := uint32(1 + p.Intn(5))
		cfg := maekawa.DefaultLANConfig()
		cfg.ID, cfg.Members, cfg.MaxLocks, cfg.MaxQueue = self, ids, 16, 32
		kind := wire.KindMaekawa
		if majority {
			cfg.Quorum, cfg.Shared, kind = 3, true, wire.KindQuorumLock
		}
		cfg.Rand = rand.New(rand.NewPCG(1, 2))
		d := &corefuzz.Driver{
			Scheduled: true, // no stale deadline after a Tick
			New: func(disk []byte) (core.Core, error) {
				c := cfg
				c.Persisted = disk
				return maekawa.New(c)
			},
			Sent: func(m core.Message, disk []byte) error {
				if m.Kind != kind {
					return nil
				}
				var v wire.Vote
				if err := v.UnmarshalBinary(m.Payload); err != nil {
					return fmt.Errorf("sent an undecodable vote: %w", err)
				}
				era, _, err := maekawa.DiskState(disk)
				switch {
				case err != nil || len(disk) == 0:
					return fmt.Errorf("%s %s left before its era was on disk (%v)", v.Op, v.Name, err)
				case (v.Op == wire.VoteLocked || v.Op == wire.VoteCommitOK) && maekawa.EraOf(v.Fence) > era:
					return fmt.Errorf("%s %s fence %d (era %d) left with era %d on disk: a restart could go below it",
						v.Op, v.Name, v.Fence, maekawa.EraOf(v.Fence), era)
				}
				return nil
			},
		}
		if late {
			d.Late = p.Late
		}
		fences := corefuzz.Fences{}
		d.Ready = func(rd core.Ready) error {
			for _, o := range d.Core.(*maekawa.Core).Outcomes() {
				if g, ok := o.(mutex.Granted); ok {
					if err := fences.GrantedMode(g.Lock, g.Mode, g.Fence); err != nil {
						return err
					}
					grants++
				}
			}
			return nil
		}
		mk := func() *maekawa.Core { return d.Core.(*maekawa.Core) }
		d.Inspect = func() error {
			_ = mk().Report()
			_ = mk().Deadline()
			return nil
		}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		names := []string{"x", "y"}
		clients := corefuzz.Clients{Driver: d}
		voters := corefuzz.Voters{}
		for steps := 0; p.More() && steps < votingSteps; steps++ {
			fail := p.Intn(8) == 0
			var err error
			switch p.Intn(12) {
			case 0, 1:
				err = d.Tick(time.Duration(1+p.Intn(2000))*time.Millisecond, fail)
			case 2:
				if err = d.Restart(); err == nil {
					clear(fences)
					clients.Forget()
				}
			case 3:
				mode := corefuzz.Mode(p)
				err = clients.Acquire(p, names[p.Intn(2)], mode, fail)
			case 4:
				err = clients.Touch(p, fail)
			case 5:
				hb, _ := wire.Heartbeat{Interval: 1000, Alive: 3}.AppendBinary(nil)
				err = d.Step(core.Message{From: ids[p.Intn(5)], Kind: wire.KindHeartbeat, Payload: hb}, fail)
			case 6, 7, 8:
				// Correct voters answer what the member sent.
				err = d.Deliver(p, self, ids, func(m core.Message, peer uint32) error {
					if a, ok := voters.Answer(p, kind, m, peer, self, d.Now); ok {
						return d.Step(a, fail)
					}
					return nil
				})
			default:
				err = d.Step(corefuzz.VoteFrame(p, kind, names, ids, self), fail)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := mk().VoterLocks(); n > cfg.MaxLocks {
				t.Fatalf("voter table holds %d locks, MaxLocks %d", n, cfg.MaxLocks)
			}
		}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	return algo, grants
}
