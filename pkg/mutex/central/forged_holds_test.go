package central_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestForgedHoldsCapped: a cluster without a key; coordinator 3 is
// killed, 2 takes over and waits out its Hold (3 is down). During the Hold
// a forger sends syncs "from member 1", each naming a new incarnation and
// holding 512 new locks. A re-announced hold is taken over the queue's
// limits (a holder left out meant two holders), and a new incarnation
// drops only the older one's waiting entries: without a cap per member
// the forged holds of every incarnation piled up far beyond MaxLocks
// (20,480 locks from 40 syncs).
func TestForgedHoldsCapped(t *testing.T) {
	r := reannounceRun(t, 3, 0)
	r.s.Start()
	r.s.Run(2 * time.Second)
	r.s.Crash(3)
	if !r.s.RunUntil(func() bool { return r.core(2).Report().Detail.(central.Detail).Coordinates }, 5*time.Second) {
		t.Fatal("2 does not take over")
	}
	co := r.core(2)
	d := co.Report().Detail.(central.Detail)
	if d.Ready {
		t.Skip("hold already over")
	}
	inc := r.core(1).Incarnation()
	const syncs = 40
	sent := 0
	for i := range syncs {
		if co.Report().Detail.(central.Detail).Ready {
			break
		}
		s := wire.CentralSync{Incarnation: inc + 1 + uint32(i), Stamp: uint32(1<<20 + i), MaxSeq: 1 << 20}
		for j := range wire.MaxSyncEntries {
			s.Entries = append(s.Entries, wire.CentralSyncEntry{Name: fmt.Sprintf("f%d.%d", i, j), Held: true,
				LeaseMS: 1000, LeftMS: 900, Seq: uint64(j + 1), Fence: 1})
		}
		if err := r.inject(2, core.Message{From: 1, Term: d.Term, Kind: wire.KindCentralSync, Payload: encode(t, s)}); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	locks := len(co.Report().Locks)
	cfg := central.DefaultLANConfig()
	t.Logf("%d forged syncs: %d locks in the coordinator's queue (MaxLocks %d, MaxQueue %d), holds_reannounced_over_limit %d",
		sent, locks, cfg.MaxLocks, cfg.MaxQueue, co.Report().Counters["holds_reannounced_over_limit"])
	if locks > wire.MaxSyncEntries+cfg.MaxLocks {
		t.Errorf("coordinator holds %d locks after %d forged syncs: more than MaxLocks %d plus one sync's %d", locks, sent, cfg.MaxLocks, wire.MaxSyncEntries)
	}
}
