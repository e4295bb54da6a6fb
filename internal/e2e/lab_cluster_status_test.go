package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
)

// The whole lab in one table (issue 30, item 5): `X status --cluster` on
// three namespace hosts with the real binaries, asked from a member that
// does not lead, with one member SIGKILLed (a row marked as not answering,
// with when it was last heard) and one misconfigured (a row marked as
// differing, naming the difference: from its own answer when it can
// answer, from configuration agreement's evidence when its key differs).
// Both the table and --json are asserted, and the exit status (3).

// clusterTable is what `status --cluster --json` prints.
type clusterTable struct{ daemon.ClusterStatus }

// table runs `status --cluster` on host i: the human table and the JSON
// (asked at once, each waiting out the same deadline), each with its exit
// status.
func (a *agreeLab) table(i int, timeout string) (human string, tab clusterTable, codes [2]int) {
	a.t.Helper()
	code := func(err error) int {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			a.t.Fatalf("status --cluster on host %d: %v", i, err)
		}
		return 0
	}
	var js []byte
	var jsErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		js, jsErr = exec.Command(binPath(a.daemon), "status", "--cluster", "--json", "--timeout", timeout, "--control", a.control(i)).Output()
	}()
	out, err := a.cli(i, "status", "--cluster", "--timeout", timeout)
	<-done
	human, codes[0], codes[1] = string(out), code(err), code(jsErr)
	if err := json.Unmarshal(js, &tab); err != nil {
		a.t.Fatalf("status --cluster --json on host %d: %v\n%s\n%s", i, err, js, out)
	}
	return human, tab, codes
}

func binPath(daemon string) string { return binDir + "/" + daemon }

// row returns member id's row, failing the test if there is none.
func (tab clusterTable) row(t *testing.T, id uint32) daemon.ClusterRow {
	t.Helper()
	for _, r := range tab.Rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row for member %d: %+v", id, tab)
	return daemon.ClusterRow{}
}

// wants fails the test for each of wants not in the table's text.
func wants(t *testing.T, human string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(human, w) {
			t.Errorf("no %q in the table:\n%s", w, human)
		}
	}
}

// tableLine is the table's line of member id.
func tableLine(human string, id int) string {
	for _, l := range strings.Split(human, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == fmt.Sprint(id) && strings.Contains(f[1], ":") {
			return l
		}
	}
	return ""
}

// TestLabClusterStatusElectd: host 3's member list lacks member 2 (it
// answers, and differs), host 2 (the leader) is SIGKILLed; host 1, a
// follower, asks.
func TestLabClusterStatusElectd(t *testing.T) {
	a := newAgreeLab(t, "electd", 7500)
	full := a.members(nil)
	// Host 1 gives up on a silent leader only after 5 s (a per-host
	// timing): it still follows 2 when it asks, as a follower would in
	// the moment after the leader died.
	a.start(1, full, "--leader-timeout", "5s")
	a.start(2, full)
	a.start(3, a.members(nil, 2))
	eventually(t, "host 1 sees member 3 differ and 2 lead", 5*time.Second, func() bool {
		v := a.memberView(1, 3)
		views, _ := a.leaders()
		return v != nil && v["state"] == "differs" && views[1] == 2
	})
	a.procs[2].Kill()
	killed := time.Now()
	human, tab, codes := a.table(1, "500ms")
	t.Logf("electd status --cluster on host 1:\n%s", human)
	if codes != [2]int{3, 3} {
		t.Errorf("exit statuses %v, want 3 (a member did not answer, one differs)", codes)
	}
	if tab.Daemon != "electd" || tab.From != 1 || tab.Members != 3 || tab.Answered != 2 || tab.Complete {
		t.Errorf("table %+v", tab)
	}
	r1, r2, r3 := tab.row(t, 1), tab.row(t, 2), tab.row(t, 3)
	if !r1.Self || !r1.Reachable || r1.Version == "" || r1.Algorithm != "bully" || r1.Clock == nil || !r1.Clock.Wall ||
		r1.Role != "follower" || fact(r1, "leader") != 2 {
		t.Errorf("member 1's row %+v", r1)
	}
	if r2.Reachable || r2.HeardAgoNs == nil || time.Duration(*r2.HeardAgoNs) > time.Since(killed)+time.Second ||
		!strings.Contains(r2.Why, "no answer within 500ms") || !strings.Contains(r2.Why, "ago") || r2.Version != "" {
		t.Errorf("member 2's row (killed) %+v", r2)
	}
	if !r3.Reachable || r3.Agrees || r3.Config != "differs" || !r3.SteppedBack || r3.Standing != "stepped_back" ||
		len(r3.Differs) == 0 || r3.Differs[0] != "member 3's member list lacks member 2" || r3.Version == "" || r3.UptimeSeconds > 60 {
		t.Errorf("member 3's row (misconfigured) %+v", r3)
	}
	if _, ok := r3.Facts["term"]; !ok {
		t.Errorf("member 3's facts %v", r3.Facts)
	}
	// One clock, shared by every namespace: the offset measured is 0
	// within its bound, exactly.
	if c := r3.Clock; c == nil || c.OffsetNs == nil || abs64(*c.OffsetNs) > c.OffsetBoundNs+1000 {
		t.Errorf("member 3's clock %+v", c)
	}
	wants(t, human, `electd cluster "synclab" seen from member 1`, "2 of 3 members answered within 500ms",
		"Member 2: no answer within 500ms; last heard", "Member 3 DIFFERS (configuration ", "): member 3's member list lacks member 2.",
		"Member 3 stepped back:")
	if l := tableLine(human, 2); !strings.Contains(l, "NONE, heard") {
		t.Errorf("member 2's line %q", l)
	}
	if l := tableLine(human, 3); !strings.Contains(l, "DIFFERS, STEPPED BACK") || !strings.Contains(l, "stepped back") || !strings.Contains(l, "rtt ") {
		t.Errorf("member 3's line %q", l)
	}
	if l := tableLine(human, 1); !strings.Contains(l, "(self)") || !strings.Contains(l, "follower") || !strings.Contains(l, " by 2") {
		t.Errorf("member 1's line %q (its term shown as round by owner)", l)
	}
}

// TestLabClusterStatusMutexd: host 3 made its own key (it cannot answer
// authentically: its row is what agreement's evidence says), host 2 is
// SIGKILLed after a first look at the lab in which host 1 holds a lock.
func TestLabClusterStatusMutexd(t *testing.T) {
	a := newAgreeLab(t, "mutexd", 7400)
	other := a.dir + "/other.key"
	if _, err := writeOtherKey(other); err != nil {
		t.Fatal(err)
	}
	full := a.members(nil)
	// A short heartbeat and lease: the ring skips member 3 sooner, and a
	// regenerated token waits a shorter lease out: host 1's lock comes
	// sooner.
	quick := []string{"--heartbeat", "200ms", "--lease", "1s"}
	a.start(1, full, quick...)
	a.start(2, full, quick...)
	a.start(3, full, append([]string{"--key-file", other}, quick...)...)
	eventually(t, "host 1 sees member 3's key differ", 5*time.Second, func() bool {
		v := a.memberView(1, 3)
		return v != nil && v["state"] == "differs" && a.standing(1) == "agreed"
	})
	marker := a.dir + "/holding"
	lock := exec.Command(binPath("mutexd"), "lock", "backup", "--timeout", "10s", "--control", a.control(1), "--",
		"sh", "-c", "touch "+marker+"; sleep 30")
	if err := lock.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Process.Kill(); lock.Wait() })
	eventually(t, "host 1 holds backup", 10*time.Second, func() bool { return exec.Command("test", "-e", marker).Run() == nil })

	human, tab, codes := a.table(1, "1s")
	t.Logf("mutexd status --cluster on host 1:\n%s", human)
	if codes != [2]int{3, 3} || tab.Answered != 2 {
		t.Errorf("exit statuses %v, answered %d", codes, tab.Answered)
	}
	r1, r2, r3 := tab.row(t, 1), tab.row(t, 2), tab.row(t, 3)
	if fact(r1, "held") != 1 || r1.Role != "backup" || r1.Algorithm != "tokenring" || r1.Clock == nil || r1.Clock.Wall {
		t.Errorf("member 1's row %+v", r1)
	}
	if !r2.Reachable || !r2.Agrees || fact(r2, "held") != 0 || r2.Clock == nil || r2.Clock.OffsetNs != nil {
		t.Errorf("member 2's row %+v (a steady clock: no offset)", r2)
	}
	if r3.Reachable || r3.Config != "differs" || r3.Authenticated || len(r3.Differs) == 0 ||
		!strings.HasPrefix(r3.Differs[0], "member 3's key differs (key id ") || !strings.Contains(r3.Why, "no authenticated answer is possible") {
		t.Errorf("member 3's row (another key) %+v", r3)
	}
	if l := tableLine(human, 1); !strings.Contains(l, "1 (backup)") || !strings.Contains(l, "steady") {
		t.Errorf("member 1's line %q", l)
	}
	if l := tableLine(human, 3); !strings.Contains(l, "NONE, fails auth") || !strings.Contains(l, "DIFFERS") {
		t.Errorf("member 3's line %q", l)
	}
	wants(t, human, "Member 3: no authenticated answer is possible", "Member 3 DIFFERS: member 3's key differs (key id ")

	a.procs[2].Kill()
	human, tab, codes = a.table(1, "300ms")
	r2 = tab.row(t, 2)
	if codes != [2]int{3, 3} || tab.Answered != 1 || r2.Reachable || r2.HeardAgoNs == nil || !strings.Contains(r2.Why, "no answer within 300ms") {
		t.Errorf("after member 2's SIGKILL: exit %v, member 2's row %+v", codes, r2)
	}
	if l := tableLine(human, 2); !strings.Contains(l, "NONE, heard") {
		t.Errorf("member 2's line %q", l)
	}
	wants(t, human, "1 of 3 members answered within 300ms", "Member 2: no answer within 300ms; last heard")
}

// TestLabClusterStatusOrderd: host 3's member list has member 2 at a wrong
// address (it answers host 1, and differs), host 2 (the sequencer) is
// SIGKILLed; host 1, a member that does not sequence, asks.
func TestLabClusterStatusOrderd(t *testing.T) {
	a := newAgreeLab(t, "orderd", 7600)
	full := a.members(nil)
	wrong := "10.255.255.254:7600"
	a.start(1, full, "--leader-timeout", "5s")
	a.start(2, full)
	a.start(3, a.members(map[int]string{2: wrong}))
	eventually(t, "host 1 sees member 3 differ and 2 sequence", 5*time.Second, func() bool {
		v := a.memberView(1, 3)
		return v != nil && v["state"] == "differs" && num(a.status(1), "node", "core", "sequencer", "sequencer") == 2
	})
	if out, err := a.cli(1, "apply", "set greeting hello"); err != nil {
		t.Fatalf("send on host 1: %v: %s", err, out)
	}
	a.procs[2].Kill()
	human, tab, codes := a.table(1, "500ms")
	t.Logf("orderd status --cluster on host 1:\n%s", human)
	r1, r2, r3 := tab.row(t, 1), tab.row(t, 2), tab.row(t, 3)
	if codes != [2]int{3, 3} || tab.Answered != 2 {
		t.Errorf("exit statuses %v, answered %d", codes, tab.Answered)
	}
	if r1.Role != "member" || fact(r1, "sequencer") != 2 || fact(r1, "delivered") < 1 || r1.Algorithm != "sequencer" {
		t.Errorf("member 1's row %+v", r1)
	}
	if r2.Reachable || r2.HeardAgoNs == nil || !strings.Contains(r2.Why, "no answer within 500ms") {
		t.Errorf("member 2's row (killed) %+v", r2)
	}
	h2 := a.lab.Host(2).Addr().String() + ":7600"
	if !r3.Reachable || r3.Config != "differs" || !r3.SteppedBack || len(r3.Differs) == 0 ||
		r3.Differs[0] != "member 3's member list has member 2 at "+wrong+", ours at "+h2 {
		t.Errorf("member 3's row (misconfigured) %+v", r3)
	}
	if l := tableLine(human, 3); !strings.Contains(l, "DIFFERS, STEPPED BACK") || !strings.Contains(l, "stepped back") {
		t.Errorf("member 3's line %q", l)
	}
	if f := strings.Fields(tableLine(human, 1)); len(f) < 7 || f[2] != "(self)" || f[4] != "sequencer" || f[5] != "member" || f[6] != "2" {
		t.Errorf("member 1's line %q: want its order, role and sequencer", f)
	}
	wants(t, human, "Member 2: no answer within 500ms; last heard", "Member 3 DIFFERS (configuration ")
}

// TestLabClusterStatusTimed: timed in Berkeley mode on simulated clocks,
// host 3 with another cluster name: its frames carry another cluster's
// ID, so it cannot take host 1's query; its row says what its
// authenticated announcements told. Host 2's clock starts 20 ms ahead of
// host 1's: the offset the table measures is the clocks' true difference
// (read before and after: Berkeley corrects them meanwhile), within the
// bound it states.
func TestLabClusterStatusTimed(t *testing.T) {
	a := newAgreeLab(t, "timed", 7300)
	full := a.members(nil)
	sim := func(offset string) []string {
		return []string{"--mode", "berkeley", "--clock", "sim", "--sim-offset", offset}
	}
	a.start(1, full, sim("0s")...)
	a.start(2, full, sim("20ms")...)
	a.start(3, full, append(sim("0s"), "--cluster", "lab-b")...)
	eventually(t, "host 1 sees member 3 differ, and a master", 5*time.Second, func() bool {
		v := a.memberView(1, 3)
		roles := map[any]bool{field(a.status(1), "node", "core", "cluster", "role"): true, field(a.status(2), "node", "core", "cluster", "role"): true}
		return v != nil && v["state"] == "differs" && roles["master"] && roles["worker"]
	})
	truth := func() int64 { return int64(num(a.status(2), "true_offset_ns") - num(a.status(1), "true_offset_ns")) }
	before := truth()
	human, tab, codes := a.table(1, "500ms")
	after := truth()
	t.Logf("timed status --cluster on host 1 (true difference %v, then %v):\n%s", time.Duration(before), time.Duration(after), human)
	if codes != [2]int{3, 3} || tab.Answered != 2 {
		t.Errorf("exit statuses %v, answered %d", codes, tab.Answered)
	}
	r2, r3 := tab.row(t, 2), tab.row(t, 3)
	slack := int64(10 * time.Microsecond) // the NTP time format's rounding, and the sim clock's reading
	if c := r2.Clock; !r2.Reachable || !r2.Agrees || r2.Algorithm != "berkeley" || c == nil || !c.Wall || c.OffsetNs == nil ||
		*c.OffsetNs < min(before, after)-c.OffsetBoundNs-slack || *c.OffsetNs > max(before, after)+c.OffsetBoundNs+slack {
		t.Errorf("member 2's row %+v, clock %+v (true difference %v, then %v)", r2, r2.Clock, time.Duration(before), time.Duration(after))
	}
	if r2.Role != "master" && r2.Role != "worker" {
		t.Errorf("member 2's role %q", r2.Role)
	}
	if r3.Reachable || r3.Config != "differs" || !r3.Authenticated || len(r3.Differs) == 0 ||
		r3.Differs[0] != "member 3's cluster name differs (synclab here, lab-b there)" || !strings.Contains(r3.Why, "refuses this member's frames") {
		t.Errorf("member 3's row (another cluster name) %+v", r3)
	}
	wants(t, human, "Member 3: no answer within 500ms: its configuration differs", "Member 3 DIFFERS: member 3's cluster name differs (synclab here, lab-b there).")
}

// fact is one of a row's facts as a number (-1: absent or not a number).
func fact(r daemon.ClusterRow, name string) int64 {
	v, err := r.Facts[name].Int64()
	if err != nil {
		return -1
	}
	return v
}
