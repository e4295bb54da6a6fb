package labnet_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

// udpConn opens a UDP socket on host h (port 0 for any).
func udpConn(t *testing.T, h *labnet.Host, port int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := h.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: h.Addr().AsSlice(), Port: port})
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s: %v", h.Name(), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// counter counts datagrams arriving on c until it is closed.
type counter struct{ n atomic.Int64 }

func countOn(c *net.UDPConn) *counter {
	var k counter
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFromUDPAddrPort(buf); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			k.n.Add(1)
		}
	}()
	return &k
}

// blast sends n datagrams from c to dst, paced so that a receiver that is
// merely slow to be scheduled never overflows its socket buffer (which would
// look like network loss).
func blast(t *testing.T, c *net.UDPConn, dst netip.AddrPort, n int) {
	t.Helper()
	msg := []byte("labnet-probe")
	for i := range n {
		if _, err := c.WriteToUDPAddrPort(msg, dst); err != nil {
			t.Fatalf("send to %v: %v", dst, err)
		}
		if i%50 == 49 {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// delta runs send and returns how many datagrams k counted because of it
// (settle).
func delta(k *counter, send func(), want int) int {
	before := k.n.Load()
	send()
	return settle(k, before, want)
}

// settle returns how many datagrams k counted since it stood at from. It
// waits for want of them (at most 5 s: what a loaded machine delivers late,
// after a neighbour's address is resolved again, is not loss), then until
// the count has been still for 150 ms, so that extra datagrams are counted
// too. want 0 (a cut link, or loss whose count is the question) waits for
// the stillness alone.
func settle(k *counter, from int64, want int) int {
	deadline := time.Now().Add(5 * time.Second)
	for int(k.n.Load()-from) < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	last, still := k.n.Load(), 0
	for still < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if n := k.n.Load(); n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
	return int(last - from)
}

func TestLabLayout(t *testing.T) {
	labnet.Require(t)
	// The setup is batched: one `ip -batch` for all the namespaces, one
	// for the bridge's links, one per host, one nft; one process per
	// command would be dozens (and most of a second). Counted, not timed:
	// a loaded host slows the commands, not their number.
	start, before := time.Now(), labnet.CommandsRun()
	lab := labnet.New(t, 8)
	n := labnet.CommandsRun() - before
	t.Logf("8 hosts set up in %v by %d commands", time.Since(start), n)
	if n > 3+8 {
		t.Errorf("8 hosts took %d commands to set up, want at most %d (batched)", n, 3+8)
	}
	if lab.N() != 8 || !strings.HasPrefix(lab.Prefix(), "sl") {
		t.Fatalf("N=%d prefix=%q", lab.N(), lab.Prefix())
	}
	for i, h := range lab.Hosts() {
		if want := netip.AddrFrom4([4]byte{10, 77, 0, byte(i + 1)}); h.Addr() != want || h.Name() != fmt.Sprintf("h%d", i+1) || h != lab.Host(i+1) {
			t.Errorf("host %d: name %s addr %v, want h%d %v", i+1, h.Name(), h.Addr(), i+1, want)
		}
	}
	h := lab.Host(3)
	out, err := h.Run(t, "ip", "-o", "addr", "show")
	if err != nil {
		t.Fatal(err)
	}
	// The host sees lo (with ::1: IPv6 is off only on the lab link) and its
	// link with its IPv4 address and no IPv6 address at all.
	if !strings.Contains(out, "inet 10.77.0.3/24") || !strings.Contains(out, "inet 127.0.0.1/8") {
		t.Errorf("h3 addresses:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, h.Interface()) && strings.Contains(line, "inet6") {
			t.Errorf("IPv6 address on the lab link: %s", line)
		}
	}
	out, err = h.Run(t, "ip", "route", "show", "table", "main")
	if err != nil || !strings.Contains(out, "224.0.0.0/4 dev "+h.Interface()) {
		t.Errorf("h3 routes (err %v):\n%s", err, out)
	}
	var igmp []byte
	err = h.Do(func() (err error) {
		igmp, err = os.ReadFile("/proc/sys/net/ipv4/conf/all/force_igmp_version")
		return err
	})
	if err != nil || strings.TrimSpace(string(igmp)) != "2" {
		t.Errorf("force_igmp_version = %q, %v; want 2", igmp, err)
	}

	// Run reports failures with the output.
	_, err = h.Run(t, "ip", "link", "show", "no-such-link")
	var ce *labnet.CmdError
	if !errors.As(err, &ce) || !strings.Contains(ce.Output, "no-such-link") {
		t.Errorf("Run of a failing command: %v", err)
	}

	// Every host reaches every other one.
	rx := udpConn(t, lab.Host(8), 9000)
	k := countOn(rx)
	for _, src := range lab.Hosts()[:7] {
		c := udpConn(t, src, 0)
		if got := delta(k, func() { blast(t, c, netip.AddrPortFrom(lab.Host(8).Addr(), 9000), 10) }, 10); got != 10 {
			t.Errorf("%s -> h8: %d of 10 datagrams", src.Name(), got)
		}
	}
}

func TestLabPartitionHeal(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 3)
	k2 := countOn(udpConn(t, lab.Host(2), 9000))
	k3 := countOn(udpConn(t, lab.Host(3), 9000))
	c1 := udpConn(t, lab.Host(1), 0)
	to2 := netip.AddrPortFrom(lab.Host(2).Addr(), 9000)
	to3 := netip.AddrPortFrom(lab.Host(3).Addr(), 9000)
	send := func(dst netip.AddrPort) func() { return func() { blast(t, c1, dst, 100) } }

	if n := delta(k2, send(to2), 100); n != 100 {
		t.Fatalf("before the partition h2 got %d of 100", n)
	}
	lab.Partition(1, 2)
	lab.Partition(2, 1) // already cut: no-op
	if n := delta(k2, send(to2), 0); n != 0 {
		t.Errorf("partitioned: h2 got %d of 100", n)
	}
	if n := delta(k3, send(to3), 100); n != 100 {
		t.Errorf("partitioned 1-2: h3 got %d of 100 from h1", n)
	}
	// The other direction is cut as well, and a partition is silent: the
	// sender's writes succeed (blast fails the test otherwise).
	k1 := countOn(c1)
	c2 := udpConn(t, lab.Host(2), 0)
	if n := delta(k1, func() { blast(t, c2, c1.LocalAddr().(*net.UDPAddr).AddrPort(), 100) }, 0); n != 0 {
		t.Errorf("partitioned: h1 got %d of 100 from h2", n)
	}
	lab.Heal(1, 2)
	if n := delta(k2, send(to2), 100); n != 100 {
		t.Errorf("healed: h2 got %d of 100", n)
	}

	lab.Split([]int{1}, []int{2, 3})
	if n2, n3 := delta(k2, send(to2), 0), delta(k3, send(to3), 0); n2 != 0 || n3 != 0 {
		t.Errorf("split {1} {2,3}: h2 got %d, h3 got %d of 100", n2, n3)
	}
	lab.HealAll()
	if n2, n3 := delta(k2, send(to2), 100), delta(k3, send(to3), 100); n2 != 100 || n3 != 100 {
		t.Errorf("after HealAll: h2 got %d, h3 got %d of 100", n2, n3)
	}
}

func TestLabLoss(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 3)
	k2 := countOn(udpConn(t, lab.Host(2), 9000))
	k3 := countOn(udpConn(t, lab.Host(3), 9000))
	c1 := udpConn(t, lab.Host(1), 0)
	const n = 1000
	to := func(i int) func() {
		return func() { blast(t, c1, netip.AddrPortFrom(lab.Host(i).Addr(), 9000), n) }
	}

	lab.Loss(2, 20)
	// 1000 draws at p=0.2: sd 12.6 packets, so 100..300 lost is > 7 sd.
	got := delta(k2, to(2), 0)
	t.Logf("20%% loss towards h2: %d of %d arrived (%.1f%% lost)", got, n, 100-float64(got)*100/n)
	if got < n*70/100 || got > n*90/100 {
		t.Errorf("20%% loss towards h2: %d of %d arrived, want 700-900", got, n)
	}
	if got := delta(k3, to(3), n); got != n {
		t.Errorf("loss on h2 only: h3 got %d of %d", got, n)
	}
	lab.Loss(2, 100)
	if got := delta(k2, to(2), 0); got != 0 {
		t.Errorf("100%% loss: h2 got %d of %d", got, n)
	}
	// Loss spares TCP; LossIP does not.
	if err := dialTCP(t, lab, 1, 2); err != nil {
		t.Errorf("TCP under 100%% UDP loss: %v", err)
	}
	lab.LossIP(2, 100)
	if err := dialTCP(t, lab, 1, 2); err == nil {
		t.Errorf("TCP connected under 100%% IP loss")
	}
	lab.Loss(2, 0)
	if got := delta(k2, to(2), n); got != n {
		t.Errorf("loss removed: h2 got %d of %d", got, n)
	}
	if err := dialTCP(t, lab, 1, 2); err != nil {
		t.Errorf("TCP after loss removed: %v", err)
	}
}

// TestLabDropUDPByte: the bridge drops the datagrams to and from h2 whose
// byte at offset 3 is 126, and only those: another value there, the same
// value at another offset, and h3's traffic pass; cleared, all pass.
func TestLabDropUDPByte(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 3)
	k1 := countOn(udpConn(t, lab.Host(1), 9000))
	k2 := countOn(udpConn(t, lab.Host(2), 9000))
	k3 := countOn(udpConn(t, lab.Host(3), 9000))
	c1, c2 := udpConn(t, lab.Host(1), 0), udpConn(t, lab.Host(2), 0)
	send := func(c *net.UDPConn, to int, msg []byte) func() {
		return func() {
			for range 20 {
				if _, err := c.WriteToUDPAddrPort(msg, netip.AddrPortFrom(lab.Host(to).Addr(), 9000)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	picked, other, shifted := []byte{'S', 'L', 1, 126, 0}, []byte{'S', 'L', 1, 125, 0}, []byte{'S', 'L', 126, 1, 0}
	lab.DropUDPByte(2, 3, 126)
	for _, c := range []struct {
		what string
		k    *counter
		send func()
		want int
	}{
		{"the byte to h2", k2, send(c1, 2, picked), 0},
		{"the byte from h2", k1, send(c2, 1, picked), 0},
		{"another value to h2", k2, send(c1, 2, other), 20},
		{"the value at another offset to h2", k2, send(c1, 2, shifted), 20},
		{"the byte to h3", k3, send(c1, 3, picked), 20},
	} {
		if got := delta(c.k, c.send, c.want); got != c.want {
			t.Errorf("%s: %d of 20 arrived, want %d", c.what, got, c.want)
		}
	}
	lab.ClearUDPByteDrops()
	if got := delta(k2, send(c1, 2, picked), 20); got != 20 {
		t.Errorf("cleared: h2 got %d of 20", got)
	}
}

// dialTCP connects from host a to a listener on host b, with a short timeout.
func dialTCP(t *testing.T, lab *labnet.Lab, a, b int) error {
	t.Helper()
	var ln net.Listener
	if err := lab.Host(b).Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(lab.Host(b).Addr(), 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var c net.Conn
	err := lab.Host(a).Do(func() (err error) {
		// The connect runs here, on the namespace's thread: Dial creates
		// the socket in the calling thread's namespace.
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 300*time.Millisecond)
		return err
	})
	if err == nil {
		c.Close()
	}
	return err
}

// recorder is a testing.TB whose Fatalf records the failure and ends only
// the calling goroutine, so a test can check that misuse fails a test.
type recorder struct {
	testing.TB
	msg atomic.Value
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg.Store(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// fails runs f on its own goroutine and returns the message it failed with.
func (r *recorder) fails(f func()) string {
	r.msg.Store("")
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	return r.msg.Load().(string)
}

func TestLabMisuse(t *testing.T) {
	labnet.Require(t)
	r := &recorder{TB: t}
	lab := labnet.New(r, 2)
	for name, f := range map[string]func(){
		"Loss(9, 10)":      func() { lab.Loss(9, 10) },
		"Loss(1, 101)":     func() { lab.Loss(1, 101) },
		"LossIP(1, -1)":    func() { lab.LossIP(1, -1) },
		"Partition(1, 1)":  func() { lab.Partition(1, 1) },
		"Heal(0, 1)":       func() { lab.Heal(0, 1) },
		"Split({1},{1,2})": func() { lab.Split([]int{1}, []int{1, 2}) },
		"Host(3)":          func() { lab.Host(3) },
		"Start(empty)":     func() { lab.Host(1).Start(r, "x", nil, nil) },
		"New(0)":           func() { labnet.New(r, 0) },
		"WithPrefix(bad)":  func() { labnet.New(r, 1, labnet.WithPrefix("Bad-Prefix")) },
	} {
		if msg := r.fails(f); !strings.HasPrefix(msg, "labnet: ") {
			t.Errorf("%s did not fail the test (message %q)", name, msg)
		}
	}
	// The same prefix as a live lab is refused, and the refused lab's
	// teardown (at the end of the subtest) leaves the live one alone.
	t.Run("taken", func(t *testing.T) {
		r := &recorder{TB: t}
		if msg := r.fails(func() { labnet.New(r, 2, labnet.WithPrefix(lab.Prefix())) }); !strings.Contains(msg, "already exists") {
			t.Errorf("New with a prefix in use: %q", msg)
		}
	})
	// None of that changed the network.
	lab.Loss(1, 0)
	lab.HealAll()
	if out, err := lab.Host(1).Run(t, "ip", "-o", "link", "show", "eth0"); err != nil || !strings.Contains(out, "UP") {
		t.Errorf("lab damaged by a refused New with its prefix: %v %s", err, out)
	}
}

func TestLabProcess(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 2)
	h := lab.Host(2)
	p := startHelper(t, h, "sleep")
	line := waitOutput(t, p, "ready ", 10*time.Second)

	// The PID is the program's own, and it runs in h2's namespace.
	var pid int
	var ns string
	if _, err := fmt.Sscanf(line, "ready pid=%d netns=%s", &pid, &ns); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if pid != p.PID() {
		t.Errorf("program says pid %d, Proc.PID() = %d", pid, p.PID())
	}
	want, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if ns == want {
		t.Errorf("helper runs in the test's own namespace %s", ns)
	}
	var inH2 string
	if err := h.Do(func() (err error) { inH2, err = os.Readlink("/proc/thread-self/ns/net"); return err }); err != nil {
		t.Fatal(err)
	}
	if ns != inH2 {
		t.Errorf("helper in namespace %s, h2 is %s", ns, inH2)
	}

	// Stop and Cont freeze and thaw it.
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, 'T')
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, 'S')

	// Kill kills the program itself and reaps it: the PID is gone at return.
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Kill, kill(%d, 0) = %v, want ESRCH", pid, err)
	}
	if code, err := p.Wait(time.Second); code != 128+9 || err != nil {
		t.Errorf("Wait after Kill = %d, %v; want 137", code, err)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}

	// A clean exit gives its code; Wait times out on a running process.
	p = startHelper(t, h, "sleep")
	waitOutput(t, p, "ready ", 10*time.Second)
	if _, err := p.Wait(10 * time.Millisecond); !errors.Is(err, labnet.ErrWaitTimeout) {
		t.Errorf("Wait on a running process: %v", err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(10 * time.Second); code != 0 || err != nil {
		t.Errorf("exit after SIGTERM = %d, %v; want 0", code, err)
	}
	if !strings.Contains(p.Output(), "terminated") {
		t.Errorf("output: %q", p.Output())
	}
}

// waitState waits for /proc/PID/stat to show the given state letter.
func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	var state byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// "pid (comm) S ...": comm may hold spaces, the state follows the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i >= 0 && i+2 < len(b) {
			state = b[i+2]
			if state == want {
				return
			}
		}
	}
	t.Errorf("pid %d in state %c, want %c", pid, state, want)
}

// TestLabTeardown checks that a lab leaves nothing behind: no namespace, no
// process, no state directory, even when the test using it fails.
func TestLabTeardown(t *testing.T) {
	labnet.Require(t)
	var prefix string
	var pids []int
	inner := func(t *testing.T) {
		lab := labnet.New(t, 2)
		prefix = lab.Prefix()
		for _, h := range lab.Hosts() {
			p := startHelper(t, h, "sleep")
			waitOutput(t, p, "ready ", 10*time.Second)
			pids = append(pids, p.PID())
		}
		// A process the harness did not start itself, forked by a lab
		// process: teardown finds it by its namespace.
		stray := exec.Command("ip", "netns", "exec", lab.Host(1).Namespace(), "sleep", "600")
		if err := stray.Start(); err != nil {
			t.Fatal(err)
		}
		go stray.Wait()
		pids = append(pids, stray.Process.Pid)
		// Only once it is inside the namespace is it the lab's business.
		var want string
		lab.Host(1).Do(func() (err error) { want, err = os.Readlink("/proc/thread-self/ns/net"); return err })
		waitFor(t, 5*time.Second, "the stray to enter h1", func() bool {
			got, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", stray.Process.Pid))
			return got == want
		})
	}
	t.Run("lab", inner)

	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	if strings.Contains(string(out), prefix) {
		t.Errorf("namespaces of %s left after teardown:\n%s", prefix, out)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			// The stray is reaped by its Wait goroutine; give it a moment.
			time.Sleep(100 * time.Millisecond)
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d survived teardown: kill(0) = %v", pid, err)
			}
		}
	}
	if _, err := os.Stat(labnet.StateDirPrefix + prefix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory left: %v", err)
	}
}

// TestLabLargeEveryPair: in a lab of 40 hosts every host reaches every
// other. The kernel's neighbour table is one for all namespaces, 1024
// entries by default: without the lab raising its limits, 1,560 pairs
// overflow it and some datagrams are never sent ("neighbor table
// overflow").
func TestLabLargeEveryPair(t *testing.T) {
	labnet.Require(t)
	const n = 40
	lab := labnet.New(t, n)
	var conns []*net.UDPConn
	var ks []*counter
	for i := 1; i <= n; i++ {
		c := udpConn(t, lab.Host(i), 9100)
		conns = append(conns, c)
		ks = append(ks, countOn(c))
	}
	for i, c := range conns {
		for j := 1; j <= n; j++ {
			if j != i+1 {
				blast(t, c, netip.AddrPortFrom(lab.Host(j).Addr(), 9100), 1)
			}
		}
	}
	for j, k := range ks {
		if got := settle(k, 0, n-1); got != n-1 {
			t.Errorf("host %d received %d datagrams, want one from each of the %d others", j+1, got, n-1)
		}
	}
}
