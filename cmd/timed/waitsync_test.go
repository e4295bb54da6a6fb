package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
)

// slowDaemon serves /v1/status on a control socket with s as timed's sync
// state, each answer held for hold after its request came (hold < 0: never
// answered, until the client goes away). It returns the socket's path.
func slowDaemon(t *testing.T, s timedcore.Sync, hold time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "control.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"node": map[string]any{"core": map[string]any{"sync": s}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/status" {
			http.NotFound(w, r)
			return
		}
		var after <-chan time.Time
		if hold >= 0 {
			after = time.After(hold)
		}
		select {
		case <-after:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return path
}

// TestWaitsyncSlowDaemon: --timeout bounds the wait for synchronisation,
// not the look under way when it passes. A daemon that answers only after
// the deadline (a loaded host) is heard, and the verdict is its word: the
// state it is in, or synchronised (exit 0). The look was cut at the
// deadline, and `waitsync --timeout 2s` said "no answer from the daemon
// (waiting for the daemon at ...: context deadline exceeded)" of a daemon
// that was answering; a daemon that does not answer a look at all is
// named, with the look's own bound.
func TestWaitsyncSlowDaemon(t *testing.T) {
	const timeout = 200 * time.Millisecond
	bound := int64(3 * time.Millisecond)
	unsync := timedcore.Sync{State: timedcore.StateUnsynchronised, Why: "no answer yet from 10.0.0.1:123"}
	synced := timedcore.Sync{State: timedcore.StateSynchronised, Synchronized: true, Source: "10.0.0.1:123 (stratum 2)", ErrorBoundNS: &bound}
	old := lookBound
	lookBound = 3 * timeout
	t.Cleanup(func() { lookBound = old })
	for _, tc := range []struct {
		name   string
		sync   timedcore.Sync
		hold   time.Duration // each answer comes this long after its request, which comes after waitsync starts
		code   int
		stdout string
		stderr string
	}{
		{"unsynchronised, answering after the deadline", unsync, timeout, 1, "",
			"not synchronised within 200ms: unsynchronised: no answer yet from 10.0.0.1:123"},
		{"synchronised, answering after the deadline", synced, timeout, 0,
			"synchronised to 10.0.0.1:123 (stratum 2), error bound ±3.000ms", ""},
		{"not answering", unsync, -1, 1, "",
			"not synchronised within 200ms: no answer from the daemon (the daemon at "},
	} {
		path := slowDaemon(t, tc.sync, tc.hold)
		var stdout, stderr bytes.Buffer
		a := newApp()
		a.Writer, a.ErrWriter = &stdout, &stderr
		start := time.Now()
		code := app.Run(a, []string{"timed", "waitsync", "--control", path, "--timeout", timeout.String(), "--interval", "50ms"}, &stderr)
		took := time.Since(start)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%s: exit %d after %v, stdout %q, stderr %q; want exit %d, %q, %q", tc.name, code, took, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
		if tc.hold < 0 && !strings.Contains(stderr.String(), path+" did not answer its status within 600ms") {
			t.Errorf("%s: %q does not name the daemon and the look's bound", tc.name, stderr.String())
		}
		if code == 1 && took < timeout {
			t.Errorf("%s: gave up after %v, before --timeout %v", tc.name, took, timeout)
		}
	}
}
