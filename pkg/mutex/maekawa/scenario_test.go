package maekawa_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/mutexscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
)

// TestScenarios replays testdata/scenarios/*.txt on the simulator with a
// fixed delay on every link (internal/testkit/mutexscript: the notes'
// interleavings, drawn; -mutexscript.out DIR writes the drawings): seed
// 004's Maekawa deadlock, shown to happen with the notes' algorithm and
// to be avoided with Sanders' inquire, relinquish and failed; and a
// majority-quorum example of the notes. Commands: mutexscript's (acquire
// ID LOCK [shared], release ID LOCK, crash, restart, run D: each prints
// the vote frames sent and the lock outcomes meanwhile), and
//
//	cluster N [majority M] [coordinators=1,2,3] [textbook] [forgetful|persist] [sets=1:1,2/2:2,3/...] [delay=D] [backoff=D]
//	holders LOCK                 who holds LOCK now, with fences
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string { return mutexscript.Run(t, script, setup) })
}

var setup = mutexscript.Setup{
	New:      newCluster,
	Event:    eventLine,
	Prefix:   func(d time.Duration, id uint32) string { return fmt.Sprintf("%8v %d:", d, id) },
	Commands: map[string]func(r *mutexscript.Script, a scenario.Args){"holders": holders},
}

func newCluster(r *mutexscript.Script, a scenario.Args) mutexscript.Cluster {
	t, args := r.T, a.F[1:]
	n, err := strconv.Atoi(args[0])
	if err != nil {
		t.Fatalf("cluster %v: %v", args, err)
	}
	delay := time.Millisecond
	cfg := maekawa.DefaultLANConfig()
	cfg.TraceFrames = true
	cfg.AttemptTimeout = 2 * time.Second // the scenarios show the protocol, not its timeouts
	cfg.BackoffBase, cfg.BackoffMax = 20*time.Millisecond, 20*time.Millisecond
	for i := 1; i < len(args); i++ {
		switch k, v, _ := strings.Cut(args[i], "="); k {
		case "majority":
			cfg.Quorum, _ = strconv.Atoi(args[i+1])
			cfg.Shared = true
			i++
		case "coordinators":
			cfg.Coordinators = scenario.Args{T: t, Line: args[i], F: []string{"", v}}.IDs(1)
		case "textbook":
			cfg.Textbook = true
		case "forgetful":
			cfg.Forgetful = true
		case "persist":
			cfg.PersistVotes = true
		case "backoff":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("cluster: %v", err)
			}
			cfg.BackoffBase, cfg.BackoffMax = d, d
		case "delay":
			delay, _ = time.ParseDuration(v)
		case "sets":
			cfg.VotingSets = map[uint32][]uint32{}
			for _, s := range strings.Split(v, "/") {
				id, list, _ := strings.Cut(s, ":")
				sa := scenario.Args{T: t, Line: s, F: []string{"", id, list}}
				cfg.VotingSets[sa.ID(1)] = sa.IDs(2)
			}
		default:
			t.Fatalf("cluster: unknown option %q", args[i])
		}
	}
	for i := 1; i <= n; i++ {
		cfg.Members = append(cfg.Members, uint32(i))
	}
	return mutexscript.Cluster{Members: cfg.Members, Delay: delay,
		// From t0 the clock hint of a proposal reads milliseconds since
		// the start: the fences of the notes' examples stay small.
		Start: t0,
		New: func(id uint32, env core.Env) (mutex.Algorithm, error) {
			c := cfg
			c.ID, c.Persisted, c.Lamport, c.Rand = id, env.State, env.Lamport, env.Rand
			return maekawa.New(c)
		}}
}

func frameText(e sim.Event) string {
	op := arg(e, "op").(string)
	s := fmt.Sprintf("%s %v", op, arg(e, "lock"))
	switch op {
	case "request":
		s += fmt.Sprintf(" (t=%d)", arg(e, "stamp"))
	case "locked", "commit", "commit_ok":
		s += fmt.Sprintf(" fence=%d", arg(e, "fence"))
	case "release":
		if f := arg(e, "fence").(uint64); f != 0 {
			s += fmt.Sprintf(" fence=%d", f)
		}
	}
	return s
}

// eventLine shows the vote frames sent and the lock outcomes.
func eventLine(_ *mutexscript.Script, e sim.Event) (string, bool) {
	switch e.Name {
	case maekawa.EventFrame:
		return fmt.Sprintf("%8v %d->%d %s", e.At, e.Node, arg(e, "to"), frameText(e)), true
	case mutex.EventGranted, mutex.EventReleased, mutex.EventLost, "sim.crash", "sim.restart":
		return fmt.Sprintf("%8v %d: %s", e.At, e.Node, strings.TrimPrefix(eventText(e), "sim.")), true
	}
	return "", false
}

func eventText(e sim.Event) string {
	s := e.Name
	if v, ok := e.Arg("lock"); ok {
		s += fmt.Sprintf(" %v", v)
	}
	if v, ok := e.Arg("fence"); ok {
		s += fmt.Sprintf(" fence=%v", v)
	}
	if v, ok := e.Arg("mode"); ok && v != "exclusive" {
		s += fmt.Sprintf(" %v", v)
	}
	if v, ok := e.Arg("reason"); ok {
		s += fmt.Sprintf(" (%v)", v)
	}
	return s
}

func holders(r *mutexscript.Script, a scenario.Args) {
	lock := a.F[1]
	var hs []string
	for _, id := range r.S.IDs() {
		if !r.S.Running(id) {
			continue
		}
		st := r.Core(id).Report()
		for _, l := range st.Locks {
			if l.Name != lock {
				continue
			}
			for _, h := range l.Holders {
				hs = append(hs, fmt.Sprintf("%d (fence %d, %v)", id, h.Fence, h.Mode))
			}
		}
	}
	if len(hs) == 0 {
		hs = []string{"none"}
	}
	r.Printf("%s: %s\n", lock, strings.Join(hs, ", "))
}

func arg(e sim.Event, k string) any {
	v, _ := e.Arg(k)
	return v
}
