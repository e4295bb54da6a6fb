package transport

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tcpTimer is one IPv4 TCP socket's pending timer as /proc/net/tcp shows
// it: which (0 none, 1 retransmission, 2 keepalive, ...) and when it
// fires.
type tcpTimer struct {
	kind int
	in   time.Duration
}

// tcpTimers reads the timers of this namespace's IPv4 TCP sockets by
// local and remote address.
func tcpTimers(t *testing.T) map[[2]netip.AddrPort]tcpTimer {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	defer f.Close()
	addr := func(s string) netip.AddrPort {
		ip, port, _ := strings.Cut(s, ":")
		a, _ := strconv.ParseUint(ip, 16, 32)
		p, _ := strconv.ParseUint(port, 16, 16)
		// The address is the kernel's 32-bit word printed in hex: the
		// bytes of a little-endian host's memory, reversed.
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(a), byte(a >> 8), byte(a >> 16), byte(a >> 24)}), uint16(p))
	}
	out := map[[2]netip.AddrPort]tcpTimer{}
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		kind, when, _ := strings.Cut(fs[5], ":")
		k, _ := strconv.ParseInt(kind, 16, 32)
		w, _ := strconv.ParseInt(when, 16, 64)
		// In clock ticks (USER_HZ, 100 on Linux).
		out[[2]netip.AddrPort{addr(fs[1]), addr(fs[2])}] = tcpTimer{kind: int(k), in: time.Duration(w) * 10 * time.Millisecond}
	}
	return out
}

// TestStreamKeepAliveAtTheDialerOnly: an idle link is probed by its
// dialing end alone, first after 2*KeepAlive of silence (so a dead idle
// peer is noticed after 2*KeepAlive and two unanswered probes a KeepAlive
// apart: 4*KeepAlive, as with data in flight); the accepting end, which
// only reads, runs no keepalive timer. Both ends probing every KeepAlive
// (taking turns: one exchange per KeepAlive) was twice the traffic.
func TestStreamKeepAliveAtTheDialerOnly(t *testing.T) {
	k := &kit{t: t, real: true}
	const keep = 3 * time.Second
	cfg := func(i int) Config { return Config{Listen: k.addr(i), Stream: StreamConfig{KeepAlive: keep}} }
	a, b := k.open(cfg(1)), k.open(cfg(2))
	if err := a.SendStream(b.LocalAddr(), []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	recv(t, b, hangGuard)
	var dialer, acceptor *tcpTimer
	eventually(t, hangGuard, "both ends of the link in /proc/net/tcp", func() bool {
		dialer, acceptor = nil, nil
		for ends, tm := range tcpTimers(t) {
			switch {
			case ends[0].Addr() == a.LocalAddr().Addr() && ends[1] == b.LocalAddr():
				dialer = &tm
			case ends[0] == b.LocalAddr() && ends[1].Addr() == a.LocalAddr().Addr():
				acceptor = &tm
			}
		}
		return dialer != nil && acceptor != nil
	})
	if dialer.kind != 2 || dialer.in <= keep || dialer.in > 2*keep {
		t.Errorf("dialer's timer %s, want keepalive (2) in (%v, %v]", timerText(*dialer), keep, 2*keep)
	}
	if acceptor.kind != 0 {
		t.Errorf("acceptor's timer %s, want none (0): it does not probe", timerText(*acceptor))
	}
}

func timerText(tm tcpTimer) string { return fmt.Sprintf("%d in %v", tm.kind, tm.in) }
