package common

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestTyposRefusedAtStart runs the real binaries with what a tired
// administrator types, and holds each to a refusal at start (exit 2, one
// line naming the flag, the value and what is accepted), by `run --check`
// as by `run`: on main, `--check` said each would start, and the start
// accepted some silently (a second member on this one's address, --window
// 0) or refused with a name the operator never typed (RelayAfter).
func TestTyposRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	port := e2e.FreePort(t, "127.0.0.1")
	self := fmt.Sprintf("1=127.0.0.1:%d", port)
	run := func(d, members string, extra ...string) []string {
		return append([]string{d, "run", "--id", "1", "--members", members, "--insecure",
			"--control", filepath.Join(dir, d+".sock"), "--state-dir", filepath.Join(dir, d+".state")}, extra...)
	}
	three := self + ",2=127.0.0.2:7400,3=127.0.0.3:7400"
	for _, tc := range []struct {
		name string
		argv []string
		want string
	}{
		{"own address twice", run("electd", self+fmt.Sprintf(",2=127.0.0.1:%d,3=127.0.0.3:7400", port)),
			fmt.Sprintf("--members: members 1 and 2 both have the address 127.0.0.1:%d", port)},
		{"every address", run("mutexd", fmt.Sprintf("1=0.0.0.0:%d,2=127.0.0.2:7400,3=127.0.0.3:7400", port)),
			`0.0.0.0 means "every address of this host", which no other member can send to`},
		{"IPv6 without brackets", run("orderd", self+",2=::1:7400,3=127.0.0.3:7400"), "an IPv6 address goes in brackets before its port: [::1]:7400"},
		{"--tick 0", run("orderd", three, "--tick", "0"), "--tick 0s: want 1ms to 1s"},
		{"--metrics, a port alone", run("electd", three, "--metrics", "9177"), `--metrics "9177": want HOST:PORT`},
		{"--multicast-ttl alone", run("mutexd", three, "--multicast-ttl", "-1"), "--multicast-ttl is only used with --multicast"},
		{"--window 0", run("orderd", three, "--window", "0"), "--window 0: want 1 to 65536"},
		{"--retry past the relay", run("orderd", three, "--retry", "2s"), "--retry 2s: at most 1.5s"},
		{"--hook-timeout negative", run("electd", three, "--hook-timeout", "-1s"), "--hook-timeout -1s: want a positive duration"},
		{"--heartbeat below 1ms", run("mutexd", three, "--heartbeat", "500us"), "--heartbeat 500µs: want at least 1ms"},
		// The config audit's short leases: the ring's never granted (no
		// word), the others' lost at their first renewal (exit 76).
		{"tokenring lease below the floor", run("mutexd", three, "--lease", "100ms", "--heartbeat", "200ms"),
			"--lease 100ms (--algorithm tokenring, --confirm-window 250ms): `mutexd lock` can never keep a lease this short, even with every renewal answered at once"},
		{"tokenring lease renewed on a fresh check", run("mutexd", three, "--lease", "300ms", "--heartbeat", "100ms"),
			"set --lease 650ms or more, or --confirm-window 74ms or less; a program that renews through the HTTP API more often than every third of its lease may ask for 300ms itself per request"},
		{"central lease below the floor", run("mutexd", three, "--algorithm", "central", "--lease", "100ms", "--heartbeat", "200ms"),
			"--lease 100ms (--algorithm central, --heartbeat 200ms (a beat every 33ms, at most a third of --lease)): `mutexd lock` can never keep a lease this short"},
		{"ricartagrawala lease below the floor", run("mutexd", three, "--algorithm", "ricartagrawala", "--lease", "100ms", "--heartbeat", "200ms"),
			"; set --lease 160ms or more"},
		{"another algorithm's flag", run("mutexd", three, "--retry", "1s"),
			"--retry 1s: only --algorithm ricartagrawala, lamport, bakery use it, and this member runs --algorithm tokenring: remove it"},
		{"--answer-timeout absurd", run("electd", three, "--answer-timeout", "1000h"), "--answer-timeout 1000h0m0s: at most 10s"},
		{"one server twice", []string{"timed", "run", "--clock", "sim", "--no-adjust", "--server", "127.0.0.1:1123", "--server", "[::ffff:127.0.0.1]:1123",
			"--control", filepath.Join(dir, "t.sock"), "--state-dir", filepath.Join(dir, "t.state")}, "is already a source (--server 127.0.0.1:1123)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkOperatorError(t, append([]string{}, tc.argv...), nil, 2, tc.want)
			checkOperatorError(t, append(append([]string{}, tc.argv...), "--check"), nil, 2, tc.want)
		})
	}
}

// TestStateDirOfAnotherDaemon: a --state-dir that electd used, given to
// mutexd (one STATE_DIR line copied between two units), is refused by
// name; on main mutexd took electd's core.state for a damaged file of its
// own and advised removing it.
func TestStateDirOfAnotherDaemon(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "shared.state")
	sock := filepath.Join(dir, "e.sock")
	first := exec.Command(filepath.Join(e2e.BinDir(), "electd"), "run", "--id", "1", "--members", fmt.Sprintf("1=127.0.0.1:%d", e2e.FreePort(t, "127.0.0.1")),
		"--control", sock, "--state-dir", state)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitSocket(t, sock)
	// Its term on disk: what mutexd would have read.
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(filepath.Join(state, "core.state")); err != nil && time.Now().Before(deadline); _, err = os.Stat(filepath.Join(state, "core.state")) {
		time.Sleep(20 * time.Millisecond)
	}
	first.Process.Kill()
	first.Wait()
	checkOperatorError(t, []string{"mutexd", "run", "--id", "1", "--members", fmt.Sprintf("1=127.0.0.1:%d", e2e.FreePort(t, "127.0.0.1")),
		"--control", filepath.Join(dir, "m.sock"), "--state-dir", state}, nil, 1,
		"state directory "+state+" holds electd's state, not mutexd's")
}

// TestEvenClusterWarns: an even member count is legal, but a majority
// algorithm survives no more failures with it than with one member fewer
// (two members: none). The daemon starts, and says so at WARN and in
// status; an odd count says nothing.
func TestEvenClusterWarns(t *testing.T) {
	for _, tc := range []struct {
		daemon string
		n      int
		args   []string
		want   string // "" = no warning
	}{
		{"mutexd", 2, nil, "2 members, and the tokenring algorithm needs a majority (2 of 2): the loss of either member stops it"},
		{"orderd", 4, nil, "4 members, and the sequencer's total order needs a majority (3 of 4): it survives 1 failed member, as 3 members would"},
		{"mutexd", 3, nil, ""},
		// Kept only while every renewal comes within 50 ms: the audit's
		// 500 ms ring lost every lease at load 23 (now refused: a second
		// client of the member holding the token lost it with answers at
		// once), 660 ms kept them.
		{"mutexd", 3, []string{"--lease", "700ms"}, "--lease 700ms (--algorithm tokenring, --confirm-window 250ms) is kept by `mutexd lock` only while renewals are answered within 50ms"},
		{"electd", 2, nil, ""}, // bully needs no majority
		{"electd", 2, []string{"--algorithm", "majority"}, "2 members, and the majority election needs a majority (2 of 2)"},
	} {
		t.Run(fmt.Sprintf("%s %d %v", tc.daemon, tc.n, tc.args), func(t *testing.T) {
			c := newCluster(t, tc.daemon, tc.n)
			c.Start(1, tc.args...)
			var warnings []any
			c.Eventually("status answers", 10*time.Second, func() bool {
				st, err := c.Status(1)
				if err == nil {
					warnings, _ = st["config_warnings"].([]any)
				}
				return err == nil
			})
			out, err := exec.Command(filepath.Join(e2e.BinDir(), tc.daemon), "status", "--control", c.Control(1)).Output()
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			log, _ := os.ReadFile(c.LogPath(1))
			if tc.want == "" {
				if len(warnings) > 0 || strings.Contains(string(out), "WARNING") || strings.Contains(string(log), "needs a majority") {
					t.Errorf("warned of an odd count: %v\n%s", warnings, out)
				}
				return
			}
			if len(warnings) != 1 || !strings.HasPrefix(fmt.Sprint(warnings[0]), tc.want) {
				t.Errorf("status config_warnings %v, want %q", warnings, tc.want)
			}
			if !strings.Contains(string(out), "WARNING     : "+tc.want) {
				t.Errorf("status shows no warning %q:\n%s", tc.want, out)
			}
			if !strings.Contains(string(log), "level=WARN msg=\""+tc.want) {
				t.Errorf("log has no WARN line %q:\n%s", tc.want, log)
			}
		})
	}
}
