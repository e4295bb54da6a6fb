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
	"github.com/synclab/synclab/pkg/clock"
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
//	cluster N [P1,P2,...] [tokenask]
//	                       N members 1..N (bully priorities in ID order),
//	                       lease 1s; the token-asking variant if asked
//	status                 each live member's view of each lock
//	acquire-after ID LOCK FROM|VECTOR
//	                       (tokenask) a client of ID asks for LOCK after a
//	                       program message from a client of FROM: with
//	                       FROM's vector (its latest request's stamp), or
//	                       with a vector written by hand (1:1.2,3:1.1)
//	delay A B D            every frame from A to B takes D (others 1ms)
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
		"status":        status,
		"acquire-after": acquireAfter,
		"delay": func(r *mutexscript.Script, a scenario.Args) {
			r.S.SetLink(a.ID(1), a.ID(2), sim.LinkConfig{Delay: a.Duration(3)})
		},
	},
}

// printed are the events a script shows.
var printed = map[string]bool{
	elect.EventElected: true, central.EventCoordinating: true, central.EventReady: true,
	mutex.EventGranted: true, mutex.EventRenewed: true, mutex.EventReleased: true, mutex.EventLost: true,
	central.EventFencesExhausted: true, "sim.crash": true, "sim.restart": true,
	central.EventUnknownPredecessor: true, central.EventRenewalUnanswered: true,
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
	keys := []string{"lock", "mode", "fence", "reason", "term", "waited"}
	switch e.Name {
	case central.EventUnknownPredecessor:
		keys = []string{"member", "request", "predecessor", "of"}
	case central.EventRenewalUnanswered:
		keys = []string{"lock", "fence", "coordinator", "lease_left"}
	}
	for _, k := range keys {
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
		case "request", "of":
			v = central.StampText(v.(uint64))
		}
		line += fmt.Sprintf(" %s=%v", k, v)
	}
	return line, true
}

func newCluster(_ *mutexscript.Script, a scenario.Args) mutexscript.Cluster {
	v, f := central.Coordinator, a.F
	if f[len(f)-1] == central.TokenAskName {
		v, f = central.TokenAsk, f[:len(f)-1]
	}
	a.F = f
	var prio []uint32
	if len(f) > 2 {
		prio = a.IDs(2)
	}
	return clusterOf(int(a.Uint(1)), prio, v)
}

// acquireAfter: a client of member ID asks for LOCK with the vector of a
// program message from a client of FROM (FROM's latest request's stamp),
// or with a vector written by hand (FROM is MEMBER:INC.SEQ,...).
func acquireAfter(r *mutexscript.Script, a scenario.Args) {
	from := a.F[3]
	var after clock.Vector
	var err error
	if strings.Contains(from, ":") {
		after, err = central.ParseVector(from)
		from = "a hand-written"
	} else {
		after, err = r.Core(a.ID(3)).(mutex.Causal).Vector()
		from = fmt.Sprintf("n%d's", a.ID(3))
	}
	if err != nil {
		r.T.Fatalf("%q: %v", a.Line, err)
	}
	r.Printf("n%d after %s program message [%s]\n", a.ID(1), from, central.VectorText(after))
	r.Acquire(a.ID(1), mutex.Request{Lock: a.F[2], Client: "script", After: after})
}

// clusterOf: n members, bully electing the coordinator (priorities in
// ID order), leases of at most 1s, running variant v.
func clusterOf(n int, prio []uint32, v central.Variant) mutexscript.Cluster {
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
		cfg.MaxLease, cfg.Variant = time.Second, v
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
				if len(ld.WaitingFor) > 0 {
					line += fmt.Sprintf(" not yet eligible: %v", ld.WaitingFor)
				}
			}
			r.Printf("%s\n", line)
		}
	}
}

// scenarioRun is a scenario's cluster (clusterOf) for the tests that
// drive it by hand.
type scenarioRun struct {
	t       *testing.T
	s       *sim.Sim
	variant central.Variant
}

// newCluster starts n members (bully priorities prio).
func (r *scenarioRun) newCluster(n int, prio []uint32) {
	r.s = mutexscript.NewSim(r.t, clusterOf(n, prio, r.variant))
	r.s.Start()
}

func (r *scenarioRun) core(id uint32) *central.Core { return r.s.Core(id).(*central.Core) }
