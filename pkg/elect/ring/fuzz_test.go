package ring_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
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
	f.Add([]byte{})
	f.Add([]byte{3, 1, 0, 0, 2, 0, 7, 0, 5, 0, 0, 1, 2})
	f.Add([]byte("\x04\x02\x00\x02\x07\x07\x07\x07\x03\x00\x05\x10\x00\x01\x01\x01"))
	f.Fuzz(func(t *testing.T, in []byte) {
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
		c := func() *ring.Core { return d.Core.(*ring.Core) }
		last := c().Term()
		for steps := 0; p.More() && steps < 400; steps++ {
			fail := p.Intn(6) == 0
			var err error
			switch p.Intn(8) {
			case 0, 1:
				err = d.Tick(time.Duration(1+p.Intn(60))*10*time.Millisecond, fail)
			case 2:
				if err = d.Restart(); err == nil {
					last, _ = bully.Restore(d.Disk)
				}
			case 3:
				c().Resign(d.Now)
				err = d.Drain(fail)
			default:
				err = d.Step(corefuzz.RingFrame(p, c().Term(), lim, ids, self), fail)
			}
			if err != nil {
				t.Fatal(err)
			}
			tm := c().Term()
			if tm < last {
				t.Fatalf("term went back %#x -> %#x", last, tm)
			}
			last = tm
			if saved, err := bully.Restore(d.Disk); err != nil || tm < saved || bully.CheckTerm(saved) != nil {
				t.Fatalf("disk %#x (%v), term %#x", saved, err, tm)
			}
			if l, tm, _ := c().Leader(); l == self && (c().Role() != elect.RoleLeader || epoch.Owner(tm) != self) {
				t.Fatalf("leads term %#x as %v", tm, c().Role())
			}
			if n := c().Detail().Unacknowledged; n > 4*len(ids)+64 {
				t.Fatalf("%d hops unacknowledged", n)
			}
		}
	})
}
