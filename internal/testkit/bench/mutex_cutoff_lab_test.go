package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
	mutexalgorithms "github.com/synclab/synclab/pkg/mutex/algorithms"
)

// The holder cut off: issue 15's "token ring, too". Recovery after SIGKILL
// (mutex_lab_test.go) is the holder gone; here the holder's daemon lives
// on, partitioned alone from the four others (4 of 5 still connected), or
// stopped for 5 s (SIGSTOP, then SIGCONT) as a paused VM or a long GC
// stops it. The majority must grant again within a lease and a confirm
// window of the holder's last check: the target is 4 s.

// targetCutOffGap is issue 15's target for the partitioned-holder gap.
const targetCutOffGap = 4 * time.Second

// cutOffPause is how long the paused holder's daemon stays stopped.
const cutOffPause = 5 * time.Second

// cutOffFaults are the ways the holder is cut off.
var cutOffFaults = []string{"partitioned", "paused"}

// cutOff runs *mutexTrials trials of each fault against the running
// cluster and records, per fault, the time from the fault until a client
// waiting at the next host is granted: r.cutOff[fault][algorithm].
func (m *mutexBench) cutOff(r *mutexResults) {
	m.b.Helper()
	for _, fault := range cutOffFaults {
		var took []time.Duration
		for trial := range *mutexTrials {
			took = append(took, m.cutOffTrial(fault, trial))
		}
		r.cutOff[fault][m.alg] = Summarize(took)
	}
}

func (m *mutexBench) cutOffTrial(fault string, trial int) time.Duration {
	m.b.Helper()
	holder := 1 + trial%mutexHosts
	waiter := 1 + (trial+1)%mutexHosts
	var others []int
	for i := 1; i <= mutexHosts; i++ {
		if i != holder {
			others = append(others, i)
		}
	}
	release, granted, got := m.holdAndWait("cut-off holder", holder, waiter)
	at := time.Now() // a random instant of the lease, once the waiter waits
	switch fault {
	case "partitioned":
		m.lab.Split([]int{holder}, others)
	case "paused":
		if err := m.procs[holder].Stop(); err != nil {
			m.fatal(err)
		}
	}
	var g lockGrant
	resumed := false
	for g.release == nil {
		wait := failoverLimit - time.Since(at)
		if fault == "paused" && !resumed {
			wait = cutOffPause - time.Since(at)
		}
		select {
		case g = <-got:
		case <-time.After(wait):
			if fault == "paused" && !resumed {
				resumed = true
				if err := m.procs[holder].Cont(); err != nil {
					m.fatal(err)
				}
				continue
			}
			m.fatalf("cut-off holder (%s) trial %d: the waiter at h%d was not granted within %v", fault, trial+1, waiter, failoverLimit)
		}
	}
	took := g.at.Sub(at)
	m.logf("mutexd holder %s %d/%d: h%d cut off %v into its lease; h%d granted after %s", fault, trial+1, *mutexTrials,
		holder, at.Sub(granted).Round(time.Millisecond), waiter, Millis(took))
	switch {
	case fault == "partitioned":
		m.lab.HealAll()
	case !resumed:
		// Stopped for the whole pause, as the trials were: the
		// grant came first.
		m.sleep(cutOffPause - time.Since(at))
		if err := m.procs[holder].Cont(); err != nil {
			m.fatal(err)
		}
	}
	if err := g.release(); err != nil {
		m.logf("cut-off holder: release at h%d: %v", waiter, err)
	}
	release()                // lost with the fault: an error, or nothing to release
	m.sleep(2 * time.Second) // the holder is heard again, its stale token refused
	return took
}

// cutOffRows adds the cut-off holder's rows to a table of systems (the
// algorithms measured; "-" for any other, such as etcd).
func (m *mutexBench) cutOffRows(t *Table, r *mutexResults, systems []string) {
	for _, fault := range cutOffFaults {
		what := "holder partitioned alone (4 of 5 connected), until a waiter is granted, p50 / max"
		if fault == "paused" {
			what = fmt.Sprintf("holder's daemon paused %v (SIGSTOP), until a waiter is granted, p50 / max", cutOffPause)
		}
		cells := make([]string, len(systems))
		for i, sys := range systems {
			s, ok := r.cutOff[fault][sys]
			if !ok {
				cells[i] = "-"
				continue
			}
			cells[i] = Verdict(fmt.Sprintf("%s / %s", Millis(s.P50), Millis(s.Max)), s.Max <= targetCutOffGap)
		}
		t.Row(what, fmt.Sprintf("<= %s", Millis(targetCutOffGap)), cells...)
	}
}

// BenchmarkMutexCutOff measures the cut-off holder alone (no etcd), and the
// link between the holder and a waiter cut: the rows BenchmarkMutex prints,
// in a few minutes, for a before/after of one algorithm.
// Run it as root with -mutex (and -mutex.bin DIR to measure another build
// of mutexd):
//
//	go test ./internal/bench -run '^$' -bench MutexCutOff -mutex -mutex.trials 10
func BenchmarkMutexCutOff(b *testing.B) {
	if !*mutexRun {
		b.Skip("BenchmarkMutexCutOff runs in a namespace lab: pass -mutex (scripts/bench.sh mutex runs it within BenchmarkMutex)")
	}
	labnet.Require(b)
	if *mutexTrials < 1 {
		b.Fatal("bad flags: -mutex.trials must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := shortTempDir(b)
	alg := *mutexAlg
	if alg == "all" {
		alg = mutexalgorithms.Default
	}
	if _, err := mutexalgorithms.All.Lookup(alg); err != nil {
		b.Fatal(err)
	}
	m := &mutexBench{
		electBench: &electBench{b: b, ctx: ctx, lab: benchLab(b, mutexHosts, *mutexPrefix), dir: dir},
		mutexd:     buildBinary(b, dir, *mutexBin, "mutexd"),
		rss:        map[string]int64{},
	}
	m.startCluster(alg, mutexHosts)
	m.sleep(2 * time.Second) // every member heard
	b.ResetTimer()
	r := newMutexResults()
	m.cutOff(r)
	m.linkCut(r)   // mutex_link_lab_test.go
	m.makerKill(r) // the ring only: mutex_makerkill_lab_test.go
	b.StopTimer()
	m.stopCluster()
	t := &Table{Title: "mutexd: the lock holder cut off", Systems: []string{alg, "-"}}
	m.cutOffRows(t, r, t.Systems)
	m.linkCutRows(t, r, t.Systems)
	m.makerKillRows(t, r, t.Systems)
	t.Note("5 namespace hosts, mutexd %s --algorithm %s; a waiter queued at the next host; the fault at a random instant of the holder's 3 s lease", m.mutexd, alg)
	if err := t.Write(os.Stdout); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(r.cutOff["partitioned"][alg].Max)/float64(time.Millisecond), "partitioned-max-ms")
	b.ReportMetric(float64(r.cutOff["paused"][alg].Max)/float64(time.Millisecond), "paused-max-ms")
}
