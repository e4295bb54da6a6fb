package labnet_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/internal/transport"
)

// Lab tests of internal/transport on real sockets across namespaces: what the
// in-memory network cannot show (multicast on a veth through a bridge,
// kernel stamps, TCP links broken by a SIGKILLed peer).

// The group's port differs from the member port: with equal ports Open
// fails with EADDRINUSE here, because Go's ListenPacket binds a multicast
// address as the wildcard 0.0.0.0:port (net/sock_posix.go, listenDatagram),
// which collides with the member socket (reported to the transport's owner).
const (
	labPort  = 7700
	labGroup = "239.255.77.1:7701"
)

func init() {
	helperRoles["mcast-recv"] = helperMcastRecv
	helperRoles["mcast-send"] = helperMcastSend
	helperRoles["stream-recv"] = helperStreamRecv
	helperRoles["stream-send"] = helperStreamSend
	helperRoles["stream-idle"] = helperStreamIdle
}

// helperEndpoint opens an endpoint at LABNET_ADDR:7700, joined to the lab
// group on eth0 when mcast is set.
func helperEndpoint(mcast bool) (transport.Endpoint, error) {
	addr, err := netip.ParseAddr(os.Getenv("LABNET_ADDR"))
	if err != nil {
		return nil, fmt.Errorf("LABNET_ADDR: %w", err)
	}
	cfg := transport.Config{Listen: netip.AddrPortFrom(addr, labPort)}
	if mcast {
		cfg.Multicast = &transport.MulticastConfig{
			Group:     netip.MustParseAddrPort(labGroup),
			Interface: labnet.HostInterface,
			TTL:       1,
			// On, so that the sender really gets its own datagrams back
			// and the test sees the endpoint drop them.
			Loopback: true,
		}
	}
	return transport.Open(cfg)
}

func seqFrame(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func frameSeq(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

func termSignal() <-chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	return c
}

// helperMcastRecv prints "ready", then one summary line of what arrived once
// LABNET_COUNT frames have, or when it gets SIGTERM.
func helperMcastRecv() error {
	count, err := strconv.Atoi(os.Getenv("LABNET_COUNT"))
	if err != nil {
		return err
	}
	ep, err := helperEndpoint(true)
	if err != nil {
		return err
	}
	defer ep.Close()
	term := termSignal()
	fmt.Println("ready")
	var n, kernel, viaMcast, bad int
	var next uint64 = 1
	inOrder := true
	from := map[netip.AddrPort]int{}
	report := func() {
		var srcs []string
		for a, c := range from {
			srcs = append(srcs, fmt.Sprintf("%v*%d", a, c))
		}
		fmt.Printf("done n=%d kernel=%d multicast=%d bad=%d inorder=%v from=%s\n",
			n, kernel, viaMcast, bad, inOrder, strings.Join(srcs, ","))
	}
	count1 := func(p transport.Packet) {
		seq, ok := frameSeq(p.Data)
		if !ok {
			bad++
			return
		}
		n++
		if p.Kernel {
			kernel++
		}
		if p.Via == transport.ViaMulticast {
			viaMcast++
		}
		from[p.From]++
		if seq != next {
			inOrder = false
		}
		next = seq + 1
	}
	for {
		select {
		case p := <-ep.Packets():
			count1(p)
			if n < count {
				continue
			}
			// All there: wait a little for anything extra (duplicates,
			// our own frames) before reporting.
			for quiet := time.After(100 * time.Millisecond); ; {
				select {
				case p := <-ep.Packets():
					count1(p)
					continue
				case <-quiet:
				}
				break
			}
			report()
			return nil
		case <-term:
			report()
			return nil
		}
	}
}

// helperMcastSend sends LABNET_COUNT frames to the group, then listens a
// while for anything coming back, and prints one summary line.
func helperMcastSend() error {
	count, err := strconv.Atoi(os.Getenv("LABNET_COUNT"))
	if err != nil {
		return err
	}
	ep, err := helperEndpoint(true)
	if err != nil {
		return err
	}
	defer ep.Close()
	for i := 1; i <= count; i++ {
		if err := ep.SendMulticast(seqFrame(uint64(i)), nil); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Wait until the endpoint has seen every looped-back frame (a loaded
	// machine may take a while), then a little longer for anything it
	// wrongly delivers.
	own := 0
	deadline := time.Now().Add(10 * time.Second)
	for ep.Stats().OwnMulticastIgnored < uint64(count) && time.Now().Before(deadline) {
		select {
		case <-ep.Packets():
			own++
		case <-time.After(10 * time.Millisecond):
		}
	}
	for quiet := time.After(100 * time.Millisecond); ; {
		select {
		case <-ep.Packets():
			own++
			continue
		case <-quiet:
		}
		break
	}
	st := ep.Stats()
	fmt.Printf("sent n=%d delivered_to_self=%d own_ignored=%d\n", count, own, st.OwnMulticastIgnored)
	return nil
}

func TestLabMulticastAcrossHosts(t *testing.T) {
	labnet.Require(t)
	t.Run("bridge", func(t *testing.T) { testMulticastAcrossHosts(t, labnet.New(t, 4)) })
	t.Run("switch", func(t *testing.T) { testMulticastAcrossHosts(t, labnet.New(t, 4, labnet.WithSwitch())) })
}

func testMulticastAcrossHosts(t *testing.T, lab *labnet.Lab) {
	const count = 100

	var recv []*labnet.Proc
	for _, h := range lab.Hosts()[1:] {
		p := startHelper(t, h, "mcast-recv", "LABNET_ADDR="+h.Addr().String(), fmt.Sprintf("LABNET_COUNT=%d", count))
		recv = append(recv, p)
	}
	for _, p := range recv {
		waitOutput(t, p, "ready", 10*time.Second)
	}
	h1 := lab.Host(1)
	send := startHelper(t, h1, "mcast-send", "LABNET_ADDR="+h1.Addr().String(), fmt.Sprintf("LABNET_COUNT=%d", count))
	if code, err := send.Wait(20 * time.Second); code != 0 || err != nil {
		t.Fatalf("sender: exit %d, %v; output:\n%s", code, err, send.Output())
	}
	line := waitOutput(t, send, "sent ", time.Second)
	var n, self, ignored int
	if _, err := fmt.Sscanf(line, "sent n=%d delivered_to_self=%d own_ignored=%d", &n, &self, &ignored); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	// Loopback was on, so the kernel did hand our own datagrams back; the
	// endpoint must have recognised and dropped every one of them.
	if self != 0 || ignored != count {
		t.Errorf("sender: %d of its own frames delivered, %d ignored; want 0 and %d", self, ignored, count)
	}

	want := fmt.Sprintf("done n=%d kernel=%d multicast=%d bad=0 inorder=true from=%s*%d", count, count, count,
		netip.AddrPortFrom(h1.Addr(), labPort), count)
	for _, p := range recv {
		// A receiver reports by itself once it has every frame; one that
		// is still waiting is told to report what it has.
		if _, err := p.Wait(10 * time.Second); errors.Is(err, labnet.ErrWaitTimeout) {
			p.Signal(syscall.SIGTERM)
		}
		if code, err := p.Wait(10 * time.Second); code != 0 || err != nil {
			t.Errorf("%s: exit %d, %v", p.Host().Name(), code, err)
		}
		if got := waitOutput(t, p, "done ", time.Second); got != want {
			t.Errorf("%s received:\n got %s\nwant %s", p.Host().Name(), got, want)
		}
	}
}

// helperStreamRecv prints "ready", then "rx SEQ" for every stream frame.
func helperStreamRecv() error {
	ep, err := helperEndpoint(false)
	if err != nil {
		return err
	}
	defer ep.Close()
	term := termSignal()
	fmt.Println("ready")
	for {
		select {
		case p := <-ep.Packets():
			if seq, ok := frameSeq(p.Data); ok && p.Via == transport.ViaStream {
				fmt.Printf("rx %d\n", seq)
			}
		case <-term:
			return nil
		}
	}
}

// helperStreamSend streams numbered frames to LABNET_PEER:7700 every 5 ms,
// printing "sent SEQ" for each frame the link accepted, until SIGTERM; then
// it prints its stream statistics.
func helperStreamSend() error {
	peer, err := netip.ParseAddr(os.Getenv("LABNET_PEER"))
	if err != nil {
		return fmt.Errorf("LABNET_PEER: %w", err)
	}
	ep, err := helperEndpoint(false)
	if err != nil {
		return err
	}
	defer ep.Close()
	term := termSignal()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	to := netip.AddrPortFrom(peer, labPort)
	for seq := uint64(1); ; {
		select {
		case <-tick.C:
			if err := ep.SendStream(to, seqFrame(seq), nil); err != nil {
				fmt.Printf("refused %d %v\n", seq, err)
			} else {
				fmt.Printf("sent %d\n", seq)
			}
			seq++
		case <-term:
			st := ep.Stats()
			fmt.Printf("stats reconnects=%d dial_errors=%d queue_drops=%d stale_drops=%d send_errors=%d\n",
				st.Reconnects, st.DialErrors, st.QueueDrops, st.StaleDrops, st.SendErrors)
			return nil
		}
	}
}

// numbers parses the numbers of the lines "WORD N" in out.
func numbers(out, word string) []uint64 {
	var s []uint64
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, word+" "); ok {
			if v, err := strconv.ParseUint(rest, 10, 64); err == nil {
				s = append(s, v)
			}
		}
	}
	return s
}

// waitFor polls until cond holds or fails the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

func last(s []uint64) uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

func TestLabStreamSurvivesPeerKill(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 2)
	h1, h2 := lab.Host(1), lab.Host(2)
	recvEnv := "LABNET_ADDR=" + h2.Addr().String()

	recv1 := startHelper(t, h2, "stream-recv", recvEnv)
	waitOutput(t, recv1, "ready", 10*time.Second)
	send := startHelper(t, h1, "stream-send", "LABNET_ADDR="+h1.Addr().String(), "LABNET_PEER="+h2.Addr().String())
	waitFor(t, 10*time.Second, "50 frames at the first receiver", func() bool { return len(numbers(recv1.Output(), "rx")) >= 50 })

	// SIGKILL: no FIN from the application, the kernel resets the
	// connection; the sender keeps sending meanwhile.
	if err := recv1.Kill(); err != nil {
		t.Fatal(err)
	}
	got1 := numbers(recv1.Output(), "rx")
	killedAt := last(numbers(send.Output(), "sent"))
	time.Sleep(300 * time.Millisecond)

	recv2 := startHelper(t, h2, "stream-recv", recvEnv)
	waitOutput(t, recv2, "ready", 10*time.Second)
	restartAt := last(numbers(send.Output(), "sent"))
	// The link must come back by itself (backoff is at most 2 s) and carry
	// frames sent well after the restart.
	waitFor(t, 15*time.Second, "frames sent after the restart", func() bool {
		return last(numbers(recv2.Output(), "rx")) >= restartAt+100
	})
	if err := send.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := send.Wait(10 * time.Second); code != 0 || err != nil {
		t.Fatalf("sender: exit %d, %v", code, err)
	}
	stats := waitOutput(t, send, "stats ", time.Second)
	got2 := numbers(recv2.Output(), "rx")

	// Before the kill: every frame, in order.
	for i, seq := range got1 {
		if seq != uint64(i+1) {
			t.Fatalf("first receiver: frame %d is seq %d", i, seq)
		}
	}
	// After the restart: in order, no duplicates, and no gap among the
	// frames sent from the restart on.
	for i := 1; i < len(got2); i++ {
		if got2[i] <= got2[i-1] {
			t.Fatalf("second receiver: seq %d after %d", got2[i], got2[i-1])
		}
		if got2[i-1] >= restartAt && got2[i] != got2[i-1]+1 {
			t.Errorf("second receiver: gap %d -> %d among frames sent after the restart (at %d)", got2[i-1], got2[i], restartAt)
		}
	}
	if len(got2) == 0 || got2[0] > restartAt+1 {
		t.Errorf("second receiver starts at %v; frames from %d on were sent after it was up", got2[:min(len(got2), 1)], restartAt+1)
	}
	if !strings.Contains(stats, "reconnects=") || strings.Contains(stats, "reconnects=0 ") {
		t.Errorf("sender %s; want at least one reconnect", stats)
	}
	lost := int(got2[0]) - int(last(got1)) - 1
	t.Logf("first receiver got 1..%d; killed when %d had been sent; restarted when %d had; second receiver got %d..%d (%d frames); lost in the gap: %d; sender %s",
		last(got1), killedAt, restartAt, got2[0], last(got2), len(got2), lost, stats)
}

// helperStreamIdle sends one frame to LABNET_PEER:7700 with the stream
// keepalive LABNET_KEEPALIVE, then stays idle, printing "connected" and
// "down" as its link to the peer comes up and goes down, until SIGTERM.
func helperStreamIdle() error {
	peer, err := netip.ParseAddr(os.Getenv("LABNET_PEER"))
	if err != nil {
		return fmt.Errorf("LABNET_PEER: %w", err)
	}
	keep, err := time.ParseDuration(os.Getenv("LABNET_KEEPALIVE"))
	if err != nil {
		return fmt.Errorf("LABNET_KEEPALIVE: %w", err)
	}
	addr, err := netip.ParseAddr(os.Getenv("LABNET_ADDR"))
	if err != nil {
		return fmt.Errorf("LABNET_ADDR: %w", err)
	}
	ep, err := transport.Open(transport.Config{Listen: netip.AddrPortFrom(addr, labPort), Stream: transport.StreamConfig{KeepAlive: keep}})
	if err != nil {
		return err
	}
	defer ep.Close()
	term := termSignal()
	if err := ep.SendStream(netip.AddrPortFrom(peer, labPort), seqFrame(1), nil); err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	was := false
	for {
		select {
		case <-tick.C:
			st := ep.Stats()
			up := len(st.Links) == 1 && st.Links[0].Connected
			if up != was {
				if up {
					fmt.Println("connected")
				} else {
					fmt.Printf("down %s\n", st.Links[0].LastError)
				}
				was = up
			}
		case <-term:
			return nil
		}
	}
}

// TestLabStreamNoticesDeadIdlePeer: an idle link whose peer stops
// answering (the path cut, so no reset comes) is dropped within
// 4*KeepAlive, the transport's promise, though only the dialer probes and
// only after 2*KeepAlive of silence; while the peer answers, the probes
// keep the idle link up.
func TestLabStreamNoticesDeadIdlePeer(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 2)
	h1, h2 := lab.Host(1), lab.Host(2)
	const keep = time.Second
	recv := startHelper(t, h2, "stream-recv", "LABNET_ADDR="+h2.Addr().String())
	waitOutput(t, recv, "ready", 10*time.Second)
	idle := startHelper(t, h1, "stream-idle", "LABNET_ADDR="+h1.Addr().String(), "LABNET_PEER="+h2.Addr().String(),
		"LABNET_KEEPALIVE="+keep.String())
	waitOutput(t, idle, "connected", 10*time.Second)
	waitFor(t, 10*time.Second, "the frame at the receiver", func() bool { return len(numbers(recv.Output(), "rx")) == 1 })
	// Idle and healthy for several probe rounds: still up.
	time.Sleep(5 * keep)
	if strings.Contains(idle.Output(), "down") {
		t.Fatalf("the idle link to a live peer went down:\n%s", idle.Output())
	}
	lab.Partition(1, 2)
	cut := time.Now()
	line := waitOutput(t, idle, "down", 4*keep+3*time.Second)
	took := time.Since(cut)
	t.Logf("idle link dropped %v after its peer was cut off (KeepAlive %v): %s", took.Round(10*time.Millisecond), keep, line)
	if took > 4*keep+time.Second {
		t.Errorf("noticed after %v, want within 4*KeepAlive = %v (and a second's slack)", took, 4*keep)
	}
}
