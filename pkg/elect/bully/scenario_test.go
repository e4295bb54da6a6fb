package bully

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/wire"
)

// TestScenarios replays the scripts in testdata/scenarios on the synchronous
// test network and compares what happens with the output recorded in the
// file, like etcd-io/raft's interaction tests. A script is a sequence of
// commands ("> cmd args"), each followed by its expected output; lines
// starting with # are comments. After a deliberate change of behaviour,
// regenerate the files with
//
//	go test ./pkg/elect/bully -run TestScenarios -rewrite
//
// and read the diff: it is the change, in protocol terms.
//
// Commands:
//
//	cluster N [priorities]   N members with IDs 1..N (comma-separated priorities)
//	tick K                   K ticks of every live node, delivering after each
//	crash ID | restart ID    stop a node (its state survives) / start it again
//	isolate ID               cut every link to and from ID
//	cut A B                  cut the links between A and B, both ways
//	heal                     restore every link
//	resign ID                the leader steps down
//	status                   every live node's role, leader and term
//	counts                   messages delivered by kind since the last counts
//
// Each command prints the events it caused, one per line.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		got := runScenario(t, script, false)
		// A driver that ticks each node only when its Deadline comes
		// sees exactly the same election.
		if due := runScenario(t, script, true); due != got {
			t.Errorf("ticked at deadlines only differs:\n%s", scenario.Diff(got, due))
		}
		return got
	})
}

// runScenario executes the commands of script and returns the script with
// each command's output regenerated.
func runScenario(t *testing.T, script string, onlyDue bool) string {
	var out bytes.Buffer
	var n *network
	seen := 0                                // events already printed
	lines, cmds := scenario.Commands(script) // the old output is regenerated below
	for i, line := range lines {
		out.WriteString(line + "\n")
		f := cmds[i]
		if f == nil {
			continue // a comment
		}
		arg := scenario.Args{T: t, Line: line, F: f}.ID
		if f[0] != "cluster" && n == nil {
			t.Fatalf("%q before cluster", line)
		}
		switch f[0] {
		case "cluster":
			ms := ids(int(arg(1)))
			prio := scenario.Args{T: t, Line: line, F: f}.IDs(2)
			if len(prio) > len(ms) {
				t.Fatalf("%q: more priorities than members", line)
			}
			for i, p := range prio {
				ms[i].Priority = p
			}
			n = newNetwork(t, ms, nil)
			n.onlyDue = onlyDue
			n.deliver()
		case "tick":
			n.tick(int(arg(1)))
		case "crash":
			n.crash(arg(1))
		case "restart":
			n.start(arg(1))
			n.deliver()
		case "isolate":
			n.isolate(arg(1), true)
		case "cut":
			a, b := arg(1), arg(2)
			n.cut[[2]uint32{a, b}], n.cut[[2]uint32{b, a}] = true, true
		case "heal":
			clear(n.cut)
		case "resign":
			if err := n.nodes[arg(1)].Resign(n.now); err != nil {
				fmt.Fprintf(&out, "error: %v\n", err)
			}
			n.drain(arg(1))
			n.deliver()
		case "status":
			for _, id := range n.order {
				if n.down[id] {
					fmt.Fprintf(&out, "%d down\n", id)
					continue
				}
				v := n.nodes[id].Report()
				fmt.Fprintf(&out, "%d %-9v leader=%d term=%d (round %d)", id, v.Role, v.Leader, v.Term, v.Round)
				if n.nodes[id].Detail().Yielding {
					out.WriteString(" yielding")
				}
				out.WriteString("\n")
			}
		case "counts":
			for _, k := range []wire.Kind{wire.KindElection, wire.KindAnswer, wire.KindCoordinator, wire.KindLeaderHeartbeat} {
				fmt.Fprintf(&out, "%s=%d ", k, n.delivered[k])
			}
			out.Truncate(out.Len() - 1)
			out.WriteString("\n")
			n.resetCounts()
		default:
			t.Fatalf("unknown command %q", line)
		}
		for _, e := range n.events[seen:] {
			fmt.Fprintf(&out, "%d %s", e.node, e.Name)
			for i := 0; i+1 < len(e.Args); i += 2 {
				fmt.Fprintf(&out, " %v=%v", e.Args[i], e.Args[i+1])
			}
			out.WriteString("\n")
		}
		seen = len(n.events)
		out.WriteString("\n")
	}
	return out.String()
}
