package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
)

func mutexd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MUTEXD_TEST_BE_MUTEXD=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("mutexd %q did not exit: %s", args, out.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// TestRunFlags: flags the ring cannot work with are usage errors (exit 2)
// that say what is wrong, before anything starts.
func TestRunFlags(t *testing.T) {
	base := []string{"run", "--id", "1", "--members", "1=127.0.0.1:9", "--state-dir", t.TempDir(), "--control", filepath.Join(t.TempDir(), "c.sock")}
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		// Below the floor mutexd lock can keep (leasefloor.go) before the
		// core's own minimum: the floor is what to set.
		{[]string{"--lease", "10ms"}, "--lease 10ms (--algorithm tokenring, --confirm-window 250ms): `mutexd lock` can never keep a lease this short"},
		{[]string{"--lease", "2h"}, "--lease 2h0m0s: at most 1h"},
		{[]string{"--heartbeat", "0s"}, "--heartbeat 0s: must be positive"},
		{[]string{"--confirm-window", "1ms"}, "at least 2ms"},
		// The ring refused it as "HeartbeatInterval 500µs": not a flag.
		{[]string{"--heartbeat", "500us"}, "--heartbeat 500µs: want at least 1ms"},
		{[]string{"--loss-timeout", "1ns"}, "--loss-timeout 1ns: want at least 1ms"},
		// Another algorithm's setting was ignored without a word.
		{[]string{"--retry", "1s"}, "--retry 1s: only --algorithm ricartagrawala, lamport, bakery use it, and this member runs --algorithm tokenring: remove it (or set the algorithm it was meant for)"},
		{[]string{"--algorithm", "maekawa", "--loss-timeout", "1s"}, "--loss-timeout 1s: only --algorithm tokenring uses it, and this member runs --algorithm maekawa"},
		{[]string{"--algorithm", "majority", "--attempt-timeout", "1s", "--confirm-window", "100ms"}, "--confirm-window 100ms: only --algorithm tokenring uses it"},
		{[]string{"--algorithm", "paxos"}, `--algorithm: unknown algorithm "paxos": want one of ` + strings.Join(algorithms.Names(), ", ")},
	} {
		out, code := mutexd(t, append(base, tt.flags...)...)
		if code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, output %q; want 2 and %q", tt.flags, code, out, tt.want)
		}
	}
	t.Setenv("MUTEXD_RETRY", "2s") // a variable left from another algorithm's unit
	if out, code := mutexd(t, base...); code != 2 || !strings.Contains(out, "--retry 2s: only --algorithm ricartagrawala, lamport, bakery use it") {
		t.Errorf("MUTEXD_RETRY=2s: exit %d, %q", code, out)
	}
	t.Setenv("MUTEXD_RETRY", "")
	os.Unsetenv("MUTEXD_RETRY")
	t.Setenv("MUTEXD_LEASE", "50ms")
	if out, code := mutexd(t, base...); code != 2 || !strings.Contains(out, "--lease 50ms") {
		t.Errorf("MUTEXD_LEASE=50ms: exit %d, %q", code, out)
	}
}

// TestCorruptState: a damaged state file stops the daemon with an error
// that names the file and what removing it risks.
func TestCorruptState(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "core.state"), []byte("garbage, not a lock table"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := mutexd(t, "run", "--id", "1", "--members", "1=127.0.0.1:9", "--state-dir", dir,
		"--control", filepath.Join(t.TempDir(), "c.sock"))
	if code != 1 || !strings.Contains(out, "core.state") || !strings.Contains(out, "two holders") {
		t.Errorf("exit %d, output %q", code, out)
	}
}

// TestRenderStatus: the human status shows the algorithm and its
// guarantees, the ring, the members, the grants (those read too late, when
// there are, on a line of their own) and one line per lock with its
// token, holder and queue (a grant still waiting for the state write
// said so: before, it showed as held while its client did not have it).
func TestRenderStatus(t *testing.T) {
	raw := `{"algorithm":"tokenring","id":2,"detail":{"majority":2,"generation_credit":65535},
	  "members":[{"id":1,"alive":true,"state":"alive","heard_ago_ms":120},
	  {"id":2,"self":true,"alive":true,"state":"self","heard_ago_ms":0},{"id":3,"alive":false,"state":"down","heard_ago_ms":4100}],
	  "locks":[{"name":"db","fence":2199023255555,
	    "detail":{"token":"here","generation":8589934593,"promised":8589934593,"wants":[1]},
	    "holder":{"id":7,"lock":"db","client":"backup.sh","granted":true,"fence":2199023255555,"lease_ms":3000,"lease_left_ms":2100,"waited_ms":3},
	    "holders":[{"id":7,"lock":"db","client":"backup.sh","granted":true,"fence":2199023255555,"lease_ms":3000,"lease_left_ms":2100,"waited_ms":3}],
	    "queue":[{"id":8,"lock":"db","granted":false,"lease_ms":3000,"waited_ms":40}]},
	   {"name":"printer","fence":1099511627777,"detail":{"promised":4294967297}},
	   {"name":"spool","fence":5,"detail":{"token":"here","generation":1,"promised":1},
	    "holders":[{"id":9,"lock":"spool","granted":true,"fence":5,"lease_ms":3000,"lease_left_ms":3000,"waited_ms":0,"unsaved":"grant"}]}],
	  "counters":{"grants":5,"tokens_passed":3,"regenerations":1,"lost_expired":1,"grants_late":2,"grants_unsaved":1},
	  "guarantees":{"survives":["crash","pause","partition","loss"],"shared":false},"api":{"acquire/ok":5}}`
	var b bytes.Buffer
	if err := renderStatus(&b, []byte(raw), time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"member 2, majority 2, 2 of 3 alive",
		"5 granted", "1 lost (1 expired",
		"Late     : 2 grants and 0 renewals refused, read after their lease ended",
		"Unsaved  : 1 grants and 0 renewals dropped, their lease over before the state they depend on could be written",
		"3 passed", "1 regenerations",
		"acquire/ok 5",
		"3   down", "1   alive  120ms ago",
		"db       here", "2/1", "2199023255555 (2:3)", "#7 backup.sh, fence 2199023255555, 2.1s left", "1 (oldest 40ms)",
		"printer  elsewhere",
		// Held for the state write: the client does not have it.
		"#9, fence 5, 3s left, granted, waiting for the state write (its client does not have it yet)",
		"Algorithm: tokenring; survives crash, pause, partition, loss; shared mode not offered",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// TestAgreementHoldsTheTiming: a member whose heartbeat or an algorithm's
// own timeout differs is a member whose waits for the others' leases are
// wrong (central's new coordinator waits half a beat of its own; RA and
// Lamport time a member's silence by their own busy heartbeat), so the
// timing is part of what must agree, not only the lease.
func TestAgreementHoldsTheTiming(t *testing.T) {
	p := agreementParams(mutex.Options{Lease: 3 * time.Second, Heartbeat: time.Second,
		Params: map[string]time.Duration{"loss-timeout": 400 * time.Millisecond}})
	want := map[string]string{"lease": "3s", "heartbeat": "1s", "loss-timeout": "400ms"}
	if !maps.Equal(p, want) {
		t.Errorf("agreement params %v, want %v", p, want)
	}
}
