package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// The token ring's maker killed within its Hold (issue 15's token ring
// recovery): a new token checks nothing while it waits out the promises
// that made it, so a member that looks for it then waits while its maker
// is not known down; when the maker is really dead, its replacement is
// made shortly before those promises end. Two members asking at once then
// look for the token together, and their prepares must not cross (each
// refusing the other's, the promises they got would hold the next token a
// whole Hold more). Two cases, each ending with two hosts asking at the
// same instant just after the kill; the time is from the kill to the
// first of their grants, the target the ring's 4 s:
//
//   - fresh: a ring just started (fresh state); its first token's maker
//     (and holder: every member promised, no Hold) is killed within a
//     second of the grant, before any renewal shows the others a check;
//   - regenerated: the holder is killed, the waiter at the next host makes
//     the replacement, and is killed at a random instant of its Hold.
var makerKillCases = []string{"fresh", "regenerated"}

// ringLock is the status of one of the ring's locks, as a host reports it.
type ringLock struct {
	Name   string               `json:"name"`
	Detail tokenring.LockDetail `json:"detail"`
}

// ringHold is how long the token of the hot lock at host i has left of its
// Hold: ok only when the token is there and still in its Hold.
func (m *mutexBench) ringHold(i int) (left time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(m.ctx, time.Second)
	defer cancel()
	var st struct {
		Node struct {
			Core struct {
				Locks []ringLock `json:"locks"`
			} `json:"core"`
		} `json:"node"`
	}
	if m.clients[i].Get(ctx, "/v1/status", &st) != nil {
		return 0, false
	}
	for _, l := range st.Node.Core.Locks {
		if l.Name == hotLock && l.Detail.Token == "here" && l.Detail.HoldLeftMS > 0 {
			return time.Duration(l.Detail.HoldLeftMS) * time.Millisecond, true
		}
	}
	return 0, false
}

// ringCounters is the ring's counters at host i that say how its search
// for a lost token went.
func (m *mutexBench) ringCounters(i int) map[string]uint64 {
	ctx, cancel := context.WithTimeout(m.ctx, time.Second)
	defer cancel()
	var st struct {
		Node struct {
			Core struct {
				Counters map[string]uint64 `json:"counters"`
			} `json:"core"`
		} `json:"node"`
	}
	out := map[string]uint64{}
	if m.clients[i].Get(ctx, "/v1/status", &st) != nil {
		return out
	}
	for k, v := range st.Node.Core.Counters {
		if strings.HasPrefix(k, "locate") || strings.HasPrefix(k, "prepare") || k == "regenerations" || k == "checks_timed_out" || k == "check_failed" || k == "ticks_late" || k == "probes_prepare" {
			out[k] = v
		}
	}
	return out
}

// makerKill runs *mutexTrials trials of each case against the ring
// (r.makerKill[case]); the cluster is running, and is running again after.
func (m *mutexBench) makerKill(r *mutexResults) {
	m.b.Helper()
	if m.alg != tokenring.Name {
		return
	}
	for _, what := range makerKillCases {
		var took []time.Duration
		for trial := range *mutexTrials {
			took = append(took, m.makerKillTrial(what, trial))
		}
		r.makerKill[what] = Summarize(took)
	}
}

func (m *mutexBench) makerKillTrial(what string, trial int) time.Duration {
	m.b.Helper()
	maker := 1 + trial%m.hosts
	var killed []int
	switch what {
	case "fresh":
		m.stopCluster()
		for i := 1; i <= m.hosts; i++ {
			if err := os.RemoveAll(filepath.Join(m.dir, fmt.Sprintf("%s-%d-m%d.state", m.alg, m.hosts, i))); err != nil {
				m.fatal(err)
			}
		}
		m.startCluster(m.alg, m.hosts)
		if _, err := m.acquire(m.ctx, maker, hotLock); err != nil {
			m.fatal(err)
		}
		m.sleep(rand.N(time.Second)) // before the first renewal (none here: a check the others would see)
		killed = []int{maker}
	case "regenerated":
		holder := maker
		maker = 1 + (trial+1)%m.hosts
		_, _, got := m.holdAndWait("maker killed (regenerated: the maker's own client, whose daemon the trial kills on purpose)", holder, maker)
		m.procs[holder].Kill()
		// The waiter makes the replacement and waits out its Hold; killed
		// at a random instant of it. (A Hold can be zero: the holder was
		// killed late enough in its lease that no lease it could have
		// granted still runs. Then the maker is killed as it grants.)
		deadline := time.Now().Add(failoverLimit)
		var left time.Duration
		for ok, granted := false, false; !ok && !granted; left, ok = m.ringHold(maker) {
			select {
			case g := <-got:
				granted = true
				defer g.release()
				m.logf("maker killed (regenerated) trial %d: h%d's token had no Hold: killed as it grants", trial+1, maker)
			default:
			}
			if time.Now().After(deadline) {
				m.fatalf("regenerated maker trial %d: h%d made no token in %v after h%d was killed", trial+1, maker, failoverLimit, holder)
			}
			m.sleep(5 * time.Millisecond)
		}
		if left > 0 {
			m.sleep(rand.N(left))
			defer func() { <-got }() // the maker's own client: its daemon is gone
		}
		killed = []int{holder, maker}
	}
	// The survivors' counters before the kill, to say how their search
	// went (prepares crossed: outbid) on every trial's line.
	before := map[int]map[string]uint64{}
	for h := 1; h <= m.hosts; h++ {
		if !slices.Contains(killed, h) && h != maker {
			before[h] = m.ringCounters(h)
		}
	}
	killAt := time.Now()
	m.procs[maker].Kill()
	// Two hosts ask at the same instant, a moment after the kill.
	var askers []int
	for k := 1; len(askers) < 2; k++ {
		if h := 1 + (maker-1+k)%m.hosts; h != killed[0] && h != maker {
			askers = append(askers, h)
		}
	}
	grants := make(chan lockGrant, len(askers))
	ctx, cancel := context.WithTimeout(m.ctx, failoverLimit)
	defer cancel()
	for _, h := range askers {
		go func() {
			rel, err := m.acquire(ctx, h, hotLock)
			if err != nil {
				m.logf("maker killed (%s): the client at h%d: %v", what, h, err)
				rel = func() error { return nil }
			}
			grants <- lockGrant{time.Now(), rel}
		}()
	}
	first := <-grants
	took := first.at.Sub(killAt)
	first.release()
	second := <-grants
	second.release()
	if ctx.Err() != nil {
		m.fatalf("maker killed (%s) trial %d: h%d and h%d were not both granted within %v", what, trial+1, askers[0], askers[1], failoverLimit)
	}
	search := map[string]uint64{}
	for h, was := range before {
		for k, v := range m.ringCounters(h) {
			search[k] += v - was[k]
		}
	}
	m.logf("%s maker killed (%s) %d/%d: h%d's daemon killed; h%d/h%d asked at once, first granted after %s (survivors: %d prepares, %d outbid, %d deferred; %d ticks put off)",
		m.alg, what, trial+1, *mutexTrials, maker, askers[0], askers[1], Millis(took),
		search["probes_prepare"], search["prepare_outbid"], search["prepares_deferred"], search["ticks_late"])
	if took > targetCutOffGap {
		// What the survivors did meanwhile, for the trial that missed.
		for h := 1; h <= m.hosts; h++ {
			if !slices.Contains(killed, h) && h != maker {
				m.logf("h%d since the kill (counters %v):\n%s", h, m.ringCounters(h), eventsSince(m.procs[h].Output(), killAt))
			}
		}
	}
	// Both daemons of the regenerated case are started before either is
	// waited for (restart waits for every daemon of the cluster).
	for _, h := range killed[1:] {
		m.start(h)
	}
	m.restart(killed[0])
	return took
}

// makerKillRows adds the maker-killed rows to a table of systems ("-" for
// any but the ring).
func (m *mutexBench) makerKillRows(t *Table, r *mutexResults, systems []string) {
	for _, what := range makerKillCases {
		label := "new token's maker killed: a fresh ring's first holder, two hosts asking at once, p50 / max"
		if what == "regenerated" {
			label = "  a regenerated token's maker, in its Hold, two hosts asking at once"
		}
		cells := make([]string, len(systems))
		for i, sys := range systems {
			s, ok := r.makerKill[what]
			if !ok || sys != tokenring.Name {
				cells[i] = "-"
				continue
			}
			cells[i] = Verdict(fmt.Sprintf("%s / %s", Millis(s.P50), Millis(s.Max)), s.Max <= targetCutOffGap)
		}
		t.Row(label, fmt.Sprintf("<= %s", Millis(targetCutOffGap)), cells...)
	}
}

// eventsSince is the lines of a daemon's log with an event, from at on.
func eventsSince(log string, at time.Time) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		_, rest, ok := strings.Cut(line, "time=")
		if !ok || !strings.Contains(line, "event=") {
			continue
		}
		stamp, _, _ := strings.Cut(rest, " ")
		if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil && !t.Before(at.Add(-time.Second)) {
			b.WriteString(line)
		}
	}
	return b.String()
}
