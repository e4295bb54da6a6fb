package common

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSystemdNotify runs a daemon the way systemd's Type=notify with
// WatchdogSec does: READY=1 once it serves, WATCHDOG=1 at half the interval
// (sent by the loop itself), STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	c := newCluster(t, "mutexd", 1)
	sockPath := filepath.Join(c.Dir, "notify.sock")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	c.Env[1] = []string{"NOTIFY_SOCKET=" + sockPath, "WATCHDOG_USEC=200000"}
	c.Start(1)
	cmd := c.Procs[1]

	var got []string
	buf := make([]byte, 512)
	read := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			sock.SetReadDeadline(deadline)
			n, err := sock.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %q: %v (got %q)", want, err, got)
			}
			msg := string(buf[:n])
			got = append(got, msg)
			if strings.Contains(msg, want) {
				return
			}
		}
	}
	read("READY=1", 5*time.Second)
	if _, err := c.Status(1); err != nil {
		t.Errorf("READY sent before the control socket serves: %v", err)
	}
	start := time.Now()
	for range 4 {
		read("WATCHDOG=1", time.Second)
	}
	if el := time.Since(start); el > 700*time.Millisecond {
		t.Errorf("4 watchdog pings took %v; want about 4 x 100 ms", el)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	read("STOPPING=1", 5*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}
