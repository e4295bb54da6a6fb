package order

import (
	"fmt"
	"testing"

	"github.com/synclab/synclab/internal/sim"
)

// FIFO and causal groups (with the sequencer's total order beside them)
// under crashes while every member's disk fails now and then. A send
// whose write fails is taken back (Core.Withdraw: its Ready's frames
// were withheld, nothing of the write reached the disk) and answered not
// sent: the oracle holds it to that (oracle.withdrawn): delivered
// nowhere, by no later write and no restart; anything else is delivered
// once, in its sender's order, after its causal past.
//
// With Lamport's total order its sends are taken back too (their acks
// cannot have come: no member saw them), but in a group of one.
func TestSimFIFOCausalDiskFaults(t *testing.T) {
	for _, c := range []struct {
		nodes int
		total Total
	}{{1, Sequencer}, {2, Sequencer}, {3, Sequencer}, {5, Sequencer}, {1, Lamport}, {2, Lamport}, {3, Lamport}} {
		t.Run(fmt.Sprintf("%d-members-%v", c.nodes, c.total), func(t *testing.T) {
			withdrawn, runs := 0, 0
			sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
				o := runChaos(t, seed, chaos{nodes: c.nodes, total: c.total, crashes: true, burstCrashes: c.total == Sequencer, diskFaults: 0.5, msgs: 60})
				withdrawn += len(o.withdrawn)
				// A group of one delivers its own Lamport message at once,
				// through the state machine: that one is kept pending
				// (not saved), delivered with the next good write or lost
				// with a crash.
				if len(o.notSaved) > 0 && !(c.nodes == 1 && c.total == Lamport) {
					t.Errorf("%d sends answered not saved (kept pending), want every failed send taken back: %v", len(o.notSaved), o.notSaved)
				}
				runs++
			})
			t.Logf("%d FIFO, causal or Lamport sends taken back after a failed write over %d runs", withdrawn, runs)
			if runs >= 10 && withdrawn == 0 {
				t.Error("no send was taken back: the runs never failed a send's write")
			}
		})
	}
}
