package sdnotify

// Checks of the unit files and environment examples in systemd/: they are
// what makes Type=notify and the watchdog work, so they are tested with the
// code that speaks the protocol.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var daemons = []string{"timed", "mutexd", "electd", "orderd"}

const unitDir = "../../systemd"

// unit is a parsed unit file: section -> key -> values (a key may repeat).
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not KEY=VALUE in a section: %q", path, n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func (u unit) get(section, key string) string {
	return strings.Join(u[section][key], " ")
}

// TestUnitsPolicy checks the settings the design requires of every unit,
// so a careless edit fails here even where systemd-analyze is missing.
func TestUnitsPolicy(t *testing.T) {
	common := map[string]string{
		"Type":                    "notify",
		"NotifyAccess":            "main",
		"WatchdogSec":             "10s",
		"Restart":                 "on-failure",
		"DynamicUser":             "yes",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"ProtectKernelModules":    "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelLogs":       "yes",
		"ProtectControlGroups":    "yes",
		"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
		"RestrictNamespaces":      "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"SystemCallArchitectures": "native",
	}
	for _, d := range daemons {
		t.Run(d, func(t *testing.T) {
			u := parseUnit(t, filepath.Join(unitDir, d+".service"))
			want := map[string]string{
				"ExecStart": "/usr/local/bin/" + d + " run",
				// The machine's word to all four, then to this one.
				"EnvironmentFile":  "-/etc/default/synclab -/etc/default/" + d,
				"StateDirectory":   d,
				"RuntimeDirectory": d,
				// A cluster runs authenticated: the key install.sh
				// creates, handed over as a credential.
				"LoadCredential": "cluster.key:/etc/synclab/cluster.key",
				"Environment":    strings.ToUpper(d) + "_KEY_FILE=%d/cluster.key",
			}
			for k, v := range common {
				want[k] = v
			}
			if d == "timed" {
				want["CapabilityBoundingSet"] = "CAP_SYS_TIME CAP_NET_BIND_SERVICE"
				want["AmbientCapabilities"] = "CAP_SYS_TIME CAP_NET_BIND_SERVICE"
			} else {
				want["CapabilityBoundingSet"] = ""
				want["AmbientCapabilities"] = ""
			}
			for k, v := range want {
				if got, ok := u["Service"][k]; !ok || u.get("Service", k) != v {
					t.Errorf("[Service] %s = %q (set: %v), want %q", k, strings.Join(got, " "), ok, v)
				}
			}
			filter := strings.Fields(u.get("Service", "SystemCallFilter"))
			if !slices.Contains(filter, "@system-service") {
				t.Errorf("SystemCallFilter %v lacks @system-service", filter)
			}
			if slices.Contains(filter, "@clock") != (d == "timed") {
				t.Errorf("SystemCallFilter %v: @clock is for timed only", filter)
			}
			conflicts := strings.Fields(u.get("Unit", "Conflicts"))
			if d == "timed" {
				for _, c := range []string{"chronyd.service", "chrony.service", "ntp.service", "ntpsec.service", "systemd-timesyncd.service"} {
					if !slices.Contains(conflicts, c) {
						t.Errorf("timed.service does not conflict with %s", c)
					}
				}
			} else if len(conflicts) > 0 {
				t.Errorf("%s.service conflicts with %v", d, conflicts)
			}
			// systemctl status names the manual page the package installs.
			if u.get("Unit", "Documentation") != "man:"+d+"(8)" {
				t.Errorf("[Unit] Documentation = %q, want man:%s(8)", u.get("Unit", "Documentation"), d)
			}
			if u.get("Install", "WantedBy") != "multi-user.target" {
				t.Errorf("[Install] WantedBy = %q", u.get("Install", "WantedBy"))
			}
			// The others start on a synchronised clock when the host
			// waits for one (timed-wait.service).
			after := strings.Fields(u.get("Unit", "After"))
			if slices.Contains(after, "time-sync.target") == (d == "timed") {
				t.Errorf("[Unit] After = %v: time-sync.target is for every daemon but timed, which comes before it", after)
			}
		})
	}
}

// TestTimedWaitUnit: timed-wait.service is chrony-wait.service's shape:
// a oneshot `timed waitsync` before time-sync.target, pulled in by it,
// after and requiring timed, bounded in time; it only reads timed's
// control socket.
func TestTimedWaitUnit(t *testing.T) {
	u := parseUnit(t, filepath.Join(unitDir, "timed-wait.service"))
	for _, kv := range [][3]string{
		{"Unit", "After", "timed.service"},
		{"Unit", "Requires", "timed.service"},
		{"Unit", "Before", "time-sync.target"},
		{"Unit", "Wants", "time-sync.target"},
		{"Service", "Type", "oneshot"},
		{"Service", "ExecStart", "/usr/local/bin/timed waitsync --max-error 100ms"},
		{"Service", "EnvironmentFile", "-/etc/default/timed"},
		{"Service", "TimeoutStartSec", "180"},
		{"Service", "RemainAfterExit", "yes"},
		{"Service", "CapabilityBoundingSet", "CAP_DAC_OVERRIDE"},
		{"Service", "NoNewPrivileges", "yes"},
		{"Service", "PrivateNetwork", "yes"},
		{"Service", "RestrictAddressFamilies", "AF_UNIX"},
		{"Service", "ProtectSystem", "strict"},
		{"Install", "WantedBy", "multi-user.target"},
	} {
		if got := u.get(kv[0], kv[1]); got != kv[2] {
			t.Errorf("[%s] %s = %q, want %q", kv[0], kv[1], got, kv[2])
		}
	}
}

// TestUnitsVerify runs systemd-analyze verify on each unit. The units name
// /usr/local/bin/X, which need not exist here: each is verified as a copy
// whose ExecStart= points at a dummy executable, the only change.
func TestUnitsVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the units are not verified (apt-get install systemd)")
	}
	dir := t.TempDir()
	if reason := analyzeUnusable(t, sa, dir); reason != "" {
		t.Skip(reason)
	}
	units := map[string]string{"timed-wait": "timed waitsync --max-error 100ms"} // unit: the command it runs
	for _, d := range daemons {
		units[d] = d + " run"
	}
	// Every copy first: timed-wait.service requires timed.service, which
	// verify looks for beside it.
	for d, cmd := range units {
		src, err := os.ReadFile(filepath.Join(unitDir, d+".service"))
		if err != nil {
			t.Fatal(err)
		}
		execLine := "ExecStart=/usr/local/bin/" + cmd
		if n := strings.Count(string(src), execLine); n != 1 {
			t.Fatalf("%q appears %d times in %s.service, want once", execLine, n, d)
		}
		bin, args, _ := strings.Cut(cmd, " ")
		patched := strings.Replace(string(src), execLine, "ExecStart="+dummyExec(t, dir, bin)+" "+args, 1)
		if err := os.WriteFile(filepath.Join(dir, d+".service"), []byte(patched), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for d := range units {
		t.Run(d, func(t *testing.T) {
			copyPath := filepath.Join(dir, d+".service")
			out, err := runCmd(sa, "verify", "--man=no", copyPath)
			if err != nil {
				t.Fatalf("systemd-analyze verify %s.service: %v\n%s", d, err, out)
			}
			// verify exits 0 on warnings (unknown keys, bad values it
			// ignores); any line about our unit is a failure. Lines about
			// other units on this machine are not ours to fix.
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if strings.Contains(line, d+".service") {
					t.Errorf("systemd-analyze verify: %s", line)
				} else if line != "" {
					t.Logf("systemd-analyze verify (other units): %s", line)
				}
			}
		})
	}
}

// dummyExec writes an executable for a unit's ExecStart=: verify checks
// that the command exists, not what it does.
func dummyExec(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// analyzeUnusable says why systemd-analyze verify cannot judge our units
// here, or "" if it can. In a container it may fail for reasons of its own
// (no systemd running, a read-only /run, seccomp): then a known-good unit
// fails too, and its verdict on ours would mean nothing. A verify that
// passes even a broken unit would prove nothing either.
func analyzeUnusable(t *testing.T, sa, dir string) string {
	t.Helper()
	good := "[Unit]\nDescription=synclab test: a correct unit\n\n[Service]\nType=notify\nExecStart=" +
		dummyExec(t, dir, "synclab-probe") + "\n\n[Install]\nWantedBy=multi-user.target\n"
	goodPath := filepath.Join(dir, "synclab-good.service")
	badPath := filepath.Join(dir, "synclab-bad.service")
	if err := os.WriteFile(goodPath, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(good, "Type=notify", "Type=notfy\nNotAKey=1", 1)
	if err := os.WriteFile(badPath, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCmd(sa, "verify", "--man=no", goodPath); err != nil || strings.Contains(out, "synclab-good.service") {
		return fmt.Sprintf("systemd-analyze verify cannot run here: it fails a known-good unit (%v), so its verdict on ours would mean nothing:\n%s", err, out)
	}
	out, err := runCmd(sa, "verify", "--man=no", badPath)
	if err == nil && !strings.Contains(out, "notfy") {
		return "systemd-analyze verify here passes a unit with a misspelt Type=, so its silence on ours would prove nothing:\n" + out
	}
	return ""
}

func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

var envLine = regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=(.*)$`)

// envVars returns the variables an example file documents (set or
// commented out) and the ones it sets.
func envVars(t *testing.T, path string) (documented, set []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		m := envLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		documented = append(documented, m[1])
		if !strings.HasPrefix(line, "#") {
			set = append(set, m[1])
		}
	}
	return documented, set
}

// TestEnvExamples checks that each example documents the operator
// interface of DESIGN.md and sets only what is required.
func TestEnvExamples(t *testing.T) {
	common := []string{"ID", "MEMBERS", "CLUSTER", "KEY_FILE", "CONTROL", "STATE_DIR", "LOG_LEVEL", "LOG_FORMAT", "METRICS"}
	for _, d := range daemons {
		t.Run(d, func(t *testing.T) {
			prefix := strings.ToUpper(d) + "_"
			documented, set := envVars(t, filepath.Join(unitDir, d+".env.example"))
			want := slices.Clone(common)
			if d == "timed" {
				want = append(want, "CLOCK", "SIM_OFFSET", "SIM_DRIFT")
			}
			for _, v := range want {
				if !slices.Contains(documented, prefix+v) {
					t.Errorf("%s.env.example does not document %s", d, prefix+v)
				}
			}
			for _, v := range documented {
				if !strings.HasPrefix(v, prefix) {
					t.Errorf("%s.env.example: %s is not a %s* variable", d, v, prefix)
				}
			}
			// The lab file describes the lab: an install leaves no
			// address, and no ID, live.
			if len(set) > 0 {
				t.Errorf("%s.env.example sets %v: every line is to be commented out (the lab file describes the lab)", d, set)
			}
			for _, v := range []string{"LAB_FILE", "LAB_HOST"} {
				if !slices.Contains(documented, prefix+v) {
					t.Errorf("%s.env.example does not document %s", d, prefix+v)
				}
			}
			// Its addresses are the README's lab's, never the test lab's.
			if b, _ := os.ReadFile(filepath.Join(unitDir, d+".env.example")); strings.Contains(string(b), "10.77.") {
				t.Errorf("%s.env.example names the test lab's 10.77.0.x", d)
			}
		})
	}
}

// TestEnvExamplesMatchFlags builds the daemons and checks that every
// variable an example documents is one `X run` reads, so a renamed flag
// cannot leave the examples silently stale.
func TestEnvExamplesMatchFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the three daemons; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the daemons with")
	}
	dir := t.TempDir()
	for _, d := range daemons {
		t.Run(d, func(t *testing.T) {
			bin := filepath.Join(dir, d)
			if out, err := runCmd(goBin, "build", "-o", bin, "../../cmd/"+d); err != nil {
				t.Fatalf("go build ./cmd/%s: %v\n%s", d, err, out)
			}
			help, err := runCmd(bin, "run", "--help")
			if err != nil {
				t.Fatalf("%s run --help: %v\n%s", d, err, help)
			}
			documented, _ := envVars(t, filepath.Join(unitDir, d+".env.example"))
			// /etc/default/synclab's are read by every daemon.
			shared, set := envVars(t, filepath.Join(unitDir, "synclab.env.example"))
			if len(shared) == 0 || len(set) > 0 {
				t.Errorf("synclab.env.example documents %v and sets %v: want SYNCLAB_* variables, all commented out", shared, set)
			}
			documented = append(documented, shared...)
			for _, v := range documented {
				if !strings.Contains(help, "$"+v+"]") && !strings.Contains(help, "$"+v+",") {
					t.Errorf("%s.env.example documents %s, which `%s run` does not read", d, v, d)
				}
			}
		})
	}
}
