package e2e

// Attacks on real daemons, each made as a student at another machine of the
// lab would make it: forged frames from the attacker's own host, with a
// member's address spoofed (root on a lab machine can), from a member's
// machine (a student logged on it uses its IP), recorded frames played back
// after a restart, and TCP connections that stall or just sit there. Each
// runs against the default configuration (a key) and, for the attacks that
// must fail without a key too, against --insecure; each checks that the
// attack is refused, counted in `status --json`, and that the cluster keeps
// its leader or its locks.

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/bench"
	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/internal/labnet"
	"github.com/synclab/synclab/pkg/wire"
)

// statusOf runs `daemon status --json` against control.
func statusOf(t *testing.T, daemon, control string) map[string]any {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal(statusJSON(t, daemon, control), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func statusJSON(t *testing.T, daemon, control string) []byte {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, daemon), "status", "--json", "--control", control).Output()
	if err != nil {
		t.Fatalf("%s status: %v", daemon, err)
	}
	return out
}

// mode is a configuration the attacks run against.
type mode struct {
	name  string
	keyed bool
}

var modes = []mode{{"key", true}, {"insecure", false}}

// TestLabAttackElectd: three electd members and an attacker host. The
// sequence-number split of issue 13 (one frame "from 3" numbered
// 0xffffffffffffff00 made node 2 refuse node 3 and lead alone), sent from the
// attacker's own address, from node 3's machine on another port (a student
// logged on it), and with node 3's address spoofed; a frame from a wrong
// source (node 1's frame, with node 3's address spoofed); and, without a
// key, a plausible forged jump of node 3's numbers. The three keep one
// leader in one term throughout (at attackLeaderTimeout: a member that
// refused node 3's frames would suspect it one timeout after the attack).
func TestLabAttackElectd(t *testing.T) {
	labnet.Require(t)
	const n = 3
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			lab := labnet.New(t, n+1)
			l := &labElectd{t: t, lab: lab, dir: shortDirT(t), n: n, procs: map[int]*labnet.Proc{},
				extra: []string{"--leader-timeout", attackLeaderTimeout.String()}}
			if m.keyed {
				l.key = keyFile(t, l.dir)
			}
			for i := 1; i <= n; i++ {
				l.start(i)
			}
			term, _ := l.waitAgree("start", 10*time.Second, 3, all(n)...)
			attacker := lab.Host(n + 1)
			node2 := netip.AddrPortFrom(lab.Host(2).Addr(), 7500)
			node3 := netip.AddrPortFrom(lab.Host(3).Addr(), 7500)
			hb, _ := wire.LeaderHeartbeat{Priority: 0}.AppendBinary(nil)
			frame := func(seq uint64) []byte {
				b, err := forge.Raw(wire.Header{Kind: wire.KindLeaderHeartbeat, Cluster: wire.ServiceClusterID("electd", "synclab"),
					Sender: 3, Receiver: 2, Term: term, Seq: seq, Lamport: 1}, hb, nil)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			split := frame(0xffffffffffffff00)
			from1, err := forge.Raw(wire.Header{Kind: wire.KindHeartbeat, Cluster: wire.ServiceClusterID("electd", "synclab"),
				Sender: 1, Receiver: 2, Seq: 1, Lamport: 1}, make([]byte, wire.HeartbeatLen), nil)
			if err != nil {
				t.Fatal(err)
			}
			before := statusOf(t, "electd", l.control(2))
			dropped := func(st map[string]any, reason string) float64 { return num(st, "node", "dropped", reason) }

			// From the attacker's own address and from node 3's machine
			// on another port: no member's address, dropped unread. With
			// node 3's address spoofed: the split frame reaches the node;
			// so does node 1's frame, from the wrong member.
			send(t, attacker, netip.AddrPortFrom(attacker.Addr(), 0), node2, split)
			send(t, lab.Host(3), netip.AddrPortFrom(lab.Host(3).Addr(), 0), node2, split)
			spoof(t, attacker, node3, node2, split)
			spoof(t, attacker, node3, node2, from1)
			// Without a key, also a jump a real node 3 could have made:
			// accepted like any unauthenticated frame, but node 3's next
			// real frame restarts the window instead of being refused.
			var jumped bool
			if !m.keyed {
				top := peerSeq(t, "electd", l.control(2), 3)
				spoof(t, attacker, node3, node2, frame(top+2*wire.ReplayWindow))
				jumped = true
			}

			time.Sleep(2 * attackLeaderTimeout) // node 2, had it refused node 3, would have suspected it by now
			after := statusOf(t, "electd", l.control(2))
			if got := num(after, "transport", "udp_strangers") - num(before, "transport", "udp_strangers"); got != 2 {
				t.Errorf("udp_strangers counted %v times, want 2 (the attacker's address, node 3's machine on another port)", got)
			}
			if got := dropped(after, "wrong_source") - dropped(before, "wrong_source"); got != 1 {
				t.Errorf("wrong_source counted %v times, want 1 (node 1's frame from node 3's address)", got)
			}
			want := "implausible_seq"
			if m.keyed {
				want = "no_mac"
			}
			if got := dropped(after, want) - dropped(before, want); got != 1 {
				t.Errorf("the spoofed split frame: %s counted %v times, want 1 (dropped %v)", want, got, after["node"].(map[string]any)["dropped"])
			}
			if jumped && num(after, "node", "resynced") < 1 {
				t.Errorf("node 3's frames after the forged jump were not taken (resynced %v, dropped %v)", num(after, "node", "resynced"), after["node"].(map[string]any)["dropped"])
			}
			if lead, tm := l.agreed(all(n)...); lead != 3 || tm != term {
				t.Fatalf("after the attacks: leader %d term %#x, want 3 and %#x everywhere (a split)", lead, tm, term)
			}
			t.Logf("%s: node 2 refused the split frame (%s), the strangers' (udp_strangers) and node 1's from node 3's address (wrong_source), and kept leader 3 in term %#x", m.name, want, term)
		})
	}
}

// peerSeq is the newest sequence number the daemon at control accepted
// from member id (decoded exactly: a float64 would round it).
func peerSeq(t *testing.T, daemon, control string, id uint32) uint64 {
	t.Helper()
	var st struct {
		Node struct {
			Peers []struct {
				ID  uint32 `json:"id"`
				Seq uint64 `json:"seq"`
			} `json:"peers"`
		} `json:"node"`
	}
	if err := json.Unmarshal(statusJSON(t, daemon, control), &st); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Node.Peers {
		if p.ID == id {
			return p.Seq
		}
	}
	return 0
}

// send sends b from `from` (port 0: any) on host h.
func send(t *testing.T, h *labnet.Host, from, to netip.AddrPort, b []byte) {
	t.Helper()
	if err := h.Do(func() error { return forge.SendUDP(from, to, b) }); err != nil {
		t.Fatal(err)
	}
}

// spoof sends b from host h with the source address src.
func spoof(t *testing.T, h *labnet.Host, src, to netip.AddrPort, b []byte) {
	t.Helper()
	if err := h.Do(func() error { return forge.SendSpoofedUDP(src, to, b) }); err != nil {
		t.Fatal(err)
	}
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
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			lab := labnet.New(t, n+1)
			l := &labMutexd{t: t, lab: lab, dir: shortDirT(t), n: n, procs: map[int]*labnet.Proc{}}
			if m.keyed {
				l.key = keyFile(t, l.dir)
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
				out, err := exec.Command(filepath.Join(binDir, "mutexd"), "lock", "x", "--control", l.control(i), "--timeout", "30s", "--", "true").CombinedOutput()
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
			for num(statusOf(t, "mutexd", l.control(1)), "transport", "bad_frames") < 1 {
				if time.Now().After(deadline) {
					t.Fatal("a 1 MiB length prefix from node 3's IP was not refused as a bad frame within 10 s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			attack(student, 200, 1<<20, 64<<10)
			attack(student, 200, 1<<16, 60000)
			attack(student, 200, 0, 0)
			peak := rss()

			streamIn := num(statusOf(t, "mutexd", l.control(1)), "transport", "stream", "packets_in")
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
			if got := num(statusOf(t, "mutexd", l.control(1)), "transport", "stream", "packets_in") - streamIn; got < 1 {
				t.Errorf("node 1 read no stream frame from the restarted members (tokens must have been regenerated)")
			} else {
				t.Logf("node 1 read %v stream frames from the members after their restart", got)
			}
			st := statusOf(t, "mutexd", l.control(1))
			tr := func(f string) float64 { return num(st, "transport", f) }
			t.Logf("%s: node 1 RSS %.1f MB before, %.1f MB at most under attack; TCP: inbound %v, strangers reset %v, evicted %v, bad frames %v, timeouts %v, over budget %v",
				m.name, base, peak, tr("inbound"), tr("inbound_strangers"), tr("inbound_evicted"), tr("bad_frames"), tr("stream_timeouts"), tr("stream_over_budget"))
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
	l := &labMutexd{t: t, lab: lab, dir: shortDirT(t), n: n, procs: map[int]*labnet.Proc{}, extra: []string{"--heartbeat", "200ms"}}
	l.key = keyFile(t, l.dir)
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
			st := statusOf(t, "mutexd", l.control(i))
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
		st2 := statusOf(t, "mutexd", l.control(2))
		moved := 0
		for _, i := range []int{1, 3} {
			_, series, _ := wire.SeqParts(peerSeq(t, "mutexd", l.control(2), uint32(i)))
			if num(statusOf(t, "mutexd", l.control(i)), "node", "series") >= 1 && series >= 1 {
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
	st3 := statusOf(t, "mutexd", l.control(3))

	before := statusOf(t, "mutexd", l.control(2))
	refused := func(st map[string]any) float64 {
		return num(st, "node", "dropped", "pre_restart") + num(st, "node", "dropped", "stale")
	}
	for _, f := range recorded {
		spoof(t, lab.Host(n+1), node3, node2, f)
	}
	time.Sleep(300 * time.Millisecond)
	after := statusOf(t, "mutexd", l.control(2))
	if got := refused(after) - refused(before); got != float64(len(recorded)) {
		t.Fatalf("%d recorded frames played back after the restart, %v refused (dropped %v)", len(recorded), got, after["node"].(map[string]any)["dropped"])
	}
	t.Logf("node 2 had saved the epochs %q; after its restart all %d recorded frames of node 3 were refused (pre_restart %v, stale %v); node 3 moved to series %v and is heard",
		saved, len(recorded), num(after, "node", "dropped", "pre_restart"), num(after, "node", "dropped", "stale"), num(st3, "node", "series"))
	waitAlive(2, 2)
}

// waitUp waits for member i's control socket to answer.
func (l *labMutexd) waitUp(i int) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for exec.Command(filepath.Join(binDir, "mutexd"), "status", "--control", l.control(i)).Run() != nil {
		if time.Now().After(deadline) {
			l.t.Fatalf("mutexd on h%d did not answer within 10 s:\n%s", i, l.procs[i].Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNoKeyExits2: a daemon given other members and no key refuses to start
// and says what to run; with --insecure it starts, warns, and says so in its
// status. A daemon alone needs neither.
func TestNoKeyExits2(t *testing.T) {
	for _, d := range []string{"timed", "mutexd", "electd", "orderd"} {
		c := newCluster(t, d, 2)
		args := []string{"run", "--id", "1", "--members", c.members, "--control", c.control(1),
			"--state-dir", filepath.Join(c.dir, "h1.state")}
		if d == "timed" {
			args = append(args, "--clock", "sim")
		}
		out, err := exec.Command(filepath.Join(binDir, d), args...).CombinedOutput()
		env := strings.ToUpper(d)
		for _, want := range []string{
			"needs a shared key (--key-file), or --insecure",
			d + " keygen /etc/synclab/cluster.key",
			"copy that same file to every member",
			env + "_KEY_FILE=/etc/synclab/cluster.key",
			"--insecure (" + env + "_INSECURE=true)",
		} {
			if exitCode(err) != 2 || !strings.Contains(string(out), want) {
				t.Errorf("%s without a key: exit %d, want 2 and %q in:\n%s", d, exitCode(err), want, out)
			}
		}
		insecure := []string{"--insecure"}
		if d == "timed" {
			insecure = append(insecure, "--clock", "sim") // never the real clock
		}
		c.start(1, insecure...)
		c.eventually(d+" --insecure up", 5*time.Second, func() bool { _, err := c.status(1); return err == nil })
		st, _ := c.status(1)
		if st["insecure"] != true || st["auth"] != false {
			t.Errorf("%s --insecure: status insecure %v auth %v", d, st["insecure"], st["auth"])
		}
		human, _ := exec.Command(filepath.Join(binDir, d), "status", "--control", c.control(1)).CombinedOutput()
		if !strings.Contains(string(human), "authentication OFF (--insecure") {
			t.Errorf("%s status does not say it runs --insecure:\n%s", d, human)
		}
		c.eventually(d+" warned", 2*time.Second, func() bool {
			b, _ := os.ReadFile(c.logPath(1))
			return strings.Contains(string(b), "level=WARN") && strings.Contains(string(b), "without authentication (--insecure)")
		})
	}
}
