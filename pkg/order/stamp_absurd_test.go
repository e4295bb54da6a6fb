package order

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// A total-order record "from 2" stamped 2^64-1 in its payload (the frame's
// own Lamport stamp plausible, so the node lets it through: what a host
// forges for an --insecure cluster, or a member gone wrong sends). On
// main the member merged the stamp into its clock, which stopped at the
// end of its range: every later stamp of the member was 2^64-1, its frames
// were refused by every other member as too far ahead (lamport_ahead), and
// no total-order message completed anywhere again. Now a record stamped
// after the frame that carries it is refused before it is held (the frame's
// own stamp is bounded by the node), counted, and the genuine record of
// that number is taken when it comes.
func TestSimLamportStampAtTheEndRefused(t *testing.T) {
	sim.SoakSeeds(t, 5, 100, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
		cfg := DefaultLANConfig()
		cfg.Total = Lamport
		addMembers(t, s, 3, cfg)
		o := newOracle(t, s)
		s.Run(500 * time.Millisecond)
		victim := s.Core(1).(*Core)
		for _, typ := range []wire.OrderType{wire.OrderTotal, wire.OrderTotalAck} {
			r := wire.OrderRecord{Seq: victim.st.Stream.In[2].Next + 1, Type: typ, Stamp: ^uint64(0), Message: []byte("forged")}
			if typ == wire.OrderTotalAck {
				r.AckSender, r.AckStamp, r.Message = 3, 1, nil
			}
			payload, err := r.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			before := victim.counters["rejected_implausible"]
			_ = s.Do(1, func(c core.Core) {
				err = c.Step(core.Message{From: 2, Kind: wire.KindOrderRecord, Payload: payload, Lamport: victim.lamport.Now(), Time: s.Clock(1).Now()})
			})
			if !errors.Is(err, ErrImplausible) || victim.counters["rejected_implausible"] != before+1 {
				t.Errorf("%v record stamped 2^64-1: %v (rejected_implausible %d -> %d), want %v, counted", typ, err, before, victim.counters["rejected_implausible"], ErrImplausible)
			}
			if now := victim.lamport.Now(); now > 1<<40 {
				t.Fatalf("%v record stamped 2^64-1 moved the clock to %d", typ, now)
			}
		}
		for i := range 9 {
			o.send(uint32(1+i%3), TotalOrder, fmt.Sprintf("m%d", i))
			s.Run(10 * time.Millisecond)
		}
		if !s.RunUntil(o.complete, 10*time.Second) {
			t.Fatalf("total order stopped after the stamp:\n%s", o.missing())
		}
		o.checkTotal()
	})
}
