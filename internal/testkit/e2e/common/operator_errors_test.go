package common

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/testenv"
)

// TestOperatorErrors runs the real binaries the ways an operator gets
// them wrong on a lab machine, and holds each answer to what an operator
// needs: a non-zero exit (2 for a bad command line, 1 for the rest), the
// message on one line (a usage error adds "(see X --help)"), what to do
// in it, and never a Go stack trace or a bare "invalid argument". (A
// cluster without a key gets a short guide instead: TestNoKeyExits2.)
func TestOperatorErrors(t *testing.T) {
	dir := t.TempDir()
	key := e2e.KeyFile(t, dir)
	open := filepath.Join(dir, "open.key")
	data, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, data, 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.key")
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port another process holds, for the daemon's own --members entry.
	held, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.LocalAddr().(*net.UDPAddr).Port
	free := e2e.FreePort(t, "127.0.0.1")
	members := func(self int) string {
		return fmt.Sprintf("1=127.0.0.1:%d,2=127.0.0.2:%d,3=127.0.0.3:%d", self, free, free)
	}
	cluster := func(d string, extra ...string) []string {
		return append([]string{d, "run", "--id", "1", "--members", members(free),
			"--control", filepath.Join(dir, d+".sock"), "--state-dir", filepath.Join(dir, d+".state")}, extra...)
	}

	for _, tc := range []struct {
		name string
		argv []string
		env  []string
		code int
		want string
	}{
		{"missing key", cluster("mutexd", "--key-file", filepath.Join(dir, "none.key")), nil, 1, "does not exist: copy the cluster's key there"},
		{"missing key names keygen", cluster("electd", "--key-file", filepath.Join(dir, "none.key")), nil, 1, "electd keygen " + filepath.Join(dir, "none.key")},
		{"world-readable key", cluster("mutexd", "--key-file", open), nil, 1, "chmod o-rwx " + open},
		{"malformed key", cluster("electd", "--key-file", garbage), nil, 1, "keygen --force " + garbage},
		{"typo'd flag", cluster("mutexd", "--key-file", key, "--leese", "3s"), nil, 2, "unknown flag --leese (did you mean --lease?)"},
		{"flag's start", cluster("mutexd", "--key-file", key, "--algo", "central"), nil, 2, "did you mean --algorithm?"},
		{"bad flag value", []string{"timed", "run", "--server", "127.0.0.1:9", "--clock", "sim", "--sim-drift", "abc"}, nil, 2, `--sim-drift "abc": want a number`},
		{"env var, bad duration", cluster("mutexd", "--key-file", key), []string{"MUTEXD_LEASE=banana"}, 2, `MUTEXD_LEASE="banana" (--lease): want a duration`},
		{"env var, bad bool", cluster("electd", "--key-file", key), []string{"ELECTD_INSECURE=yes"}, 2, `ELECTD_INSECURE="yes" (--insecure): want true or false`},
		{"bad peer address", []string{"mutexd", "run", "--id", "1", "--members", "1=127.0.0.1:7400,2=127.0.0.2", "--key-file", key}, nil, 2, `member 2: address "127.0.0.2": want HOST:PORT`},
		{"port in use", []string{"mutexd", "run", "--id", "1", "--members", members(heldPort), "--key-file", key,
			"--control", filepath.Join(dir, "p.sock"), "--state-dir", filepath.Join(dir, "p.state")}, nil, 1, "another process has that address"},
		{"another host's --id", []string{"electd", "run", "--id", "2", "--members", "1=127.0.0.1:7400,2=192.0.2.7:7400", "--key-file", key,
			"--control", filepath.Join(dir, "i.sock"), "--state-dir", filepath.Join(dir, "i.state")}, nil, 1, "check that it is this host's ID"},
		// The --id advice is for the member socket only: another
		// listener's address names its own flag.
		{"metrics address not here", []string{"electd", "run", "--id", "1", "--members", members(free), "--key-file", key, "--metrics", "192.0.2.9:9177",
			"--control", filepath.Join(dir, "m.sock"), "--state-dir", filepath.Join(dir, "m.state")}, nil, 1, "no such address (`ip -br addr` lists its own): give that flag one of them"},
		{"status, daemon down", []string{"electd", "status", "--control", filepath.Join(dir, "down.sock")}, nil, 1, `is "electd run" running?`},
		{"unknown command", []string{"orderd", "stauts"}, nil, 2, `unknown command "stauts"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkOperatorError(t, tc.argv, tc.env, tc.code, tc.want)
		})
	}

	t.Run("second daemon on one control socket", func(t *testing.T) {
		sock := filepath.Join(dir, "shared.sock")
		first := exec.Command(filepath.Join(e2e.BinDir(), "electd"), "run", "--id", "1", "--members", members(free),
			"--key-file", key, "--control", sock, "--state-dir", filepath.Join(dir, "e1.state"))
		if err := first.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { first.Process.Kill(); first.Wait() }()
		waitSocket(t, sock)
		checkOperatorError(t, []string{"electd", "run", "--id", "1", "--members", members(e2e.FreePort(t, "127.0.0.1")),
			"--key-file", key, "--control", sock, "--state-dir", filepath.Join(dir, "e2.state")}, nil, 1,
			"another daemon is already serving "+sock)
	})

	// A follower that may not correct the clock would call itself
	// synchronised while the clock drifts on: it must refuse to start.
	// Without CAP_SYS_TIME the kernel refuses every write anyway, so the
	// run cannot touch the clock even if the check were gone.
	t.Run("timed without CAP_SYS_TIME", func(t *testing.T) {
		argv := []string{"timed", "run", "--server", "127.0.0.1:9", "--control", filepath.Join(dir, "t.sock"), "--state-dir", filepath.Join(dir, "t.state")}
		if os.Geteuid() == 0 {
			testenv.RequireTool(t, "util-linux", "setpriv") // to run timed without CAP_SYS_TIME
			argv = append([]string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time"}, argv...)
		}
		checkOperatorError(t, argv, nil, 1, "needs CAP_SYS_TIME, which this process lacks: run it as root (timed.service grants it), or add --no-adjust")
	})
}

// checkOperatorError runs argv (a binary of binDir, or setpriv before
// one) and checks its exit code and its one-line message.
func checkOperatorError(t *testing.T, argv, env []string, code int, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i, a := range argv {
		if a == "timed" || a == "mutexd" || a == "electd" || a == "orderd" {
			argv[i] = filepath.Join(e2e.BinDir(), a)
			break
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after 15 s, want exit %d with %q:\n%s", argv, code, want, out)
	}
	msg := strings.TrimSpace(string(out))
	lines := strings.Split(msg, "\n")
	if code == 2 && len(lines) == 2 && strings.HasPrefix(lines[1], "(see ") {
		lines = lines[:1]
	}
	if got := e2e.ExitCode(err); got != code || len(lines) != 1 || !strings.Contains(msg, want) ||
		strings.Contains(msg, "goroutine ") || strings.HasSuffix(msg, "invalid argument") {
		t.Errorf("%v: exit %d:\n%s\nwant exit %d and one line with %q", argv, got, msg, code, want)
	}
}

func waitSocket(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("no daemon on %s after 10 s", path)
}
