package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/syncbuf"
)

// TestWebUsage: `X web` refuses an address that is not loopback unless
// told, a host name (no lookup), and values out of range, with exit 2 and
// what to do.
func TestWebUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"web", "--listen", "0.0.0.0:8080"}, "is not a loopback address: the page would show the lab to anyone who reaches it; say --non-loopback"},
		{[]string{"web", "--listen", ":8080"}, "say --non-loopback"},
		{[]string{"web", "--listen", "10.1.2.3:8080"}, "say --non-loopback"},
		{[]string{"web", "--listen", "lab.example:8080"}, "want an IP address (or localhost), not a name"},
		{[]string{"web", "--listen", "127.0.0.1"}, "--listen \"127.0.0.1\""},
		{[]string{"web", "--every", "100ms"}, "want 250ms to 1m"},
		{[]string{"web", "--window", "1m", "--rotate", "30s"}, "at least the window"},
		{[]string{"web", "extra"}, "web takes no arguments"},
	} {
		_, stderr, code := runApp(t, append(c.args, "--lab-file", "")...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("testd %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}

// TestWebNonLoopbackWarns: with --non-loopback the page listens where
// told, and the log says at WARN that anyone who reaches it sees the lab.
func TestWebNonLoopbackWarns(t *testing.T) {
	a := docsApp()
	var out, errb syncbuf.Buffer
	a.Writer, a.ErrWriter = &out, &errb
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.RunContext(ctx, []string{"testd", "web", "--listen", "0.0.0.0:0", "--non-loopback", "--lab-file", "",
			"--control", filepath.Join(t.TempDir(), "none.sock")})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errb.String(), "level=WARN") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("web: %v", err)
	}
	if s := errb.String(); !strings.Contains(s, `level=WARN msg="the live page listens on an address that is not loopback: anyone who reaches it sees the lab's table, its trace and its verdicts" listen=[::]:`) &&
		!strings.Contains(s, "listen=0.0.0.0:") {
		t.Errorf("stderr %q: no WARN naming the address", s)
	}
	if !strings.Contains(out.String(), "the live page is at http://") {
		t.Errorf("stdout %q", out.String())
	}
}
