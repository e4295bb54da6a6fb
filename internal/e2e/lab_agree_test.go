package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/labnet"
)

// Configuration agreement (issue 30, item 1) on three namespace hosts with
// the real binaries: one host's configuration is wrong in one way (its
// member list lacks a member, its key, one member's address, its
// algorithm, its cluster name). At every poll there are never two leaders,
// holders or sequencers; every daemon that sees the disagreement says so at
// WARN, naming the member and what differs; status and metrics show it;
// the misconfigured host steps back and the majority goes on without it.

// agreeLab runs one daemon on each of three namespace hosts.
type agreeLab struct {
	t      *testing.T
	lab    *labnet.Lab
	dir    string
	daemon string
	port   int
	key    string
	procs  map[int]*labnet.Proc
}

func newAgreeLab(t *testing.T, daemon string, port int) *agreeLab {
	labnet.Require(t)
	a := &agreeLab{t: t, lab: labnet.New(t, 3), dir: t.TempDir(), daemon: daemon, port: port, procs: map[int]*labnet.Proc{}}
	a.key = keyFile(t, a.dir)
	return a
}

// members is the member list "1=A:P,2=B:P,3=C:P", with member i at
// moved[i] instead where given, and without the members in drop.
func (a *agreeLab) members(moved map[int]string, drop ...int) string {
	var out []string
	for j := 1; j <= 3; j++ {
		if slices.Contains(drop, j) {
			continue
		}
		addr := fmt.Sprintf("%s:%d", a.lab.Host(j).Addr(), a.port)
		if m, ok := moved[j]; ok {
			addr = m
		}
		out = append(out, fmt.Sprintf("%d=%s", j, addr))
	}
	return strings.Join(out, ",")
}

func (a *agreeLab) control(i int) string { return filepath.Join(a.dir, fmt.Sprintf("h%d.sock", i)) }

// start runs the daemon on host i with the common flags (the member list
// members unless given) and extra.
func (a *agreeLab) start(i int, members string, extra ...string) {
	argv := []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		filepath.Join(binDir, a.daemon), "run", "--id", fmt.Sprint(i), "--members", members,
		"--control", a.control(i), "--state-dir", filepath.Join(a.dir, fmt.Sprintf("h%d.state", i)),
		"--metrics", "127.0.0.1:9479"}
	if !slices.Contains(extra, "--key-file") {
		argv = append(argv, "--key-file", a.key)
	}
	a.procs[i] = a.lab.Host(i).Start(a.t, a.daemon, append(argv, extra...), nil)
}

// cli runs a client command of the daemon against host i's control socket.
func (a *agreeLab) cli(i int, args ...string) ([]byte, error) {
	argv := append([]string{args[0], "--control", a.control(i)}, args[1:]...)
	return exec.Command(filepath.Join(binDir, a.daemon), argv...).CombinedOutput()
}

func (a *agreeLab) status(i int) map[string]any {
	out, err := exec.Command(filepath.Join(binDir, a.daemon), "status", "--json", "--control", a.control(i)).Output()
	var st map[string]any
	if err != nil || json.Unmarshal(out, &st) != nil {
		return nil
	}
	return st
}

// memberView is host i's agreement view of member m, nil if none.
func (a *agreeLab) memberView(i, m int) map[string]any {
	ms, _ := field(a.status(i), "node", "agreement", "members").([]any)
	for _, v := range ms {
		if mv, ok := v.(map[string]any); ok && mv["id"] == float64(m) {
			return mv
		}
	}
	return nil
}

func (a *agreeLab) standing(i int) string {
	s, _ := field(a.status(i), "node", "agreement", "standing").(string)
	return s
}

func (a *agreeLab) metrics(i int) string {
	var out []byte
	err := a.lab.Host(i).Do(func() error {
		var err error
		out, err = exec.Command("curl", "-s", "http://127.0.0.1:9479/metrics").Output()
		return err
	})
	if err != nil {
		a.t.Fatalf("host %d metrics: %v", i, err)
	}
	return string(out)
}

// warned waits (a few seconds) for host i's log to hold a WARN line with
// every one of wants.
func (a *agreeLab) warned(i int, wants ...string) {
	a.t.Helper()
	deadline := time.Now().Add(6 * time.Second)
	for {
		for _, line := range strings.Split(a.procs[i].Output(), "\n") {
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
			a.t.Fatalf("host %d: no WARN line with %q in its log:\n%s", i, wants, tailString(a.procs[i].Output(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// quiet checks that host i's log has no WARN line naming cond (a daemon
// that sees no disagreement says none).
func (a *agreeLab) quiet(i int, cond string) {
	a.t.Helper()
	for _, line := range strings.Split(a.procs[i].Output(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "condition="+cond) {
			a.t.Errorf("host %d warns: %s", i, line)
		}
	}
}

// poll calls check every 50 ms for d; check fails the test on a violation.
func (a *agreeLab) poll(d time.Duration, check func(round int)) {
	for round, end := 0, time.Now().Add(d); time.Now().Before(end); round++ {
		check(round)
		time.Sleep(50 * time.Millisecond)
	}
}

// checkDisagreement asserts, once the lab ran a while, what every test
// asserts: host 1 (which hears host 3) names member 3 and what differs in
// a WARN line, its status and metrics; host 3 stepped back, says so and
// which member differs; the majority's hosts agree with each other.
func (a *agreeLab) checkDisagreement(seen3 string, seen1 string) {
	a.t.Helper()
	a.warned(1, "condition=config_differs", "member=3", seen3)
	a.warned(3, "condition=config_differs", "member=1", seen1)
	a.warned(3, "stepping back")
	if v := a.memberView(1, 3); v == nil || v["state"] != "differs" || v["agrees"] != false || !strings.Contains(fmt.Sprint(v["differs"]), seen3) {
		a.t.Errorf("host 1's status of member 3: %v", v)
	}
	if v := a.memberView(1, 2); v == nil || v["state"] != "agrees" {
		a.t.Errorf("host 1's status of member 2: %v", v)
	}
	if s := a.standing(3); s != "stepped_back" {
		a.t.Errorf("host 3 standing %q, want stepped_back", s)
	}
	if s := a.standing(1); s != "agreed" {
		a.t.Errorf("host 1 standing %q, want agreed", s)
	}
	m1, m3 := a.metrics(1), a.metrics(3)
	if !strings.Contains(m1, `synclab_config_members_differing{daemon="`+a.daemon+`"} 1`) ||
		!strings.Contains(m1, `synclab_config_disagreements_total{daemon="`+a.daemon+`",member="3"}`) ||
		strings.Contains(m1, `synclab_config_disagreements_total{daemon="`+a.daemon+`",member="3"} 0`) {
		a.t.Errorf("host 1's metrics:\n%s", grepLines(m1, "synclab_config"))
	}
	if !strings.Contains(m3, `synclab_config_stepped_back{daemon="`+a.daemon+`"} 1`) {
		a.t.Errorf("host 3's metrics:\n%s", grepLines(m3, "synclab_config"))
	}
	out, _ := a.cli(3, "status")
	if !strings.Contains(string(out), "STEPPED BACK") || !strings.Contains(string(out), "DIFFERS") {
		a.t.Errorf("host 3's status does not say it stepped back:\n%s", out)
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

// leaders is who each host says leads (0: none), and which hosts say
// they do themselves.
func (a *agreeLab) leaders() (views map[int]uint32, selves []int) {
	views = map[int]uint32{}
	for i := 1; i <= 3; i++ {
		out, err := exec.Command(filepath.Join(binDir, "electd"), "leader", "--json", "--control", a.control(i)).Output()
		var v leaderJSON
		if err == nil && json.Unmarshal(out, &v) == nil {
			views[i] = v.Leader
			if v.Self {
				selves = append(selves, i)
			}
		}
	}
	return views, selves
}

// noTwoLeaders polls electd for d: at no poll may two hosts name
// different leaders, nor two hosts say they lead. It returns the leader
// the majority named last.
func (a *agreeLab) noTwoLeaders(d time.Duration) uint32 {
	a.t.Helper()
	var last uint32
	a.poll(d, func(round int) {
		views, selves := a.leaders()
		var named uint32
		for _, l := range views {
			if l == 0 {
				continue
			}
			if named != 0 && l != named {
				a.t.Fatalf("poll %d: two leaders named: %v (hosts that say they lead: %v)", round, views, selves)
			}
			named = l
		}
		if len(selves) > 1 {
			a.t.Fatalf("poll %d: hosts %v all say they lead (%v)", round, selves, views)
		}
		if views[1] != 0 {
			last = views[1]
		}
	})
	return last
}

// TestLabAgreeElectdMemberMissing is the bully case: host 3's
// member list lacks member 2. Before configuration agreement, h2 led (it
// never heard 3) while h1 and h3 followed 3, for ever. Now h1 refuses h3
// and names the difference, h3 steps back (tied: itself against h1) and
// leads nobody, and 2 leads alone.
func TestLabAgreeElectdMemberMissing(t *testing.T) {
	a := newAgreeLab(t, "electd", 7500)
	full := a.members(nil)
	a.start(1, full)
	a.start(2, full)
	a.start(3, a.members(nil, 2))
	if lead := a.noTwoLeaders(5 * time.Second); lead != 2 {
		t.Fatalf("the majority's leader is %d, want 2", lead)
	}
	a.checkDisagreement("member 3's member list lacks member 2", "member 1's member list has member 2 ("+a.lab.Host(2).Addr().String()+":7500), ours does not")
	// h2 never hears h3 (h3 does not know it): it has nothing to say.
	a.quiet(2, "config_differs")
	out, err := a.cli(3, "leader")
	if err == nil || !strings.Contains(string(out), "stepped back") {
		t.Errorf("electd leader on host 3: %v: %s", err, out)
	}
}

// TestLabAgreeElectdOtherAlgorithm: host 3 runs the Chang-Roberts ring
// election, the others bully.
func TestLabAgreeElectdOtherAlgorithm(t *testing.T) {
	electdOneDiffers(t, []string{"--algorithm", "chang-roberts"},
		"member 3's algorithm differs (bully here, chang-roberts there)", "member 1's algorithm differs (chang-roberts here, bully there)")
}

// TestLabAgreeElectdOtherCluster: host 3 runs with another cluster name
// (its frames carry another cluster ID: refused before any check, they
// were only a counter before). The announcement still authenticates with
// the cluster's key, so the difference is named for sure.
func TestLabAgreeElectdOtherCluster(t *testing.T) {
	electdOneDiffers(t, []string{"--cluster", "lab-b"},
		"member 3's cluster name differs (synclab here, lab-b there)", "member 1's cluster name differs (lab-b here, synclab there)")
}

// electdOneDiffers runs electd (bully) on three hosts, host 3 with extra
// flags: 2 leads alone; every host names the difference it sees (seen3:
// what hosts 1 and 2 say of host 3; seen1: what host 3 says of host 1).
func electdOneDiffers(t *testing.T, extra []string, seen3, seen1 string) {
	a := newAgreeLab(t, "electd", 7500)
	full := a.members(nil)
	a.start(1, full)
	a.start(2, full)
	a.start(3, full, extra...)
	if lead := a.noTwoLeaders(4 * time.Second); lead != 2 {
		t.Fatalf("the majority's leader is %d, want 2", lead)
	}
	a.checkDisagreement(seen3, seen1)
	a.warned(2, "condition=config_differs", "member=3", seen3)
}

// TestLabAgreeMutexdOtherKey is where every administrator starts: host 3
// made its own key. Its frames fail authentication; their key fingerprint
// tells a different key from a forgery, and says which. Host 3 grants
// nothing (a lock there is refused at once, saying why); the others hold
// the lock one at a time.
func TestLabAgreeMutexdOtherKey(t *testing.T) {
	a := newAgreeLab(t, "mutexd", 7400)
	other := filepath.Join(a.dir, "other.key")
	if _, err := writeOtherKey(other); err != nil {
		t.Fatal(err)
	}
	full := a.members(nil)
	a.start(1, full)
	a.start(2, full)
	a.start(3, full, "--key-file", other)
	// Holders: every host runs a lock holder for the whole poll, in
	// turns; a holder records its interval, and no two may overlap.
	marks := filepath.Join(a.dir, "marks")
	held := func(i int) {
		go exec.Command(filepath.Join(binDir, "mutexd"), "lock", "x", "--timeout", "6s", "--control", a.control(i), "--",
			"sh", "-c", fmt.Sprintf(`echo "in %d $(date +%%s%%N)" >> %s; sleep 0.3; echo "out %d $(date +%%s%%N)" >> %s`, i, marks, i, marks)).Run()
	}
	a.poll(3*time.Second, func(round int) {
		if round%8 == 0 {
			held(1)
			held(2)
		}
	})
	out, err := a.cli(3, "lock", "x", "--timeout", "2s", "--", "true")
	if err == nil || !strings.Contains(string(out), "stepped back") {
		t.Errorf("a lock on host 3 (stepped back): %v: %s", err, out)
	}
	time.Sleep(time.Second)
	checkNoOverlap(t, marks)
	fp := func(host int) string {
		s, _ := field(a.status(host), "node", "agreement", "key_id").(string)
		if len(s) < 8 {
			t.Fatalf("host %d's key id %q", host, s)
		}
		return s[:8] + ".."
	}
	k1, k3 := fp(1), fp(3)
	a.checkDisagreement("member 3's key differs (key id "+k1+" here, "+k3+" there)", "member 1's key differs (key id "+k3+" here, "+k1+" there)")
	a.warned(2, "condition=config_differs", "member=3", "member 3's key differs")
	if v := a.memberView(1, 3); v["authenticated"] == true || v["auth_failures"] == nil {
		t.Errorf("host 1's view of 3: %v (a key difference is told from frames that fail authentication)", v)
	}
}

// writeOtherKey writes a second key file (another secret): host 3's own.
func writeOtherKey(path string) (string, error) {
	b := make([]byte, 32)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Read(b); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(fmt.Sprintf("1 hex:%x\n", b)), 0o600)
}

// checkNoOverlap reads the holders' marks: no two critical sections
// overlap, and there was at least one.
func checkNoOverlap(t *testing.T, path string) {
	t.Helper()
	b, _ := os.ReadFile(path)
	lines := strings.Fields(strings.ReplaceAll(string(b), "\n", " ; "))
	inside := 0
	entries := 0
	for i := 0; i+2 < len(lines); i += 4 {
		switch lines[i] {
		case "in":
			inside++
			entries++
		case "out":
			inside--
		}
		if inside > 1 {
			t.Fatalf("two holders at once:\n%s", b)
		}
	}
	if entries == 0 {
		t.Fatalf("nobody held the lock:\n%s", b)
	}
}

// TestLabAgreeOrderdOtherAddress: host 3's member list has member 2 at a
// wrong address. Host 3 steps back and sequences nothing; its sends are
// refused; hosts 1 and 2 keep one order with one sequencer.
func TestLabAgreeOrderdOtherAddress(t *testing.T) {
	a := newAgreeLab(t, "orderd", 7600)
	full := a.members(nil)
	wrong := "10.255.255.254:7600"
	a.start(1, full)
	a.start(2, full)
	a.start(3, a.members(map[int]string{2: wrong}))
	a.poll(4*time.Second, func(round int) {
		var seqs []int
		named := map[float64]bool{}
		for i := 1; i <= 3; i++ {
			st := a.status(i)
			if field(st, "node", "core", "sequencer", "role") == "sequencer" {
				seqs = append(seqs, i)
			}
			if s := num(st, "node", "core", "sequencer", "sequencer"); s != 0 {
				named[s] = true
			}
		}
		if len(seqs) > 1 || len(named) > 1 {
			t.Fatalf("poll %d: sequencers %v, named %v", round, seqs, named)
		}
		if round == 10 {
			if out, err := a.cli(1, "send", "--order", "total", fmt.Sprintf("m%d", round)); err != nil {
				t.Errorf("send on host 1: %v: %s", err, out)
			}
		}
	})
	out, err := a.cli(3, "send", "--order", "total", "from-3")
	if err == nil || !strings.Contains(string(out), "stepped back") {
		t.Errorf("send on host 3 (stepped back): %v: %s", err, out)
	}
	h2 := a.lab.Host(2).Addr().String() + ":7600"
	a.checkDisagreement("member 3's member list has member 2 at "+wrong+", ours at "+h2, "member 1's member list has member 2 at "+h2+", ours at "+wrong)
}

// TestLabAgreeStepBackAtRuntime: a running leader steps back when the
// other member of a two-member cluster comes back with another
// configuration (a tie: both step back), with its demotion hook run and
// its core restarted from its saved state; when that member comes back
// with the right configuration, the configurations agree again and one
// leads, elected anew.
func TestLabAgreeStepBackAtRuntime(t *testing.T) {
	a := newAgreeLab(t, "electd", 7500)
	two := a.members(nil, 3)
	hooks := filepath.Join(a.dir, "h2.hooks")
	hook := []string{"--on-elected", "echo elected >> " + hooks, "--on-demoted", "echo demoted >> " + hooks}
	a.start(1, two)
	a.start(2, two, hook...)
	leads2 := func() bool { v, _ := a.leaders(); return v[1] == 2 && v[2] == 2 }
	eventually(t, "2 leads both", 5*time.Second, leads2)

	a.procs[1].Kill()
	a.start(1, two, "--priorities", "1=5")
	eventually(t, "host 2 steps back", 5*time.Second, func() bool { return a.standing(2) == "stepped_back" })
	a.noTwoLeaders(2 * time.Second)
	if v, selves := a.leaders(); v[2] != 0 || len(selves) != 0 {
		t.Fatalf("after the step back: leaders %v, self-leaders %v", v, selves)
	}
	a.warned(2, "stepping back")
	a.warned(2, "condition=config_differs", "member=1", `member 1's priorities differs (none here, 1=5 there)`)
	waitFile(t, hooks, "demoted")
	if n := num(a.status(2), "errors", "core_restarted"); n != 1 {
		t.Errorf("host 2 restarted its core %v times, want 1", n)
	}

	a.procs[1].Kill()
	a.start(1, two)
	eventually(t, "2 leads both again", 8*time.Second, leads2)
	a.warned(2, "configurations agree again")
	if b, _ := os.ReadFile(hooks); strings.Count(string(b), "elected") < 2 {
		t.Errorf("host 2's hooks: %q, want elected, demoted, elected", b)
	}
}

// TestLabAgreeMutexdHolderStopped: a member holding a lock steps back (the
// other member of two came back with another lease): its holder's next
// renewal is refused, saying why, and its command is stopped (exit 76)
// well before the lease would have run out at the other member.
func TestLabAgreeMutexdHolderStopped(t *testing.T) {
	a := newAgreeLab(t, "mutexd", 7400)
	two := a.members(nil, 3)
	a.start(1, two)
	a.start(2, two)
	eventually(t, "both run", 5*time.Second, func() bool { return a.standing(1) == "agreed" && a.standing(2) == "agreed" })
	marker := filepath.Join(a.dir, "holding")
	lock := exec.Command(filepath.Join(binDir, "mutexd"), "lock", "x", "--control", a.control(2), "--timeout", "10s", "--",
		"sh", "-c", "touch "+marker+"; sleep 30")
	var out strings.Builder
	lock.Stdout, lock.Stderr = &out, &out
	if err := lock.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lock.Wait() }()
	t.Cleanup(func() { lock.Process.Kill() })
	eventually(t, "host 2 holds x", 10*time.Second, func() bool {
		_, err := os.Stat(marker)
		select {
		case err := <-done:
			t.Fatalf("mutexd lock ended before the lock was held: %v: %s", err, out.String())
		default:
		}
		return err == nil
	})

	a.procs[1].Kill()
	a.start(1, two, "--lease", "5s")
	stepped := time.Now()
	select {
	case err := <-done:
		if exitCode(err) != 76 || !strings.Contains(out.String(), "stepped back") {
			t.Fatalf("the holder ended %v (exit %d): %s", err, exitCode(err), out.String())
		}
		t.Logf("holder stopped %v after member 1 came back with another lease: %s", time.Since(stepped).Round(time.Millisecond), strings.TrimSpace(out.String()))
	case <-time.After(8 * time.Second):
		t.Fatalf("the holder still runs 8s after host 2 stepped back (standing %q): %s", a.standing(2), out.String())
	}
}

// eventually polls cond every 50 ms for d.
func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLabAgreeTimedBerkeleyOtherCluster: timed in Berkeley mode, host 3
// with another cluster name: host 3 steps back and never masters (nor
// corrects anyone); one master among hosts 1 and 2 at every poll.
func TestLabAgreeTimedBerkeleyOtherCluster(t *testing.T) {
	a := newAgreeLab(t, "timed", 7300)
	full := a.members(nil)
	berkeley := []string{"--mode", "berkeley", "--clock", "sim", "--sim-offset", "20ms"}
	a.start(1, full, berkeley...)
	a.start(2, full, berkeley...)
	a.start(3, full, append([]string{"--cluster", "lab-b"}, berkeley...)...)
	var masters []int
	a.poll(4*time.Second, func(round int) {
		masters = masters[:0]
		for i := 1; i <= 3; i++ {
			if field(a.status(i), "node", "core", "cluster", "role") == "master" {
				masters = append(masters, i)
			}
		}
		if len(masters) > 1 || slices.Contains(masters, 3) {
			t.Fatalf("poll %d: masters %v", round, masters)
		}
	})
	if len(masters) != 1 {
		t.Fatalf("masters at the end: %v, want one of hosts 1 and 2", masters)
	}
	a.checkDisagreement("member 3's cluster name differs (synclab here, lab-b there)", "member 1's cluster name differs (lab-b here, synclab there)")
}
