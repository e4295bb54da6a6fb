package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/algorithms"
	"github.com/synclab/synclab/pkg/wire"
)

// electdSpec is one electd configuration: its own ports, so that several
// clusters can run on the same hosts at once (the idle phase).
type electdSpec struct {
	label     string
	port      int
	multicast bool
	extra     []string // further `electd run` flags
	// algorithm is the --algorithm the spec runs ("" is electd's default,
	// bully): the notes' cost is printed from its elect.Algorithm.
	algorithm string
	hosts     int // members on hosts 1..hosts (0: electHosts)
}

// rightful is the leader the spec's algorithm must elect among the
// survivors (elect.Algorithm.Rightful; nil: the highest), or 0 when any
// one will do.
func (s electdSpec) rightful(survivors []int) int {
	a, err := elect.Lookup(algorithms.All, cmp.Or(s.algorithm, "bully"))
	if err != nil || a.Rightful == nil {
		return slices.Max(survivors)
	}
	ids := make([]uint32, len(survivors))
	for i, h := range survivors {
		ids[i] = uint32(h)
	}
	return int(a.Rightful(ids))
}

// quorum reports whether the spec's algorithm elects only with a
// majority (its failover target is targetQuorumFailoverP99, and it must
// never show two leaders during the partition).
func (s electdSpec) quorum() bool {
	a, err := elect.Lookup(algorithms.All, cmp.Or(s.algorithm, "bully"))
	return err == nil && a.Quorum
}

// members is how many hosts the spec's cluster has.
func (s electdSpec) members() int {
	if s.hosts == 0 {
		return electHosts
	}
	return s.hosts
}

type electdCluster struct {
	e       *electBench
	spec    electdSpec
	procs   map[int]*labnet.Proc
	clients map[int]*ctl.Client
	// traced: its trials are traced (-elect.traces), and the slow ones'
	// traces kept (the failover phase's clusters, not the larger one's).
	traced bool
	// attempts counts the trials traced, repeated ones too.
	attempts int
	trials   []TrialRecord
}

// leaderView is the answer of GET /v1/leader (`electd leader --json`).
type leaderView struct {
	Leader uint32    `json:"leader"`
	Term   uint64    `json:"term"`
	Since  time.Time `json:"since"`
}

// electdStatus is the part of GET /v1/status (`electd status --json`) the
// benchmark reads.
type electdStatus struct {
	Node struct {
		FramesIn    map[string]uint64 `json:"frames_in"`
		FramesOut   map[string]uint64 `json:"frames_out"`
		Dropped     map[string]uint64 `json:"dropped"`
		Incarnation uint32            `json:"incarnation"`
		Agreement   *struct {
			Standing string `json:"standing"`
		} `json:"agreement"`
		Core  elect.Status `json:"core"`
		Peers []struct {
			ID     uint32    `json:"id"`
			Hints  uint64    `json:"port_hints"`
			HintAt time.Time `json:"port_hint_at"`
		} `json:"peers"`
	} `json:"node"`
	Transport transport.Stats   `json:"transport"`
	Events    map[string]uint64 `json:"events"`
}

func (s electdStatus) payloadBytes() uint64 {
	t := s.Transport
	return t.UDP.BytesIn + t.UDP.BytesOut + t.Multicast.BytesIn + t.Multicast.BytesOut + t.Stream.BytesIn + t.Stream.BytesOut
}

func (e *electBench) newCluster(s electdSpec) *electdCluster {
	c := &electdCluster{e: e, spec: s, procs: map[int]*labnet.Proc{}, clients: map[int]*ctl.Client{}}
	for i := 1; i <= s.members(); i++ {
		c.clients[i] = ctl.NewClient(c.control(i), "electd")
	}
	return c
}

func (c *electdCluster) control(i int) string {
	return filepath.Join(c.e.dir, fmt.Sprintf("e%d-h%d.sock", c.spec.port, i))
}

func (c *electdCluster) start(i int) {
	e := c.e
	var members []string
	for j := 1; j <= c.spec.members(); j++ {
		members = append(members, fmt.Sprintf("%d=%s:%d", j, e.lab.Host(j).Addr(), c.spec.port))
	}
	// Without CAP_SYS_TIME, like every daemon the lab starts: nothing here
	// may be able to move the real clock.
	argv := []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		e.electd, "run", "--id", strconv.Itoa(i), "--members", strings.Join(members, ","),
		"--control", c.control(i), "--state-dir", filepath.Join(e.dir, fmt.Sprintf("e%d-h%d.state", c.spec.port, i)),
	}
	if c.spec.multicast {
		argv = append(argv, "--multicast", fmt.Sprintf("%s:%d", multicastGroup, c.spec.port+99), "--interface", e.lab.Host(i).Interface())
	}
	if c.spec.algorithm != "" {
		argv = append(argv, "--algorithm", c.spec.algorithm)
	}
	argv = append(append(argv, keyArgs(e.b, e.dir)...), c.spec.extra...)
	c.procs[i] = e.lab.Host(i).Start(e.b, fmt.Sprintf("electd-%d", c.spec.port), argv, nil)
}

func (c *electdCluster) startAll() {
	for i := 1; i <= c.spec.members(); i++ {
		c.start(i)
	}
}

func (c *electdCluster) stopAll() {
	for i, p := range c.procs {
		if err := p.Signal(syscall.SIGTERM); err == nil {
			if _, err := p.Wait(5 * time.Second); err != nil {
				p.Kill()
			}
		}
		c.clients[i].Close()
	}
}

func (c *electdCluster) leader(i int) (leaderView, error) {
	ctx, cancel := context.WithTimeout(c.e.ctx, time.Second)
	defer cancel()
	var v leaderView
	err := c.clients[i].Get(ctx, "/v1/leader", &v)
	return v, err
}

func (c *electdCluster) status(i int) electdStatus {
	c.e.b.Helper()
	ctx, cancel := context.WithTimeout(c.e.ctx, 2*time.Second)
	defer cancel()
	var st electdStatus
	if err := c.clients[i].Get(ctx, "/v1/status", &st); err != nil {
		c.e.fatalf("%s: status of node %d: %v", c.spec.label, i, err)
	}
	return st
}

// waitAgree polls hosts until all report the same leader, other than
// notLead, in the same term, and returns their views and the instant of the
// poll that saw it.
func (c *electdCluster) waitAgree(what string, hosts []int, notLead uint32, within time.Duration) (map[int]leaderView, time.Time) {
	e := c.e
	e.b.Helper()
	deadline := time.Now().Add(within)
	for {
		views := map[int]leaderView{}
		agreed := true
		for _, i := range hosts {
			v, err := c.leader(i)
			if err != nil || v.Leader == 0 || v.Leader == notLead {
				agreed = false
				break
			}
			views[i] = v
			if first := views[hosts[0]]; v.Leader != first.Leader || v.Term != first.Term {
				agreed = false
				break
			}
		}
		if agreed {
			return views, time.Now()
		}
		if e.ctx.Err() != nil {
			c.e.fatal("interrupted: cleaning up the lab")
		}
		if time.Now().After(deadline) {
			var s []string
			for _, i := range hosts {
				v, err := c.leader(i)
				s = append(s, fmt.Sprintf("h%d: leader %d term %d err %v", i, v.Leader, v.Term, err))
			}
			c.explain(hosts)
			c.e.fatalf("%s: %s: hosts %v did not agree on a leader within %v: %s", c.spec.label, what, hosts, within, strings.Join(s, "; "))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// explain logs what each host's node refused and how it stands, for a
// cluster that did not agree: frames refused by reason (a restarted
// member's frames refused as config_unverified or pre_restart, a
// stepped-back member), the incarnation, and what the core counted.
func (c *electdCluster) explain(hosts []int) {
	for _, i := range slices.Sorted(maps.Keys(c.clients)) {
		ctx, cancel := context.WithTimeout(c.e.ctx, 2*time.Second)
		var st electdStatus
		err := c.clients[i].Get(ctx, "/v1/status", &st)
		cancel()
		if err != nil {
			c.e.logf("%s: h%d: status: %v", c.spec.label, i, err)
			continue
		}
		standing := "-"
		if a := st.Node.Agreement; a != nil {
			standing = a.Standing
		}
		core := st.Node.Core
		c.e.logf("%s: h%d: incarnation %d, standing %s, role %v, leader %d term %d, elections %d, timeouts %d, dropped %v, in %v",
			c.spec.label, i, st.Node.Incarnation, standing, core.Role, core.Leader, core.Term, core.ElectionsStarted,
			core.LeaderTimeouts, st.Node.Dropped, st.Node.FramesIn)
	}
}

// lastTimeout is bully's account of node i's last leader timeout
// (detail.last_timeout), as JSON; "" for another algorithm or none.
func (c *electdCluster) lastTimeout(st electdStatus) string {
	d, ok := st.Node.Core.Detail.(map[string]any)
	if !ok || d["last_timeout"] == nil {
		return ""
	}
	b, _ := json.Marshal(d["last_timeout"])
	return string(b)
}

func hostsExcept(n, except int) []int {
	var hs []int
	for i := 1; i <= n; i++ {
		if i != except {
			hs = append(hs, i)
		}
	}
	return hs
}

// trafficAndRSS measures each node's traffic over the idle window and its
// RSS at the end. lead is the current leader.
func (c *electdCluster) trafficAndRSS(r *systemResult, lead int) {
	e := c.e
	before := map[int]electdStatus{}
	ifBefore := map[int]IfCounters{}
	for i := 1; i <= electHosts; i++ {
		before[i] = c.status(i)
		ifBefore[i] = mustNetDev(e.b, c.procs[i].PID())
	}
	start := time.Now()
	e.sleep(*electTraffic)
	r.idle = time.Since(start)
	var others, othersIf uint64
	for i := 1; i <= electHosts; i++ {
		payload := c.status(i).payloadBytes() - before[i].payloadBytes()
		d := mustNetDev(e.b, c.procs[i].PID()).Sub(ifBefore[i])
		wire := d.RxBytes + d.TxBytes
		if i == lead {
			r.leaderBytes, r.leaderIf = payload, wire
		} else {
			others += payload
			othersIf += wire
		}
	}
	r.otherBytes, r.otherIf = others/(electHosts-1), othersIf/(electHosts-1)
	r.rssMax = max(r.rssMax, c.maxRSS())
}

func (c *electdCluster) maxRSS() int64 {
	var m int64
	for _, p := range c.procs {
		m = max(m, mustRSS(c.e.b, p.PID()))
	}
	return m
}

// electdPhase measures one electd configuration: idle traffic, then the
// failover trials.
func (e *electBench) electdPhase(s electdSpec) *systemResult {
	e.b.Helper()
	r := &systemResult{frames: map[string]float64{}}
	c := e.newCluster(s)
	c.traced = true
	defer c.stopAll()
	c.startAll()
	views, _ := c.waitAgree("start", hostsExcept(electHosts, 0), 0, 10*time.Second)
	e.sleep(*electSettle)
	e.logf("%s: 5 nodes agree on leader %d; measuring idle traffic for %v", s.label, views[1].Leader, *electTraffic)
	c.trafficAndRSS(r, int(views[1].Leader))

	var took, polled []time.Duration
	for trial := 1; trial <= *electTrials; {
		d, seen, ok := c.trial(r, trial, *electTrials)
		if !ok {
			continue // repeated: the survivors had elected before the kill
		}
		took, polled = append(took, d), append(polled, seen)
		trial++
	}
	c.keepSlow(c.trials)
	for k := range r.frames {
		r.frames[k] /= float64(*electTrials)
	}
	r.failover, r.polled = Summarize(took), Summarize(polled)
	r.rssMax = max(r.rssMax, c.maxRSS())
	e.logf("%s: failover %s", s.label, r.failover)
	if *electPartition > 0 {
		r.splitBrain = c.splitBrain(*electPartition)
		e.logf("%s: %v partition {1,2} | {3,4,5}: two self-believed leaders for %s", s.label, *electPartition, Millis(r.splitBrain))
	}
	return r
}

// trial is one failover: a random phase, SIGKILL of the leader, the time
// until every survivor reports the new one (by its own stamp, and as
// polling saw it), the frames the survivors sent for it (into r), and the
// restart of the killed node. ok is false when the survivors had elected
// another leader before the kill (a false suspicion of the live leader, on
// a loaded host): the trial measured nothing, is counted in
// r.electedBeforeKill and must be repeated; after maxEarly of them the
// benchmark fails.
func (c *electdCluster) trial(r *systemResult, trial, trials int) (took, polled time.Duration, ok bool) {
	e, s := c.e, c.spec
	e.b.Helper()
	all := hostsExcept(s.members(), 0)
	traces := c.traceTrial(trial)
	e.randomPhase()
	views, _ := c.waitAgree("before the trial", all, 0, 10*time.Second)
	lead := int(views[1].Leader)
	survivors := hostsExcept(s.members(), lead)
	before := map[int]electdStatus{}
	for _, i := range survivors {
		before[i] = c.status(i)
	}

	cpuBefore, machineBefore := selfCPU(), readMachineCPU()
	killAt := time.Now()
	if err := c.procs[lead].Kill(); err != nil {
		e.fatal(err)
	}
	reaped := time.Since(killAt)
	after, seen := c.waitAgree(fmt.Sprintf("trial %d", trial), survivors, uint32(lead), failoverLimit)
	// The harness's own CPU while it polled the survivors: on the 2-core
	// lab a harness busy through the failover delays the daemons it
	// measures (at 64 hosts it polls up to 63 of them every 2 ms).
	polling := selfCPU() - cpuBefore
	busy := readMachineCPU().busySince(machineBefore)

	// The failover ends when the last survivor learned the leader:
	// the daemon's own stamp (arrival of the COORDINATOR, or the
	// winner's decision), not when polling happened to ask.
	var last time.Time
	for _, v := range after {
		if v.Since.After(last) {
			last = v.Since
		}
	}
	d := last.Sub(killAt)
	if d <= 0 {
		r.electedBeforeKill++
		e.logf("%s trial %d: survivors learned leader %d at %v, %v before the kill: a false suspicion of the live leader; repeating the trial",
			s.label, trial, after[survivors[0]].Leader, last.Format("15:04:05.000000"), killAt.Sub(last))
		c.untrace(traces, lead)
		c.keepEarly(trial, traces)
		if r.electedBeforeKill > maxEarly {
			e.fatalf("%s: %d trials elected before the kill: the leader is suspected while alive", s.label, r.electedBeforeKill)
		}
		c.start(lead)
		c.waitAgree("after the restart", all, 0, 10*time.Second)
		e.sleep(*electSettle)
		return 0, 0, false
	}
	newLead := after[survivors[0]].Leader
	if want := s.rightful(survivors); want != 0 && int(newLead) != want {
		r.unexpected = append(r.unexpected, fmt.Sprintf("trial %d: leader %d", trial, newLead))
	}

	var total, notes float64
	byKind := map[string]uint64{}
	how := map[string]float64{}
	afterSt := map[int]electdStatus{}
	for _, i := range survivors {
		st := c.status(i)
		afterSt[i] = st
		for k, n := range detailCounts(st) {
			how[k] += n - detailCounts(before[i])[k]
		}
		for kind, n := range st.Node.FramesOut {
			byKind[kind] += n - before[i].Node.FramesOut[kind]
			if kindClass(kind) == wire.ClassHeartbeat {
				continue
			}
			delta := float64(n - before[i].Node.FramesOut[kind])
			r.frames[kind] += delta
			total += delta
			if kindClass(kind) != wire.ClassAck {
				notes += delta
			}
		}
	}
	r.framesTotal = append(r.framesTotal, total)
	r.framesNotes = append(r.framesNotes, notes)
	c.untrace(traces, lead)
	since := map[int]time.Time{}
	for i, v := range after {
		since[i] = v.Since
	}
	hints := hintAccounts(before, afterSt, lead, netip.AddrPortFrom(e.lab.Host(lead).Addr(), uint16(s.port)), killAt)
	rec := TrialRecord{Trial: trial, Killed: lead, Leader: int(newLead), Took: d, KilledAt: killAt, Since: since,
		Election: notes, Frames: byKind, Traces: traces, Hints: hints, Reaped: reaped}
	if traces != nil {
		rec.Logs, rec.Status = c.evidence(survivors)
	}
	c.trials = append(c.trials, rec)
	e.logf("%s: trial %d/%d: leader %d killed, all survivors on %d after %s (polling saw it at %s, the harness's CPU meanwhile %s, the machine's CPUs %s busy; %s%s), %.0f frames (%.0f the notes count); the killed process reaped at %s%s; load %s",
		s.label, trial, trials, lead, newLead, Millis(d), Millis(seen.Sub(killAt)), Millis(polling), busy, acceptSpread(after, int(newLead), killAt), countsText(how), total, notes, Millis(reaped), hintsLine(hints), loadAverage())

	// Bring the killed node back; it takes over again (highest ID).
	c.start(lead)
	c.waitAgree("after the restart", all, 0, 10*time.Second)
	e.sleep(*electSettle)
	return d, seen.Sub(killAt), true
}

// hintAccounts is what each survivor made of the port hint in a trial,
// from its status before the kill and once the survivors agreed (bully's
// detail counters, and its outbound link to the leader's address); nil
// for an algorithm or a configuration without the hint.
func hintAccounts(before, after map[int]electdStatus, lead int, leader netip.AddrPort, killAt time.Time) map[int]HintAccount {
	count := func(st electdStatus, k string) uint64 {
		d, _ := st.Node.Core.Detail.(map[string]any)
		v, _ := d[k].(float64)
		return uint64(v)
	}
	m := map[int]HintAccount{}
	for i, a := range after {
		b := before[i]
		if count(a, "hint_probe_ns") == 0 {
			return nil
		}
		h := HintAccount{
			Taken:    count(a, "hints") - count(b, "hints"),
			Ignored:  count(a, "hints_ignored") - count(b, "hints_ignored"),
			GaveUp:   count(a, "hint_timeouts") - count(b, "hint_timeouts"),
			TimedOut: a.Node.Core.LeaderTimeouts - b.Node.Core.LeaderTimeouts,
		}
		for _, l := range b.Transport.Links {
			if l.Peer == leader && l.Connected {
				h.Linked = true
			}
		}
		for _, p := range a.Node.Peers {
			if int(p.ID) == lead && p.HintAt.After(killAt) {
				h.Hinted = p.HintAt.Sub(killAt)
			}
		}
		m[i] = h
	}
	return m
}

// hintsLine is the trial line's account of the port hint: ", port hints:
// h1 linked, took 1; ..." and NO SURVIVOR TOOK A HINT when none did.
func hintsLine(hints map[int]HintAccount) string {
	if len(hints) == 0 {
		return ""
	}
	if NoHint(hints) {
		return "; NO SURVIVOR TOOK A PORT HINT: " + HintsText(hints)
	}
	return "; port hints: " + HintsText(hints)
}

// acceptSpread says when, after the kill, the new leader chose itself
// (its own stamp) and when the others followed it: the first, the median
// and the last (what grows with N is the gap between the claim and the
// last follower, or the claim itself).
func acceptSpread(after map[int]leaderView, leader int, killAt time.Time) string {
	var followers []time.Duration
	for i, v := range after {
		if i != leader {
			followers = append(followers, v.Since.Sub(killAt))
		}
	}
	if len(followers) == 0 {
		return "no follower"
	}
	slices.Sort(followers)
	return fmt.Sprintf("claimed at %s, followed at %s / %s / %s (first, median, last of %d)", Millis(after[leader].Since.Sub(killAt)),
		Millis(followers[0]), Millis(followers[len(followers)/2]), Millis(followers[len(followers)-1]), len(followers))
}

// failoverCounters are the counters of an algorithm's status detail
// that say how its members went through a failover (omega's: windows cut
// short by the successor's claim, probes, contests, mistakes, asks).
var failoverCounters = []string{"checks", "probes", "contests", "mistakes", "asks", "rescued"}

// detailCounts are st's failoverCounters, those its detail has.
func detailCounts(st electdStatus) map[string]float64 {
	d, _ := st.Node.Core.Detail.(map[string]any)
	m := map[string]float64{}
	for _, k := range failoverCounters {
		if v, ok := d[k].(float64); ok {
			m[k] = v
		}
	}
	return m
}

// countsText is "; the survivors' checks 3, probes 1, ..." for the
// counters that moved, in failoverCounters' order ("" if none).
func countsText(how map[string]float64) string {
	var parts []string
	for _, k := range failoverCounters {
		if how[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, how[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the survivors' " + strings.Join(parts, ", ")
}

// machineCPU is the machine's CPU time from /proc/stat's first line, in
// clock ticks: all of it, and idle (idle and iowait).
type machineCPU struct{ total, idle uint64 }

func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var m machineCPU
	for k, f := range strings.Fields(line)[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil || k >= 8 { // guest time is counted in user already
			break
		}
		m.total += v
		if k == 3 || k == 4 {
			m.idle += v
		}
	}
	return m
}

// busySince is the share of the machine's CPU time not idle since before,
// as a percentage ("?" when /proc/stat could not be read or no tick
// passed): near 100% the daemons waited for a CPU, and a failover
// measured then is the machine's as much as the protocol's.
func (m machineCPU) busySince(before machineCPU) string {
	if before.total == 0 || m.total <= before.total {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*(1-float64(m.idle-before.idle)/float64(m.total-before.total)))
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxEarly bounds the trials repeated because the survivors elected before
// the kill.
const maxEarly = 10

// splitBrain cuts hosts 1 and 2 off from 3, 4 and 5 for d (the leader, 5,
// is on the larger side), polls every node's leader, and returns how long
// two or more nodes each said they led; then heals and waits for
// agreement.
func (c *electdCluster) splitBrain(d time.Duration) time.Duration {
	e := c.e
	e.b.Helper()
	all := hostsExcept(c.spec.members(), 0)
	c.waitAgree("before the partition", all, 0, 10*time.Second)
	e.sleep(*electSettle)
	for _, a := range []int{1, 2} {
		for _, b := range []int{3, 4, 5} {
			e.lab.Partition(a, b)
		}
	}
	var both time.Duration
	start := time.Now()
	last := start
	for time.Since(start) < d {
		leaders := 0
		for _, i := range all {
			if v, err := c.leader(i); err == nil && int(v.Leader) == i {
				leaders++
			}
		}
		now := time.Now()
		if leaders >= 2 {
			both += now.Sub(last)
		}
		last = now
		if e.ctx.Err() != nil {
			e.fatal("interrupted: cleaning up the lab")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.lab.HealAll()
	c.waitAgree("after the partition", all, 0, 10*time.Second)
	return both
}

// messagesPhase runs spec on its hosts for a few failovers and returns
// the frames the notes count per election (election kinds, no heartbeats,
// no acknowledgements) and the failovers' times, to set beside the
// smaller cluster's (what grows with N besides the messages).
func (e *electBench) messagesPhase(s electdSpec, trials int) ([]float64, Summary) {
	e.b.Helper()
	r := &systemResult{frames: map[string]float64{}}
	c := e.newCluster(s)
	defer c.stopAll()
	c.startAll()
	c.waitAgree("start", hostsExcept(s.members(), 0), 0, 20*time.Second)
	e.sleep(*electSettle)
	var took []time.Duration
	for trial := 1; trial <= trials; trial++ {
		d, _, ok := c.trial(r, trial, trials)
		if !ok {
			trial-- // repeated
			continue
		}
		took = append(took, d)
	}
	return r.framesNotes, Summarize(took)
}
