package timed

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/trace"
)

// TestTimedNTPTraced: timed's NTP traffic is traced like any frame. A
// client (`timed run --server ADDR --trace FILE`) of a server whose trace
// is missing draws the server's line from the packets alone (each reply
// carries when the server received the request and when it answered), an
// arrow for each packet of each exchange; with the server traced too
// (--trace on both), the two traces' packets pair up by their transmit
// timestamps and no line is invented.
func TestTimedNTPTraced(t *testing.T) {
	c := newCluster(t, "timed", 2)
	ip := "127.0.0.33"
	addr := netip.MustParseAddrPort(fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip)))
	serverTrace, clientTrace := filepath.Join(c.Dir, "server.trace"), filepath.Join(c.Dir, "client.trace")
	c.StartAlone(1, "--clock", "sim", "--serve", addr.String(), "--stratum", "8", "--trace", serverTrace)
	c.StartAlone(2, "--clock", "sim", "--sim-offset", "40ms", "--server", addr.String(),
		"--minpoll", "-2", "--maxpoll", "-2", "--trace", clientTrace)
	exchanges := func() int {
		b, _ := os.ReadFile(clientTrace)
		return strings.Count(string(b), `"ev":"recv","kind":"ntp_server"`)
	}
	// (A trace reaches its file every 250 ms.)
	c.Eventually("six NTP exchanges traced", 20*time.Second, func() bool { return exchanges() >= 6 })
	// Every packet one trace received must have been sent within the
	// other's trace, or its sender is drawn as a line of its own. So the
	// client stops first (a reply the server sent after its own trace
	// ended would be such a packet), and stops sending with it: its
	// daemon ends (SIGTERM ends the trace cleanly after the last request).
	// Stopping only its trace let it go on polling, and the requests the
	// server received before its own trace stop (two or three when that
	// stop took 700 ms on a loaded host) made a third line.
	c.Procs[2].Process.Signal(syscall.SIGTERM)
	if err := c.Procs[2].Wait(); err != nil {
		t.Fatalf("the client's timed after SIGTERM: %v", err)
	}
	if out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "trace", "stop", "--control", c.Control(1)).CombinedOutput(); err != nil {
		t.Fatalf("the server: timed trace stop: %v\n%s", err, out)
	}
	client, err := trace.ReadFiles(clientTrace)
	if err != nil {
		t.Fatal(err)
	}
	both, err := trace.ReadFiles(clientTrace, serverTrace)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files []*trace.File
	}{{"client trace alone", client}, {"client and server traces", both}} {
		d, err := diagram.Build(tc.files)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(d.Procs) != 2 {
			t.Errorf("%s: %d lines, want the client's and the server's", tc.name, len(d.Procs))
		}
		paired := map[string]int{}
		for _, m := range d.Messages {
			if m.Send >= 0 && m.Recv >= 0 {
				paired[m.Kind]++
				s, r := d.Events[m.Send], d.Events[m.Recv]
				if s.Proc == r.Proc || d.Groups[s.Group].Col >= d.Groups[r.Group].Col {
					t.Errorf("%s: %s %s drawn from column %d to %d", tc.name, m.Kind, m.Frame, d.Groups[s.Group].Col, d.Groups[r.Group].Col)
				}
			}
		}
		// The exchanges the client completed, both packets each (the
		// client's last request may still be in flight).
		if paired["ntp_client"] < 4 || paired["ntp_server"] < 4 {
			t.Errorf("%s: arrows %v, want >= 4 requests and 4 replies", tc.name, paired)
		}
		t.Logf("%s: %d lines (%s, %s), arrows %v", tc.name, len(d.Procs), d.Procs[0].Host, d.Procs[1].Host, paired)
	}
	// Every event carries its clock's truth (simulated clocks), and the
	// client's once it is synchronised its published bound: `timed trace
	// check` compares the two clocks' offsets with their bounds.
	var truths, bounds int
	for _, f := range both {
		for _, e := range f.Events {
			if e.TrueOffset != nil {
				truths++
			}
			if e.MaxError > 0 {
				bounds++
			}
		}
	}
	if truths == 0 || bounds == 0 {
		t.Errorf("of the traces' events, %d carry the true offset and %d an error bound: want both", truths, bounds)
	}
	if out, _ := e2e.TraceCheck(t, "timed", []string{clientTrace, serverTrace}); !strings.Contains(out, "offset-within-bound: ") {
		t.Errorf("timed trace check gave no verdict on the bounds:\n%s", out)
	} else {
		t.Logf("timed trace check:\n%s", out)
	}
	svg := filepath.Join(c.Dir, "ntp.svg")
	if out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "trace", "draw", clientTrace, "-o", svg).CombinedOutput(); err != nil {
		t.Fatalf("timed trace draw: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "ntp "+addr.String()) {
		t.Errorf("the drawing has no line for the server %s (%v)", addr, err)
	}
}
