package diagram

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/elect/bully"
)

// TestSimTracesAreTheNodes: the simulator's traces (RecordTraces) and the
// ones the nodes themselves record (node.SetRecorder, what a daemon
// writes) hold the same lines for the same run, frame for frame: the same
// sends, receives, refusals with the same reasons, local events, in the
// same order with the same Lamport times. Only the times (true time
// against the node's clock) and the vectors (the simulator's ground
// truth against the node's own) may differ. The followers watch their
// leader over TCP (bully.Config.Watch), so stream frames are among them,
// whose sends the node records when they are queued (node.StreamQueued).
func TestSimTracesAreTheNodes(t *testing.T) {
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		link := sim.LinkConfig{Delay: 300 * time.Microsecond, Jitter: 3 * time.Millisecond, Loss: 0.05, Duplicate: 0.3}
		s, bufs := bullySimWith(t, seed, 4, nil, link, func(c *bully.Config) { c.Watch = 100 * time.Millisecond })
		s.Start()
		own := map[uint32]*bytes.Buffer{}
		logs := map[uint32]*trace.Log{}
		for _, id := range s.IDs() {
			own[id] = new(bytes.Buffer)
			lg, err := trace.NewLog(own[id], trace.Header{Daemon: "electd", ID: id, Cluster: "sim", Members: s.IDs(), Clock: trace.ClockSim}, 0)
			if err != nil {
				t.Fatal(err)
			}
			logs[id] = lg
			s.Node(id).SetRecorder(lg, nil)
		}
		s.Run(400 * time.Millisecond)
		s.Partition([]uint32{1, 2}, []uint32{3, 4})
		s.Run(300 * time.Millisecond)
		s.Heal()
		s.Run(300 * time.Millisecond)
		simFiles := readBack(t, s, bufs)
		kinds, watches := map[string]int{}, 0
		for i, id := range s.IDs() {
			if err := logs[id].Close(); err != nil {
				t.Fatal(err)
			}
			nodeFile, err := trace.Read(bytes.NewReader(own[id].Bytes()), "node")
			if err != nil {
				t.Fatal(err)
			}
			got, want := lines(nodeFile.Events), lines(simFiles[i].Events)
			for _, e := range simFiles[i].Events {
				kinds[e.Ev]++
				if e.Ev == trace.EvSend && e.Kind == "leader_watch" {
					watches++
				}
			}
			if len(got) != len(want) {
				t.Errorf("node %d: %d events recorded by the node, %d by the simulator", id, len(got), len(want))
			}
			for j := range min(len(got), len(want)) {
				if got[j] != want[j] {
					t.Errorf("node %d, event %d: the node recorded\n\t%s\nthe simulator\n\t%s", id, j, got[j], want[j])
					break
				}
			}
		}
		if kinds[trace.EvSend] == 0 || kinds[trace.EvRecv] == 0 || kinds[trace.EvLocal] == 0 || kinds[trace.EvDrop] == 0 || watches == 0 {
			t.Errorf("events compared: %v, %d leader_watch sends; want every kind (duplicates are refused as replays) and stream frames", kinds, watches)
		}
	})
}

// lines are events without their times and vectors.
func lines(es []trace.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s lamport %d kind %s frame %s %d->%d term %d fields %v name %s args %v reason %s",
			e.Ev, e.Lamport, e.Kind, e.Frame, e.From, e.To, e.Term, e.Fields, e.Name, e.Args, e.Reason))
	}
	return out
}
