package app

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
)

// threeHosts is the README's lab, as a lab file.
const threeHosts = `# the lab
cluster = "physics"

[[host]]
id = 1
address = "10.0.0.1"
name = "pc1"
[host.labd]
heartbeat = "20ms"

[[host]]
id = 2
address = "10.0.0.2"

[[host]]
id = 3
address = "10.0.0.3"

[labd]
port = 7700
heartbeat = "70ms"
on-elected = ["echo one", "echo two"]
`

func writeLab(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lab.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// machine gives this machine the addresses listed (interface eth0).
func machine(t *testing.T, addrs ...string) {
	t.Helper()
	old := LocalAddrs
	LocalAddrs = func() (map[netip.Addr]string, error) {
		m := map[netip.Addr]string{netip.MustParseAddr("127.0.0.1"): "lo"}
		for _, a := range addrs {
			m[netip.MustParseAddr(a)] = "eth0"
		}
		return m, nil
	}
	t.Cleanup(func() { LocalAddrs = old })
}

// labRun is what `labd run` resolved: the daemon's Config and its flags.
type labRun struct {
	cfg       daemon.Config
	heartbeat time.Duration
	elected   []string
	code      int
	stderr    string
}

// runLab runs `labd run ARGS` with env set, up to Build.
func runLab(t *testing.T, optional bool, env map[string]string, args ...string) labRun {
	t.Helper()
	for k, v := range env {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		defer func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		}()
	}
	var got labRun
	a := New(Spec{
		Name:            "labd",
		ClusterOptional: optional,
		RunFlags: []cli.Flag{
			&cli.DurationFlag{Name: "heartbeat", EnvVars: Env("labd", "heartbeat"), Value: 50 * time.Millisecond},
			&cli.StringSliceFlag{Name: "on-elected", EnvVars: Env("labd", "on-elected")},
			&cli.StringFlag{Name: "mode", EnvVars: Env("labd", "mode")},
		},
		Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
			got.cfg = *cfg
			got.heartbeat = c.Duration("heartbeat")
			got.elected = c.StringSlice("on-elected")
			return nil, Usagef("build reached")
		},
	})
	var stderr bytes.Buffer
	a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
	got.code = Run(a, append([]string{"labd", "run", "--insecure"}, args...), &stderr)
	got.stderr = stderr.String()
	return got
}

func init() { DefaultPorts["labd"] = 7900; LabDaemons = append(LabDaemons, "labd") }

// TestLabFile: one file gives every daemon the members (the hosts at its
// port), this host's ID (by its address), the cluster, and its settings,
// this host's own over the daemon's section; a flag beats an environment
// variable, which beats the file.
func TestLabFile(t *testing.T) {
	path := writeLab(t, threeHosts)
	machine(t, "192.168.1.5", "10.0.0.2")
	r := runLab(t, false, nil, "--lab-file", path)
	if !strings.Contains(r.stderr, "build reached") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.cfg.ID != 2 || len(r.cfg.Members) != 3 || r.cfg.Members[3] != netip.MustParseAddrPort("10.0.0.3:7700") || r.cfg.Cluster != "physics" {
		t.Errorf("config %+v", r.cfg)
	}
	if r.heartbeat != 70*time.Millisecond || strings.Join(r.elected, "|") != "echo one|echo two" {
		t.Errorf("settings: heartbeat %v, on-elected %q", r.heartbeat, r.elected)
	}
	if want := "lab file " + path + ", host 2, address 10.0.0.2 on eth0"; r.cfg.ConfigSource != want {
		t.Errorf("source %q, want %q", r.cfg.ConfigSource, want)
	}

	// Host 1's own section; by --lab-host (a name), or its address.
	for _, r := range []labRun{
		runLab(t, false, nil, "--lab-file", path, "--lab-host", "pc1"),
		runLab(t, false, map[string]string{"SYNCLAB_LAB_HOST": "1"}, "--lab-file", path),
	} {
		if r.cfg.ID != 1 || r.heartbeat != 20*time.Millisecond {
			t.Errorf("host 1: id %d, heartbeat %v (%s)", r.cfg.ID, r.heartbeat, r.stderr)
		}
	}

	// Precedence: flag > environment > host > section > default.
	r = runLab(t, false, map[string]string{"LABD_HEARTBEAT": "33ms", "LABD_CLUSTER": "other"}, "--lab-file", path)
	if r.heartbeat != 33*time.Millisecond || r.cfg.Cluster != "other" {
		t.Errorf("environment: heartbeat %v, cluster %q", r.heartbeat, r.cfg.Cluster)
	}
	r = runLab(t, false, map[string]string{"LABD_HEARTBEAT": "33ms"}, "--lab-file", path, "--heartbeat", "44ms", "--id", "3")
	if r.heartbeat != 44*time.Millisecond || r.cfg.ID != 3 {
		t.Errorf("flags: heartbeat %v, id %d", r.heartbeat, r.cfg.ID)
	}
	// Members given by hand: the file's hosts are not used.
	r = runLab(t, false, nil, "--lab-file", path, "--id", "9", "--members", "9=127.0.0.9:7000")
	if r.cfg.ID != 9 || len(r.cfg.Members) != 1 || r.heartbeat != 70*time.Millisecond {
		t.Errorf("members by hand: %+v, heartbeat %v (%s)", r.cfg, r.heartbeat, r.stderr)
	}

	// A daemon whose cluster is optional joins only where the file gives
	// it a port: here not, so it runs alone with the file's settings.
	noPort := writeLab(t, strings.Replace(threeHosts, "port = 7700\n", "", 1))
	r = runLab(t, true, nil, "--lab-file", noPort)
	if len(r.cfg.Members) != 0 || r.cfg.ID != 0 || r.heartbeat != 70*time.Millisecond {
		t.Errorf("optional cluster: %+v (%s)", r.cfg, r.stderr)
	}

	// No lab file where none is named: not used; named and missing: an error.
	if r := runLab(t, false, nil, "--lab-file", filepath.Join(t.TempDir(), "none.toml")); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("a named lab file that is not there: exit %d, %s", r.code, r.stderr)
	}
	if r := runLab(t, false, map[string]string{"SYNCLAB_LAB_FILE": ""}); !strings.Contains(r.stderr, "--id and --members required") {
		t.Errorf("no lab file: %s", r.stderr)
	}
}

// TestLabFileHostNotFound: a machine that is none of the hosts, or
// several, is told exactly why, and what to do.
func TestLabFileHostNotFound(t *testing.T) {
	path := writeLab(t, threeHosts)
	machine(t, "192.168.1.5")
	r := runLab(t, false, nil, "--lab-file", path)
	want := path + ": this machine is none of its hosts: its addresses (192.168.1.5 on eth0) are none of the hosts' (1=10.0.0.1, 2=10.0.0.2, 3=10.0.0.3); add it as a [[host]], or say which host it is (--lab-host ID, SYNCLAB_LAB_HOST=ID)"
	if r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d: %s\nwant %s", r.code, r.stderr, want)
	}
	machine(t, "10.0.0.1", "10.0.0.3")
	if r := runLab(t, false, nil, "--lab-file", path); r.code != 2 || !strings.Contains(r.stderr, "several hosts, 1 (pc1) (10.0.0.1 on eth0) and 3 (10.0.0.3 on eth0): say which") {
		t.Errorf("two hosts' addresses: exit %d, %s", r.code, r.stderr)
	}
	if r := runLab(t, false, nil, "--lab-file", path, "--lab-host", "pc9"); r.code != 2 || !strings.Contains(r.stderr, `--lab-host "pc9" is no host's id or name`) {
		t.Errorf("--lab-host pc9: exit %d, %s", r.code, r.stderr)
	}
	if r := runLab(t, false, nil, "--lab-file", path, "--id", "7"); r.code != 2 || !strings.Contains(r.stderr, "no host has id 7") {
		t.Errorf("--id 7: exit %d, %s", r.code, r.stderr)
	}
	// A daemon that needs no cluster runs without its host's settings,
	// and says why.
	machine(t, "192.168.1.5")
	noPort := writeLab(t, strings.Replace(threeHosts, "port = 7700\n", "", 1))
	if r := runLab(t, true, nil, "--lab-file", noPort); !strings.Contains(r.stderr, "build reached") || r.heartbeat != 70*time.Millisecond {
		t.Errorf("optional cluster, unknown host: exit %d, %s", r.code, r.stderr)
	}
}

// TestLabFileErrors: a lab file that says something wrong or
// contradictory is refused at start, in one line naming the file, the
// line and the field.
func TestLabFileErrors(t *testing.T) {
	machine(t, "10.0.0.2")
	hosts := "[[host]]\nid = 1\naddress = \"10.0.0.1\"\n[[host]]\nid = 2\naddress = \"10.0.0.2\"\n"
	for _, tc := range []struct {
		text string
		want string // after "PATH:"
	}{
		{"cluster = \n", `1:11: toml: unexpected character`},
		{"clustr = \"x\"\n" + hosts, `1: unknown key "clustr" (known: cluster, key-file, insecure, host, timed, mutexd, electd, orderd`},
		{"cluster = \"\"\n" + hosts, `1: cluster: want the cluster's name`},
		{"cluster = \"x\"\n", ` no [[host]]: a lab file lists the lab's machines`},
		{hosts + "[[host]]\nid = 2\naddress = \"10.0.0.3\"\n", `8: host id 2 appears twice (lines 5 and 8)`},
		{hosts + "[[host]]\nid = 3\naddress = \"10.0.0.2\"\n", `9: host 3: address 10.0.0.2 is another host's too (lines 6 and 9)`},
		{hosts + "[[host]]\nid = 0\naddress = \"10.0.0.3\"\n", `8: host id 0: want an integer from 1 to 4294967295`},
		{hosts + "[[host]]\naddress = \"10.0.0.3\"\n", `7: host without an id`},
		{hosts + "[[host]]\nid = 3\naddress = \"pc3.lab\"\n", `9: host 3: address "pc3.lab": want an IP address`},
		{hosts + "[[host]]\nid = 3\naddress = \"10.0.0.3\"\nmac = \"x\"\n", `10: host 3: unknown key "mac"`},
		{hosts + "[labd]\nheartbeat = \"fast\"\n", `8 (labd.heartbeat): "fast": want a duration with its unit`},
		{hosts + "[labd]\nhartbeat = \"50ms\"\n", "8 (labd.hartbeat): `labd run` has no flag --hartbeat (did you mean --heartbeat?)"},
		{hosts + "[labd]\nheartbeat = [\"1s\", \"2s\"]\n", `8 (labd.heartbeat): --heartbeat takes one value, not a list`},
		{hosts + "[labd]\nmembers = \"1=x\"\n", `8: labd.members: not in a daemon's section: the member list is the [[host]] list`},
		{hosts + "[labd]\nport = 70000\n", `8: labd.port: want a port, 1 to 65535`},
		{hosts + "[electd]\nport = 7400\n", `8: electd.port 7400 on host 1 is mutexd's too: two daemons cannot share a port`},
		{hosts + "[labd]\nheartbeat = 1979-05-27\n", `8: labd.heartbeat: a date; durations are strings like "50ms"`},
		{"[[host]]\nid = 1\naddress = \"10.0.0.1\"\n[host.labd]\nid = 2\n[[host]]\nid = 2\naddress = \"10.0.0.2\"\n", `5: host 1's labd.id: not in a daemon's section`},
	} {
		path := writeLab(t, tc.text)
		r := runLab(t, false, nil, "--lab-file", path)
		if r.code != 2 || !strings.Contains(r.stderr, path+":"+tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Errorf("%q:\n exit %d, %s\n want %s:%s", tc.text, r.code, r.stderr, path, tc.want)
		}
	}
}

// TestLabFileSemanticErrorsNameTheLine: a value the daemon refuses after
// reading it names where the lab file set it.
func TestLabFileSemanticErrorsNameTheLine(t *testing.T) {
	machine(t, "10.0.0.2")
	path := writeLab(t, "[[host]]\nid = 1\naddress = \"10.0.0.1\"\n[[host]]\nid = 2\naddress = \"10.0.0.2\"\n[labd]\nlog-level = \"loud\"\n")
	r := runLab(t, false, nil, "--lab-file", path)
	if r.code != 2 || !strings.Contains(r.stderr, `--log-level "loud": want debug, info, warn or error (the lab file set it: `+path+`:8 (labd.log-level))`) {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// TestLabFileExample: the example installed beside the docs parses, and
// gives the README's lab: the master serves at stratum 8 and lists itself
// among the servers, the others follow it, every daemon has the three
// hosts at its default port.
func TestLabFileExample(t *testing.T) {
	path := "../../systemd/lab.toml.example"
	lab, err := LoadLab(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if lab.Cluster != "lab" || len(lab.Hosts) != 3 || lab.KeyFile != "../../systemd/cluster.key" {
		t.Errorf("cluster %q, %d hosts, key %q", lab.Cluster, len(lab.Hosts), lab.KeyFile)
	}
	for i, want := range map[int]string{0: "server=10.0.0.1 serve=0.0.0.0 stratum=8", 1: "server=10.0.0.1", 2: "server=10.0.0.1"} {
		var got []string
		s := lab.settingsFor("timed", &lab.Hosts[i])
		for _, k := range []string{"server", "serve", "stratum"} {
			if v, ok := s[k]; ok {
				got = append(got, k+"="+strings.Join(v.values, ","))
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("host %d's timed: %v, want %s", i+1, got, want)
		}
	}
	for d, port := range map[string]string{"mutexd": "7400", "electd": "7500", "orderd": "7600"} {
		m := lab.Members(d)
		if len(m) != 3 || m[2].String() != "10.0.0.2:"+port {
			t.Errorf("%s members %v", d, m)
		}
	}
	if lab.Joins("timed", true) {
		t.Error("timed joins a cluster without a port")
	}
}

// TestRunCheck: `X run --check` says what the daemon would run with, and
// where the lab file's part comes from, without starting it; a value a
// flag or a variable replaced is shown as such.
func TestRunCheck(t *testing.T) {
	path := writeLab(t, threeHosts)
	machine(t, "10.0.0.2")
	a := New(Spec{
		Name:     "labd",
		RunFlags: []cli.Flag{&cli.DurationFlag{Name: "heartbeat", EnvVars: Env("labd", "heartbeat")}, &cli.StringSliceFlag{Name: "on-elected"}},
		Build:    func(*cli.Context, *daemon.Config) (daemon.CoreFactory, error) { return nil, nil },
	})
	var out, stderr bytes.Buffer
	a.Writer, a.ErrWriter = &out, &stderr
	if code := Run(a, []string{"labd", "run", "--check", "--insecure", "--lab-file", path, "--heartbeat", "1s"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		`labd would run as member 2 of 3, cluster "physics", listening on 10.0.0.2:7700`,
		"members: 1=10.0.0.1:7700,2=10.0.0.2:7700,3=10.0.0.3:7700",
		"key: none (--insecure",
		"lab file " + path + ", host 2, address 10.0.0.2 on eth0",
		"--on-elected echo one,echo two " + path + ":22 (labd.on-elected)",
		"--heartbeat 1s overridden here (a flag or variable), not " + path + ":21 (labd.heartbeat)",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
			t.Errorf("--check lacks %q:\n%s", want, out.String())
		}
	}
}
