package timed

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestTimedClientConverges: a timed on a simulated clock 100 ms off (either
// way) and drifting follows a timed NTP server on a true clock. Ground truth
// is the simulated clock's exact error (true_offset_ns): within 1 ms in 10 s
// (the target), and the reported error bound always contains it
// once synchronised.
func TestTimedClientConverges(t *testing.T) {
	for _, start := range []time.Duration{100 * time.Millisecond, -100 * time.Millisecond} {
		t.Run(start.String(), func(t *testing.T) {
			srv := newCluster(t, "timed", 2)
			addr := serveTimed(t, srv, 1, 0, "--stratum", "8")
			srv.Start(2, "--clock", "sim", "--sim-offset", start.String(), "--sim-drift", "25", "--server", addr.String())
			began := time.Now()
			var converged time.Duration
			for time.Since(began) < 12*time.Second {
				time.Sleep(100 * time.Millisecond)
				st, err := srv.Status(2)
				if err != nil {
					continue
				}
				trueOff := time.Duration(st["true_offset_ns"].(float64))
				cl := st["node"].(map[string]any)["core"].(map[string]any)["client"].(map[string]any)
				if cl["synchronized"] == true {
					bound := time.Duration(cl["error_bound_ns"].(float64))
					if trueOff > bound || -trueOff > bound {
						t.Fatalf("true offset %v outside the reported bound ±%v", trueOff, bound)
					}
				}
				if converged == 0 && trueOff < time.Millisecond && -trueOff < time.Millisecond {
					converged = time.Since(began)
				}
				if converged != 0 && time.Since(began) > converged+2*time.Second {
					break
				}
			}
			if converged == 0 || converged > 10*time.Second {
				t.Fatalf("not within 1 ms of true time in 10 s (converged after %v)", converged)
			}
			t.Logf("from %v: within 1 ms of true time after %v", start, converged.Round(10*time.Millisecond))
			// The client follows the server, one stratum below it.
			st, _ := srv.Status(2)
			cl := st["node"].(map[string]any)["core"].(map[string]any)["client"].(map[string]any)
			if cl["stratum"].(float64) != 9 || cl["sys_peer"] != addr.String() {
				t.Errorf("client stratum %v, sys peer %v; want 9 and %v", cl["stratum"], cl["sys_peer"], addr)
			}
		})
	}
}

// TestTimedNTPWithoutCluster: keeping time over NTP needs no cluster. A
// server (`timed run --serve ADDR --stratum 8`) and a client (`timed run
// --server ADDR`) started without --id and --members work, like chronyd
// with one server line, and neither opens a cluster socket: each holds
// exactly one UDP socket (the NTP one) and no TCP socket at all.
func TestTimedNTPWithoutCluster(t *testing.T) {
	c := newCluster(t, "timed", 2)
	ip := "127.0.0.31"
	addr := netip.MustParseAddrPort(fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip)))
	c.StartAlone(1, "--clock", "sim", "--serve", addr.String(), "--stratum", "8")
	c.StartAlone(2, "--clock", "sim", "--sim-offset", "40ms", "--server", addr.String())
	var st map[string]any
	c.Eventually("the client synchronised to the server", 10*time.Second, func() bool {
		var err error
		st, err = c.Status(2)
		if err != nil {
			return false
		}
		cl, _ := st["node"].(map[string]any)["core"].(map[string]any)["client"].(map[string]any)
		return cl["synchronized"] == true && cl["sys_peer"] == addr.String()
	})
	if st["address"] != "" || st["members"] != nil || st["id"].(float64) != 0 {
		t.Errorf("client status: address %v, members %v, id %v; want no cluster", st["address"], st["members"], st["id"])
	}
	if _, ok := st["node"].(map[string]any)["core"].(map[string]any)["cluster"]; ok {
		t.Errorf("client status has a cluster part: %v", st["node"].(map[string]any)["core"])
	}
	for i := 1; i <= 2; i++ {
		udp, tcp := inetSockets(t, c.Procs[i].Process.Pid)
		if udp != 1 || tcp != 0 {
			t.Errorf("host %d holds %d UDP and %d TCP sockets, want the NTP socket alone (1, 0)", i, udp, tcp)
		}
	}
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "status", "--control", c.Control(2)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no cluster") || strings.Contains(string(out), "node 0") {
		t.Errorf("timed status: %v\n%s", err, out)
	}
}

// inetSockets counts the IPv4 and IPv6 UDP and TCP sockets process pid
// holds, matching its socket descriptors against the kernel's tables.
func inetSockets(t *testing.T, pid int) (udp, tcp int) {
	t.Helper()
	inodes := map[string]string{}
	for _, table := range []string{"udp", "udp6", "tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue // no IPv6 in this kernel
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 9 {
				inodes[f[9]] = strings.TrimSuffix(table, "6")
			}
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		switch inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
		case "udp":
			udp++
		case "tcp":
			tcp++
		}
	}
	return udp, tcp
}

// TestTimedClientPollSamples: `--poll-samples 2` against timed's server
// (its rate limit raised to let two requests a second through): two
// requests a poll, one sample of the two to the filter, synchronised, and
// the true offset within the bound it reports.
func TestTimedClientPollSamples(t *testing.T) {
	c := newCluster(t, "timed", 2)
	addr := serveTimed(t, c, 1, 0, "--stratum", "8", "--rate-limit", "250ms")
	c.Start(2, "--clock", "sim", "--sim-offset", "20ms", "--server", addr.String(), "--minpoll", "0", "--maxpoll", "0", "--poll-samples", "2")
	var cl, counters map[string]any
	var trueOff time.Duration
	c.Eventually("the client synchronised, 8 samples in", 20*time.Second, func() bool {
		st, err := c.Status(2)
		if err != nil {
			return false
		}
		trueOff = time.Duration(st["true_offset_ns"].(float64))
		cl = st["node"].(map[string]any)["core"].(map[string]any)["client"].(map[string]any)
		counters, _ = cl["counters"].(map[string]any)
		acc, _ := counters["accepted"].(float64)
		return cl["synchronized"] == true && acc >= 8
	})
	req, acc, unused := counters["requests"].(float64), counters["accepted"].(float64), counters["poll_samples_unused"].(float64)
	// Two requests a poll at most, and most polls with two answers, one
	// of them unused. (Not exact: on a loaded host an answer that comes
	// after the next poll began is refused, and one that comes after the
	// poll ended is a sample of its own.)
	if req > 2*(acc+unused)+2 || unused < acc/2 {
		t.Fatalf("requests %v, accepted %v, poll_samples_unused %v: want at most two requests a poll and most polls with an unused answer; counters %v", req, acc, unused, counters)
	}
	if bound := time.Duration(cl["error_bound_ns"].(float64)); trueOff.Abs() > bound {
		t.Fatalf("true offset %v outside the reported bound ±%v", trueOff, bound)
	}
	// An answer that comes after the next poll began (a loaded host) is
	// refused as bogus, as any answer to a request no longer waited for
	// is; no other refusal has a cause here.
	for k := range counters {
		if strings.HasPrefix(k, "rejected_") && k != "rejected_bogus" {
			t.Fatalf("answers rejected: %v", counters)
		}
	}
}
