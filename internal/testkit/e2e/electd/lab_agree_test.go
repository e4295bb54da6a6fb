package electd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// Configuration agreement (issue 30, item 1) on three namespace hosts with
// the real binaries (e2e.AgreeLab): one host's configuration is wrong in
// one way. Once it has converged there are never two leaders; every daemon that
// sees the disagreement says so at WARN, naming the member and what
// differs; status and metrics show it; the misconfigured host steps back
// and the majority goes on without it.

// leaders is who each host says leads (0: none), and which hosts say
// they do themselves.
func leaders(a *e2e.AgreeLab) (views map[int]uint32, selves []int) {
	views = map[int]uint32{}
	for i := 1; i <= 3; i++ {
		out, err := exec.Command(filepath.Join(e2e.BinDir(), "electd"), "leader", "--json", "--control", a.Control(i)).Output()
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

// convergesToOneLeader polls electd for d after the lab's start: once it
// has converged (at least two hosts name one leader and no host names
// another), at no poll may two hosts name different leaders, nor two
// hosts say they lead (pollLeaders); and it must converge. Before that,
// bully's start-up may show two leaders for as long as a higher member
// takes to be heard (one stepped back at start, tied with the
// misconfigured host before it heard the third, answers no election
// meanwhile): a lower member elects itself and yields at the higher one's
// COORDINATOR. It returns the leader host 1 named last.
func convergesToOneLeader(a *e2e.AgreeLab, d time.Duration) uint32 {
	a.T.Helper()
	last, converged := pollLeaders(a, d, false)
	if !converged {
		a.T.Fatalf("in %v the lab never converged on one leader named by two hosts", d)
	}
	return last
}

// noTwoLeaders polls electd for d: at no poll may two hosts name
// different leaders, nor two hosts say they lead.
func noTwoLeaders(a *e2e.AgreeLab, d time.Duration) {
	a.T.Helper()
	pollLeaders(a, d, true)
}

// pollLeaders polls electd for d and fails the test at a poll where two
// hosts name different leaders or two say they lead, from the start if
// converged, else from the first poll where at least two hosts name one
// leader and none another. It returns the leader host 1 named last, and
// whether the lab converged.
func pollLeaders(a *e2e.AgreeLab, d time.Duration, converged bool) (last uint32, _ bool) {
	a.T.Helper()
	a.Poll(d, func(round int) {
		views, selves := leaders(a)
		var named uint32
		naming, split := 0, false
		for _, l := range views {
			if l == 0 {
				continue
			}
			if named != 0 && l != named {
				split = true
			}
			named = l
			naming++
		}
		if !converged && !split && naming >= 2 && len(selves) <= 1 {
			converged = true
		}
		if converged && split {
			a.T.Fatalf("poll %d: two leaders named: %v (hosts that say they lead: %v)", round, views, selves)
		}
		if converged && len(selves) > 1 {
			a.T.Fatalf("poll %d: hosts %v all say they lead (%v)", round, selves, views)
		}
		if views[1] != 0 {
			last = views[1]
		}
	})
	return last, converged
}

// TestLabAgreeElectdMemberMissing is the bully case: host 3's
// member list lacks member 2. Before configuration agreement, h2 led (it
// never heard 3) while h1 and h3 followed 3, for ever. Now h1 refuses h3
// and names the difference, h3 steps back (tied: itself against h1) and
// leads nobody, and 2 leads alone.
func TestLabAgreeElectdMemberMissing(t *testing.T) {
	a := e2e.NewAgreeLab(t, "electd", 7500)
	full := a.Members(nil)
	a.Start(1, full)
	a.Start(2, full)
	a.Start(3, a.Members(nil, 2))
	if lead := convergesToOneLeader(a, 5*time.Second); lead != 2 {
		t.Fatalf("the majority's leader is %d, want 2", lead)
	}
	a.CheckDisagreement("member 3's member list lacks member 2", "member 1's member list has member 2 ("+a.Lab.Host(2).Addr().String()+":7500), ours does not")
	// h2 never hears h3 (h3 does not know it): it has nothing to say.
	a.Quiet(2, "config_differs")
	out, err := a.CLI(3, "leader")
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
	a := e2e.NewAgreeLab(t, "electd", 7500)
	full := a.Members(nil)
	a.Start(1, full)
	a.Start(2, full)
	a.Start(3, full, extra...)
	if lead := convergesToOneLeader(a, 4*time.Second); lead != 2 {
		t.Fatalf("the majority's leader is %d, want 2", lead)
	}
	a.CheckDisagreement(seen3, seen1)
	a.Warned(2, "condition=config_differs", "member=3", seen3)
}

// TestLabAgreeStepBackAtRuntime: a running leader steps back when the
// other member of a two-member cluster comes back with another
// configuration (a tie: both step back), with its demotion hook run and
// its core restarted from its saved state; when that member comes back
// with the right configuration, the configurations agree again and one
// leads, elected anew.
func TestLabAgreeStepBackAtRuntime(t *testing.T) {
	a := e2e.NewAgreeLab(t, "electd", 7500)
	two := a.Members(nil, 3)
	hooks := filepath.Join(a.Dir, "h2.hooks")
	hook := []string{"--on-elected", "echo elected >> " + hooks, "--on-demoted", "echo demoted >> " + hooks}
	a.Start(1, two)
	a.Start(2, two, hook...)
	leads2 := func() bool { v, _ := leaders(a); return v[1] == 2 && v[2] == 2 }
	a.Eventually("2 leads both", 5*time.Second, leads2)

	a.Procs[1].Kill()
	a.Start(1, two, "--priorities", "1=5")
	a.Eventually("host 2 steps back", 5*time.Second, func() bool { return a.Standing(2) == "stepped_back" })
	noTwoLeaders(a, 2*time.Second)
	if v, selves := leaders(a); v[2] != 0 || len(selves) != 0 {
		t.Fatalf("after the step back: leaders %v, self-leaders %v", v, selves)
	}
	a.Warned(2, "stepping back")
	a.Warned(2, "condition=config_differs", "member=1", `member 1's priorities differs (none here, 1=5 there)`)
	waitFile(t, hooks, "demoted")
	if n := e2e.Num(a.Status(2), "errors", "core_restarted"); n != 1 {
		t.Errorf("host 2 restarted its core %v times, want 1", n)
	}

	a.Procs[1].Kill()
	a.Start(1, two)
	a.Eventually("2 leads both again", 8*time.Second, leads2)
	a.Warned(2, "configurations agree again")
	if b, _ := os.ReadFile(hooks); strings.Count(string(b), "elected") < 2 {
		t.Errorf("host 2's hooks: %q, want elected, demoted, elected", b)
	}
}
