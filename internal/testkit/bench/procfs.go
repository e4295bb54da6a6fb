package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound is wrapped by the /proc readers when the field or interface
// asked for is not in the file.
var ErrNotFound = errors.New("not found")

// ParseError is a /proc file that does not have the expected shape.
type ParseError struct {
	File   string // e.g. "/proc/123/status", or "status" when parsing bytes
	Reason string
	Err    error // ErrNotFound, a strconv error, or nil
}

func (e *ParseError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("bench: %s: %s: %v", e.File, e.Reason, e.Err)
	}
	return fmt.Sprintf("bench: %s: %s", e.File, e.Reason)
}

func (e *ParseError) Unwrap() error { return e.Err }

// RSS returns the resident set size of process pid in bytes: VmRSS in
// /proc/PID/status (anonymous, file and shared-memory pages that are
// resident: what `ps -o rss` shows).
func RSS(pid int) (int64, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := parseVmRSS(b)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = path
		}
		return 0, err
	}
	return n, nil
}

// parseVmRSS reads the "VmRSS:   7344 kB" line of a /proc/PID/status file.
// A kernel thread or a zombie has no such line (ErrNotFound).
func parseVmRSS(status []byte) (int64, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) != 2 || f[1] != "kB" {
			return 0, &ParseError{File: "status", Reason: fmt.Sprintf("VmRSS line %q: want \"VmRSS: N kB\"", bytes.TrimSpace(line))}
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, &ParseError{File: "status", Reason: "VmRSS value " + strconv.Quote(f[0]), Err: err}
		}
		return kb << 10, nil
	}
	return 0, &ParseError{File: "status", Reason: "no VmRSS line (kernel thread or zombie?)", Err: ErrNotFound}
}

// IfCounters are an interface's totals since it was created.
type IfCounters struct {
	RxBytes, RxPackets uint64
	TxBytes, TxPackets uint64
}

// Sub returns c - old, field by field: the traffic between two readings.
func (c IfCounters) Sub(old IfCounters) IfCounters {
	return IfCounters{
		RxBytes: c.RxBytes - old.RxBytes, RxPackets: c.RxPackets - old.RxPackets,
		TxBytes: c.TxBytes - old.TxBytes, TxPackets: c.TxPackets - old.TxPackets,
	}
}

// NetDev returns the counters of iface in the network namespace of process
// pid. /proc/PID/net/dev shows the namespace of that process, so a reader in
// the root namespace can see a lab host's eth0 without entering it.
func NetDev(pid int, iface string) (IfCounters, error) {
	path := fmt.Sprintf("/proc/%d/net/dev", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return IfCounters{}, err
	}
	c, err := parseNetDev(b, iface)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = path
		}
		return IfCounters{}, err
	}
	return c, nil
}

// parseNetDev reads iface's line of a /proc/net/dev file:
//
//	Inter-|   Receive                                                |  Transmit
//	 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs ...
//	  eth0:  123456     789    0    0    0     0          0         0   654321     987    0 ...
//
// Receive has 8 columns, so transmit bytes and packets are the 9th and 10th.
func parseNetDev(b []byte, iface string) (IfCounters, error) {
	for line := range bytes.Lines(b) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok || string(bytes.TrimSpace(name)) != iface {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) < 16 {
			return IfCounters{}, &ParseError{File: "net/dev", Reason: fmt.Sprintf("%s: %d columns, want 16", iface, len(f))}
		}
		var v [4]uint64
		for i, col := range []int{0, 1, 8, 9} {
			n, err := strconv.ParseUint(f[col], 10, 64)
			if err != nil {
				return IfCounters{}, &ParseError{File: "net/dev", Reason: fmt.Sprintf("%s column %d", iface, col+1), Err: err}
			}
			v[i] = n
		}
		return IfCounters{RxBytes: v[0], RxPackets: v[1], TxBytes: v[2], TxPackets: v[3]}, nil
	}
	return IfCounters{}, &ParseError{File: "net/dev", Reason: "no interface " + strconv.Quote(iface), Err: ErrNotFound}
}

// SegmentCounters are a network namespace's TCP segments and UDP
// datagrams, in and out, since it was created (/proc/net/snmp): what
// splits an interface's bytes into the protocols' datagrams and the TCP
// links' own segments (ACKs, keepalive probes, handshakes).
type SegmentCounters struct {
	TCPIn, TCPOut, UDPIn, UDPOut uint64
}

// Sub returns c - old, field by field.
func (c SegmentCounters) Sub(old SegmentCounters) SegmentCounters {
	return SegmentCounters{TCPIn: c.TCPIn - old.TCPIn, TCPOut: c.TCPOut - old.TCPOut, UDPIn: c.UDPIn - old.UDPIn, UDPOut: c.UDPOut - old.UDPOut}
}

// Segments returns the TCP and UDP counters of the network namespace of
// process pid (/proc/PID/net/snmp, read from the root namespace as NetDev
// reads net/dev).
func Segments(pid int) (SegmentCounters, error) {
	path := fmt.Sprintf("/proc/%d/net/snmp", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return SegmentCounters{}, err
	}
	c, err := parseSNMP(b)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = path
		}
		return SegmentCounters{}, err
	}
	return c, nil
}

// parseSNMP reads the Tcp and Udp lines of a /proc/net/snmp file: each
// protocol has a line of names and then a line of values.
//
//	Tcp: RtoAlgorithm ... InSegs OutSegs RetransSegs ...
//	Tcp: 1 ... 351885 350195 476 ...
//	Udp: InDatagrams NoPorts InErrors OutDatagrams ...
//	Udp: 2915757 96917 3256730 5925010 ...
func parseSNMP(b []byte) (SegmentCounters, error) {
	names := map[string][]string{}
	values := map[string]map[string]uint64{}
	for line := range bytes.Lines(b) {
		proto, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		p, f := string(proto), strings.Fields(string(rest))
		if names[p] == nil {
			names[p] = f
			continue
		}
		if len(f) != len(names[p]) {
			return SegmentCounters{}, &ParseError{File: "net/snmp", Reason: fmt.Sprintf("%s: %d values for %d names", p, len(f), len(names[p]))}
		}
		values[p] = map[string]uint64{}
		for i, name := range names[p] {
			if n, err := strconv.ParseUint(f[i], 10, 64); err == nil {
				values[p][name] = n // negative ones (Tcp MaxConn -1) are not counters
			}
		}
	}
	var c SegmentCounters
	for _, w := range []struct {
		proto, name string
		into        *uint64
	}{{"Tcp", "InSegs", &c.TCPIn}, {"Tcp", "OutSegs", &c.TCPOut}, {"Udp", "InDatagrams", &c.UDPIn}, {"Udp", "OutDatagrams", &c.UDPOut}} {
		v, ok := values[w.proto][w.name]
		if !ok {
			return SegmentCounters{}, &ParseError{File: "net/snmp", Reason: "no " + w.proto + " " + w.name, Err: ErrNotFound}
		}
		*w.into = v
	}
	return c, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports (the kernel fixes it for userspace).
const clockTicks = 100

// CPUTime returns the CPU time (user + system) process pid has used:
// utime and stime in /proc/PID/stat.
func CPUTime(pid int) (time.Duration, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	d, err := parseStatCPU(b)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = path
		}
	}
	return d, err
}

// parseStatCPU reads utime and stime from a /proc/PID/stat line. The
// command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so fields are counted after its last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, &ParseError{File: "stat", Reason: "no ')' after the command name"}
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, &ParseError{File: "stat", Reason: fmt.Sprintf("%d fields after the command name, want at least 13", len(f))}
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, &ParseError{File: "stat", Reason: fmt.Sprintf("CPU time %q is not a tick count", s), Err: err}
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
