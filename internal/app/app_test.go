package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
)

func TestParseMembers(t *testing.T) {
	m, err := ParseMembers("1=127.0.0.1:7100, 2=127.0.0.2:7100\n3=[::1]:7100")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32]string{1: "127.0.0.1:7100", 2: "127.0.0.2:7100", 3: "[::1]:7100"}
	if len(m) != len(want) {
		t.Fatalf("got %v", m)
	}
	for id, a := range want {
		if m[id] != netip.MustParseAddrPort(a) {
			t.Errorf("member %d = %v, want %s", id, m[id], a)
		}
	}
	for _, bad := range []string{"", "1", "0=127.0.0.1:1", "x=127.0.0.1:1", "1=127.0.0.1", "1=127.0.0.1:0",
		"1=127.0.0.1:70000", "1=127.0.0.1:1,1=127.0.0.2:1", "4294967296=127.0.0.1:1"} {
		if _, err := ParseMembers(bad); err == nil {
			t.Errorf("ParseMembers(%q) accepted", bad)
		}
	}
	// A mistyped IP is refused as one, without a DNS lookup of it.
	for _, typo := range []string{"1=300.0.0.1:7400", "1=10.0.0:7400"} {
		if _, err := ParseMembers(typo); err == nil || !strings.Contains(err.Error(), "is not an IPv4 address") {
			t.Errorf("ParseMembers(%q): %v", typo, err)
		}
	}
}

func TestParseMulticast(t *testing.T) {
	if g, err := ParseMulticast("239.77.0.1:7199"); err != nil || g.String() != "239.77.0.1:7199" {
		t.Errorf("got %v, %v", g, err)
	}
	for _, bad := range []string{"10.0.0.1:7199", "239.77.0.1", "239.77.0.1:0", "[ff02::1]:7199"} {
		if _, err := ParseMulticast(bad); err == nil {
			t.Errorf("ParseMulticast(%q) accepted", bad)
		}
	}
}

func TestLoadKeysRefusesWorldReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	os.WriteFile(path, []byte("1 00112233445566778899aabbccddeeff\n"), 0o644)
	if _, err := LoadKeys(path); err == nil || !strings.Contains(err.Error(), "world-readable") {
		t.Errorf("world-readable key file: %v", err)
	}
	os.Chmod(path, 0o600)
	keys, err := LoadKeys(path)
	if err != nil || len(keys) != 1 || keys[0].ID != 1 {
		t.Errorf("keys %v, %v", keys, err)
	}
}

func testApp() *cli.App {
	return New(Spec{
		Name: "testd",
		Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
			return nil, Usagef("build reached")
		},
	})
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"testd", "--version"}, 0, ""},
		{[]string{"testd", "run", "--bogus"}, 2, "unknown flag --bogus"},
		{[]string{"testd", "run"}, 2, "--id and --members required (or TESTD_ID and TESTD_MEMBERS, or a lab file: --lab-file, default /etc/synclab/lab.toml)"},
		{[]string{"testd", "run", "--id", "3", "--members", "1=127.0.0.1:7000"}, 2, "--id 3 is not in --members"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=nonsense"}, 2, "--members"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000", "--multicast", "239.1.1.1:7"}, 2, "--multicast needs --interface"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000", "--log-level", "loud"}, 2, "--log-level"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000", "--key-file", "/nonexistent"}, 1, "key file /nonexistent does not exist: copy the cluster's key there"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000"}, 2, "build reached"},
		// A cluster needs a key or --insecure; a node alone needs neither.
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000,2=127.0.0.2:7000"}, 2,
			"a cluster (--members names other members) needs a shared key (--key-file), or --insecure. Authenticate it:\n" +
				"    testd keygen /etc/synclab/cluster.key"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000,2=127.0.0.2:7000"}, 2, "--insecure (TESTD_INSECURE=true)"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000,2=127.0.0.2:7000", "--insecure"}, 2, "build reached"},
		{[]string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000,2=127.0.0.2:7000", "--insecure", "--key-file", "/nonexistent"}, 1, "key file"},
		{[]string{"testd", "status", "--control", "/nonexistent/x.sock"}, 1, "cannot reach the daemon"},
		{[]string{"testd", "status", "extra"}, 2, "no arguments"},
	}
	for _, tc := range cases {
		var stderr bytes.Buffer
		a := testApp()
		a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
		if code := Run(a, tc.args, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args[1:], code, stderr.String(), tc.code, tc.msg)
		}
	}
}

// TestClusterOptional: a daemon whose Spec allows it runs without --id
// and --members (Build sees ID 0 and no members); one of the two alone is
// still an error, and so are the flags only a cluster uses.
func TestClusterOptional(t *testing.T) {
	var got *daemon.Config
	a := New(Spec{
		Name:            "testd",
		ClusterOptional: true,
		Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
			got = cfg
			return nil, Usagef("build reached")
		},
	})
	for _, tc := range []struct {
		args  []string
		build bool
		msg   string
	}{
		{[]string{"testd", "run"}, true, "build reached"},
		{[]string{"testd", "run", "--id", "1"}, false, "--members required"},
		{[]string{"testd", "run", "--members", "1=127.0.0.1:7000"}, false, "--id required"},
		{[]string{"testd", "run", "--multicast", "239.1.1.1:7", "--interface", "lo"}, false, "--multicast is for a cluster"},
		{[]string{"testd", "run", "--cluster", "lab"}, false, "--cluster is for a cluster"},
	} {
		got = nil
		var stderr bytes.Buffer
		a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
		if code := Run(a, tc.args, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.msg) || (got != nil) != tc.build {
			t.Errorf("%q: exit %d, stderr %q, build reached %v", tc.args[1:], code, stderr.String(), got != nil)
		}
		if got != nil && (got.ID != 0 || len(got.Members) != 0) {
			t.Errorf("%q: build got ID %d and %d members, want none", tc.args[1:], got.ID, len(got.Members))
		}
	}
}

func TestEnvironmentVariablesSetFlags(t *testing.T) {
	t.Setenv("TESTD_ID", "2")
	t.Setenv("TESTD_MEMBERS", "1=127.0.0.1:7000,2=127.0.0.2:7000")
	t.Setenv("TESTD_TICK", "20ms")
	t.Setenv("TESTD_INSECURE", "true")
	var got daemon.Config
	a := New(Spec{
		Name: "testd",
		Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
			got = *cfg
			return nil, Usagef("stop here")
		},
	})
	var stderr bytes.Buffer
	a.ErrWriter = &stderr
	Run(a, []string{"testd", "run"}, &stderr)
	if got.ID != 2 || len(got.Members) != 2 || got.TickInterval != 20*time.Millisecond || !got.Insecure {
		t.Errorf("config from environment: %+v (stderr %s)", got, stderr.String())
	}
	if EnvVar("timed", "sim-offset") != "TIMED_SIM_OFFSET" {
		t.Errorf("EnvVar = %s", EnvVar("timed", "sim-offset"))
	}
}

func TestFormatOffset(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                        "+0ns",
		-87 * time.Microsecond:   "-87.000us",
		12345678:                 "+12.346ms",
		-1500 * time.Millisecond: "-1.500000s",
	} {
		if got := FormatOffset(d); got != want {
			t.Errorf("FormatOffset(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "etc", "synclab", "cluster.key")
	run := func(args ...string) (int, string) {
		var out, stderr bytes.Buffer
		a := testApp()
		a.Writer, a.ErrWriter = &out, &stderr
		code := Run(a, append([]string{"testd", "keygen"}, args...), &stderr)
		return code, out.String() + stderr.String()
	}
	if code, out := run(path); code != 0 || !strings.Contains(out, "wrote "+path+" (key 1, 256 bits, mode 0600)") ||
		!strings.Contains(out, "TESTD_KEY_FILE="+path) {
		t.Fatalf("keygen: exit %d\n%s", code, out)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v mode %v, want 0600", err, fi.Mode())
	}
	first, err := LoadKeys(path)
	if err != nil || len(first) != 1 || first[0].ID != 1 || len(first[0].Secret) != KeySize {
		t.Fatalf("keys %v, %v", first, err)
	}
	if code, out := run(path); code != 1 || !strings.Contains(out, "exists") {
		t.Fatalf("keygen over an existing file: exit %d\n%s", code, out)
	}
	if again, _ := LoadKeys(path); !bytes.Equal(again[0].Secret, first[0].Secret) {
		t.Fatal("a refused keygen changed the key")
	}
	if code, out := run("--force", path); code != 0 {
		t.Fatalf("--force: exit %d\n%s", code, out)
	}
	forced, _ := LoadKeys(path)
	if bytes.Equal(forced[0].Secret, first[0].Secret) {
		t.Fatal("--force kept the old secret")
	}
	if code, out := run("--add", path); code != 0 || !strings.Contains(out, "added key 2") {
		t.Fatalf("--add: exit %d\n%s", code, out)
	}
	both, err := LoadKeys(path)
	if err != nil || len(both) != 2 || both[0].ID != 1 || !bytes.Equal(both[0].Secret, forced[0].Secret) || both[1].ID != 2 {
		t.Fatalf("after --add: %v, %v", both, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("--add left mode %v", fi.Mode())
	}
	if code, _ := run("--add", "--force", path); code != 2 {
		t.Errorf("--add --force: exit %d, want 2", code)
	}
	if code, _ := run(path, "extra"); code != 2 {
		t.Errorf("two arguments: exit %d, want 2", code)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestExplainUsage: flag errors in synclab's words, with the flag as it is
// typed, the value, what is wanted and, for a typo, the nearest flag.
func TestExplainUsage(t *testing.T) {
	flags := []cli.Flag{
		&cli.DurationFlag{Name: "lease"}, &cli.StringFlag{Name: "algorithm"}, &cli.StringFlag{Name: "members"},
		&cli.StringFlag{Name: "metrics"}, &cli.Float64Flag{Name: "sim-drift"}, &cli.BoolFlag{Name: "insecure"},
	}
	for _, tc := range []struct{ in, want string }{
		{"flag provided but not defined: -leese", "unknown flag --leese (did you mean --lease?)"},
		{"flag provided but not defined: -algo", "unknown flag --algo (did you mean --algorithm?)"},
		{"flag provided but not defined: -mem", "unknown flag --mem (did you mean --members?)"},
		{"flag provided but not defined: -me", "unknown flag --me"}, // --members or --metrics: no guess
		{"flag provided but not defined: -zzzzzz", "unknown flag --zzzzzz"},
		{`invalid value "abc" for flag -sim-drift: parse error`, `--sim-drift "abc": want a number, e.g. 35 or -2.5`},
		{`could not parse "banana" as duration value from environment variable "TESTD_LEASE" for flag lease: time: invalid duration "banana"`,
			`TESTD_LEASE="banana" (--lease): want a duration with its unit, e.g. 500ms, 3s or 1m`},
		{`could not parse "yes" as bool value from environment variable "TESTD_INSECURE" for flag insecure: strconv.ParseBool: parsing "yes": invalid syntax`,
			`TESTD_INSECURE="yes" (--insecure): want true or false`},
		{"--members required", "--members required"},
	} {
		if got := explainUsage(flags, errors.New(tc.in)).Error(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestClockLine: mutexd's steady clock is not "unsynchronised" (nothing is
// meant to synchronise it); a system clock says what the kernel says, its
// bound in the one style of every bound, and nothing of it where the
// daemon keeps the time itself (timed prints its own bound, once).
func TestClockLine(t *testing.T) {
	steady := clockLine(daemon.Status{Clock: daemon.ClockStatus{Kind: "steady"}}, false)
	if strings.Contains(steady, "unsynchronised") || !strings.Contains(steady, "nothing adjusts") {
		t.Errorf("steady clock: %q", steady)
	}
	for _, tc := range []struct {
		clock     daemon.ClockStatus
		ownsClock bool
		want      string
	}{
		{daemon.ClockStatus{Kind: "system", MaxErrorNs: int64(16 * time.Second)}, false, "system, unsynchronised, frequency +0.000 ppm"},
		{daemon.ClockStatus{Kind: "system", Synchronized: true, MaxErrorNs: 1008716, FrequencyPPM: 1.5}, false,
			"system, synchronised, error bound ±1.009ms (the kernel's), frequency +1.500 ppm"},
		{daemon.ClockStatus{Kind: "sim", Synchronized: true, MaxErrorNs: 1008716}, true, "sim, frequency +0.000 ppm, synchronisation: see Time below"},
	} {
		if got := clockLine(daemon.Status{Clock: tc.clock}, tc.ownsClock); got != tc.want {
			t.Errorf("clock %+v (owned %v): %q, want %q", tc.clock, tc.ownsClock, got, tc.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                        "0ns",
		688770 * time.Nanosecond: "688.770us",
		1008716:                  "1.009ms",
		2500 * time.Millisecond:  "2.500000s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	if got := FormatBound(688770); got != "±688.770us" {
		t.Errorf("FormatBound = %q", got)
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 keys", 1: "1 key", 2: "2 keys"} {
		if got := Plural(n, "key"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestJournalPriorities: when stderr is the journal's stream
// (JOURNAL_STREAM names it), every line starts with its syslog priority,
// so that `journalctl -p warning` finds the WARN and ERROR lines; anywhere
// else, no prefix.
func TestJournalPriorities(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	log, err := newLogger(f, "debug", "text")
	if err != nil {
		t.Fatal(err)
	}
	log = log.With("daemon", "mutexd")
	log.Debug("d")
	log.Info("i")
	log.Warn("w", "member", 3)
	log.Error("e")
	b, _ := os.ReadFile(f.Name())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, want := range []string{"<7>", "<6>", "<4>", "<3>"} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want+"time=") || !strings.Contains(lines[i], "daemon=mutexd") {
			t.Fatalf("line %d: %q, want prefix %s and the logger's attributes (all: %q)", i, lines[min(i, len(lines)-1)], want, b)
		}
	}
	t.Setenv("JOURNAL_STREAM", "1:2")
	var buf bytes.Buffer
	if journalStream(&buf) {
		t.Fatal("a buffer taken for the journal")
	}
	log, _ = newLogger(f, "info", "text")
	if _, ok := log.Handler().(*priorityHandler); ok {
		t.Fatal("another stream taken for the journal")
	}
}

// TestVersion: `X version` (and --version) name the daemon, its version
// and the commit it was built from; --json has the same fields.
func TestVersion(t *testing.T) {
	defer func(c string) { Commit = c }(Commit)
	Commit = "1a2b3c4d5e6f"
	for _, args := range [][]string{{"testd", "version"}, {"testd", "--version"}} {
		var out, stderr bytes.Buffer
		a := testApp()
		a.Writer, a.ErrWriter = &out, &stderr
		if code := Run(a, args, &stderr); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr.String())
		}
		if want := "testd " + Version + " (commit 1a2b3c4d5e6f, go"; !strings.HasPrefix(out.String(), want) {
			t.Errorf("%q printed %q, want it to start with %q", args, out.String(), want)
		}
	}
	var out bytes.Buffer
	a := testApp()
	a.Writer = &out
	if code := Run(a, []string{"testd", "version", "--json"}, &out); code != 0 {
		t.Fatalf("version --json: exit %d", code)
	}
	var b BuildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.Daemon != "testd" || b.Version != Version || b.Commit != "1a2b3c4d5e6f" {
		t.Errorf("version --json: %s (%v)", out.String(), err)
	}
}
