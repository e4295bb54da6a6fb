package order

import (
	"fmt"
	"testing"

	"github.com/synclab/synclab/internal/sim"
)

// FIFO and causal groups (with the sequencer's total order beside them)
// under crashes while every member's disk fails now and then. A member
// that multicasts, fails the write and crashes before a write succeeds
// lost the message with the write: its Ready was withheld (Promise), so
// no frame of it left, the daemon answered the send as not saved, and
// the restart numbers its next message from what is on disk, reusing the
// lost one's number. The oracle holds it to that (oracle.unsaved): such a
// message is delivered nowhere, or everywhere in its place; anything else
// is delivered once, in its sender's order, after its causal past.
func TestSimFIFOCausalDiskFaults(t *testing.T) {
	for _, nodes := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("%d-members", nodes), func(t *testing.T) {
			lost, runs := 0, 0
			sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
				o := runChaos(t, seed, chaos{nodes: nodes, total: Sequencer, crashes: true, burstCrashes: true, diskFaults: 0.5, msgs: 60})
				for text := range o.unsaved {
					if o.nowhere(text) {
						lost++
					}
				}
				runs++
			})
			t.Logf("%d FIFO or causal messages lost with an unsaved write over %d runs", lost, runs)
			if runs >= 10 && lost == 0 {
				t.Error("no message was lost with an unsaved write: the runs never crashed a sender between a failed write and the next")
			}
		})
	}
}
