package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestOwnGrantLeavesWithRefusedCall: the coordinator's own grant left due
// by a Step (ownDue) is made by the next call of a client, a reading of
// the clock (enterGrants), and must leave with that call's Ready even when
// the call itself is refused: a release of a request the member no longer
// has (a double release, one after its lease ended), an acquire over the
// queue's bound or with a bad vector. The early returns of Release and
// Acquire skipped drain(): the grant stayed in the table until the next
// Tick, which the core did not ask for (its Deadline was its lease's end),
// and was reported there, granted and lost at once (found by FuzzTokenAsk,
// testdata/fuzz/FuzzTokenAsk/aaaeb67de01ada74: lease 1 s, granted at
// 04.109, reported at 05.202).
func TestOwnGrantLeavesWithRefusedCall(t *testing.T) {
	for _, refused := range []struct {
		name string
		call func(c *central.Core, now time.Time) error
	}{
		{"release", func(c *central.Core, now time.Time) error { return c.Release(now, 999) }},
		{"acquire", func(c *central.Core, now time.Time) error {
			_, err := c.Acquire(now, mutex.Request{Lock: "x", Lease: time.Hour})
			return err
		}},
	} {
		t.Run(refused.name, func(t *testing.T) {
			r := &scenarioRun{t: t}
			r.newCluster(3, nil) // coordinator 3
			r.s.Run(2 * time.Second)
			acquire := func(id uint32) (req mutex.RequestID) {
				r.s.Do(id, func(c core.Core) { req, _ = c.(*central.Core).Acquire(r.s.Clock(id).Now(), mutex.Request{Lock: "x"}) })
				r.s.Run(10 * time.Millisecond)
				return req
			}
			first := acquire(3)
			held := acquire(2)
			r.s.Do(3, func(c core.Core) { c.(*central.Core).Release(r.s.Clock(3).Now(), first) })
			r.s.Run(10 * time.Millisecond)
			own := acquire(3)
			m2, co := r.core(2), r.core(3)
			st, _ := m2.Lookup(held)
			if !st.Granted {
				t.Fatal("member 2 not granted")
			}
			d := co.Report().Detail.(central.Detail)
			if err := r.inject(3, core.Message{From: 2, Term: d.Term, Kind: wire.KindCentralRelease,
				Payload: encode(t, wire.CentralRelease{Name: "x", Incarnation: m2.Incarnation(), Seq: uint64(held), Fence: st.Fence})}); err != nil {
				t.Fatal(err)
			}
			if st, _ := co.Lookup(own); st.Granted {
				t.Fatal("the coordinator's own request granted in the release's Step")
			}
			var granted bool
			r.s.Do(3, func(c core.Core) {
				cc := c.(*central.Core)
				if err := refused.call(cc, r.s.Clock(3).Now()); err == nil {
					t.Fatal("the call was not refused")
				}
				for _, e := range cc.Ready().Events {
					granted = granted || e.Name == mutex.EventGranted
				}
			})
			if st, _ := co.Lookup(own); !st.Granted {
				t.Fatalf("the own request not granted at the call: %+v", st)
			}
			if !granted {
				t.Fatalf("the own grant made at the refused %s did not leave with its Ready (deadline in %v)", refused.name, co.Deadline().Sub(r.s.Clock(3).Now()))
			}
		})
	}
}
