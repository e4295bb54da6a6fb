package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// listen opens a unixgram socket like systemd's notification socket and
// points NOTIFY_SOCKET at it.
func listen(t *testing.T, addr string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", addr)
	return conn
}

func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification received: %v", err)
	}
	return string(buf[:n])
}

// shortDir keeps socket paths under the 107 bytes a unix address holds.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestNotifyPathSocket(t *testing.T) {
	conn := listen(t, filepath.Join(shortDir(t), "notify"))
	for _, tt := range []struct {
		fn   func() (bool, error)
		want string
	}{
		{Ready, "READY=1"},
		{Watchdog, "WATCHDOG=1"},
		{func() (bool, error) { return Status("synced to node 2\nstratum 3") }, "STATUS=synced to node 2 stratum 3"},
		{func() (bool, error) { return Status("a\r\nb") }, "STATUS=a b"},
		{Stopping, "STOPPING=1"},
		{func() (bool, error) { return Notify("READY=1\nMAINPID=" + strconv.Itoa(os.Getpid())) }, "READY=1\nMAINPID=" + strconv.Itoa(os.Getpid())},
	} {
		sent, err := tt.fn()
		if err != nil || !sent {
			t.Fatalf("%q: sent=%v err=%v", tt.want, sent, err)
		}
		if got := receive(t, conn); got != tt.want {
			t.Errorf("received %q, want %q", got, tt.want)
		}
	}
}

func TestNotifyAbstractSocket(t *testing.T) {
	name := fmt.Sprintf("@synclab-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	conn := listen(t, name)
	if sent, err := Ready(); err != nil || !sent {
		t.Fatalf("Ready: sent=%v err=%v", sent, err)
	}
	if got := receive(t, conn); got != "READY=1" {
		t.Errorf("received %q", got)
	}
	// Abstract names leave no file behind; make sure '@' was not taken
	// literally as a relative path.
	if _, err := os.Lstat(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file %q exists: %v", name, err)
	}
}

func TestNotifyUnset(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	os.Unsetenv("NOTIFY_SOCKET")
	for _, fn := range []func() (bool, error){Ready, Stopping, Watchdog, func() (bool, error) { return Status("x") }} {
		if sent, err := fn(); sent || err != nil {
			t.Errorf("without NOTIFY_SOCKET: sent=%v err=%v, want false, nil", sent, err)
		}
	}
}

func TestNotifyErrors(t *testing.T) {
	for _, addr := range []string{"relative/path", "vsock:2:1234", "@"} {
		t.Setenv("NOTIFY_SOCKET", addr)
		if sent, err := Ready(); sent || !errors.Is(err, ErrBadAddress) {
			t.Errorf("NOTIFY_SOCKET=%q: sent=%v err=%v, want ErrBadAddress", addr, sent, err)
		}
	}
	// A path nobody listens on: systemd went away. The error says so.
	t.Setenv("NOTIFY_SOCKET", filepath.Join(shortDir(t), "gone"))
	if sent, err := Ready(); sent || err == nil {
		t.Errorf("dead socket: sent=%v err=%v, want an error", sent, err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	const self = 4242
	tests := []struct {
		usec, pid string
		want      time.Duration
		ok        bool
	}{
		{"", "", 0, false},
		{"10000000", "", 10 * time.Second, true},
		{"10000000", "4242", 10 * time.Second, true},
		{"10000000", "4243", 0, false}, // inherited by a child: not ours
		{"10000000", "x", 0, false},
		{"0", "", 0, false},
		{"-5", "", 0, false},
		{"ten", "", 0, false},
		{"1", "", time.Microsecond, true},
		{"18446744073709551615", "", 0, false}, // overflows a Duration
	}
	for _, tt := range tests {
		got, ok := watchdogInterval(tt.usec, tt.pid, self)
		if got != tt.want || ok != tt.ok {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v, %v; want %v, %v", tt.usec, tt.pid, got, ok, tt.want, tt.ok)
		}
	}

	t.Setenv("WATCHDOG_USEC", "3000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	if d, ok := WatchdogInterval(); !ok || d != 3*time.Second {
		t.Errorf("from the environment: %v, %v; want 3s, true", d, ok)
	}
}
