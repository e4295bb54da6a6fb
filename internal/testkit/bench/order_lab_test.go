package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	orderRun     = flag.Bool("order", false, "run BenchmarkOrder, a lab measurement of a few minutes (scripts/bench.sh order sets it)")
	orderSamples = flag.Int("order.samples", 200, "multicasts per order for the latency figures")
	orderBurst   = flag.Int("order.burst", 200, "multicasts per host for the throughput figures")
	orderTrials  = flag.Int("order.trials", 5, "SIGKILLs of the sequencer")
	orderBin     = flag.String("order.bin", "", "`DIR` holding orderd (default: go build it from ../../../cmd/orderd)")
	orderPrefix  = flag.String("order.prefix", "", "lab namespace `PREFIX` (default: random)")
)

const (
	orderHosts = 5 // orderd on h1..h5; etcd on h6, then a 5-member etcd cluster on h6..h10
	orderPort  = 7600
)

// The etcd columns of the order table: one node, then a cluster of
// orderHosts members with the puts sent to its leader, then to a follower
// (which forwards them to the leader, as an orderd member forwards a total
// order send to the sequencer).
const (
	etcdOne      = "etcd, 1 node"
	etcdLeader   = "etcd x5, put at leader"
	etcdFollower = "etcd x5, put at follower"
)

// BenchmarkOrder measures orderd's ordered multicast on five namespace
// hosts against etcd 3.4 used as an ordered replicated log (a put is a
// multicast, a watch on the prefix its delivery): one node on h6, and a
// cluster of five members on h6-h10, in one lab, and prints the table:
//
//   - frames per multicast for each order at 5 and 16 members, counted
//     exactly on the simulator (no loss), beside the notes' figures;
//   - delivery latency, from the send call at h1 to the delivery at every
//     member (the namespaces share one clock, so a delivery's own time
//     stamp against the send's is exact), p50/p99, sends spaced 5 ms;
//   - multicasts/s with every host sending back to back;
//   - the sequencer's recovery: from its SIGKILL to the completion of an
//     apply issued at once on another host.
func BenchmarkOrder(b *testing.B) {
	if !*orderRun {
		b.Skip("BenchmarkOrder runs for minutes in a namespace lab: run it with scripts/bench.sh order (or pass -order)")
	}
	labnet.Require(b)
	etcdBin, etcdctlBin := etcdBinaries(b, "order")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := shortTempDir(b)
	lab := benchLab(b, etcdHost+orderHosts-1, *orderPrefix)
	o := &orderBench{
		mutexBench: &mutexBench{electBench: &electBench{b: b, ctx: ctx, lab: lab, dir: dir, etcd: etcdBin, etcdctl: etcdctlBin}},
		orderd:     buildBinary(b, dir, *orderBin, "orderd"),
		procs:      map[int]*labnet.Proc{},
	}
	loadStart := loadAverage()
	o.logf("lab %s up: orderd on h1-h%d, etcd on h%d, then etcd x%d on h%d-h%d; load average %s", lab.Prefix(), orderHosts, etcdHost, orderHosts, etcdHost, etcdHost+orderHosts-1, loadStart)
	names := []string{"fifo", "causal", "total (sequencer)", "total (lamport)", etcdOne, etcdLeader, etcdFollower}
	t := &Table{Title: "orderd against etcd 3.4 (put + watch as an ordered log)", Systems: names}

	t.Section("frames per multicast (simulator, no loss): protocol + stream/append acks / the notes' protocol count")
	for _, n := range []int{5, 16} {
		for _, burst := range []bool{false, true} {
			var cells []string
			for _, c := range orderCounts(n) {
				proto, acks := framesPerMulticast(n, c.o, c.total, burst)
				cells = append(cells, fmt.Sprintf("%.1f + %.1f / %d", proto, acks, c.notes))
			}
			how := "one at a time"
			if burst {
				how = "20 at once"
			}
			target := "= notes"
			if !burst {
				// The commit point goes alone, not acknowledged (issue 34).
				target = fmt.Sprintf("= notes; sequencer <= 3(N-1)+1 = %d in all", 3*(n-1)+1)
			}
			t.Row(fmt.Sprintf("N=%d, %s", n, how), target, append(cells, "-", "-", "-")...)
		}
	}

	var wcells []string
	for _, c := range orderCounts(orderHosts) {
		wcells = append(wcells, fmt.Sprintf("%.1f", writesPerMulticast(orderHosts, c.o, c.total)))
	}
	t.Row(fmt.Sprintf("state writes (fdatasyncs), all %d members, 5 ms apart", orderHosts), "", append(wcells, "-", "-", "-")...)

	rtt := o.lanRTT(1, 2, 200)
	o.logf("LAN round trip h1-h2 (UDP, user space to user space): %v", rtt)
	o.cluster("sequencer")
	lat := map[string]Summary{}     // seen by a client of each member (etcd: its watcher)
	stamped := map[string]Summary{} // the deliveries' own stamps
	emitted := map[string]Summary{} // the members' events, as they stamped them
	thr := map[string]float64{}
	cpu := map[string]time.Duration{} // all daemons' CPU per multicast, the latency run
	for _, ord := range []order.Order{order.FIFO, order.Causal, order.TotalOrder} {
		name := ord.String()
		if ord == order.TotalOrder {
			name = "total (sequencer)"
		}
		lat[name], emitted[name], stamped[name], cpu[name] = o.latency(ord)
		thr[name] = o.throughput(ord)
		o.logf("%s: latency seen %v; emitted %v; stamped %v; %.0f multicasts/s", name, lat[name], emitted[name], stamped[name], thr[name])
		if ord == order.TotalOrder {
			o.logCounters()
		}
	}
	path := o.tracePath(o.waitSequencer(false), 40)
	fsync := o.fdatasyncTime(100, 1, true)
	fsyncs := o.fdatasyncTime(40, orderHosts-1, true)
	fsyncGrow := o.fdatasyncTime(100, 1, false)
	o.logf("fdatasync of a 200-byte record here, into allocated space: %v; %d at once: %v; appended, the file growing: %v", fsync, orderHosts-1, fsyncs, fsyncGrow)
	rec := o.recovery()
	o.stopAll()
	o.cluster("lamport")
	lat["total (lamport)"], emitted["total (lamport)"], stamped["total (lamport)"], cpu["total (lamport)"] = o.latency(order.TotalOrder)
	thr["total (lamport)"] = o.throughput(order.TotalOrder)
	o.logf("lamport: latency seen %v; emitted %v; stamped %v; %.0f multicasts/s", lat["total (lamport)"], emitted["total (lamport)"], stamped["total (lamport)"], thr["total (lamport)"])
	o.stopAll()

	o.startEtcd()
	o.etcdHTTP = o.etcdClient()
	lat[etcdOne], thr[etcdOne] = o.etcdLog(o.etcdHTTP, []*http.Client{o.etcdHTTP})
	o.logf("%s: latency %v, %.0f puts/s", etcdOne, lat[etcdOne], thr[etcdOne])
	if err := o.etcdProc.Kill(); err != nil {
		o.fatal(err)
	}
	o.etcdHTTP.CloseIdleConnections()

	var members []int
	for i := range orderHosts {
		members = append(members, etcdHost+i)
	}
	ec := o.startEtcdCluster(members)
	leader, err := ec.leader(o.ctx)
	if err != nil {
		o.fatal(err)
	}
	follower := members[0]
	if follower == leader {
		follower = members[1]
	}
	var watchers []*http.Client
	for _, i := range members {
		watchers = append(watchers, ec.clients[i])
	}
	lat[etcdLeader], thr[etcdLeader] = o.etcdLog(ec.clients[leader], watchers)
	o.logf("%s (h%d): latency %v, %.0f puts/s", etcdLeader, leader, lat[etcdLeader], thr[etcdLeader])
	lat[etcdFollower], thr[etcdFollower] = o.etcdLog(ec.clients[follower], watchers)
	o.logf("%s (h%d): latency %v, %.0f puts/s", etcdFollower, follower, lat[etcdFollower], thr[etcdFollower])
	if now, err := ec.leader(o.ctx); err != nil || now != leader {
		o.fatalf("etcd's leader changed during the measurement (h%d, now h%d: %v): run again", leader, now, err)
	}
	ec.stop()
	loadEnd := loadAverage()

	t.Section("delivery latency, send call to the delivery seen by a client of every member (5 hosts; etcd: its watchers)")
	row := func(metric, target string, f func(string) string) {
		var cells []string
		for _, n := range names {
			cells = append(cells, f(n))
		}
		t.Row(metric, target, cells...)
	}
	// The sequencer's critical path: 2 round trips of messages and one
	// fdatasync (the members' entry; the sequencer writes its own while
	// its Append travels), against what the traces measured. Issue 34's
	// goal: p50 within 2 x that floor, and ahead of etcd's single node.
	critical := 2*rtt.P50 + fsync.P50
	row("p50", fmt.Sprintf("sequencer <= 2 x floor (%v), < etcd 1 node", (2*critical).Round(time.Microsecond)), func(n string) string { return Millis(lat[n].P50) })
	row("p99", "", func(n string) string { return Millis(lat[n].P99) })
	row("p50 / p99 stamped (the delivering frame's arrival)", "", func(n string) string {
		if _, ok := stamped[n]; !ok {
			return "-"
		}
		return Millis(stamped[n].P50) + " / " + Millis(stamped[n].P99)
	})
	row("p50 / p99 emitted (the member's event, before its events stream)", "", func(n string) string {
		if _, ok := emitted[n]; !ok {
			return "-"
		}
		return Millis(emitted[n].P50) + " / " + Millis(emitted[n].P99)
	})
	row("sequencer's critical path: 2 LAN round trips (4 one-way) + 1 fdatasync (disk)", "4 one-way + 1 fdatasync", func(n string) string {
		if n != "total (sequencer)" {
			return "-"
		}
		return fmt.Sprintf("%v = 2 x %v + %v", critical.Round(time.Microsecond), rtt.P50.Round(time.Microsecond), fsync.P50.Round(time.Microsecond))
	})
	floorRTTs := "-"
	if rtt.P50 > 0 {
		floorRTTs = fmt.Sprintf("%.0f", 2*float64(critical)/float64(rtt.P50))
	}
	row("p50 in LAN round trips (of which the fdatasync)", "sequencer <= "+floorRTTs+" (2 x floor)", func(n string) string {
		if n != "total (sequencer)" && n != etcdOne || rtt.P50 <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f (%.0f)", float64(lat[n].P50)/float64(rtt.P50), float64(fsync.P50)/float64(rtt.P50))
	})
	row(fmt.Sprintf("fdatasync p50: alone / %d at once (one disk for all hosts) / alone, file growing", orderHosts-1), "", func(n string) string {
		if n != "total (sequencer)" {
			return "-"
		}
		return fmt.Sprintf("%v / %v / %v", fsync.P50.Round(time.Microsecond), fsyncs.P50.Round(time.Microsecond), fsyncGrow.P50.Round(time.Microsecond))
	})
	t.Section(fmt.Sprintf("the sequencer's path, one multicast at a time from h1 (protocol traces of every host, p50 of %d)", path.n))
	for _, st := range path.stages {
		row(st.name, "", func(n string) string {
			if n != "total (sequencer)" {
				return "-"
			}
			return fmt.Sprintf("%.3f ms", Summarize(st.samples).P50.Seconds()*1e3)
		})
	}
	row("send call to delivery, every member", "", func(n string) string {
		if n != "total (sequencer)" {
			return "-"
		}
		return Millis(path.total.P50)
	})
	row("send call to its answer (committed)", "", func(n string) string {
		if n != "total (sequencer)" {
			return "-"
		}
		return Millis(path.reply.P50)
	})
	row(fmt.Sprintf("CPU per multicast, all %d daemons (the latency run; 10 ms ticks)", orderHosts), "", func(n string) string {
		if d, ok := cpu[n]; ok {
			return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
		}
		return "-"
	})
	t.Section("throughput, 5 hosts sending back to back")
	row("multicasts/s", "sequencer >= 2000", func(n string) string { return fmt.Sprintf("%.0f", thr[n]) })
	t.Section("sequencer SIGKILLed: until an apply at another host completes")
	row(fmt.Sprintf("p50 / max of %d", rec.N), "", func(n string) string {
		if n != "total (sequencer)" {
			return "-"
		}
		return Millis(rec.P50) + " / " + Millis(rec.Max)
	})
	t.Note("LAN RTT: UDP echo h1 -> h2 -> h1 between two sockets in user space, p50 %v p99 %v over %d; the sequencer's path is 2 of them (h1 -> sequencer -> members -> sequencer -> members) plus 1 fdatasync (the members' entry; the sequencer's runs while its Append travels, the submission is not written, and a member announces the delivery before its record of it is written), p50 %v p99 %v here: the disk is most of the path, and what keeps it above 2 round trips; etcd's single node pays 1 fdatasync and no network hop", rtt.P50.Round(time.Microsecond), rtt.P99.Round(time.Microsecond), rtt.N, fsync.P50.Round(time.Microsecond), fsync.P99.Round(time.Microsecond))
	t.Note("latency: %d multicasts per order from h1, 5 ms apart, each call's start to the delivery's event read by a client following each member's events stream (GET /v1/events), at all five members, as etcd's: the put's start to the watch event read by a watcher of each member (one node: one watcher); one control client per host kept across calls, as etcd's HTTP client. Stamped: the delivery's own time stamp (the shared clock), the kernel's receive stamp of the frame that delivered it, before the member's loop took it. Emitted: the time the member's daemon gave the event (after its loop's wake-up, batch and core; for FIFO, causal and Lamport after the delivery's fdatasync, for the sequencer's total order before it), before its events stream encoded and flushed it to the client", *orderSamples)
	t.Note("frames: the protocol's own (stream records, Lamport acks, submissions, Appends), then (+) the reliability layer's acknowledgements (stream acks, Append acks), against the notes' count: FIFO/causal N-1, sequencer 1 + (N-1), Lamport N-1 + N(N-1) (the message and every member's multicast ack); the election's frames are not counted")
	t.Note("sequencer: a number is committed once a majority holds it, so that a new sequencer continues the order; the commit point rides on the next Append (20 at once), and an idle sequencer sends it alone, N-1 frames more, not acknowledged (one at a time: 3(N-1)+1 from a member, 3(N-1) from the sequencer itself)")
	t.Note("etcd 3.4, the same binary and flags for both: one node on h6 (no replication: its best case; one fdatasync, no network hop), the puts and the watch through its JSON gateway from h6; then a cluster of %d members on h%d-h%d (peers over the lab's network, each its own data dir), a watcher on every member (its gateway, from its host), the puts from a client on the leader's host (h%d) to the leader, then on a follower's host (h%d) to that follower, which forwards them to the leader; latency at all %d watchers, as orderd's at all members; a put is answered once committed on a majority (its fdatasync at the leader and 2 followers)", orderHosts, members[0], members[len(members)-1], leader, follower, orderHosts)
	t.Note("disk: every host's data (orderd's state dirs, etcd's data dirs) is under one temp dir %s: the lab's hosts share one disk. fdatasync of a 200-byte record, p50 / p99: %v / %v written into space allocated ahead (as orderd's log writes: etcd's WAL preallocates its segments too), %v / %v appended to a file that grows (as orderd's log did before: ext4 commits the new size through its journal on every fdatasync)", o.dir, fsync.P50.Round(time.Microsecond), fsync.P99.Round(time.Microsecond), fsyncGrow.P50.Round(time.Microsecond), fsyncGrow.P99.Round(time.Microsecond))
	t.Note("load average (1, 5, 15 min): %s at the start, %s at the end", loadStart, loadEnd)
	if err := t.Write(os.Stdout); err != nil {
		b.Fatal(err)
	}
}

type orderBench struct {
	*mutexBench
	orderd string
	procs  map[int]*labnet.Proc
	run    int // clusters started, for fresh state directories
	// etcdRun numbers etcdLog's runs: each puts under a prefix of its own.
	etcdRun int
	// clients are the control clients of the running daemons, kept
	// across calls as etcd's HTTP client is (a connection per call
	// costs orderd about 0.4 ms that etcd does not pay).
	clients map[int]*ctl.Client
}

// client is host i's control client, made once per daemon started.
func (o *orderBench) client(i int) *ctl.Client {
	if o.clients == nil {
		o.clients = map[int]*ctl.Client{}
	}
	c, ok := o.clients[i]
	if !ok {
		c = ctl.NewClient(o.control(i), "orderd")
		o.clients[i] = c
	}
	return c
}

// forget drops host i's client (its daemon is gone).
func (o *orderBench) forget(i int) {
	if c, ok := o.clients[i]; ok {
		c.Close()
		delete(o.clients, i)
	}
}

func (o *orderBench) control(i int) string { return filepath.Join(o.dir, fmt.Sprintf("o%d.sock", i)) }

func (o *orderBench) cluster(total string) {
	o.run++
	var members []string
	for j := 1; j <= orderHosts; j++ {
		members = append(members, fmt.Sprintf("%d=%s:%d", j, o.lab.Host(j).Addr(), orderPort))
	}
	for i := 1; i <= orderHosts; i++ {
		o.startHost(i, total, strings.Join(members, ","))
	}
	o.waitSequencer(total == "lamport")
}

func (o *orderBench) startHost(i int, total, members string) {
	argv := []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		o.orderd, "run", "--id", strconv.Itoa(i), "--members", members, "--total", total,
		"--control", o.control(i), "--state-dir", filepath.Join(o.dir, fmt.Sprintf("o%d-%d.state", o.run, i)),
		"--log-level", "warn"}
	argv = append(argv, keyArgs(o.b, o.dir)...)
	o.forget(i)
	o.procs[i] = o.lab.Host(i).Start(o.b, "orderd", argv, nil)
}

func (o *orderBench) stopAll() {
	for i, p := range o.procs {
		p.Kill()
		delete(o.procs, i)
		o.forget(i)
	}
}

func (o *orderBench) status(i int) *order.Status {
	var st struct {
		Node struct {
			Core order.Status `json:"core"`
		} `json:"node"`
	}
	ctx, cancel := context.WithTimeout(o.ctx, 5*time.Second)
	defer cancel()
	if err := ctl.NewClient(o.control(i), "orderd").Get(ctx, "/v1/status", &st); err != nil {
		return nil
	}
	return &st.Node.Core
}

// cpu is the CPU time (user + system) every running daemon has used.
func (o *orderBench) cpu() time.Duration {
	var sum time.Duration
	for _, p := range o.procs {
		d, err := CPUTime(p.PID())
		if err != nil {
			o.fatalf("CPU time of %s: %v", p.Name(), err)
		}
		sum += d
	}
	return sum
}

// logCounters logs each host's counters of the sequencer's repairs
// (resent Appends, commit points asked for or sent alone, stale or early
// frames): a throughput run that stalls shows in them.
func (o *orderBench) logCounters() {
	for i := 1; i <= orderHosts; i++ {
		st := o.status(i)
		if st == nil {
			o.logf("h%d: no status", i)
			continue
		}
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(st.Counters)) {
			kv = append(kv, fmt.Sprintf("%s=%d", k, st.Counters[k]))
		}
		o.logf("h%d counters: %s", i, strings.Join(kv, " "))
	}
}

// waitSequencer waits until every host answers and, with a sequencer,
// knows the same one, done recovering.
func (o *orderBench) waitSequencer(lamport bool) uint32 {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var seq uint32
		ok := true
		for i := range o.procs {
			st := o.status(i)
			switch {
			case st == nil:
				ok = false
			case lamport:
			case st.Sequencer == nil || st.Sequencer.Sequencer == 0 || seq != 0 && st.Sequencer.Sequencer != seq:
				ok = false
			default:
				seq = st.Sequencer.Sequencer
				if seq == uint32(i) && st.Sequencer.Role != "sequencer" {
					ok = false
				}
			}
		}
		if ok {
			return seq
		}
		if time.Now().After(deadline) {
			o.fatalf("orderd hosts did not agree on a sequencer within 60 s")
		}
		o.sleep(20 * time.Millisecond)
	}
}

func (o *orderBench) send(i int, ord order.Order, msg string, wait bool) (*order.Delivery, error) {
	var rep struct {
		Delivered *order.Delivery `json:"delivered"`
	}
	ctx, cancel := context.WithTimeout(o.ctx, 60*time.Second)
	defer cancel()
	err := o.client(i).Post(ctx, "/v1/send", map[string]any{"order": ord, "message": msg, "wait": wait}, &rep)
	return rep.Delivered, err
}

func (o *orderBench) log(i int) []order.Delivery {
	var ds []order.Delivery
	// Generous: on a loaded machine a daemon busy writing its state
	// answers late.
	ctx, cancel := context.WithTimeout(o.ctx, 60*time.Second)
	defer cancel()
	if err := o.client(i).Get(ctx, "/v1/log", &ds); err != nil {
		o.fatalf("log of h%d: %v", i, err)
	}
	return ds
}

// delivered waits until every host delivered every message of prefix and
// returns their deliveries by message.
func (o *orderBench) delivered(prefix string, want int) map[string][]order.Delivery {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		by := map[string][]order.Delivery{}
		for i := range o.procs {
			for _, d := range o.log(i) {
				if strings.HasPrefix(string(d.Message), prefix) {
					by[string(d.Message)] = append(by[string(d.Message)], d)
				}
			}
		}
		full := len(by) == want
		for _, ds := range by {
			full = full && len(ds) == len(o.procs)
		}
		if full {
			return by
		}
		if time.Now().After(deadline) {
			o.fatalf("%s: not every host delivered all %d messages within 3 minutes (%d seen)", prefix, want, len(by))
		}
		o.sleep(50 * time.Millisecond)
	}
}

// latency times multicasts from h1 to their delivery at every member
// twice: seen, when the delivery's event reaches a client following the
// member's events stream (as etcdLog times etcd's watch: what an
// application can act on, after the member wrote the delivery); and
// stamped, the delivery's own time stamp, which is the core's time for
// the step that delivered it: the kernel's receive stamp of the frame
// that brought it (the commit point), before the member's loop took the
// frame and wrote the delivery. emitted is the time the member's daemon
// gave the event (its loop's emit, before the events stream encodes and
// flushes it): seen - emitted is the stream and the client, emitted -
// stamped the member's loop (its wake-up, the batch, the core, and any
// write before the event).
//
// cpu is every daemon's CPU time per multicast over the sends (and 20 ms
// after the last, for its delivery), the events streams included, before
// the logs are read to check the run.
func (o *orderBench) latency(ord order.Order) (seen, emitted, stamped Summary, cpu time.Duration) {
	prefix := fmt.Sprintf("lat-%s-%d-", ord, o.run)
	w := o.watchDeliveries()
	sent := map[string]time.Time{}
	cpu0 := o.cpu()
	for k := range *orderSamples {
		msg := prefix + strconv.Itoa(k)
		sent[msg] = time.Now()
		if _, err := o.send(1, ord, msg, false); err != nil {
			o.fatalf("send: %v", err)
		}
		o.sleep(5 * time.Millisecond)
	}
	o.sleep(20 * time.Millisecond)
	cpu = (o.cpu() - cpu0) / time.Duration(len(sent))
	o.delivered(prefix, len(sent))
	arrived := w.stop()
	var seenAt, emits, stamps []time.Duration
	missing := 0
	for i := range o.procs {
		for _, d := range o.log(i) {
			at, ok := sent[string(d.Message)]
			if !ok {
				continue
			}
			if i == 1 && d.Order != order.TotalOrder {
				continue // FIFO and causal deliver to their sender inside the send call
			}
			stamps = append(stamps, d.At.Sub(at))
			if t, ok := arrived[i][d.Index]; ok {
				seenAt = append(seenAt, t.read.Sub(at))
				emits = append(emits, t.emitted.Sub(at))
			} else {
				missing++
			}
		}
	}
	if missing > 0 {
		o.logf("%s: %d deliveries not seen on the events streams (lost to a slow reader)", ord, missing)
	}
	return Summarize(seenAt), Summarize(emits), Summarize(stamps), cpu
}

// watchDeliveries follows every host's events stream (GET /v1/events)
// and notes when each delivery reaches the client; stop ends the streams
// and returns the arrivals, by host and delivery index.
type deliveryWatch struct {
	mu      sync.Mutex
	arrived map[int]map[uint64]arrival
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func (o *orderBench) watchDeliveries() *deliveryWatch {
	ctx, cancel := context.WithCancel(o.ctx)
	w := &deliveryWatch{arrived: map[int]map[uint64]arrival{}, cancel: cancel}
	for i := range o.procs {
		w.arrived[i] = map[uint64]arrival{}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			c := ctl.NewClient(o.control(i), "orderd")
			defer c.Close()
			_ = c.Stream(ctx, "/v1/events", func(raw json.RawMessage) error {
				at := time.Now()
				var e struct {
					Time  time.Time `json:"time"`
					Name  string    `json:"event"`
					Attrs struct {
						Index uint64 `json:"index"`
					} `json:"attrs"`
				}
				if json.Unmarshal(raw, &e) == nil && e.Name == order.EventDelivered {
					w.mu.Lock()
					w.arrived[i][e.Attrs.Index] = arrival{read: at, emitted: e.Time}
					w.mu.Unlock()
				}
				return nil
			})
		}()
	}
	o.sleep(200 * time.Millisecond) // the streams are open, as etcdLog's watch
	return w
}

// arrival is when a delivery's event was read by the client, and the
// time its daemon gave the event.
type arrival struct{ read, emitted time.Time }

func (w *deliveryWatch) stop() map[int]map[uint64]arrival {
	w.cancel()
	w.wg.Wait()
	return w.arrived
}

// The end is when the last delivery's event reached a client of every
// member's events stream, as etcdLog's throughput ends when every watcher
// read every event; the run is checked against every member's log after
// (untimed). Until 2026-12-06 the end was found by polling every log
// every 50 ms: a run of 300 multicasts (--burst 60) at 2,000/s takes 150
// ms, and one poll too early cost a third of it (the figures swung
// 400-2,500/s from run to run at the same load).
func (o *orderBench) throughput(ord order.Order) float64 {
	prefix := fmt.Sprintf("thr-%s-%d-", ord, o.run)
	w := o.watchDeliveries()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 1; i <= orderHosts; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < *orderBurst; {
				if _, err := o.send(i, ord, fmt.Sprintf("%sh%d-%d", prefix, i, k), false); err != nil {
					if strings.Contains(err.Error(), "in flight") || strings.Contains(err.Error(), "wait for") {
						time.Sleep(time.Millisecond) // the window is full: back-pressure
						continue
					}
					o.fatalf("send: %v", err)
				}
				k++
			}
		}()
	}
	wg.Wait()
	o.delivered(prefix, orderHosts**orderBurst)
	polled := time.Now()
	arrived := w.stop()
	var end time.Time
	missing := 0
	for i := range o.procs {
		for _, d := range o.log(i) {
			if !strings.HasPrefix(string(d.Message), prefix) {
				continue
			}
			if a, ok := arrived[i][d.Index]; !ok {
				missing++
			} else if a.read.After(end) {
				end = a.read
			}
		}
	}
	if missing > 0 || end.IsZero() {
		o.logf("%s throughput: %d deliveries not seen on the events streams; timed by polling the logs instead", ord, missing)
		end = polled
	}
	return float64(orderHosts**orderBurst) / end.Sub(start).Seconds()
}

// recovery SIGKILLs the sequencer and times an apply issued at once on
// host 1 (or 2): it completes when a new sequencer has recovered the log
// from a majority and numbered it.
func (o *orderBench) recovery() Summary {
	var samples []time.Duration
	members := make([]string, 0, orderHosts)
	for j := 1; j <= orderHosts; j++ {
		members = append(members, fmt.Sprintf("%d=%s:%d", j, o.lab.Host(j).Addr(), orderPort))
	}
	for k := range *orderTrials {
		seq := int(o.waitSequencer(false))
		client := 1
		if seq == 1 {
			client = 2
		}
		o.sleep(time.Duration(k*37%50) * time.Millisecond)
		o.procs[seq].Kill()
		o.forget(seq)
		start := time.Now()
		if _, err := o.send(client, order.TotalOrder, fmt.Sprintf("deposit %d", k+1), true); err != nil {
			o.fatalf("apply after the sequencer's SIGKILL: %v", err)
		}
		samples = append(samples, time.Since(start))
		o.logf("recovery %d: sequencer h%d killed, apply at h%d done in %v", k+1, seq, client, samples[len(samples)-1].Round(time.Millisecond))
		o.startHost(seq, "sequencer", strings.Join(members, ","))
		o.waitSequencer(false)
	}
	return Summarize(samples)
}

// etcdLog is etcd as an ordered log: puts under one prefix through put
// (a client on one host, to the member on its 127.0.0.1), a watch on the
// prefix through each of watchers (one per member, on its host)
// delivering them in revision order. Latency is a put's start to its
// event read by each watcher; throughput, puts from 5 senders back to
// back until every watcher has read every event.
func (o *orderBench) etcdLog(put *http.Client, watchers []*http.Client) (Summary, float64) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	ctx, cancel := context.WithCancel(o.ctx)
	defer cancel()
	o.etcdRun++
	prefix := fmt.Sprintf("/order/%d/", o.etcdRun)
	type event struct {
		key string
		at  time.Time
	}
	events := make(chan event, 1<<16)
	body, _ := json.Marshal(map[string]any{"create_request": map[string]string{"key": b64(prefix), "range_end": b64(prefix[:len(prefix)-1] + "0")}})
	for _, c := range watchers {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/v3/watch", etcdPort), bytes.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			o.fatalf("etcd watch: %v", err)
		}
		defer resp.Body.Close()
		go func() {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			for sc.Scan() {
				at := time.Now()
				var w struct {
					Result struct {
						Events []struct {
							KV struct {
								Key string `json:"key"`
							} `json:"kv"`
						} `json:"events"`
					} `json:"result"`
				}
				if json.Unmarshal(sc.Bytes(), &w) != nil {
					continue
				}
				for _, e := range w.Result.Events {
					k, _ := base64.StdEncoding.DecodeString(e.KV.Key)
					events <- event{string(k), at}
				}
			}
		}()
	}
	o.sleep(200 * time.Millisecond) // the watches are created
	send := func(k string) {
		if err := etcdPost(ctx, put, "/v3/kv/put", map[string]string{"key": b64(k), "value": b64("deposit 100")}, nil); err != nil {
			o.fatalf("etcd put: %v", err)
		}
	}
	sent := map[string]time.Time{}
	for k := range *orderSamples {
		key := fmt.Sprintf("%slat-%d", prefix, k)
		sent[key] = time.Now()
		send(key)
		o.sleep(5 * time.Millisecond)
	}
	var samples []time.Duration
	for want := len(sent) * len(watchers); len(samples) < want; {
		select {
		case e := <-events:
			samples = append(samples, e.at.Sub(sent[e.key]))
		case <-time.After(10 * time.Second):
			o.fatalf("etcd watch: %d of %d events", len(samples), want)
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := 1; i <= orderHosts; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range *orderBurst {
				send(fmt.Sprintf("%sthr-%d-%d", prefix, i, k))
			}
		}()
	}
	wg.Wait()
	for got, want := 0, orderHosts**orderBurst*len(watchers); got < want; got++ {
		select {
		case <-events:
		case <-time.After(10 * time.Second):
			o.fatalf("etcd watch: %d of %d events", got, want)
		}
	}
	return Summarize(samples), float64(orderHosts**orderBurst) / time.Since(start).Seconds()
}

// lanRTT measures the LAN's round trip from host a to host b: UDP
// datagrams echoed by a socket in b's namespace, timed in a's.
func (o *orderBench) lanRTT(a, b, n int) Summary {
	var echo *net.UDPConn
	addr := netip.AddrPortFrom(o.lab.Host(b).Addr(), orderPort+1)
	if err := o.lab.Host(b).Do(func() (err error) {
		echo, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	}); err != nil {
		o.fatalf("echo socket on h%d: %v", b, err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			k, from, err := echo.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			echo.WriteToUDPAddrPort(buf[:k], from)
		}
	}()
	var conn *net.UDPConn
	if err := o.lab.Host(a).Do(func() (err error) {
		conn, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr))
		return err
	}); err != nil {
		o.fatalf("socket on h%d: %v", a, err)
	}
	defer conn.Close()
	var samples []time.Duration
	buf := make([]byte, 64)
	for range n {
		start := time.Now()
		conn.SetReadDeadline(start.Add(time.Second))
		if _, err := conn.Write([]byte("ping")); err != nil {
			o.fatalf("rtt: %v", err)
		}
		if _, err := conn.Read(buf); err != nil {
			continue // lost: not a round trip
		}
		samples = append(samples, time.Since(start))
		o.sleep(2 * time.Millisecond)
	}
	return Summarize(samples)
}

// orderCount is one column of the frame counts: an order and the notes'
// figure for it at n members.
type orderCount struct {
	o     order.Order
	total order.Total
	notes int
}

func orderCounts(n int) []orderCount {
	return []orderCount{{order.FIFO, order.Sequencer, n - 1}, {order.Causal, order.Sequencer, n - 1},
		{order.TotalOrder, order.Sequencer, n}, {order.TotalOrder, order.Lamport, n - 1 + n*(n-1)}}
}

// simOrderCluster is n members on a lossless simulated LAN, past their
// first election.
func simOrderCluster(n int, total order.Total) *sim.Sim {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	cfg := order.DefaultLANConfig()
	cfg.Total = total
	for id := uint32(1); id <= uint32(n); id++ {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := order.New(env, cfg)
			if err != nil {
				panic(err)
			}
			return c
		}, clock.SimConfig{})
	}
	s.Run(2 * time.Second)
	return s
}

// writesPerMulticast counts, on the simulator, the state writes (each an
// fdatasync in the daemon) of all n members per multicast from member 1,
// sent 5 ms apart as the latency figures are: this tree's core, whatever
// -order.bin runs.
func writesPerMulticast(n int, o order.Order, total order.Total) float64 {
	s := simOrderCluster(n, total)
	writes := 0
	lens := map[uint32]int{}
	disks := map[uint32]int{}
	s.OnReady(func(r sim.Ready) {
		l, d := len(s.DiskLog(r.Node)), len(s.Disk(r.Node))
		if l != lens[r.Node] || d != disks[r.Node] {
			writes++
		}
		lens[r.Node], disks[r.Node] = l, d
	})
	const msgs = 40
	for range msgs {
		_ = s.Do(1, func(c core.Core) { _ = c.(*order.Core).Multicast(s.Clock(1).Now(), o, []byte("m")) })
		s.Run(5 * time.Millisecond)
	}
	return float64(writes) / msgs
}

// framesPerMulticast counts, on the simulator without loss, the frames
// one multicast of order o costs at n members: the protocol's (stream
// records, Lamport acks, submissions, log entries, commits) and the
// reliability layer's acknowledgements (the stream's cumulative acks,
// the Append acks), apart; the election's are not counted. burst sends
// the 20 multicasts at once from every member in turn, else one at a
// time (each alone on the network).
// orderBlock is orderd's block of kinds.
var orderBlock, _ = wire.BlockOf(wire.KindOrderRecord)

func framesPerMulticast(n int, o order.Order, total order.Total, burst bool) (proto, acks float64) {
	s := simOrderCluster(n, total)
	count := func() (p, k uint64) {
		for _, kind := range wire.Kinds() {
			if b, _ := wire.BlockOf(kind); b != orderBlock {
				continue
			}
			if kind.Class() == wire.ClassAck {
				k += s.Sent(kind)
			} else {
				p += s.Sent(kind)
			}
		}
		return p, k
	}
	p0, k0 := count()
	const msgs = 20
	for i := range msgs {
		id := uint32(1 + i%n)
		_ = s.Do(id, func(c core.Core) { _ = c.(*order.Core).Multicast(s.Clock(id).Now(), o, []byte("m")) })
		if !burst {
			s.Run(50 * time.Millisecond)
		}
	}
	s.Run(time.Second)
	p1, k1 := count()
	return float64(p1-p0) / msgs, float64(k1-k0) / msgs
}
