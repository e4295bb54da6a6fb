package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// AgreeLab is the harness of the configuration agreement tests
// (TestLabAgree* in each daemon's package; issue 30, item 1) and of the
// `X status --cluster` tests (TestLabClusterStatus*): three namespace
// hosts with the real binaries, one host's configuration wrong in one way
// (its member list lacks a member, its key, one member's address, its
// algorithm, its cluster name). At every poll there are never two
// leaders, holders or sequencers; every daemon that sees the disagreement
// says so at WARN, naming the member and what differs; status and metrics
// show it; the misconfigured host steps back and the majority goes on
// without it.

// AgreeLab runs one daemon on each of three namespace hosts.
type AgreeLab struct {
	T      *testing.T
	Lab    *labnet.Lab
	Dir    string
	Daemon string
	Port   int
	Key    string // the cluster's key file
	Procs  map[int]*labnet.Proc
}

// NewAgreeLab builds the lab of three hosts for daemon at port, with a
// cluster key; nothing runs yet (Start).
func NewAgreeLab(t *testing.T, daemon string, port int) *AgreeLab {
	labnet.Require(t)
	a := &AgreeLab{T: t, Lab: labnet.New(t, 3), Dir: t.TempDir(), Daemon: daemon, Port: port, Procs: map[int]*labnet.Proc{}}
	a.Key = KeyFile(t, a.Dir)
	return a
}

// Members is the member list "1=A:P,2=B:P,3=C:P", with member i at
// moved[i] instead where given, and without the members in drop.
func (a *AgreeLab) Members(moved map[int]string, drop ...int) string {
	var out []string
	for j := 1; j <= 3; j++ {
		if slices.Contains(drop, j) {
			continue
		}
		addr := fmt.Sprintf("%s:%d", a.Lab.Host(j).Addr(), a.Port)
		if m, ok := moved[j]; ok {
			addr = m
		}
		out = append(out, fmt.Sprintf("%d=%s", j, addr))
	}
	return strings.Join(out, ",")
}

// Control is host i's control socket.
func (a *AgreeLab) Control(i int) string { return filepath.Join(a.Dir, fmt.Sprintf("h%d.sock", i)) }

// Start runs the daemon on host i with the common flags (the member list
// members unless given) and extra.
func (a *AgreeLab) Start(i int, members string, extra ...string) {
	argv := []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		filepath.Join(binDir, a.Daemon), "run", "--id", fmt.Sprint(i), "--members", members,
		"--control", a.Control(i), "--state-dir", filepath.Join(a.Dir, fmt.Sprintf("h%d.state", i)),
		"--metrics", "127.0.0.1:9479"}
	if !slices.Contains(extra, "--key-file") {
		argv = append(argv, "--key-file", a.Key)
	}
	a.Procs[i] = a.Lab.Host(i).Start(a.T, a.Daemon, append(argv, extra...), nil)
}

// CLI runs a client command of the daemon against host i's control socket.
func (a *AgreeLab) CLI(i int, args ...string) ([]byte, error) {
	argv := append([]string{args[0], "--control", a.Control(i)}, args[1:]...)
	return exec.Command(filepath.Join(binDir, a.Daemon), argv...).CombinedOutput()
}

// Status is host i's `status --json`, nil if it does not answer.
func (a *AgreeLab) Status(i int) map[string]any {
	out, err := exec.Command(filepath.Join(binDir, a.Daemon), "status", "--json", "--control", a.Control(i)).Output()
	var st map[string]any
	if err != nil || json.Unmarshal(out, &st) != nil {
		return nil
	}
	return st
}

// MemberView is host i's agreement view of member m, nil if none.
func (a *AgreeLab) MemberView(i, m int) map[string]any {
	ms, _ := Field(a.Status(i), "node", "agreement", "members").([]any)
	for _, v := range ms {
		if mv, ok := v.(map[string]any); ok && mv["id"] == float64(m) {
			return mv
		}
	}
	return nil
}

// Standing is host i's agreement standing ("agreed", "stepped_back", ...).
func (a *AgreeLab) Standing(i int) string {
	s, _ := Field(a.Status(i), "node", "agreement", "standing").(string)
	return s
}

// Metrics is host i's metrics endpoint's text.
func (a *AgreeLab) Metrics(i int) string {
	var out []byte
	err := a.Lab.Host(i).Do(func() error {
		var err error
		out, err = exec.Command("curl", "-s", "http://127.0.0.1:9479/metrics").Output()
		return err
	})
	if err != nil {
		a.T.Fatalf("host %d metrics: %v", i, err)
	}
	return string(out)
}

// Warned waits (a few seconds) for host i's log to hold a WARN line with
// every one of wants.
func (a *AgreeLab) Warned(i int, wants ...string) {
	a.T.Helper()
	deadline := time.Now().Add(6 * time.Second)
	for {
		for _, line := range strings.Split(a.Procs[i].Output(), "\n") {
			if !strings.Contains(line, "level=WARN") {
				continue
			}
			all := true
			for _, w := range wants {
				all = all && strings.Contains(line, w)
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			a.T.Fatalf("host %d: no WARN line with %q in its log:\n%s", i, wants, TailString(a.Procs[i].Output(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Quiet checks that host i's log has no WARN line naming cond (a daemon
// that sees no disagreement says none).
func (a *AgreeLab) Quiet(i int, cond string) {
	a.T.Helper()
	for _, line := range strings.Split(a.Procs[i].Output(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "condition="+cond) {
			a.T.Errorf("host %d warns: %s", i, line)
		}
	}
}

// Poll calls check every 50 ms for d; check fails the test on a violation.
func (a *AgreeLab) Poll(d time.Duration, check func(round int)) {
	for round, end := 0, time.Now().Add(d); time.Now().Before(end); round++ {
		check(round)
		time.Sleep(50 * time.Millisecond)
	}
}

// CheckDisagreement asserts, once the lab ran a while, what every test
// asserts: host 1 (which hears host 3) names member 3 and what differs in
// a WARN line, its status and metrics; host 3 stepped back, says so and
// which member differs; the majority's hosts agree with each other.
func (a *AgreeLab) CheckDisagreement(seen3 string, seen1 string) {
	a.T.Helper()
	a.Warned(1, "condition=config_differs", "member=3", seen3)
	a.Warned(3, "condition=config_differs", "member=1", seen1)
	a.Warned(3, "stepping back")
	if v := a.MemberView(1, 3); v == nil || v["state"] != "differs" || v["agrees"] != false || !strings.Contains(fmt.Sprint(v["differs"]), seen3) {
		a.T.Errorf("host 1's status of member 3: %v", v)
	}
	if v := a.MemberView(1, 2); v == nil || v["state"] != "agrees" {
		a.T.Errorf("host 1's status of member 2: %v", v)
	}
	if s := a.Standing(3); s != "stepped_back" {
		a.T.Errorf("host 3 standing %q, want stepped_back", s)
	}
	if s := a.Standing(1); s != "agreed" {
		a.T.Errorf("host 1 standing %q, want agreed", s)
	}
	m1, m3 := a.Metrics(1), a.Metrics(3)
	if !strings.Contains(m1, `synclab_config_members_differing{daemon="`+a.Daemon+`"} 1`) ||
		!strings.Contains(m1, `synclab_config_disagreements_total{daemon="`+a.Daemon+`",member="3"}`) ||
		strings.Contains(m1, `synclab_config_disagreements_total{daemon="`+a.Daemon+`",member="3"} 0`) {
		a.T.Errorf("host 1's metrics:\n%s", grepLines(m1, "synclab_config"))
	}
	if !strings.Contains(m3, `synclab_config_stepped_back{daemon="`+a.Daemon+`"} 1`) {
		a.T.Errorf("host 3's metrics:\n%s", grepLines(m3, "synclab_config"))
	}
	out, _ := a.CLI(3, "status")
	if !strings.Contains(string(out), "STEPPED BACK") || !strings.Contains(string(out), "DIFFERS") {
		a.T.Errorf("host 3's status does not say it stepped back:\n%s", out)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The whole lab in one table (issue 30, item 5), TestLabClusterStatus* in
// each daemon's package: `X status --cluster` on three namespace hosts
// with the real binaries, asked from a member that does not lead, with
// one member SIGKILLed (a row marked as not answering, with when it was
// last heard) and one misconfigured (a row marked as differing, naming the
// difference: from its own answer when it can answer, from configuration
// agreement's evidence when its key differs). Both the table and --json
// are asserted, and the exit status (3).

// ClusterTable is what `status --cluster --json` prints.
type ClusterTable struct{ daemon.ClusterStatus }

// Table runs `status --cluster` on host i: the human table and the JSON
// (asked at once, each waiting out the same deadline), each with its exit
// status.
func (a *AgreeLab) Table(i int, timeout string) (human string, tab ClusterTable, codes [2]int) {
	a.T.Helper()
	code := func(err error) int {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			a.T.Fatalf("status --cluster on host %d: %v", i, err)
		}
		return 0
	}
	var js []byte
	var jsErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		js, jsErr = exec.Command(filepath.Join(binDir, a.Daemon), "status", "--cluster", "--json", "--timeout", timeout, "--control", a.Control(i)).Output()
	}()
	out, err := a.CLI(i, "status", "--cluster", "--timeout", timeout)
	<-done
	human, codes[0], codes[1] = string(out), code(err), code(jsErr)
	if err := json.Unmarshal(js, &tab); err != nil {
		a.T.Fatalf("status --cluster --json on host %d: %v\n%s\n%s", i, err, js, out)
	}
	return human, tab, codes
}

// Row returns member id's row, failing the test if there is none.
func (tab ClusterTable) Row(t *testing.T, id uint32) daemon.ClusterRow {
	t.Helper()
	for _, r := range tab.Rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row for member %d: %+v", id, tab)
	return daemon.ClusterRow{}
}

// Wants fails the test for each of wants not in the table's text.
func Wants(t *testing.T, human string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(human, w) {
			t.Errorf("no %q in the table:\n%s", w, human)
		}
	}
}

// TableLine is the table's line of member id.
func TableLine(human string, id int) string {
	for _, l := range strings.Split(human, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == fmt.Sprint(id) && strings.Contains(f[1], ":") {
			return l
		}
	}
	return ""
}

// Fact is one of a row's facts as a number (-1: absent or not a number).
func Fact(r daemon.ClusterRow, name string) int64 {
	v, err := r.Facts[name].Int64()
	if err != nil {
		return -1
	}
	return v
}

// Eventually polls cond every 50 ms for d.
func (a *AgreeLab) Eventually(what string, d time.Duration, cond func() bool) {
	a.T.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			a.T.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
