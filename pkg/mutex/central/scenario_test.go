package central_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/mutexscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestScenarios replays the scripts in testdata/scenarios on internal/sim
// with fixed links (every frame takes exactly 1 ms, no loss, clocks
// exact), so a run is the notes' drawing: the same interleaving every
// time (internal/testkit/mutexscript; the traces and drawings of each run are
// written with -mutexscript.out DIR). A script is a sequence of commands
// ("> cmd args"), each followed by what it caused; lines starting with #
// are comments. After a deliberate change of behaviour, regenerate the
// files with
//
//	go test ./pkg/mutex/central -run TestScenarios -rewrite
//
// and read the diff: it is the change, in protocol terms.
//
// Commands: mutexscript's (run, acquire, release, renew, crash, restart,
// isolate, heal, counts: frames delivered by kind, "central_" left out),
// and
//
//	cluster N [P1,P2,...]  N members 1..N (bully priorities in ID order), lease 1s
//	status                 each live member's view of each lock
//
// Each command prints what it caused, at the time it happened (ms since
// the start): elections won, coordinators taking over, their holds, and
// the clients' grants, renewals, releases and losses.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string { return mutexscript.Run(t, script, setup) })
}

var setup = mutexscript.Setup{
	New:    newCluster,
	Event:  eventLine,
	Prefix: func(d time.Duration, id uint32) string { return fmt.Sprintf("%6dms n%d", d.Milliseconds(), id) },
	Kinds:  slices.DeleteFunc(wire.Kinds(), func(k wire.Kind) bool { return !central.Handles(k) }),
	Name:   func(k wire.Kind) string { return strings.TrimPrefix(k.String(), "central_") },
	Commands: map[string]func(r *mutexscript.Script, a scenario.Args){
		"status": status,
	},
}

// printed are the events a script shows.
var printed = map[string]bool{
	elect.EventElected: true, central.EventCoordinating: true, central.EventReady: true,
	mutex.EventGranted: true, mutex.EventRenewed: true, mutex.EventReleased: true, mutex.EventLost: true,
	central.EventFencesExhausted: true, "sim.crash": true, "sim.restart": true,
}

func fenceShort(f uint64) string {
	s := central.FenceText(f)
	return s[strings.Index(s, "(")+1 : len(s)-1]
}

func eventLine(r *mutexscript.Script, e sim.Event) (string, bool) {
	if !printed[e.Name] {
		return "", false
	}
	line := fmt.Sprintf("%6dms n%d %s", e.At.Milliseconds(), e.Node, e.Name)
	for _, k := range []string{"lock", "mode", "fence", "reason", "term", "waited"} {
		v, ok := e.Arg(k)
		if !ok {
			continue
		}
		switch k {
		case "fence":
			v = fenceShort(v.(uint64))
		case "term":
			v = fmt.Sprintf("%d/%d", bully.TermRound(v.(uint64)), bully.TermOwner(v.(uint64)))
		case "waited":
			v = v.(time.Duration).Round(time.Millisecond)
		}
		line += fmt.Sprintf(" %s=%v", k, v)
	}
	return line, true
}

func newCluster(_ *mutexscript.Script, a scenario.Args) mutexscript.Cluster {
	return clusterOf(int(a.Uint(1)), a.IDs(2))
}

// clusterOf: n members, bully electing the coordinator (priorities in
// ID order), leases of at most 1s.
func clusterOf(n int, prio []uint32) mutexscript.Cluster {
	var members []bully.Member
	var ids []uint32
	for id := uint32(1); id <= uint32(n); id++ {
		m := bully.Member{ID: id}
		if int(id) <= len(prio) {
			m.Priority = prio[id-1]
		}
		members = append(members, m)
		ids = append(ids, id)
	}
	return mutexscript.Cluster{Members: ids, New: func(id uint32, env core.Env) (mutex.Algorithm, error) {
		cfg := central.DefaultLANConfig()
		cfg.MaxLease = time.Second
		cfg.Election = func(env core.Env) (elect.Elector, error) {
			bc := bully.DefaultLANConfig()
			bc.Members = members
			return bully.New(env, bc)
		}
		return central.New(env, cfg)
	}}
}

// status prints, per live member, whom it follows and each lock: its own
// holders and waiting requests, and the coordinator's queue.
func status(r *mutexscript.Script, _ scenario.Args) {
	for _, id := range r.S.IDs() {
		if !r.S.Running(id) {
			continue
		}
		st := r.Core(id).Report()
		d := st.Detail.(central.Detail)
		role := fmt.Sprintf("follows n%d", d.Coordinator)
		if d.Coordinates {
			role = fmt.Sprintf("coordinates (ready=%v joined=%d)", d.Ready, d.Joined)
		}
		r.Printf("n%d %s term=%d/%d\n", id, role, bully.TermRound(d.Term), bully.TermOwner(d.Term))
		for _, ls := range st.Locks {
			var hs, qs []string
			for _, h := range ls.Holders {
				hs = append(hs, fmt.Sprintf("#%d(%s,%s)", h.ID, h.Mode, fenceShort(h.Fence)))
			}
			for _, q := range ls.Queue {
				qs = append(qs, fmt.Sprintf("#%d(%s)", q.ID, q.Mode))
			}
			line := fmt.Sprintf("  %s held=%v waiting=%v", ls.Name, hs, qs)
			if ld, ok := ls.Detail.(central.LockDetail); ok {
				line += fmt.Sprintf(" queue: holders=%v waiting=%v", ld.Holders, ld.Waiting)
			}
			r.Printf("%s\n", line)
		}
	}
}

// scenarioRun is a scenario's cluster (clusterOf) for the tests that
// drive it by hand.
type scenarioRun struct {
	t *testing.T
	s *sim.Sim
}

// newCluster starts n members (bully priorities prio).
func (r *scenarioRun) newCluster(n int, prio []uint32) {
	r.s = mutexscript.NewSim(r.t, clusterOf(n, prio))
	r.s.Start()
}

func (r *scenarioRun) core(id uint32) *central.Core { return r.s.Core(id).(*central.Core) }
