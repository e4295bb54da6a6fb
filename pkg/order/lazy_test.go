package order

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order/rsm"
)

// A record that holds only the commit point and deliveries announced
// before their record waits for the next write (lazy.go): under a steady
// stream of total-order multicasts every member writes once per
// multicast (the entry, before its acknowledgement, carrying the last
// delivery's record with it), not twice; and once the cluster is idle the
// record goes alone within RecordDelay, so every member's disk holds the
// last commit point and state machine.
func TestSimDeliveryRecordRidesOnTheNextEntry(t *testing.T) {
	const n, msgs = 5, 40
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	cfg := DefaultLANConfig()
	cfg.Machine = func() StateMachine { return rsm.New() }
	addMembers(t, s, n, cfg)
	s.Run(2 * time.Second)
	writes := map[uint32]int{}
	logLen := map[uint32]int{}
	for id := uint32(1); id <= n; id++ {
		logLen[id] = len(s.DiskLog(id))
	}
	s.OnReady(func(r sim.Ready) {
		if l := len(s.DiskLog(r.Node)); l != logLen[r.Node] {
			writes[r.Node]++
			logLen[r.Node] = l
		}
	})
	for k := range msgs {
		_ = s.Do(1, func(c core.Core) {
			if err := c.(*Core).Multicast(s.Clock(1).Now(), TotalOrder, []byte(fmt.Sprintf("deposit %d", k+1))); err != nil {
				t.Fatal(err)
			}
		})
		s.Run(5 * time.Millisecond)
	}
	for id := uint32(1); id <= n; id++ {
		if got, most := writes[id], msgs+msgs/4; got > most {
			t.Errorf("member %d wrote %d times for %d multicasts 5 ms apart, want at most %d (the entry's write carries the last delivery's record)", id, got, msgs, most)
		}
	}
	s.Run(2 * cfg.RecordDelay)
	want := string(s.Core(1).(*Core).Machine().Snapshot())
	for id := uint32(1); id <= n; id++ {
		c := s.Core(id).(*Core)
		if c.durable.Pending() {
			t.Errorf("member %d: a change still waits %v after the last multicast", id, 2*cfg.RecordDelay)
		}
		restored, err := New(core.Env{ID: id, Members: c.members, Now: s.Clock(id).Now(), Lamport: &clock.Lamport{},
			State: s.Disk(id), Log: s.DiskLog(id)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(restored.Machine().Snapshot()); got != want || restored.st.Log.Applied != msgs {
			t.Errorf("member %d's disk holds %s (applied %d), its machine %s", id, got, restored.st.Log.Applied, want)
		}
	}
}
