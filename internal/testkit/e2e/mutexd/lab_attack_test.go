package mutexd

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/bench"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/internal/testkit/testenv"
	"github.com/synclab/synclab/pkg/wire"
)

// lockOf is lock name in a mutexd member's status (nil if not in its
// table).
func lockOf(st map[string]any, name string) map[string]any {
	locks, _ := e2e.Field(st, "node", "core", "locks").([]any)
	for _, l := range locks {
		if m := l.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

// lockCmd runs `mutexd lock NAME -- sh -c SCRIPT` against member i, in the
// background, with MUTEXD_FENCE in the script's environment.
func lockCmd(a *e2e.AttackLab, i int, name, script string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", name, "--control", a.Control(i), "--timeout", "30s", "--", "sh", "-c", script)
	if err := cmd.Start(); err != nil {
		a.T.Fatal(err)
	}
	a.T.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// TestLabAttackMutexdSameFence is the same-fence attack: while
// client A holds x at member 1 and client B waits at member 2, one Token
// "from 1" to member 2 with HoldMS 0 and A's fence - 1. It used to grant B
// the very fence A holds, while A's lease ran. Now member 2 asks member 1
// to vouch for the token, member 1 does not (it holds x's token), and the
// token is dropped unused (tokens_disowned); B is granted only after A
// releases, with a higher fence.
//
// A holds x until the test has made its checks (it waits for a file, 30 s
// at most), not for a fixed 5 s that a loaded host could use up before the
// forged token was even sent; B's want is seen at both members before the
// token is forged, instead of after a fixed 300 ms.
func TestLabAttackMutexdSameFence(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a := e2e.NewAttackLab(t, "mutexd", 7400, 3, keyed, func(int) []string { return []string{"--heartbeat", "200ms"} })
		a.StartAll()
		a.WaitHeard()
		fenceA, fenceB := filepath.Join(a.Dir, "a.fence"), filepath.Join(a.Dir, "b.fence")
		releaseA := filepath.Join(a.Dir, "a.release")
		cmdA := lockCmd(a, 1, "x", "echo $MUTEXD_FENCE > "+fenceA+"; i=0; while [ ! -e "+releaseA+" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done")
		var lk map[string]any
		a.Eventually("A holds x at member 1", 10*time.Second, func() bool {
			st, err := a.Status(1)
			lk = lockOf(st, "x")
			return err == nil && lk != nil && lk["holder"] != nil && e2e.Field(lk, "detail", "token") == "here"
		})
		gen := uint64(e2e.Field(lk, "detail", "generation").(float64))
		fa := uint64(lk["holder"].(map[string]any)["fence"].(float64))
		cmdB := lockCmd(a, 2, "x", "echo $MUTEXD_FENCE > "+fenceB)
		a.Eventually("B waits for x at member 2, and member 1 knows", 20*time.Second, func() bool {
			st2, err2 := a.Status(2)
			st1, err1 := a.Status(1)
			if err1 != nil || err2 != nil {
				return false
			}
			queue, _ := lockOf(st2, "x")["queue"].([]any)
			wants, _ := e2e.Field(lockOf(st1, "x"), "detail", "wants").([]any)
			return len(queue) > 0 && slices.Contains(wants, any(float64(2)))
		})
		a.Forge(1, 2, wire.KindToken, 0, wire.Token{Name: "x", HoldMS: 0, Generation: gen, Hop: 1 << 40, Fence: fa - 1})
		// Refused and counted, and, A still holding x, B not granted.
		if !keyed {
			a.Refused(2, 1, "node", "core", "counters", "tokens_disowned")
		} else {
			a.Refused(2, 1)
		}
		if b, err := os.ReadFile(fenceB); err == nil {
			t.Fatalf("B was granted fence %s while A holds fence %d", strings.TrimSpace(string(b)), fa)
		}
		if lk := lockOf(a.MustStatus(1), "x"); lk == nil || e2e.Field(lk, "holder", "fence") != float64(fa) {
			t.Fatalf("A no longer holds x (fence %d) at member 1 when the checks end: %v", fa, lk)
		}
		if err := os.WriteFile(releaseA, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmdA.Wait(); err != nil {
			t.Fatalf("A's lock: %v", err)
		}
		if err := cmdB.Wait(); err != nil {
			t.Fatalf("B's lock: %v", err)
		}
		b, _ := os.ReadFile(fenceB)
		var fb uint64
		fmt.Sscan(string(b), &fb)
		if fb <= fa {
			t.Errorf("B's fence %d after A's %d", fb, fa)
		}
		t.Logf("A held fence %d; B got %d after A's release", fa, fb)
	})
}

// TestLabAttackMutexdLockKilled is the lock-killing probe: one
// prepare for x with generation (2^24-1)<<32|1 to every member. It used
// to make x ungrantable everywhere, even after restarting every member.
// Now it is refused (generation_absurd) and x is granted at every member,
// before and after they all restart.
func TestLabAttackMutexdLockKilled(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a := e2e.NewAttackLab(t, "mutexd", 7400, 3, keyed, func(int) []string { return []string{"--heartbeat", "200ms", "--lease", "1s"} })
		a.StartAll()
		a.WaitHeard()
		for to := uint32(1); to <= 3; to++ {
			a.Forge(1+to%3, to, wire.KindRingProbe, 0, wire.RingProbe{Op: wire.ProbePrepare, Name: "x", Nonce: 1, Generation: (1<<24-1)<<32 | 1})
		}
		for i := 1; i <= 3; i++ {
			a.Refused(i, 1, "node", "core", "counters", "rejected_generation_absurd")
		}
		lockEverywhere := func(when string) {
			for i := 1; i <= 3; i++ {
				out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", "x", "--control", a.Control(i), "--timeout", "15s", "--", "true").CombinedOutput()
				if err != nil {
					t.Fatalf("%s: lock x at member %d: %v: %s", when, i, err, out)
				}
			}
		}
		lockEverywhere("after the attack")
		for i := 1; i <= 3; i++ {
			a.Procs[i].Kill()
		}
		for i := 1; i <= 3; i++ {
			a.Start(i)
		}
		a.WaitHeard()
		lockEverywhere("after every member restarted")
	})
}

// TestLabAttackMutexdTableFill is the table-filling attack: 5000
// probes naming made-up locks in member 1's name to member 2. They used
// to fill member 2's table (4096 entries: real locks then got "too many
// locks") and its /metrics (4096 fence series). Now only the prepares make
// entries, at most member 1's share, the rest is answered without one;
// real locks are granted at member 2 and its metrics do not grow.
func TestLabAttackMutexdTableFill(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a := e2e.NewAttackLab(t, "mutexd", 7400, 3, keyed, func(i int) []string {
			return []string{"--heartbeat", "200ms", "--metrics", "127.0.0.1:9400"}
		})
		// Every prepare is a promise, written and synced before its
		// reply: on a disk that is a thousand fsyncs. The state goes on
		// a tmpfs, or the test measures the disk.
		shm, err := os.MkdirTemp("/dev/shm", "slattack")
		if err != nil {
			testenv.Unavailable(t, "no /dev/shm for the state: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(shm) })
		a.StateRoot = shm
		a.StartAll()
		a.WaitHeard()
		ops := []wire.ProbeOp{wire.ProbeWant, wire.ProbeLocate, wire.ProbeCheck, wire.ProbePrepare}
		flood := time.Now()
		udpIn := func() float64 { return e2e.Num(a.MustStatus(2), "transport", "udp", "packets_in") }
		read := udpIn()
		var burst []e2e.Forged
		for i := range 5000 {
			burst = append(burst, e2e.Forged{From: 1, To: 2, Kind: wire.KindRingProbe, Term: 0, Payload: wire.RingProbe{Op: ops[i%len(ops)], Name: fmt.Sprintf("junk-%d", i), Nonce: uint32(i), Generation: 1<<32 | 1}})
			if len(burst) == 200 {
				// Member 2 reads each burst before the next is sent: a
				// flood that overflows its socket proves nothing, and a
				// fixed pause between bursts was too short when member 2
				// waited for a CPU.
				before := read
				a.ForgeBurst(burst...)
				burst = nil
				a.Eventually("member 2 reads a burst of 200 forged frames", e2e.RefuseWithin, func() bool { read = udpIn(); return read-before >= 200 })
			}
		}
		t.Logf("5000 frames forged in %v; member 2's socket overflowed %v times", time.Since(flood), e2e.Num(a.MustStatus(2), "transport", "rx_overflow"))
		// 5000 frames in member 1's name ran its sequence numbers 5000
		// ahead at member 2, whose replay window now takes member 1's
		// real frames for stale (the perimeter half of issue 13 bounds
		// that): member 1 restarts, as after any crash, and its new
		// incarnation is heard again at once.
		a.Procs[1].Kill()
		a.Start(1)
		a.WaitHeard()
		a.Alive(2)
		st := a.MustStatus(2)
		locks, _ := e2e.Field(st, "node", "core", "locks").([]any)
		t.Logf("member 2 after 5000 probes: %d locks in its table; counters %v", len(locks), e2e.Field(st, "node", "core", "counters"))
		if !keyed && (len(locks) > 4096/2/2 || e2e.Num(st, "node", "core", "counters", "share_full") == 0) {
			t.Errorf("%d locks in member 2's table, member 1's share is %d (share_full %v)", len(locks), 4096/2/2, e2e.Num(st, "node", "core", "counters", "share_full"))
		}
		if !keyed {
			a.Refused(2, 1000, "node", "core", "counters", "probes_unknown_lock")
		} else {
			a.Refused(2, 4000)
		}
		locking := time.Now()
		defer func() { t.Logf("10 real locks in %v", time.Since(locking)) }()
		for i := range 10 {
			out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", fmt.Sprintf("real-%d", i), "--control", a.Control(2), "--timeout", "15s", "--", "true").CombinedOutput()
			if err != nil {
				t.Fatalf("real lock %d at member 2 after the flood: %v: %s", i, err, out)
			}
		}
		var metrics string
		err = a.Lab.Host(2).Do(func() error {
			out, err := exec.Command("curl", "-s", "http://127.0.0.1:9400/metrics").Output()
			metrics = string(out)
			return err
		})
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		if n := strings.Count(metrics, "synclab_mutex_fence{"); n > 20 {
			t.Errorf("%d fence series on /metrics after the flood", n)
		}
	})
}

// TestLabAttackMutexdTCP: three mutexd members and an attacker host. The
// attacker opens 1000 connections to node 1 that send a 1 MiB length prefix
// and most of a frame and stall, then 1000 that sit idle; a student on
// node 3's machine does the same from its IP (with the largest legal
// prefix). Meanwhile nodes 2 and 3 restart, so their links to node 1 must
// connect anew: tokens still pass, every acquire succeeds, and node 1's RSS
// stays under 20 MB.
func TestLabAttackMutexdTCP(t *testing.T) {
	labnet.Require(t)
	const n = 3
	for _, m := range e2e.Modes {
		t.Run(m.Name, func(t *testing.T) {
			lab := labnet.New(t, n+1)
			l := &labMutexd{t: t, lab: lab, dir: e2e.ShortDir(t), n: n, procs: map[int]*labnet.Proc{}}
			if m.Keyed {
				l.key = e2e.KeyFile(t, l.dir)
			}
			for i := 1; i <= n; i++ {
				l.start(i)
			}
			// A restarted member makes the others wait a lease (3 s by
			// default) before a new token's first grant, and the README
			// measured 6-10 s for a replacement under load: two restarts
			// in a row can take most of 20 s. A lock that is never granted
			// still fails; how soon it is granted is logged, not judged.
			lockOK := func(i int) {
				t.Helper()
				start := time.Now()
				out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", "x", "--control", l.control(i), "--timeout", "30s", "--", "true").CombinedOutput()
				if err != nil {
					t.Fatalf("lock x through node %d under attack: %v\n%s", i, err, out)
				}
				t.Logf("lock x through node %d: granted and released in %v", i, time.Since(start).Round(time.Millisecond))
			}
			for i := 1; i <= n; i++ {
				l.waitUp(i)
			}
			for i := 1; i <= n; i++ {
				lockOK(i)
			}
			rss := func() float64 {
				r, err := bench.RSS(l.procs[1].PID())
				if err != nil {
					t.Fatal(err)
				}
				return float64(r) / (1 << 20)
			}
			base := rss()
			target := netip.AddrPortFrom(lab.Host(1).Addr(), 7400)

			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			// attack opens k connections on host h from its IP, each
			// writing prefix and body, or nothing.
			attack := func(h *labnet.Host, k int, prefix uint32, body int) (opened int) {
				h.Do(func() error {
					for range k {
						d := net.Dialer{LocalAddr: &net.TCPAddr{IP: h.Addr().AsSlice()}, Timeout: time.Second}
						c, err := d.Dial("tcp4", target.String())
						if err != nil {
							continue // reset before the dial returned: refused
						}
						opened++
						conns = append(conns, c)
						if prefix > 0 {
							c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
							c.Write(binary.BigEndian.AppendUint32(nil, prefix))
							c.Write(make([]byte, body))
						}
					}
					return nil
				})
				return opened
			}
			attacker, student := lab.Host(n+1), lab.Host(3)
			attack(attacker, 1000, 1<<20, 1<<20-1)
			attack(attacker, 1000, 0, 0)
			// One oversized prefix alone first, read before anything can
			// evict it: it must be refused as a bad frame. In the flood
			// after it, how many of the 200 such prefixes node 1 reads
			// before newer connections from the same IP evict them
			// depends on the scheduler (78 read, 527 evicted at load 20);
			// each is one or the other.
			attack(student, 1, 1<<20, 64<<10)
			deadline := time.Now().Add(10 * time.Second)
			for e2e.Num(e2e.StatusOf(t, "mutexd", l.control(1)), "transport", "bad_frames") < 1 {
				if time.Now().After(deadline) {
					t.Fatal("a 1 MiB length prefix from node 3's IP was not refused as a bad frame within 10 s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			attack(student, 200, 1<<20, 64<<10)
			attack(student, 200, 1<<16, 60000)
			attack(student, 200, 0, 0)
			peak := rss()

			streamIn := e2e.Num(e2e.StatusOf(t, "mutexd", l.control(1)), "transport", "stream", "packets_in")
			// Nodes 2 and 3 restart: their links to node 1 connect anew
			// while the attacker's connections are (or were) there.
			for _, i := range []int{2, 3} {
				l.procs[i].Kill()
				l.start(i)
				l.waitUp(i)
			}
			for _, i := range []int{2, 3, 1, 2, 3} {
				lockOK(i)
			}
			peak = max(peak, rss())
			// Tokens reached node 1 over connections the members opened
			// after their restart, while the attacker held (or tried to
			// hold) every slot: node 1 read stream frames again.
			if got := e2e.Num(e2e.StatusOf(t, "mutexd", l.control(1)), "transport", "stream", "packets_in") - streamIn; got < 1 {
				t.Errorf("node 1 read no stream frame from the restarted members (tokens must have been regenerated)")
			} else {
				t.Logf("node 1 read %v stream frames from the members after their restart", got)
			}
			st := e2e.StatusOf(t, "mutexd", l.control(1))
			tr := func(f string) float64 { return e2e.Num(st, "transport", f) }
			t.Logf("%s: node 1 RSS %.1f MB before, %.1f MB at most under attack; TCP: inbound %v, strangers reset %v, evicted %v, bad frames %v, timeouts %v, over budget %v",
				m.Name, base, peak, tr("inbound"), tr("inbound_strangers"), tr("inbound_evicted"), tr("bad_frames"), tr("stream_timeouts"), tr("stream_over_budget"))
			if peak > 20 {
				t.Errorf("node 1's RSS reached %.1f MB under attack, want < 20", peak)
			}
			if tr("inbound_strangers") < 1900 {
				t.Errorf("strangers' connections reset: %v, want about 2000", tr("inbound_strangers"))
			}
			if tr("bad_frames") < 1 || tr("inbound_evicted")+tr("bad_frames") < 591 {
				t.Errorf("the student's connections from node 3's IP: evicted %v, bad frames %v", tr("inbound_evicted"), tr("bad_frames"))
			}
			if tr("inbound") > 2*4 {
				t.Errorf("%v inbound connections open: two members, four each at most", tr("inbound"))
			}
		})
	}
}

// TestLabAttackReplayAfterRestart: frames node 3 sent node 2 are recorded on
// node 2's host; node 2's daemon is killed and restarted; the attacker plays
// the recordings back with node 3's address spoofed. With the key, every one
// is refused (before: all were accepted, the windows lived in memory only),
// and node 3, told, moves to a new series that node 2 accepts.
func TestLabAttackReplayAfterRestart(t *testing.T) {
	labnet.Require(t)
	const n = 3
	lab := labnet.New(t, n+1)
	l := &labMutexd{t: t, lab: lab, dir: e2e.ShortDir(t), n: n, procs: map[int]*labnet.Proc{}, extra: []string{"--heartbeat", "200ms"}}
	l.key = e2e.KeyFile(t, l.dir)
	for i := 1; i <= n; i++ {
		l.start(i)
		l.waitUp(i)
	}
	node2 := netip.AddrPortFrom(lab.Host(2).Addr(), 7400)
	node3 := netip.AddrPortFrom(lab.Host(3).Addr(), 7400)
	waitAlive := func(i, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := e2e.StatusOf(t, "mutexd", l.control(i))
			members, _ := st["node"].(map[string]any)["core"].(map[string]any)["members"].([]any)
			alive := 0
			for _, m := range members {
				if m := m.(map[string]any); m["alive"] == true && m["self"] != true {
					alive++
				}
			}
			if alive == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d sees %d others alive, want %d", i, alive, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitAlive(2, 2)

	// Record what node 3 sends node 2, on node 2's host.
	var recorded [][]byte
	err := lab.Host(2).Do(func() error {
		pc, err := net.ListenPacket("ip4:udp", lab.Host(2).Addr().String())
		if err != nil {
			return err
		}
		defer pc.Close()
		buf := make([]byte, 1<<16)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			pc.SetReadDeadline(end)
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				break
			}
			u := buf[:k]
			if ip, ok := netip.AddrFromSlice(from.(*net.IPAddr).IP); ok && ip.Unmap() == node3.Addr() && k > 8 && binary.BigEndian.Uint16(u) == node3.Port() && binary.BigEndian.Uint16(u[2:]) == node2.Port() {
				recorded = append(recorded, append([]byte(nil), u[8:]...))
			}
		}
		return nil
	})
	if err != nil || len(recorded) < 5 {
		t.Fatalf("recorded %d frames from node 3 to node 2 (%v)", len(recorded), err)
	}
	l.procs[2].Kill()
	var saved []string
	if b, err := os.ReadFile(filepath.Join(l.dir, "h2.state", "epochs")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" && line[0] != '#' {
				saved = append(saved, line)
			}
		}
	}
	l.start(2)
	l.waitUp(2)
	// Nodes 1 and 3 are told and move to a new series, which node 2
	// accepts: from then on nothing of theirs is refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st2 := e2e.StatusOf(t, "mutexd", l.control(2))
		moved := 0
		for _, i := range []int{1, 3} {
			_, series, _ := wire.SeqParts(e2e.PeerSeq(t, "mutexd", l.control(2), uint32(i)))
			if e2e.Num(e2e.StatusOf(t, "mutexd", l.control(i)), "node", "series") >= 1 && series >= 1 {
				moved++
			}
		}
		if moved == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes 1 and 3 did not move to a new series after node 2 restarted (node 2 dropped %v)", st2["node"].(map[string]any)["dropped"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	st3 := e2e.StatusOf(t, "mutexd", l.control(3))

	before := e2e.StatusOf(t, "mutexd", l.control(2))
	refused := func(st map[string]any) float64 {
		return e2e.Num(st, "node", "dropped", "pre_restart") + e2e.Num(st, "node", "dropped", "stale")
	}
	for _, f := range recorded {
		e2e.Spoof(t, lab.Host(n+1), node3, node2, f)
	}
	time.Sleep(300 * time.Millisecond)
	after := e2e.StatusOf(t, "mutexd", l.control(2))
	if got := refused(after) - refused(before); got != float64(len(recorded)) {
		t.Fatalf("%d recorded frames played back after the restart, %v refused (dropped %v)", len(recorded), got, after["node"].(map[string]any)["dropped"])
	}
	t.Logf("node 2 had saved the epochs %q; after its restart all %d recorded frames of node 3 were refused (pre_restart %v, stale %v); node 3 moved to series %v and is heard",
		saved, len(recorded), e2e.Num(after, "node", "dropped", "pre_restart"), e2e.Num(after, "node", "dropped", "stale"), e2e.Num(st3, "node", "series"))
	waitAlive(2, 2)
}

// waitUp waits for member i's control socket to answer.
func (l *labMutexd) waitUp(i int) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "status", "--control", l.control(i)).Run() != nil {
		if time.Now().After(deadline) {
			l.t.Fatalf("mutexd on h%d did not answer within 10 s:\n%s", i, l.procs[i].Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
