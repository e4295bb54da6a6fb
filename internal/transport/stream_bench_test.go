package transport

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkStreamPingPong: a frame to a peer and its answer back, over
// the two endpoints' stream links on loopback, one exchange at a time (the
// shape of a protocol's request and grant). It reports the exchange's
// time and the process's CPU for it (both ends, every goroutine).
func BenchmarkStreamPingPong(b *testing.B) {
	streamPingPong(b, Config{Listen: mustAP("127.0.0.10:0"), Seed: 1}, Config{Listen: mustAP("127.0.0.11:0"), Seed: 2}, nil)
}

// streamPingPong runs the exchanges of BenchmarkStreamPingPong between
// endpoints opened with ca and cc; more reports its own metrics once the
// exchanges are timed.
func streamPingPong(b *testing.B, ca, cc Config, more func()) {
	a, err := Open(ca)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	c, err := Open(cc)
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
	if more != nil {
		more()
	}
	c.Close()
	<-done
}
