package bench

import (
	"fmt"

	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/algorithms"
)

func (e *electBench) table(specs []electdSpec, res []*systemResult) *Table {
	t := &Table{Title: fmt.Sprintf("leader election: electd vs etcd, %d hosts, %d trials, idle %v with %d%% loss", electHosts, *electTrials, *electIdle, *electLoss)}
	for _, s := range specs {
		t.Systems = append(t.Systems, s.label)
	}
	t.Systems = append(t.Systems, "etcd 3.4 (2 s lease)")
	isEtcd := func(k int) bool { return k == len(res)-1 }
	cells := func(f func(k int, r *systemResult) string) []string {
		var c []string
		for k, r := range res {
			c = append(c, f(k, r))
		}
		return c
	}

	t.Section("failover: SIGKILL of the leader until every survivor reports the new one")
	t.Row("p50", "", cells(func(_ int, r *systemResult) string { return Millis(r.failover.P50) })...)
	t.Row("p99", "<= 250 ms (electd defaults); majority <= 1 s", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return Millis(r.failover.P99)
		}
		target := targetFailoverP99
		if specs[k].quorum() {
			target = targetQuorumFailoverP99
		}
		return Verdict(Millis(r.failover.P99), r.failover.P99 <= target)
	})...)
	t.Row("max", "", cells(func(_ int, r *systemResult) string { return Millis(r.failover.Max) })...)
	t.Row("mean", "", cells(func(_ int, r *systemResult) string { return Millis(r.failover.Mean) })...)
	if *electBig > 0 {
		t.Row(fmt.Sprintf("%d hosts: p50 / max (%d trials)", *electBig, *electBigRuns), fmt.Sprintf("p50 <= 1.2x at %d hosts", electHosts), cells(func(k int, r *systemResult) string {
			if isEtcd(k) || r.failoverBig.N == 0 {
				return "-"
			}
			return Verdict(Millis(r.failoverBig.P50)+" / "+Millis(r.failoverBig.Max), r.failoverBig.P50 <= r.failover.P50*12/10)
		})...)
	}
	t.Row("p99 as seen by polling", "", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return "-"
		}
		return Millis(r.polled.P99)
	})...)
	t.Row("other leader than the rightful one", "0", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return "-"
		}
		return strconv.Itoa(len(r.unexpected))
	})...)
	t.Row("trials repeated: elected before the kill", "0", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return "-"
		}
		return Verdict(strconv.Itoa(r.electedBeforeKill), r.electedBeforeKill == 0)
	})...)

	t.Section("messages per election (frames sent by the survivors, heartbeats excluded)")
	t.Row("total, mean (min-max)", "", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return "-"
		}
		return fmt.Sprintf("%.1f (%.0f-%.0f)", mean(r.framesTotal), slices.Min(r.framesTotal), slices.Max(r.framesTotal))
	})...)
	t.Row("by kind, mean", "", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return "-"
		}
		var s []string
		for _, kind := range slices.Sorted(maps.Keys(r.frames)) {
			if r.frames[kind] > 0 {
				s = append(s, fmt.Sprintf("%s %.1f", kind, r.frames[kind]))
			}
		}
		return strings.Join(s, ", ")
	})...)

	cost := func(k int) (core.Cost, bool) {
		if isEtcd(k) || specs[k].algorithm == "" {
			return core.Cost{}, false
		}
		a, err := elect.Lookup(algorithms.All, specs[k].algorithm)
		return a.Cost, err == nil
	}
	t.Section("messages per election as the notes count them (election kinds: no heartbeats, no acks), after SIGKILL of the leader")
	t.Row("the notes' cost", "", cells(func(k int, r *systemResult) string {
		if c, ok := cost(k); ok {
			return c.Text
		}
		return "-"
	})...)
	t.Row(fmt.Sprintf("%d hosts: notes at N=%d live / measured mean", electHosts, electHosts-1), "", cells(func(k int, r *systemResult) string {
		c, ok := cost(k)
		if !ok || len(r.framesNotes) == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %.1f", c.Range(electHosts-1), mean(r.framesNotes))
	})...)
	if *electBig > 0 {
		t.Row(fmt.Sprintf("%d hosts: notes at N=%d live / measured mean", *electBig, *electBig-1), "", cells(func(k int, r *systemResult) string {
			c, ok := cost(k)
			if !ok || len(r.framesBig) == 0 {
				return "-"
			}
			return fmt.Sprintf("%s / %.1f", c.Range(*electBig-1), mean(r.framesBig))
		})...)
	}

	if *electPartition > 0 {
		t.Section(fmt.Sprintf("%v partition {1,2} | {3,4,5} (the leader of bully and the rings, 5, on the larger side; Yo-Yo's, 1, on the smaller)", *electPartition))
		t.Row("two self-believed leaders for", "0 (majority)", cells(func(k int, r *systemResult) string {
			switch {
			case isEtcd(k):
				return "-"
			case specs[k].quorum():
				return Verdict(Millis(r.splitBrain), r.splitBrain == 0)
			}
			return Millis(r.splitBrain)
		})...)
	}

	t.Section(fmt.Sprintf("idle traffic per node, no loss (%v window)", *electTraffic))
	t.Row("leader, payload in+out", "", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return "-"
		}
		return Rate(r.leaderBytes, r.idle)
	})...)
	t.Row("follower avg, payload in+out", "", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return "-"
		}
		return Rate(r.otherBytes, r.idle)
	})...)
	t.Row("leader/server host, eth0 in+out", "", cells(func(_ int, r *systemResult) string { return Rate(r.leaderIf, r.idle) })...)
	t.Row("follower/client host avg, eth0", "", cells(func(_ int, r *systemResult) string { return Rate(r.otherIf, r.idle) })...)

	if *electIdle > 0 {
		t.Section(fmt.Sprintf("idle %v, %d%% loss on every host, both directions", *electIdle, *electLoss))
		t.Row("elections started (all nodes)", "0", cells(func(k int, r *systemResult) string {
			if isEtcd(k) {
				return "-"
			}
			return Verdict(strconv.FormatUint(r.elections, 10), r.elections == 0)
		})...)
		t.Row("leader changes (electd: sum of nodes)", "0", cells(func(k int, r *systemResult) string {
			if isEtcd(k) {
				return strconv.FormatUint(r.changes, 10) // the targets are electd's
			}
			return Verdict(strconv.FormatUint(r.changes, 10), r.changes == 0)
		})...)
		t.Row("leader timeouts / leases lost", "", cells(func(k int, r *systemResult) string {
			if isEtcd(k) {
				return strconv.Itoa(r.leasesLost)
			}
			return strconv.FormatUint(r.timeouts, 10)
		})...)
		t.Row("leader at the end", "", cells(func(k int, r *systemResult) string {
			if isEtcd(k) {
				return "client " + r.idleLead
			}
			return "node " + r.idleLead
		})...)
	}

	t.Section("memory (VmRSS, max over the run)")
	t.Row("per node / etcd server", "<= 8 MB (electd)", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return MB(r.rssMax)
		}
		return Verdict(MB(r.rssMax), r.rssMax <= targetElectRSS)
	})...)
	t.Row("etcd client (etcdctl)", "", cells(func(k int, r *systemResult) string {
		if isEtcd(k) {
			return MB(r.rssClientMax)
		}
		return "-"
	})...)

	t.Note("lab %s: 6 namespace hosts on one bridge; electd on h1-h5, etcd server and observer on h6, one etcd client per h1-h5; load average at start %s on %d CPUs",
		e.prefix, e.loadStart, runtime.NumCPU())
	t.Note("electd failover = latest survivor's leader 'since' (its own arrival stamp of the COORDINATOR, as `electd leader --json` shows) - SIGKILL instant; agreement found by polling GET /v1/leader every ~2 ms")
	t.Note("etcd failover = first report of another leader by `etcdctl elect --listen` (read through a pipe) - SIGKILL of the leading client's `etcdctl lease keep-alive`; each client campaigns as etcd's election recipe does (2 s lease, key %s/<lease hex>), since `etcdctl elect` fixes its session TTL at 60 s", etcdElectionName)
	t.Note("every kill waits a random 0-%v first: it lands at a uniformly random phase of electd's heartbeats and etcdctl's keep-alives", killPhaseWindow)
	t.Note("p99 is nearest-rank: with fewer than 100 trials it is the maximum")
	t.Note("messages the notes count: the ring elections' hops (ring_election, ring_coordinator), bully's election, answer and coordinator frames, the majority election's vote requests and votes, Yo-Yo's hellos, values and votes; resends and sends to the dead leader included; a ring's acknowledgements (ring_ack) are in the total above, not here; heartbeats (lease renewals and grants, omega's heartbeats, Yo-Yo's leader flood) in neither; a broadcast counts once per recipient")
	if *electBig > 0 {
		t.Note("%d hosts: a %d-member cluster of each algorithm on hosts 1-%d, %d failovers", *electBig, *electBig, *electBig, *electBigRuns)
	}
	t.Note("loss: nftables on the bridge drops %d%% of IP packets to and from every host (TCP too), so a packet between two hosts is lost with p = %.2f%%", *electLoss, 100*(1-(1-float64(*electLoss)/100)*(1-float64(*electLoss)/100)))
	for k, r := range res {
		if len(r.unexpected) > 0 {
			t.Note("%s: elections won by another node than the rightful survivor (the highest; Yo-Yo: the lowest): %s", t.Systems[k], strings.Join(r.unexpected, ", "))
		}
	}
	return t
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestElectTable checks the report BenchmarkElect prints on made-up
// results: the verdicts follow the targets and every column is filled.
func TestElectTable(t *testing.T) {
	specs := []electdSpec{{label: "electd unicast", algorithm: "bully"}, {label: "electd fast", algorithm: "fredrickson-lynch"},
		{label: "electd majority", algorithm: "majority"}, {label: "electd split", algorithm: "majority"}}
	fast := &systemResult{
		failover: Summarize(ms(180, 220, 240)), polled: Summarize(ms(183, 224, 245)),
		frames: map[string]float64{"coordinator": 4}, framesTotal: []float64{4, 4, 4}, framesNotes: []float64{3, 3, 3}, framesBig: []float64{14, 15}, splitBrain: 4600 * time.Millisecond,
		idle: 10 * time.Second, leaderBytes: 24000, otherBytes: 6000, leaderIf: 40800, otherIf: 10200,
		rssMax: 7_400_000, idleLead: "5",
	}
	slow := &systemResult{
		failover: Summarize(ms(280, 510)), polled: Summarize(ms(283, 512)),
		frames: map[string]float64{"coordinator": 4, "election": 1.5}, framesTotal: []float64{4, 7}, framesNotes: []float64{8, 9},
		idle: 10 * time.Second, rssMax: 21_000_000, elections: 3, changes: 8, timeouts: 2, idleLead: "5",
		unexpected: []string{"trial 2: leader 3"},
	}
	// The majority election: its own failover target, and no overlap.
	quorum := &systemResult{failover: Summarize(ms(610, 930)), polled: Summarize(ms(612, 931)),
		framesTotal: []float64{8}, framesNotes: []float64{8}, splitBrain: 0, idle: 10 * time.Second, rssMax: 15_000_000, idleLead: "2"}
	quorumSplit := &systemResult{failover: Summarize(ms(610, 1030)), polled: Summarize(ms(612, 1031)),
		framesTotal: []float64{8}, framesNotes: []float64{8}, splitBrain: 20 * time.Millisecond, idle: 10 * time.Second, rssMax: 15_000_000, idleLead: "2"}
	etcd := &systemResult{failover: Summarize(ms(1941, 2223)), idle: 10 * time.Second, leaderIf: 30630, otherIf: 6120,
		rssMax: 32_100_000, rssClientMax: 17_100_000, leasesLost: 1, changes: 1, idleLead: "3"}
	e := &electBench{prefix: "slbtest", loadStart: "0.50 0.40 0.30"}
	var b strings.Builder
	if err := e.table(specs, []*systemResult{fast, slow, quorum, quorumSplit, etcd}).Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"electd unicast", "electd fast", "etcd 3.4 (2 s lease)",
		"240.0 ms ok", "510.0 ms MISS",
		"coordinator 4.0, election 1.5",
		"2400 B/s", "600 B/s", "4080 B/s", "3063 B/s",
		"0 ok", "3 MISS", "8 MISS",
		"7.4 MB ok", "21.0 MB MISS", "32.1 MB", "17.1 MB",
		"client 3", "node 5",
		"O(N) best, O(N^2) worst", "2-16 / 3.0", "13-225 / 14.5", "2N", "8 / 8.5", "4600.0 ms",
		"electd fast: elections won by another node than the rightful survivor (the highest; Yo-Yo: the lowest): trial 2: leader 3",
		"930.0 ms ok", "1030.0 ms MISS", "0.0 ms ok", "20.0 ms MISS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The targets are electd's: etcd's figures carry no verdict.
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "2223.0 ms ok") || strings.Contains(l, "2223.0 ms MISS") ||
			strings.Contains(l, "32.1 MB ok") || strings.Contains(l, "32.1 MB MISS") {
			t.Errorf("etcd figure with a verdict: %q", l)
		}
	}
}
