package bench

import (
	"errors"
	"os"
	"testing"
	"time"
)

const statusSample = `Name:	electd
Umask:	0022
State:	S (sleeping)
VmPeak:	 1254560 kB
VmSize:	 1254560 kB
VmHWM:	   15036 kB
VmRSS:	   14356 kB
RssAnon:	    5012 kB
Threads:	7
`

func TestParseVmRSS(t *testing.T) {
	n, err := parseVmRSS([]byte(statusSample))
	if err != nil || n != 14356*1024 {
		t.Fatalf("parseVmRSS = %d, %v; want %d", n, err, 14356*1024)
	}
	// VmHWM and RssAnon must not be mistaken for VmRSS.
	_, err = parseVmRSS([]byte("Name:\tkworker/0:1\nVmHWM:\t 10 kB\nRssAnon:\t 5 kB\n"))
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("kernel thread: err = %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"VmRSS:\t12 MB\n", "VmRSS:\tx kB\n", "VmRSS:\n", "VmRSS:\t-4 kB\n"} {
		var pe *ParseError
		if _, err := parseVmRSS([]byte(bad)); !errors.As(err, &pe) {
			t.Errorf("parseVmRSS(%q) err = %v, want a *ParseError", bad, err)
		}
	}
}

func TestRSSOfSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: not Linux")
	}
	n, err := RSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A Go test binary is resident for at least 1 MB and far below 1 GB.
	if n < 1<<20 || n > 1<<30 {
		t.Errorf("RSS of the test binary = %d bytes, implausible", n)
	}
	if _, err := RSS(-1); err == nil {
		t.Error("RSS(-1): no error")
	}
}

const netDevSample = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1200      12    0    0    0     0          0         0     1200      12    0    0    0     0       0          0
  eth0: 9876543   12345    1    2    0     0          0        77  1234567     4321    0    0    0     0       0          0
`

func TestParseNetDev(t *testing.T) {
	c, err := parseNetDev([]byte(netDevSample), "eth0")
	if err != nil {
		t.Fatal(err)
	}
	want := IfCounters{RxBytes: 9876543, RxPackets: 12345, TxBytes: 1234567, TxPackets: 4321}
	if c != want {
		t.Errorf("eth0 = %+v, want %+v", c, want)
	}
	if d := want.Sub(IfCounters{RxBytes: 543, RxPackets: 45, TxBytes: 567, TxPackets: 21}); d != (IfCounters{9876000, 12300, 1234000, 4300}) {
		t.Errorf("Sub = %+v", d)
	}
	// "eth" must not match "eth0", nor a header line.
	if _, err := parseNetDev([]byte(netDevSample), "eth"); !errors.Is(err, ErrNotFound) {
		t.Errorf("eth: err = %v, want ErrNotFound", err)
	}
	if _, err := parseNetDev([]byte("  eth0: 1 2 3\n"), "eth0"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("short line: err = %v, want a shape error", err)
	}
}

func TestNetDevOfSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/dev"); err != nil {
		t.Skip("no /proc: not Linux")
	}
	if _, err := NetDev(os.Getpid(), "lo"); err != nil {
		t.Fatal(err)
	}
	_, err := NetDev(os.Getpid(), "no-such-if0")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File == "net/dev" || !errors.Is(err, ErrNotFound) {
		t.Errorf("missing interface: err = %v, want a ParseError naming the /proc file, wrapping ErrNotFound", err)
	}
}

// TestParseSNMP: the TCP segments and UDP datagrams of /proc/net/snmp,
// by name (the column order is the kernel's); a file without them is an
// error.
func TestParseSNMP(t *testing.T) {
	in := "Ip: Forwarding DefaultTTL\nIp: 1 64\n" +
		"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n" +
		"Tcp: 1 200 120000 -1 35696 34525 1122 7929 0 351885 350195 476 0 5648 0\n" +
		"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n" +
		"Udp: 2915757 96917 3256730 5925010 3256730 0 0 0 0\n"
	got, err := parseSNMP([]byte(in))
	if want := (SegmentCounters{TCPIn: 351885, TCPOut: 350195, UDPIn: 2915757, UDPOut: 5925010}); err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseSNMP([]byte("Ip: Forwarding\nIp: 1\n")); !errors.Is(err, ErrNotFound) {
		t.Errorf("no Tcp or Udp: %v, want ErrNotFound", err)
	}
	if _, err := parseSNMP([]byte("Udp: InDatagrams OutDatagrams\nUdp: 1\n")); err == nil {
		t.Error("a short value line parsed")
	}
	if _, err := Segments(os.Getpid()); err != nil {
		t.Errorf("own namespace's /proc/net/snmp: %v", err)
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis, utime 250, stime 50.
	line := []byte("4242 (timed (x) y) S 1 4242 4242 0 -1 4194560 800 0 0 0 250 50 0 0 20 0 7 0 123 0 0\n")
	d, err := parseStatCPU(line)
	if err != nil || d != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", d, err)
	}
	for _, bad := range []string{"4242 timed S 1", "4242 (timed) S 1 2 3", "4242 (timed) S 1 4242 4242 0 -1 4194560 800 0 0 0 x 50 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q): no error", bad)
		}
	}
	if d, err := CPUTime(os.Getpid()); err != nil || d < 0 {
		t.Errorf("CPUTime(self) = %v, %v", d, err)
	}
}
