package transport

import (
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStreamPingPongMembers is BenchmarkStreamPingPong as a daemon
// configures its endpoint: the members known (Config.Peers), so that
// each end orders its member's connections (peerOrder), and
// Config.Supersedes set. It reports how often Supersedes ran: for a
// connection's frames until it first superseded (its first), never for a
// steady stream.
func BenchmarkStreamPingPongMembers(b *testing.B) {
	var asked atomic.Int64
	supersedes := func(netip.AddrPort, []byte) bool { asked.Add(1); return true }
	aAddr, cAddr := mustAP("127.0.0.10:0"), mustAP("127.0.0.11:0")
	a, err := Open(Config{Listen: aAddr, Seed: 1, Peers: []netip.AddrPort{mustAP("127.0.0.11:1")}, Supersedes: supersedes})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	c, err := Open(Config{Listen: cAddr, Seed: 2, Peers: []netip.AddrPort{mustAP("127.0.0.10:1")}, Supersedes: supersedes})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range c.Packets() {
			c.SendStream(a.LocalAddr(), p.Data, nil)
		}
	}()
	msg := make([]byte, 64)
	exchange := func() {
		if err := a.SendStream(c.LocalAddr(), msg, nil); err != nil {
			b.Fatal(err)
		}
		select {
		case <-a.Packets():
		case <-time.After(hangGuard):
			b.Fatal("no answer")
		}
	}
	for range 100 { // both links up
		exchange()
	}
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	for range b.N {
		exchange()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(syscall.TimevalToNsec(r1.Utime) - syscall.TimevalToNsec(r0.Utime) + syscall.TimevalToNsec(r1.Stime) - syscall.TimevalToNsec(r0.Stime))
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(asked.Load()), "supersedes-calls")
	c.Close()
	<-done
}
