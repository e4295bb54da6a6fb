package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

func (e *electBench) etcdEndpoint() string {
	return fmt.Sprintf("%s:%d", e.lab.Host(etcdHost).Addr(), etcdPort)
}

// startEtcd runs a single-node etcd on host 6 with its default timing
// (heartbeat 100 ms, election 1 s: minimum lease 2 s).
func (e *electBench) startEtcd() {
	e.b.Helper()
	h := e.lab.Host(etcdHost)
	client := fmt.Sprintf("http://%s", e.etcdEndpoint())
	peer := "http://127.0.0.1:2380"
	e.etcdProc = h.Start(e.b, "etcd", []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		e.etcd, "--name", "bench", "--data-dir", filepath.Join(e.dir, "etcd"),
		"--listen-client-urls", client + ",http://127.0.0.1:2379", "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "bench=" + peer,
		"--logger", "zap", "--log-level", "warn"}, nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := h.Run(e.b, e.etcdctl, "--endpoints", "127.0.0.1:2379", "endpoint", "health"); err == nil {
			break
		}
		if e.etcdProc.Exited() || time.Now().After(deadline) {
			e.fatalf("etcd did not become healthy:\n%s", e.etcdProc.Output())
		}
		e.sleep(100 * time.Millisecond)
	}
	out, _ := h.Run(e.b, e.etcd, "--version")
	e.logf("etcd up on %s (%s)", e.etcdEndpoint(), strings.Join(strings.Fields(out), " "))
}

// etcdCampaign is one client campaigning in the election.
type etcdCampaign struct {
	lease int64
	proc  *labnet.Proc // `etcdctl lease keep-alive`: the client's liveness
}

type etcdElection struct {
	e       *electBench
	clients map[int]*etcdCampaign
	obs     chan observed
	lead    string // the proposal the observer last reported
	changes int    // leader changes the observer reported
}

type observed struct {
	at  time.Time
	o   Observation
	err error
}

func (e *electBench) etcdctlArgs(args ...string) []string {
	return append([]string{e.etcdctl, "--endpoints", e.etcdEndpoint()}, args...)
}

// campaign joins the election as client i from host i: the steps of etcd's
// concurrency.Election.Campaign (a lease kept alive, then the proposal put
// under the election prefix with it), with the lease at etcd's minimum TTL,
// which `etcdctl elect` cannot set.
func (el *etcdElection) campaign(i int) {
	e := el.e
	e.b.Helper()
	h := e.lab.Host(i)
	out, err := h.Run(e.b, e.etcdctlArgs("lease", "grant", strconv.Itoa(int(EtcdMinLeaseTTL/time.Second)))...)
	if err != nil {
		el.e.fatalf("client %d: %v", i, err)
	}
	lease, ttl, err := ParseLeaseGrant(out)
	if err != nil {
		el.e.fatal(err)
	}
	if ttl != EtcdMinLeaseTTL {
		el.e.fatalf("client %d: etcd granted a %v lease, want %v", i, ttl, EtcdMinLeaseTTL)
	}
	hex := strconv.FormatInt(lease, 16)
	p := h.Start(e.b, fmt.Sprintf("etcd-client-%d", i), e.etcdctlArgs("lease", "keep-alive", hex), nil)
	if _, err := h.Run(e.b, e.etcdctlArgs("put", "--lease="+hex, EtcdElectionKey(etcdElectionName, lease), strconv.Itoa(i))...); err != nil {
		el.e.fatalf("client %d: %v", i, err)
	}
	el.clients[i] = &etcdCampaign{lease: lease, proc: p}
}

// etcdElection starts the observer and the five campaigners, in order, so
// client 1 leads.
func (e *electBench) etcdElection() *etcdElection {
	e.b.Helper()
	el := &etcdElection{e: e, clients: map[int]*etcdCampaign{}, obs: make(chan observed, 1024)}
	// The observer is read through a pipe, not a log file, so that its
	// reports are timed as they arrive.
	cmd := exec.Command("ip", "netns", "exec", e.lab.Host(etcdHost).Namespace(),
		e.etcdctl, "--endpoints", "127.0.0.1:2379", "elect", "--listen", "-w", "json", etcdElectionName)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.fatal(err)
	}
	e.b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			at := time.Now()
			o, err := ParseObservation(sc.Bytes())
			el.obs <- observed{at: at, o: o, err: err}
		}
		close(el.obs)
	}()
	for i := 1; i <= electHosts; i++ {
		el.campaign(i)
	}
	o := el.next(10 * time.Second)
	if o.o.Proposal != "1" {
		e.fatalf("etcd: first leader is %q, want client 1 (the oldest campaign)", o.o.Proposal)
	}
	el.lead = o.o.Proposal
	return el
}

// campaigns counts the keys under the election prefix: the campaigns whose
// lease is still alive.
func (el *etcdElection) campaigns() int {
	e := el.e
	e.b.Helper()
	out, err := e.lab.Host(etcdHost).Run(e.b, e.etcdctl, "--endpoints", "127.0.0.1:2379", "get", "--prefix", "--keys-only", etcdElectionName+"/")
	if err != nil {
		e.fatal(err)
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, etcdElectionName+"/") {
			n++
		}
	}
	return n
}

// next returns the observer's next report.
func (el *etcdElection) next(within time.Duration) observed {
	e := el.e
	e.b.Helper()
	select {
	case o, ok := <-el.obs:
		if !ok {
			el.e.fatal("etcd: the observer (etcdctl elect --listen) exited")
		}
		if o.err != nil {
			el.e.fatal(o.err)
		}
		return o
	case <-time.After(within):
		el.e.fatalf("etcd: the observer reported nothing within %v", within)
	case <-e.ctx.Done():
		el.e.fatal("interrupted: cleaning up the lab")
	}
	panic("unreachable")
}

// drain consumes the reports already received and counts leader changes.
func (el *etcdElection) drain() {
	for {
		select {
		case o, ok := <-el.obs:
			if !ok {
				el.e.fatal("etcd: the observer (etcdctl elect --listen) exited")
			}
			if o.err != nil {
				el.e.fatal(o.err)
			}
			if o.o.Proposal != el.lead {
				el.changes++
				el.lead = o.o.Proposal
				el.e.logf("etcd: observer: leader is now client %s", el.lead)
			}
		default:
			return
		}
	}
}

func (e *electBench) etcdPhase(el *etcdElection) *systemResult {
	e.b.Helper()
	r := &systemResult{}
	e.sleep(*electSettle)
	e.logf("etcd: 5 clients campaigning, client %s leads; measuring idle traffic for %v", el.lead, *electTraffic)

	server := e.etcdProc.PID()
	srvBefore := mustNetDev(e.b, server)
	cliBefore := map[int]IfCounters{}
	for i, c := range el.clients {
		cliBefore[i] = mustNetDev(e.b, c.proc.PID())
	}
	start := time.Now()
	e.sleep(*electTraffic)
	r.idle = time.Since(start)
	d := mustNetDev(e.b, server).Sub(srvBefore)
	r.leaderIf = d.RxBytes + d.TxBytes
	var sum uint64
	for i, c := range el.clients {
		d := mustNetDev(e.b, c.proc.PID()).Sub(cliBefore[i])
		sum += d.RxBytes + d.TxBytes
	}
	r.otherIf = sum / electHosts
	el.rss(r)

	var took []time.Duration
	for trial := 1; trial <= *electTrials; trial++ {
		e.randomPhase()
		el.drain()
		lead, err := strconv.Atoi(el.lead)
		if err != nil || el.clients[lead] == nil {
			e.fatalf("etcd: the observer reports leader %q, not one of the clients", el.lead)
		}
		killAt := time.Now()
		if err := el.clients[lead].proc.Kill(); err != nil {
			e.fatal(err)
		}
		var o observed
		for o = el.next(failoverLimit); o.o.Proposal == el.lead; o = el.next(failoverLimit) {
		}
		d := o.at.Sub(killAt)
		took = append(took, d)
		el.lead = o.o.Proposal
		e.logf("etcd: trial %d/%d: client %d killed, observer saw client %s after %s", trial, *electTrials, lead, el.lead, Millis(d))
		el.campaign(lead) // back in the election, last in line
		e.sleep(*electSettle)
	}
	r.failover = Summarize(took)
	el.rss(r)
	e.logf("etcd: failover %s", r.failover)
	return r
}

func (el *etcdElection) rss(r *systemResult) {
	r.rssMax = max(r.rssMax, mustRSS(el.e.b, el.e.etcdProc.PID()))
	for _, c := range el.clients {
		if c.proc.Exited() {
			continue // its lease expired (under loss): nothing to measure
		}
		r.rssClientMax = max(r.rssClientMax, mustRSS(el.e.b, c.proc.PID()))
	}
}
