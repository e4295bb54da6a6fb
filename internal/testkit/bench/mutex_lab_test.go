package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/mutex"
	mutexalgorithms "github.com/synclab/synclab/pkg/mutex/algorithms"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	mutexRun     = flag.Bool("mutex", false, "run BenchmarkMutex, a lab measurement of a few minutes (scripts/bench.sh mutex sets it)")
	mutexSamples = flag.Int("mutex.samples", 2000, "uncontended acquire+release samples through each API")
	mutexSpaced  = flag.Int("mutex.spaced", 40, "uncontended samples spaced by more than mutexd's confirm window (each needs a check round trip)")
	mutexCLI     = flag.Int("mutex.cli", 50, "uncontended samples through each CLI")
	mutexWindow  = flag.Duration("mutex.window", 5*time.Second, "contended throughput window")
	mutexClients = flag.Int("mutex.clients", 8, "contending clients")
	mutexTrials  = flag.Int("mutex.trials", 5, "recovery trials (SIGKILL of the holder) per system")
	mutexTraffic = flag.Duration("mutex.traffic", 10*time.Second, "idle traffic window")
	mutexBin     = flag.String("mutex.bin", "", "`DIR` holding mutexd (default: go build it from ../../../cmd/mutexd)")
	mutexPrefix  = flag.String("mutex.prefix", "", "lab namespace `PREFIX` (default: random)")
	mutexFlags   = flag.String("mutex.flags", "", "extra `FLAGS` for every mutexd run, e.g. \"--loss-timeout 300ms --confirm-window 150ms\"")
	mutexAlg     = flag.String("mutex.algorithm", "all", "the mutexd `ALGORITHM`s to measure (names of pkg/mutex/algorithms, comma-separated), or all of them side by side")
	mutexCount   = flag.Int("mutex.count-hosts", 16, "a second, smaller run on this many hosts that only counts messages per entry (0: skip)")
	mutexFaults  = flag.Bool("mutex.faults", true, "run the recovery, partition, pause, link-cut and maker-kill trials (false: latency, throughput and cost only, for quick A/B runs)")
	mutexKeep    = flag.String("mutex.keep", "", "keep every mutexd's log and a protocol trace of each run (--trace, one file per start) in `DIR`, for a trial to be read afterwards (default: logs in a temporary directory, removed; no traces)")
	mutexRecOnly = flag.Bool("mutex.recovery-only", false, "run only the recovery trials (SIGKILL of the holder, of the last holder, of a bystander, of a coordinator) and etcd's, for quick A/B runs of recovery")
)

const (
	mutexHosts = 5 // mutexd on h1..h5; etcd and its clients on h6
	mutexPort  = 7400
	hotLock    = "hot"
	// mutexLeaseTTL is mutexd's default --lease, and etcd's session TTL
	// in the recovery trials.
	mutexLeaseTTL = 3 * time.Second
	// Targets of issue 34, printed beside the figures: uncontended
	// acquire+release back to back at one host (a control call is ~0.08
	// ms here, a LAN round trip ~0.05 ms), the token ring's and every
	// algorithm's; handoffs per second with -mutex.clients on one lock;
	// `mutexd lock NAME -- true` under ip netns exec.
	targetRingP50    = 150 * time.Microsecond
	targetAcquireP50 = 400 * time.Microsecond
	targetHandoffs   = 5000.0
	targetCLIP50     = 12 * time.Millisecond
	// Recovery, issue 34's goals for a SIGKILL: the holder's, p50 at most
	// etcd's in the same run (its session TTL is the lease); the central
	// coordinator's, nothing granted for at most targetCoordinatorKill.
	targetCoordinatorKill = 2 * time.Second
)

// BenchmarkMutex measures every algorithm of mutexd (pkg/mutex/algorithms,
// or the one -mutex.algorithm names), one after the other on the same
// lab, against etcd 3.4's lock (its v3lock service, which implements the
// concurrency.Mutex recipe on the server, called through etcd's JSON
// gateway, and `etcdctl lock`), and prints one table, a column each:
//
//	h1..h5  mutexd (defaults: 3 s lease, 1 s heartbeats), one cluster per
//	        algorithm in turn, each with fresh state
//	h6      etcd, one node, and every etcd client, on 127.0.0.1
//
// The mutexd clients speak HTTP to their own host's daemon on its unix
// socket, as a program using the control API would; etcd's clients sit
// on etcd's own host, its best case. The phases:
//
//  1. uncontended acquire+release through each API: back to back on one
//     host (mutexd: the token rests there and its majority check is fresh),
//     then spaced beyond mutexd's 250 ms confirm window (each grant waits
//     for a check round trip), then alternating between h1 and h3 (the
//     token moves each time); through each CLI (`mutexd lock NAME -- true`,
//     `etcdctl lock NAME -- true`, both under `ip netns exec`, whose own
//     cost is measured too);
//  2. contended: -mutex.clients loops acquire and release one lock as fast
//     as they can for -mutex.window; mutexd's clients are spread round-robin
//     over the five hosts; a grant is a handoff; the wait is from sending
//     the acquire to the grant; frames sent by all daemons (heartbeats
//     excluded) per grant are the messages per critical-section entry;
//  3. idle traffic per node (payload and eth0) over -mutex.traffic;
//  4. recovery: a client holds the lock at one host, another waits at the
//     next; both renew every third of the lease (mutexd's holder through
//     the renew call, as mutexd lock does; etcd's session by its
//     keepalive), and the holder's daemon (mutexd) or session (etcdctl
//     lock --ttl 3) is SIGKILLed at a uniform random phase of its
//     renewals (mutexd's after none, one or two renewals; before
//     2026-12-06 mutexd's holder never renewed and was killed 0.1-2.9 s
//     into its only lease, so it had 0.1-2.9 s left where etcd's had
//     2-3 s: lease-bound algorithms looked up to 2 s faster than they
//     are); the time until the waiter is granted. Then the same with nobody holding: the daemon
//     where the lock was last held (the ring's token rests there) is
//     killed, and a client asks at the next host; and a bystander (a
//     daemon whose clients never took the lock) is killed with a client
//     asking at another host. The daemon is restarted between trials,
//     and a lock taken there before the next (a restarted member may wait
//     out a lease before it answers);
//  5. messages per entry: uncontended entries at each host in turn (the
//     lock moves every time), frames sent by all daemons (heartbeats
//     excluded) per entry, beside the notes' figure (core.Cost); and the
//     same count on -mutex.count-hosts hosts (16) for its growth.
//
// RSS is the maximum VmRSS of each daemon over the phases.
func BenchmarkMutex(b *testing.B) {
	if !*mutexRun {
		b.Skip("BenchmarkMutex runs for minutes in a namespace lab: run it with scripts/bench.sh mutex (or pass -mutex)")
	}
	labnet.Require(b)
	etcdBin, etcdctlBin := etcdBinaries(b, "mutex")
	if *mutexSamples < 1 || *mutexSpaced < 1 || *mutexCLI < 1 || *mutexWindow <= 0 || *mutexClients < 2 || *mutexTrials < 1 || *mutexTraffic <= 0 {
		b.Fatal("bad flags: every count must be positive, every duration too, and -mutex.clients at least 2")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := shortTempDir(b)
	algs := mutexalgorithms.All
	if *mutexAlg != "all" {
		algs = nil
		for _, name := range strings.Split(*mutexAlg, ",") {
			f, err := mutexalgorithms.All.Lookup(name)
			if err != nil {
				b.Fatal(err)
			}
			algs = append(algs, f)
		}
	}
	if *mutexCount < 0 || *mutexCount > labnet.MaxHosts {
		b.Fatalf("-mutex.count-hosts %d: want 0 (skip) to %d", *mutexCount, labnet.MaxHosts)
	}
	lab := benchLab(b, max(etcdHost, *mutexCount), *mutexPrefix)
	m := &mutexBench{
		electBench: &electBench{b: b, ctx: ctx, lab: lab, dir: dir, etcd: etcdBin, etcdctl: etcdctlBin},
		mutexd:     buildBinary(b, dir, *mutexBin, "mutexd"),
		rss:        map[string]int64{},
		starts:     map[string]int{},
	}
	if *mutexKeep != "" {
		m.keepLogs(*mutexKeep)
	}
	m.logf("lab %s up: mutexd on h1-h%d (%s), etcd on h%d; load average %s", lab.Prefix(), mutexHosts,
		strings.Join(algs.Names(), ", "), etcdHost, loadAverage())
	m.startEtcd()
	m.etcdHTTP = m.etcdClient()
	b.ResetTimer()

	r := newMutexResults()
	for _, f := range algs {
		m.startCluster(f.Name, mutexHosts)
		if *mutexRecOnly {
			m.recovery(r)
			m.stopCluster()
			continue
		}
		m.uncontended(r)
		m.perEntry(r, r.perEntry)
		m.contended(r)
		m.idle(r)
		if *mutexFaults {
			m.recovery(r)
			m.cutOff(r)    // mutex_cutoff_lab_test.go
			m.linkCut(r)   // mutex_link_lab_test.go
			m.makerKill(r) // mutex_makerkill_lab_test.go: the ring only
		}
		m.stopCluster()
	}
	if !*mutexRecOnly {
		m.etcdUncontended(r)
		m.etcdContended(r)
	}
	if *mutexFaults || *mutexRecOnly {
		m.etcdRecovery(r)
	}
	if *mutexCount > 0 && !*mutexRecOnly {
		for _, f := range algs {
			m.startCluster(f.Name, *mutexCount)
			m.perEntry(r, r.perEntryMany)
			m.stopCluster()
		}
	}
	b.StopTimer()

	t := m.table(r, algs)
	if err := t.Write(os.Stdout); err != nil {
		b.Fatal(err)
	}
	first := algs[0].Name
	b.ReportMetric(float64(r.api[first].P50)/float64(time.Microsecond), first+"-acquire-release-p50-us")
	b.ReportMetric(r.handoffs[first], first+"-handoffs/s")
}

type mutexBench struct {
	*electBench // the lab, etcd, logging
	mutexd      string
	// The mutexd cluster running now: its algorithm, its size, each
	// host's daemon and control client.
	alg      string
	hosts    int
	procs    map[int]*labnet.Proc
	clients  map[int]*ctl.Client
	etcdHTTP *http.Client
	rss      map[string]int64 // max VmRSS: "mutexd" (any algorithm), "etcd"
	// starts counts the daemons started, by "alg-hosts-hI": with
	// -mutex.keep, each start's trace file is numbered by it.
	starts map[string]int
}

// mutexResults are the figures, by system: an algorithm's name, or "etcd".
type mutexResults struct {
	api, spaced, moving, cli map[string]Summary
	netnsExec                Summary
	handoffs                 map[string]float64
	wait                     map[string]Summary
	contendedPerEntry        map[string]float64            // messages per grant under contention, heartbeats excluded
	perEntryKind             map[string]map[string]float64 // the same, by frame kind
	contendedGrants          map[string]int
	perEntry, perEntryMany   map[string]float64 // frames per uncontended entry, 5 hosts and -mutex.count-hosts
	idlePayload, idleIf      map[string]float64 // B/s per node, in+out
	// recovery: after SIGKILL of the holder; idle: of the host where the
	// lock was last held, nobody holding it; bystander: of a host that
	// never held it.
	recovery, recoveryIdle, recoveryBystander map[string]Summary
	// recoveryCoordinator: of the host that coordinates (an algorithm
	// whose status names one: central), nobody holding the lock.
	recoveryCoordinator map[string]Summary
	// recoverySettled: the same, a lease after the last restart (the
	// previous trial's victim), so that no member's previous run may
	// still hold a lease nobody can re-announce.
	recoverySettled map[string]Summary
	// cutOff: from the holder cut off (by fault: "partitioned", "paused")
	// until a waiter is granted, by algorithm.
	cutOff map[string]map[string]Summary
	// makerKill: the ring's new token's maker killed (by case: "fresh",
	// "regenerated"), until one of two hosts asking at once is granted.
	makerKill map[string]Summary
	// linkCut: the link between the holder and a waiter cut, from the
	// holder's release linkHold later to the waiter's grant, by
	// algorithm; linkTwoHolders: the trials whose waiter was granted
	// before that release (mutex_link_lab_test.go).
	linkCut        map[string]Summary
	linkTwoHolders map[string]int
	// linkStuck counts the trials whose waiter was granted only once the
	// link healed (not within failoverLimit of the release).
	linkStuck map[string]int
}

func newMutexResults() *mutexResults {
	return &mutexResults{
		api: map[string]Summary{}, spaced: map[string]Summary{}, moving: map[string]Summary{}, cli: map[string]Summary{},
		handoffs: map[string]float64{}, wait: map[string]Summary{}, contendedPerEntry: map[string]float64{},
		perEntryKind: map[string]map[string]float64{}, contendedGrants: map[string]int{},
		perEntry: map[string]float64{}, perEntryMany: map[string]float64{},
		idlePayload: map[string]float64{}, idleIf: map[string]float64{},
		recovery: map[string]Summary{}, recoveryIdle: map[string]Summary{}, recoveryBystander: map[string]Summary{},
		recoveryCoordinator: map[string]Summary{}, recoverySettled: map[string]Summary{},
		cutOff:    map[string]map[string]Summary{"partitioned": {}, "paused": {}},
		makerKill: map[string]Summary{},
		linkCut:   map[string]Summary{}, linkTwoHolders: map[string]int{}, linkStuck: map[string]int{},
	}
}

func (m *mutexBench) control(i int) string {
	return filepath.Join(m.dir, fmt.Sprintf("%s-%d-m%d.sock", m.alg, m.hosts, i))
}

// startCluster starts mutexd running alg on h1..hN, with fresh state, and
// waits until every daemon answers.
func (m *mutexBench) startCluster(alg string, n int) {
	m.alg, m.hosts = alg, n
	m.procs, m.clients = map[int]*labnet.Proc{}, map[int]*ctl.Client{}
	for i := 1; i <= n; i++ {
		m.start(i)
	}
	m.waitUp()
	m.logf("mutexd --algorithm %s up on h1-h%d", alg, n)
}

// stopCluster kills the cluster's daemons.
func (m *mutexBench) stopCluster() {
	m.b.Helper()
	for i, p := range m.procs {
		if err := p.Kill(); err != nil {
			m.fatalf("stopping mutexd on h%d: %v", i, err)
		}
	}
}

func (m *mutexBench) start(i int) {
	var members []string
	for j := 1; j <= m.hosts; j++ {
		members = append(members, fmt.Sprintf("%d=%s:%d", j, m.lab.Host(j).Addr(), mutexPort))
	}
	argv := []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		m.mutexd, "run", "--id", strconv.Itoa(i), "--members", strings.Join(members, ","), "--algorithm", m.alg,
		"--control", m.control(i), "--state-dir", filepath.Join(m.dir, fmt.Sprintf("%s-%d-m%d.state", m.alg, m.hosts, i)),
		"--lease", mutexLeaseTTL.String(),
	}
	argv = append(append(argv, keyArgs(m.b, m.dir)...), strings.Fields(*mutexFlags)...)
	if *mutexKeep != "" {
		run := fmt.Sprintf("%s-%d-h%d", m.alg, m.hosts, i)
		m.starts[run]++
		argv = append(argv, "--trace", filepath.Join(*mutexKeep, fmt.Sprintf("%s-%02d.trace", run, m.starts[run])))
	}
	m.procs[i] = m.lab.Host(i).Start(m.b, "mutexd", argv, nil)
	if m.clients[i] == nil {
		m.clients[i] = ctl.NewClient(m.control(i), "mutexd")
	}
}

// frames is the frames every daemon of the cluster sent so far, by kind,
// heartbeats (wire.ClassHeartbeat: the algorithms' and the node's
// configuration announcements) excluded.
func (m *mutexBench) frames() map[string]uint64 {
	out := m.framesAll()
	for k := range out {
		if kindClass(k) == wire.ClassHeartbeat {
			delete(out, k)
		}
	}
	return out
}

// framesAll is the frames every daemon of the cluster sent so far, by
// kind.
func (m *mutexBench) framesAll() map[string]uint64 {
	out := map[string]uint64{}
	for i := 1; i <= m.hosts; i++ {
		for k, v := range m.status(i, true).Node.FramesOut {
			out[k] += v
		}
	}
	return out
}

// coordinator is the host whose daemon says it coordinates (the status
// detail's central.Detail), 0 if none does.
func (m *mutexBench) coordinator() int {
	for i := 1; i <= m.hosts; i++ {
		var d central.Detail
		if st := m.status(i, false); st != nil && json.Unmarshal(st.Node.Core.Detail, &d) == nil && d.Coordinates {
			return i
		}
	}
	return 0
}

func sumFrames(f map[string]uint64) uint64 {
	var n uint64
	for _, v := range f {
		n += v
	}
	return n
}

// perEntry counts the frames of uncontended entries at every host in turn
// (two rounds after a warm-up round: the lock moves every time), into
// into[alg].
func (m *mutexBench) perEntry(r *mutexResults, into map[string]float64) {
	m.b.Helper()
	entry := func(i int) {
		rel, err := m.acquire(m.ctx, i, "count")
		if err == nil {
			err = rel()
		}
		if err != nil {
			m.fatalf("%s: entry at h%d: %v", m.alg, i, err)
		}
	}
	for i := 1; i <= m.hosts; i++ {
		entry(i)
	}
	m.sleep(100 * time.Millisecond)
	// The kinds that flow while nothing is asked (liveness: an election's
	// heartbeats, a coordinator's beats and their syncs) are the idle
	// traffic, measured on its own, not the price of an entry: two seconds
	// without entries name them (two: a kind sent once a second must
	// show), and they are left out of the count.
	idleFrom := m.frames()
	m.sleep(2 * time.Second)
	background := map[string]bool{}
	for k, v := range m.frames() {
		if v > idleFrom[k] {
			background[k] = true
		}
	}
	// An entry at a central coordinator's own host costs no message (its
	// clients ask it directly): the notes' figure is an entry's at a
	// member, so such entries are logged and left out of the mean.
	var counted, left uint64
	entries, free := 0, 0
	for range 2 {
		for i := 1; i <= m.hosts; i++ {
			before := m.frames()
			entry(i)
			m.sleep(20 * time.Millisecond) // the release's consequences
			var n uint64
			for k, v := range m.frames() {
				if background[k] {
					left += v - before[k]
				} else {
					n += (v - before[k]) * uint64(messagesIn(k)) // messages, not frames
				}
			}
			if n == 0 {
				free++
				continue
			}
			counted += n
			entries++
		}
	}
	into[m.alg] = float64(counted) / float64(max(entries, 1))
	m.logf("%s, %d hosts: %.2f messages per uncontended entry (%d entries, each at the next host; %d more cost no message); %.2f per entry of idle traffic left out (%s)",
		m.alg, m.hosts, into[m.alg], entries, free, float64(left)/float64(entries+free), strings.Join(slices.Sorted(maps.Keys(background)), ", "))
}

func (m *mutexBench) waitUp() {
	m.b.Helper()
	for i := 1; i <= m.hosts; i++ {
		deadline := time.Now().Add(10 * time.Second)
		for m.status(i, false) == nil {
			if time.Now().After(deadline) {
				m.fatalf("mutexd on h%d did not answer within 10 s:\n%s", i, m.procs[i].Output())
			}
			m.sleep(10 * time.Millisecond)
		}
	}
}

type mutexdStatus struct {
	Node struct {
		FramesOut map[string]uint64 `json:"frames_out"`
		Core      struct {
			Detail json.RawMessage `json:"detail"` // the algorithm's own
		} `json:"core"`
	} `json:"node"`
	Transport transport.Stats `json:"transport"`
}

func (s *mutexdStatus) payload() uint64 {
	t := s.Transport
	return t.UDP.BytesIn + t.UDP.BytesOut + t.Multicast.BytesIn + t.Multicast.BytesOut + t.Stream.BytesIn + t.Stream.BytesOut
}

// openLinks counts the outbound stream links connected now.
func (s *mutexdStatus) openLinks() int {
	n := 0
	for _, l := range s.Transport.Links {
		if l.Connected {
			n++
		}
	}
	return n
}

// status reads host i's status; nil if it does not answer (must: fail).
func (m *mutexBench) status(i int, must bool) *mutexdStatus {
	m.b.Helper()
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
	defer cancel()
	var st mutexdStatus
	if err := m.clients[i].Get(ctx, "/v1/status", &st); err != nil {
		if must {
			m.fatalf("status of mutexd on h%d: %v", i, err)
		}
		return nil
	}
	return &st
}

func (m *mutexBench) sampleRSS() {
	for i, p := range m.procs {
		if !p.Exited() {
			if n, err := RSS(p.PID()); err == nil {
				m.rss["mutexd"] = max(m.rss["mutexd"], n)
			} else {
				m.logf("RSS of mutexd on h%d: %v", i, err)
			}
		}
	}
	if n, err := RSS(m.etcdProc.PID()); err == nil {
		m.rss["etcd"] = max(m.rss["etcd"], n)
	}
}

// mutexGrant is the part of an acquire's answer the benchmark reads.
type mutexGrant struct {
	Request     string `json:"request"`
	Fence       uint64 `json:"fence"`
	LeaseLeftMS int64  `json:"lease_left_ms"`
}

// acquire takes lock name at host i through the API and returns a
// function that releases it.
func (m *mutexBench) acquire(ctx context.Context, i int, name string) (release func() error, err error) {
	var g mutexGrant
	if err := m.clients[i].Post(ctx, "/v1/locks/"+name+"/acquire", struct{}{}, &g); err != nil {
		return nil, err
	}
	return func() error {
		return m.clients[i].Post(context.Background(), "/v1/locks/"+name+"/release", map[string]string{"request": g.Request}, nil)
	}, nil
}

// etcdClient is an HTTP client whose connections are opened inside h6,
// so that it reaches etcd on that host's 127.0.0.1.
func (m *mutexBench) etcdClient() *http.Client { return etcdClientAt(m.lab.Host(etcdHost)) }

// etcdClientAt is an HTTP client whose connections are dialled inside h's
// namespace, so that 127.0.0.1 is h's own loopback.
func etcdClientAt(h *labnet.Host) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := h.Do(func() error {
				var err error
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
		MaxIdleConnsPerHost: 64,
	}}
}

// etcdCall POSTs a JSON body to etcd's gateway and decodes the answer.
func (m *mutexBench) etcdCall(ctx context.Context, path string, in, out any) error {
	return etcdPost(ctx, m.etcdHTTP, path, in, out)
}

// etcdPost POSTs a JSON body to the gateway of the etcd listening on
// 127.0.0.1 of c's host and decodes the answer.
func etcdPost(ctx context.Context, c *http.Client, path string, in, out any) error {
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d%s", etcdPort, path), bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// etcdLease grants a lease of ttl (the session of concurrency.Mutex).
func (m *mutexBench) etcdLease(ttl time.Duration) string {
	m.b.Helper()
	var v struct {
		ID string `json:"ID"` // an int64, as a string in the gateway's JSON
	}
	if err := m.etcdCall(m.ctx, "/v3/lease/grant", map[string]any{"TTL": int(ttl / time.Second)}, &v); err != nil || v.ID == "" {
		m.fatalf("etcd lease grant: %v %+v", err, v)
	}
	return v.ID
}

// etcdAcquire takes lock name with the given lease through etcd's v3lock
// service and returns a function that releases it.
func (m *mutexBench) etcdAcquire(ctx context.Context, lease, name string) (func() error, error) {
	var v struct {
		Key string `json:"key"`
	}
	if err := m.etcdCall(ctx, "/v3/lock/lock", map[string]string{"name": base64.StdEncoding.EncodeToString([]byte(name)), "lease": lease}, &v); err != nil {
		return nil, err
	}
	return func() error {
		return m.etcdCall(context.Background(), "/v3/lock/unlock", map[string]string{"key": v.Key}, nil)
	}, nil
}

// timeLoop measures n acquire+release pairs, each after wait.
func (m *mutexBench) timeLoop(what string, n int, wait time.Duration, acq func(k int) (func() error, error)) Summary {
	m.b.Helper()
	var s []time.Duration
	for k := range n {
		if wait > 0 {
			m.sleep(wait)
		}
		t0 := time.Now()
		rel, err := acq(k)
		if err == nil {
			err = rel()
		}
		if err != nil {
			m.fatalf("%s: sample %d: %v", what, k, err)
		}
		s = append(s, time.Since(t0))
	}
	sum := Summarize(s)
	m.logf("%s: %s", what, usSummary(sum))
	return sum
}

func (m *mutexBench) uncontended(r *mutexResults) {
	m.b.Helper()
	ctx, alg := m.ctx, m.alg
	// Warm up: the first acquire may create the token (a loss timeout).
	m.timeLoop(alg+" warm-up", 3, 0, func(int) (func() error, error) { return m.acquire(ctx, 1, "solo") })
	// Members first hear one another within a heartbeat (1 s) of the
	// start, and each persists a peer's epoch when it first hears it (one
	// fsync a peer): those writes are the start's, not an entry's.
	m.sleep(1500 * time.Millisecond)
	r.api[alg] = m.timeLoop(alg+" API, back to back at h1", *mutexSamples, 0,
		func(int) (func() error, error) { return m.acquire(ctx, 1, "solo") })
	r.spaced[alg] = m.timeLoop(alg+" API, every 300 ms at h1", *mutexSpaced, 300*time.Millisecond,
		func(int) (func() error, error) { return m.acquire(ctx, 1, "solo") })
	r.moving[alg] = m.timeLoop(alg+" API, alternating h1 and h3", *mutexSamples/4, 0,
		func(k int) (func() error, error) { return m.acquire(ctx, 1+2*(k%2), "solo") })
	r.cli[alg] = m.timeLoop(alg+": mutexd lock solo -- true", *mutexCLI, 0,
		m.netnsRun(1, m.mutexd, "lock", "--control", m.control(1), "solo", "--", "true"))
	m.sampleRSS()
}

// netnsRun is an acquire that runs argv in host h's namespace.
func (m *mutexBench) netnsRun(h int, argv ...string) func(int) (func() error, error) {
	return func(int) (func() error, error) {
		out, err := exec.CommandContext(m.ctx, "ip", append([]string{"netns", "exec", m.lab.Host(h).Namespace()}, argv...)...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		return func() error { return nil }, nil
	}
}

func (m *mutexBench) etcdUncontended(r *mutexResults) {
	m.b.Helper()
	ctx := m.ctx
	lease := m.etcdLease(time.Minute)
	r.api["etcd"] = m.timeLoop("etcd API (v3lock gateway), back to back", *mutexSamples, 0,
		func(int) (func() error, error) { return m.etcdAcquire(ctx, lease, "solo") })
	r.spaced["etcd"] = m.timeLoop("etcd API, every 300 ms", *mutexSpaced, 300*time.Millisecond,
		func(int) (func() error, error) { return m.etcdAcquire(ctx, lease, "solo") })
	r.netnsExec = m.timeLoop("ip netns exec true (the CLIs' own overhead here)", *mutexCLI, 0, m.netnsRun(1, "true"))
	r.cli["etcd"] = m.timeLoop("etcdctl lock solo -- true", *mutexCLI, 0,
		m.netnsRun(etcdHost, m.etcdctl, "--endpoints", fmt.Sprintf("127.0.0.1:%d", etcdPort), "lock", "solo", "--", "true"))
	m.sampleRSS()
}

// contend runs n loops of acquire+release for the window and returns the
// grants and the waits.
func (m *mutexBench) contend(n int, acq func(k int) (func() error, error)) (int, []time.Duration) {
	m.b.Helper()
	ctx, cancel := context.WithTimeout(m.ctx, *mutexWindow)
	defer cancel()
	var mu sync.Mutex
	var waits []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				rel, err := acq(k)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					return
				}
				d := time.Since(t0)
				err = rel()
				mu.Lock()
				waits = append(waits, d)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		m.fatalf("contended loops failed: %v", errors.Join(errs...))
	}
	return len(waits), waits
}

func (m *mutexBench) contended(r *mutexResults) {
	m.b.Helper()
	n, alg := *mutexClients, m.alg
	// Everyone has taken the lock once, so that the window measures the
	// steady state, not the token's creation.
	for i := 1; i <= m.hosts; i++ {
		rel, err := m.acquire(m.ctx, i, hotLock)
		if err != nil {
			m.fatal(err)
		}
		rel()
	}
	before := m.frames()
	cpu0, self0 := m.daemonsCPU(), selfCPU()
	start := time.Now()
	grants, waits := m.contend(n, func(k int) (func() error, error) {
		return m.acquire(m.ctx, 1+k%m.hosts, hotLock)
	})
	el := time.Since(start)
	cpu, self := m.daemonsCPU()-cpu0, selfCPU()-self0
	m.sleep(100 * time.Millisecond) // the last release's consequences
	r.handoffs[alg] = float64(grants) / el.Seconds()
	r.wait[alg] = Summarize(waits)
	r.contendedGrants[alg] = grants
	kinds := map[string]float64{}
	after := m.frames()
	var frames, msgs uint64
	for k, v := range after {
		d := v - before[k]
		frames += d
		msgs += d * uint64(messagesIn(k))
		kinds[k] += float64(d) / float64(max(grants, 1))
	}
	r.perEntryKind[alg] = kinds
	r.contendedPerEntry[alg] = float64(msgs) / float64(max(grants, 1))
	m.logf("%s contended, %d clients on %d hosts: %.0f grants/s, wait %s, %.2f messages per grant in %.2f frames", alg, n, m.hosts, r.handoffs[alg],
		usSummary(r.wait[alg]), r.contendedPerEntry[alg], float64(frames)/float64(max(grants, 1)))
	// CPU a grant: the machine's cores bound the handoffs when the
	// daemons' and the clients' CPU a grant fills them (with the load of
	// whatever else runs: see the load average).
	g := float64(max(grants, 1))
	m.logf("%s contended, CPU a grant: the %d daemons %.0f us, the clients (this process) %.0f us; %.2f of %d cores busy with them in the window",
		alg, m.hosts, float64(cpu.Microseconds())/g, float64(self.Microseconds())/g, (cpu+self).Seconds()/el.Seconds(), runtime.NumCPU())
	m.sampleRSS()
}

// daemonsCPU is the CPU time the running mutexd processes have used.
func (m *mutexBench) daemonsCPU() time.Duration {
	var sum time.Duration
	for _, p := range m.procs {
		if d, err := CPUTime(p.PID()); err == nil {
			sum += d
		}
	}
	return sum
}

func (m *mutexBench) etcdContended(r *mutexResults) {
	m.b.Helper()
	n := *mutexClients
	leases := make([]string, n)
	for k := range leases {
		leases[k] = m.etcdLease(time.Minute)
	}
	start := time.Now()
	grants, waits := m.contend(n, func(k int) (func() error, error) { return m.etcdAcquire(m.ctx, leases[k], hotLock) })
	el := time.Since(start)
	r.handoffs["etcd"] = float64(grants) / el.Seconds()
	r.wait["etcd"] = Summarize(waits)
	m.logf("etcd contended, %d clients: %.0f grants/s, wait %s", n, r.handoffs["etcd"], usSummary(r.wait["etcd"]))
	m.sampleRSS()
}

func (m *mutexBench) idle(r *mutexResults) {
	m.b.Helper()
	before := map[int]*mutexdStatus{}
	ifBefore := map[int]IfCounters{}
	segBefore := map[int]SegmentCounters{}
	for i := 1; i <= m.hosts; i++ {
		before[i] = m.status(i, true)
		ifBefore[i] = mustNetDev(m.b, m.procs[i].PID())
		segBefore[i] = mustSegments(m.b, m.procs[i].PID())
	}
	kindsBefore := m.framesAll()
	start := time.Now()
	m.sleep(*mutexTraffic)
	el := time.Since(start).Seconds()
	var kinds []string
	for k, v := range m.framesAll() {
		if d := v - kindsBefore[k]; d > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %.2f", k, float64(d)/float64(m.hosts)/el))
		}
	}
	slices.Sort(kinds)
	m.logf("%s idle: frames sent per second per node, by kind: %s", m.alg, strings.Join(kinds, ", "))
	var payload, wire uint64
	var segs SegmentCounters
	for i := 1; i <= m.hosts; i++ {
		payload += m.status(i, true).payload() - before[i].payload()
		d := mustNetDev(m.b, m.procs[i].PID()).Sub(ifBefore[i])
		wire += d.RxBytes + d.TxBytes
		s := mustSegments(m.b, m.procs[i].PID()).Sub(segBefore[i])
		segs = SegmentCounters{TCPIn: segs.TCPIn + s.TCPIn, TCPOut: segs.TCPOut + s.TCPOut, UDPIn: segs.UDPIn + s.UDPIn, UDPOut: segs.UDPOut + s.UDPOut}
	}
	r.idlePayload[m.alg] = float64(payload) / float64(m.hosts) / el
	r.idleIf[m.alg] = float64(wire) / float64(m.hosts) / el
	// The stream links open at the window's start and end (each counted
	// at its dialer): the TCP segments of an idle link are its keepalive
	// probes and their ACKs, counted at both ends.
	var linksBefore, linksAfter int
	for i := 1; i <= m.hosts; i++ {
		linksBefore += before[i].openLinks()
		linksAfter += m.status(i, true).openLinks()
	}
	// What flows beside the frames logged above: the segments of each
	// namespace, by protocol (a TCP link's segments beyond its frames are
	// its ACKs and keepalive probes).
	perNode := func(n uint64) float64 { return float64(n) / float64(m.hosts) / el }
	m.logf("%s idle: %.0f B/s payload, %.0f B/s on eth0, per node (in+out); segments per node in+out: UDP %.2f/s, TCP %.2f/s; stream links open %d at the start, %d at the end: %.2f TCP segments per open link per second, both ends",
		m.alg, r.idlePayload[m.alg], r.idleIf[m.alg], perNode(segs.UDPIn+segs.UDPOut), perNode(segs.TCPIn+segs.TCPOut),
		linksBefore, linksAfter, float64(segs.TCPIn+segs.TCPOut)/max(1, float64(linksBefore+linksAfter)/2)/el)
	m.sampleRSS()
}

func mustSegments(b *testing.B, pid int) SegmentCounters {
	b.Helper()
	c, err := Segments(pid)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// restart starts host i's daemon again and waits until a lock can be
// taken there (a restarted member may wait out a lease first).
func (m *mutexBench) restart(i int) {
	m.b.Helper()
	m.start(i)
	m.waitUp()
	ctx, cancel := context.WithTimeout(m.ctx, failoverLimit)
	defer cancel()
	rel, err := m.acquire(ctx, i, hotLock)
	if err == nil {
		err = rel()
	}
	if err != nil {
		m.fatalf("%s: the restarted daemon on h%d: %v", m.alg, i, err)
	}
}

// lockGrant is a waiter's grant: when it came, and its release.
type lockGrant struct {
	at      time.Time
	release func() error
}

// holdAndWait sets up a failover trial: the daemon on h{holder} takes the
// hot lock, the one on h{waiter} asks for it in the background, and
// holdAndWait returns at a random instant of the holder's lease (at least
// 100 ms from either end), once the waiter waits. It returns the holder's
// release, when its grant came, and the channel the waiter's grant comes
// on (a waiter that fails is logged under what and gets a no-op release).
func (m *mutexBench) holdAndWait(what string, holder, waiter int) (release func() error, granted time.Time, got <-chan lockGrant) {
	m.b.Helper()
	release, err := m.acquire(m.ctx, holder, hotLock)
	if err != nil {
		m.fatal(err)
	}
	granted = time.Now()
	grant := m.waitFor(what, waiter)
	m.sleep(100*time.Millisecond + rand.N(mutexLeaseTTL-200*time.Millisecond))
	return release, granted, grant
}

// waitFor asks for the hot lock at h{waiter} in the background; the grant
// comes on the channel (a waiter that fails is logged under what and gets
// a no-op release).
func (m *mutexBench) waitFor(what string, waiter int) <-chan lockGrant {
	grant := make(chan lockGrant, 1)
	go func() {
		rel, err := m.acquire(m.ctx, waiter, hotLock)
		if err != nil {
			m.logf("%s: waiter at h%d: %v", what, waiter, err)
			rel = func() error { return nil }
		}
		grant <- lockGrant{time.Now(), rel}
	}()
	return grant
}

// renewAndWait sets up a recovery trial as etcd's is set up: the daemon
// on h{holder} takes the hot lock and its client renews it every third of
// the lease (as `mutexd lock` and etcd's session keepalive do), the one
// on h{waiter} asks for it in the background, and renewAndWait returns at
// a uniform random instant of the renewal period after none, one or two
// renewals (the grant counting as the first start of the period; so the
// lease left at the kill is two thirds to all of a lease, as etcd's
// session's is at etcdRecovery's kill, whose first keepalive may come
// after it too), at least waiterQueued after the grant (killPhase). It
// returns when the grant came, when the lease was last
// started (the grant, or the last renewal's sending), how many renewals
// were confirmed, and the channel the waiter's grant comes on.
func (m *mutexBench) renewAndWait(holder, waiter int) (granted, renewed time.Time, confirmed int, got <-chan lockGrant) {
	m.b.Helper()
	var g mutexGrant
	if err := m.clients[holder].Post(m.ctx, "/v1/locks/"+hotLock+"/acquire", struct{}{}, &g); err != nil {
		m.fatal(err)
	}
	granted = time.Now()
	got = m.waitFor("recovery", waiter)
	renewed = granted
	renewals, phase := killPhase(rand.N(3), rand.N(mutexLeaseTTL/3))
	for k := range renewals {
		m.sleep(time.Until(granted.Add(time.Duration(k+1) * mutexLeaseTTL / 3)))
		ctx, cancel := context.WithTimeout(m.ctx, mutexLeaseTTL/3)
		renewed = time.Now()
		err := m.clients[holder].Post(ctx, "/v1/locks/"+hotLock+"/renew", map[string]string{"request": g.Request}, nil)
		cancel()
		if err != nil {
			m.logf("recovery: renewal at h%d: %v", holder, err)
		} else {
			confirmed++
		}
	}
	m.sleep(time.Until(renewed.Add(phase)))
	return granted, renewed, confirmed, got
}

// waiterQueued is how long after the holder's grant the waiter, asked in
// the background just after it, has its request queued at the voters for
// sure (it takes a few ms): a kill before would time the waiter's own
// request, not the recovery.
const waiterQueued = 100 * time.Millisecond

// killPhase is how many renewals a recovery trial makes and when it kills
// the holder after its lease last started, given the draws: the phase,
// uniform over the renewal period, is kept as drawn (the lease left at
// the kill depends on it alone, and stays uniform as etcd's); a phase
// below waiterQueued with no renewal (the lease started at the grant,
// the waiter asked just after it) takes one renewal, so the waiter is
// queued before the kill (before, about 1% of the trials killed the
// holder first; drawing the phase again instead made its first
// waiterQueued less likely: a review of the fix).
func killPhase(renewals int, phase time.Duration) (int, time.Duration) {
	if renewals == 0 && phase < waiterQueued {
		renewals = 1
	}
	return renewals, phase
}

func (m *mutexBench) recovery(r *mutexResults) {
	m.b.Helper()
	alg := m.alg
	var took []time.Duration
	for trial := range *mutexTrials {
		holder := 1 + trial%m.hosts
		waiter := 1 + (trial+1)%m.hosts
		granted, renewed, confirmed, got := m.renewAndWait(holder, waiter)
		m.sampleRSS()
		killAt := time.Now() // at a random instant of the renewal period, once the waiter waits
		m.procs[holder].Kill()
		var g lockGrant
		select {
		case g = <-got:
		case <-time.After(failoverLimit):
			m.fatalf("%s recovery trial %d: the waiter at h%d was not granted within %v", alg, trial+1, waiter, failoverLimit)
		}
		took = append(took, g.at.Sub(killAt))
		m.logf("%s recovery %d/%d: h%d's daemon killed %v after its lease last started (%d renewals confirmed, one every %v), %v after the grant; h%d granted after %s",
			alg, trial+1, *mutexTrials, holder, killAt.Sub(renewed).Round(time.Millisecond), confirmed, mutexLeaseTTL/3,
			killAt.Sub(granted).Round(time.Millisecond), waiter, Millis(g.at.Sub(killAt)))
		g.release()
		m.restart(holder)
	}
	r.recovery[alg] = Summarize(took)

	// Nobody holds the lock: kill the daemon where it was last held (the
	// ring's token rests there), or a bystander that never held it, and
	// ask at the next host just after.
	idle := func(what string, settle time.Duration, victimOf func(trial int) (last, victim, asker int)) Summary {
		var took []time.Duration
		for trial := range *mutexTrials {
			m.sleep(settle)
			last, victim, asker := victimOf(trial)
			rel, err := m.acquire(m.ctx, last, hotLock)
			if err != nil {
				m.fatal(err)
			}
			if err := rel(); err != nil {
				m.fatal(err)
			}
			m.sleep(100 * time.Millisecond)
			killAt := time.Now()
			m.procs[victim].Kill()
			ctx, cancel := context.WithTimeout(m.ctx, failoverLimit)
			rel, err = m.acquire(ctx, asker, hotLock)
			cancel()
			if err != nil {
				m.fatalf("%s recovery (%s) trial %d: the client at h%d: %v", alg, what, trial+1, asker, err)
			}
			took = append(took, time.Since(killAt))
			rel()
			m.logf("%s recovery, %s %d/%d: h%d's daemon killed; h%d granted after %s", alg, what, trial+1, *mutexTrials, victim, asker, Millis(took[len(took)-1]))
			m.restart(victim)
		}
		return Summarize(took)
	}
	r.recoveryIdle[alg] = idle("last holder", 0, func(trial int) (int, int, int) {
		h := 1 + trial%m.hosts
		return h, h, 1 + (trial+1)%m.hosts
	})
	r.recoveryBystander[alg] = idle("bystander", 0, func(trial int) (int, int, int) {
		h := 1 + trial%m.hosts
		return h, 1 + (trial+2)%m.hosts, 1 + (trial+1)%m.hosts
	})
	// An algorithm with a coordinator: kill it, the lock last held and
	// asked for at two other hosts. The coordinator is looked up at every
	// trial: it need not come back as the coordinator (central's election
	// keeps a sitting one).
	if m.coordinator() != 0 {
		coordinatorTrial := func(trial int) (int, int, int) {
			c := m.coordinator()
			if c == 0 {
				m.fatalf("%s recovery (coordinator) trial %d: no host says it coordinates", alg, trial+1)
			}
			other := func(k int) int { return 1 + (c-1+k)%m.hosts }
			return other(1 + trial%(m.hosts-1)), c, other(1 + (trial+1)%(m.hosts-1))
		}
		r.recoveryCoordinator[alg] = idle("coordinator", 0, coordinatorTrial)
		// The same, each trial a lease (and a margin) after the last
		// restart: a member restarted less than a lease before may hold
		// a lease of its previous run that no successor can know of, and
		// the row above always has one (its previous trial's victim).
		r.recoverySettled[alg] = idle("coordinator, no restart within a lease", mutexLeaseTTL+500*time.Millisecond, coordinatorTrial)
	}
}

func (m *mutexBench) etcdRecovery(r *mutexResults) {
	m.b.Helper()
	var took []time.Duration
	h := m.lab.Host(etcdHost)
	for trial := range *mutexTrials {
		// The holder: `etcdctl lock --ttl 3`, whose session is the lease.
		holder := h.Start(m.b, "etcdctl-lock", []string{m.etcdctl, "--endpoints", fmt.Sprintf("127.0.0.1:%d", etcdPort),
			"lock", "--ttl", strconv.Itoa(int(mutexLeaseTTL / time.Second)), "recover", "--", "sleep", "600"}, nil)
		m.sleep(500 * time.Millisecond) // granted and running
		lease := m.etcdLease(time.Minute)
		got := make(chan time.Time, 1)
		go func() {
			rel, err := m.etcdAcquire(m.ctx, lease, "recover")
			if err != nil {
				m.logf("recovery: etcd waiter: %v", err)
			} else {
				defer rel()
			}
			got <- time.Now()
		}()
		// The session's keepalive goes every TTL/3 (1 s) from its start:
		// a kill uniform over a second is at a uniform phase of it, as
		// mutexd's holder is killed at a uniform phase of its renewals.
		m.sleep(100*time.Millisecond + rand.N(mutexLeaseTTL/3))
		killAt := time.Now()
		holder.Kill()
		var at time.Time
		select {
		case at = <-got:
		case <-time.After(failoverLimit):
			m.fatalf("etcd recovery trial %d: the waiter was not granted within %v", trial+1, failoverLimit)
		}
		took = append(took, at.Sub(killAt))
		m.logf("etcd recovery %d/%d: holder killed; waiter granted after %s", trial+1, *mutexTrials, Millis(at.Sub(killAt)))
	}
	r.recovery["etcd"] = Summarize(took)
	m.sampleRSS()
}

func usSummary(s Summary) string {
	return fmt.Sprintf("p50 %s  p99 %s  max %s (n=%d)", Micros(s.P50), Micros(s.P99), Micros(s.Max), s.N)
}

// Micros formats d in milliseconds with three decimals: "0.412 ms".
func Micros(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

func (m *mutexBench) table(r *mutexResults, algs mutex.Registry) *Table {
	systems := append(algs.Names(), "etcd")
	names := systems[:len(systems)-1]
	t := &Table{Title: "mutexd's algorithms against etcd 3.4 (lock)", Systems: systems}
	pair := func(s Summary) string {
		if s.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s", Micros(s.P50), Micros(s.P99))
	}
	ms := func(s Summary) string {
		if s.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s", Millis(s.P50), Millis(s.Max))
	}
	row := func(metric, target string, cell func(sys string) string) {
		cells := make([]string, len(systems))
		for i, sys := range systems {
			cells[i] = cell(sys)
		}
		t.Row(metric, target, cells...)
	}
	algOnly := func(f func(alg string) string) func(string) string {
		return func(sys string) string {
			if sys == "etcd" {
				return "-"
			}
			return f(sys)
		}
	}
	cost := func(alg string) mutex.Factory { f, _ := algs.Lookup(alg); return f }
	t.Section("messages per entry (sent by all daemons, heartbeats excluded; a lamport_requeue frame carries two)")
	row("the notes' comparison table", "", algOnly(func(a string) string { return cost(a).Cost.Text }))
	row(fmt.Sprintf("  at %d hosts, notes / measured uncontended", mutexHosts), "= notes", algOnly(func(a string) string {
		return fmt.Sprintf("%s / %.2f", cost(a).Cost.Range(mutexHosts), r.perEntry[a])
	}))
	if *mutexCount > 0 {
		row(fmt.Sprintf("  at %d hosts, notes / measured uncontended", *mutexCount), "= notes", algOnly(func(a string) string {
			return fmt.Sprintf("%s / %.2f", cost(a).Cost.Range(*mutexCount), r.perEntryMany[a])
		}))
	}
	row(fmt.Sprintf("  at %d hosts, contended (%d clients)", mutexHosts, *mutexClients), "", algOnly(func(a string) string {
		return fmt.Sprintf("%.2f", r.contendedPerEntry[a])
	}))
	row("synchronisation delay (notes)", "", algOnly(func(a string) string { return cost(a).Cost.Delay }))
	t.Section("uncontended acquire+release, p50 / p99")
	// Issue 15's target is every algorithm ahead of etcd, measured in
	// this run; issue 34's bounds the p50 itself.
	row("API, back to back on one host", fmt.Sprintf("p50 < etcd's and <= %s; tokenring <= %s", Micros(targetAcquireP50), Micros(targetRingP50)), func(sys string) string {
		if sys == "etcd" {
			return pair(r.api[sys])
		}
		bound := targetAcquireP50
		if sys == "tokenring" {
			bound = targetRingP50
		}
		return Verdict(pair(r.api[sys]), r.api[sys].P50 < r.api["etcd"].P50 && r.api[sys].P50 <= bound)
	})
	row("API, one every 300 ms", "", func(sys string) string { return pair(r.spaced[sys]) })
	row("API, alternating two hosts", "", func(sys string) string { return pair(r.moving[sys]) })
	row("CLI (lock NAME -- true, with ip netns exec)", fmt.Sprintf("p50 <= %s", Millis(targetCLIP50)), func(sys string) string {
		if sys == "etcd" {
			return pair(r.cli[sys])
		}
		return Verdict(pair(r.cli[sys]), r.cli[sys].P50 <= targetCLIP50)
	})
	t.Section(fmt.Sprintf("contended: %d clients, one lock, %v", *mutexClients, *mutexWindow))
	row("handoffs/s", fmt.Sprintf(">= %.0f", targetHandoffs), func(sys string) string {
		if sys == "etcd" {
			return fmt.Sprintf("%.0f", r.handoffs[sys])
		}
		return Verdict(fmt.Sprintf("%.0f", r.handoffs[sys]), r.handoffs[sys] >= targetHandoffs)
	})
	row("wait p50 / p99", "", func(sys string) string { return pair(r.wait[sys]) })
	t.Section("cost")
	row("idle traffic per node, payload / eth0", "< 1000 B/s", algOnly(func(a string) string {
		return fmt.Sprintf("%.0f / %.0f B/s", r.idlePayload[a], r.idleIf[a])
	}))
	if *mutexFaults {
		m.faultRows(t, r, systems, row, ms)
	}
	t.Row("RSS (max, any algorithm)", "<= 20 MB", append([]string{Verdict(MB(m.rss["mutexd"]), m.rss["mutexd"] <= targetRSS)},
		append(make([]string, len(names)-1), MB(m.rss["etcd"])+" (server)")...)...)
	flags := "defaults (lease 3s, --heartbeat 1s: a member silent 3.5 s is down; the voting cores beat every 1.5 s)"
	if *mutexFlags != "" {
		flags = "flags " + *mutexFlags
	}
	t.Note("mutexd: %d namespace hosts, one cluster per algorithm in turn, %s; clients on the daemon's host, HTTP on its unix socket", mutexHosts, flags)
	t.Note("etcd: one node on h6, clients on its 127.0.0.1 through the v3lock JSON gateway (lease per client), etcdctl lock for the CLI")
	for _, a := range names {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(r.perEntryKind[a])) {
			if v := r.perEntryKind[a][k]; v >= 0.005 {
				kinds = append(kinds, fmt.Sprintf("%s %.2f", k, v))
			}
		}
		t.Note("%s contended: %d grants; frames per entry by kind: %s", a, r.contendedGrants[a], strings.Join(kinds, ", "))
	}
	t.Note("messages per entry, uncontended: two rounds of an entry at each host in turn (the lock moves every time); the kinds that also flow in a second without entries (heartbeats, a coordinator's beats and syncs, its election's heartbeats) are idle traffic, shown in its own row, and not counted; an entry that costs no message (at a central coordinator's own host) is logged and left out of the mean")
	t.Note("the CLIs run under ip netns exec, which alone takes %s (p50)", Micros(r.netnsExec.P50))
	if *mutexFaults {
		t.Note("recovery: a waiter queued at the next host; mutexd's holder daemon, or etcd's holder session (etcdctl lock --ttl %d), SIGKILLed at a uniform random phase of its renewals (each renews every third of the lease: mutexd's client through the renew call, etcd's session by its keepalive), so both have two thirds to all of a lease left; lock free: nobody holds it, a client asks at the next host just after the kill", int(mutexLeaseTTL/time.Second))
	} else {
		t.Note("no fault trials (-mutex.faults=false, bench.sh --no-faults): recovery not measured")
	}
	return t
}

// buildBinary returns DIR/name if dir is set, or builds ../../../cmd/name.
func buildBinary(b *testing.B, tmp, dir, name string) string {
	if dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("-%s.bin: %v", name, err)
		}
		return p
	}
	p := filepath.Join(tmp, name)
	if out, err := exec.Command("go", "build", "-o", p, "../../../cmd/"+name).CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return p
}

// faultRows are the rows of the fault trials (-mutex.faults).
func (m *mutexBench) faultRows(t *Table, r *mutexResults, systems []string, row func(metric, target string, cell func(sys string) string), ms func(Summary) string) {
	row("recovery after SIGKILL of the holder, p50 / max", "p50 <= etcd's (its session TTL = the lease)", func(sys string) string {
		rec := r.recovery[sys]
		if sys == "etcd" {
			return ms(rec)
		}
		return Verdict(ms(rec), rec.P50 <= r.recovery["etcd"].P50)
	})
	row("  of the last holder, lock free", "", func(sys string) string { return ms(r.recoveryIdle[sys]) })
	row("  of a bystander, lock free", "", func(sys string) string { return ms(r.recoveryBystander[sys]) })
	if len(r.recoveryCoordinator) > 0 {
		row("  of the coordinator, lock free, a member restarted < 1 s before", "", func(sys string) string {
			rec, ok := r.recoveryCoordinator[sys]
			if !ok {
				return "-"
			}
			return ms(rec)
		})
		row("  the same, no member restarted within a lease", fmt.Sprintf("max <= %s", Millis(targetCoordinatorKill)), func(sys string) string {
			rec, ok := r.recoverySettled[sys]
			if !ok {
				return "-"
			}
			return Verdict(ms(rec), rec.Max <= targetCoordinatorKill)
		})
	}
	m.cutOffRows(t, r, systems)
	m.linkCutRows(t, r, systems)
	m.makerKillRows(t, r, systems)
}

// keepLogs creates dir (-mutex.keep) and copies the lab's process logs
// into it when the benchmark ends, before the lab's teardown removes them
// (cleanups run last registered first). The traces are written there
// directly by each daemon (start).
func (m *mutexBench) keepLogs(dir string) {
	m.b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		m.b.Fatalf("-mutex.keep: %v", err)
	}
	m.logf("keeping the daemons' logs and traces in %s", dir)
	m.b.Cleanup(func() {
		logs, err := filepath.Glob(filepath.Join(m.lab.Dir(), "*.log"))
		if err != nil {
			m.b.Errorf("-mutex.keep: %v", err)
			return
		}
		for _, p := range logs {
			b, err := os.ReadFile(p)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644)
			}
			if err != nil {
				m.b.Errorf("-mutex.keep: %v", err)
			}
		}
	})
}
