package orderd

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/pkg/order/rsm"
	"github.com/synclab/synclab/pkg/wire"
)

// TestLabAttackOrderdAbsurdSnapshot: one snapshot "from the sequencer",
// in its term, numbered 2^64-1, sent to each other member from another
// lab host with the sequencer's source address. Without a key, on main,
// each member installed it and stopped applying for good (its commit
// point at the end of the number space), and once restarted refused its
// own state (a crash loop under systemd). Now it is refused and counted
// (rejected_implausible), and the replicas keep applying, through a
// restart too. With a key it is a bad MAC.
func TestLabAttackOrderdAbsurdSnapshot(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a := e2e.NewAttackLab(t, "orderd", 7600, 3, keyed, nil)
		a.StartAll()
		c := &cluster{&e2e.Cluster{T: t, Daemon: "orderd", Dir: a.Dir}} // the same control sockets, for orderd's helpers
		c.awaitSequencer(3, 3)
		if out, err := c.orderd(1, "apply", "deposit 100"); err != nil {
			t.Fatalf("apply: %v %s", err, out)
		}
		c.sameState(1, 1, 2, 3)

		term := uint64(e2e.Num(a.MustStatus(1), "node", "core", "sequencer", "term"))
		data := []byte(`{"machine":` + string(rsm.New().Snapshot()) + `,"sids":{}}`)
		for _, to := range []uint32{1, 2} {
			a.Forge(3, to, wire.KindOrderSnapshot, term, wire.OrderSnapshot{Index: ^uint64(0), Data: data})
		}
		for _, i := range []int{1, 2} {
			a.Refused(i, 1, "node", "core", "counters", "rejected_implausible")
		}
		if out, err := c.orderd(2, "apply", "deposit 5"); err != nil {
			t.Fatalf("apply after the attack: %v %s", err, out)
		}
		c.sameState(2, 1, 2, 3)
		a.Procs[1].Kill()
		a.Start(1)
		a.Eventually("member 1 answers after a restart", 10*time.Second, func() bool { _, err := a.Status(1); return err == nil })
		a.Alive(1)
		if out, err := c.orderd(1, "apply", "deposit 7"); err != nil {
			t.Fatalf("apply after member 1's restart: %v %s", err, out)
		}
		c.sameState(3, 1, 2, 3)
	})
}
