package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// TrialRecord is what one failover trial of the election benchmark leaves
// for the choice of the trials worth explaining: how long it took, the
// election frames it cost, and the trace files its members wrote.
type TrialRecord struct {
	Trial int
	// Killed is the leader killed; Leader the one the survivors agreed on.
	Killed, Leader int
	Took           time.Duration
	// KilledAt is the SIGKILL's instant; Since each survivor's own stamp
	// of when it learned the new leader (the failover ends at the last).
	KilledAt time.Time
	Since    map[int]time.Time
	// Election is the frames the survivors sent for the election, the
	// kinds the notes count (no heartbeats, no acknowledgements).
	Election float64
	// Frames is every frame the survivors sent from the kill to their
	// agreement, by kind, heartbeat kinds (probes, watches) included.
	Frames map[string]uint64
	// Traces are the members' trace files of the trial, by host; Logs
	// their daemons' logs (the killed one's up to its death), Status each
	// survivor's `electd status --json` once they agreed (the hints it
	// took and ignored, why its leader timed out): what a trace does not
	// record.
	Traces map[int]string
	Logs   map[int]string
	Status map[int][]byte
	// Hints is what each survivor made of the port hint (bully with
	// --hint-probe): whether it watched the killed leader, the hints it
	// took and ignored; nil for an algorithm that takes none.
	Hints map[int]HintAccount
	// Reaped is when the harness had reaped the killed process, after
	// the kill: its kernel closed its sockets (the port hint) before.
	Reaped time.Duration
}

// HintAccount is one survivor's part in a trial's port hint, from its
// status just before the kill and once the survivors agreed: what tells
// a trial that no follower's watch link reported the leader's death
// from one whose followers took the hint and were slow to act on it.
type HintAccount struct {
	// Linked: its outbound link to the killed leader was connected just
	// before the kill (the link whose close is the hint).
	Linked bool
	// Hinted is when the transport's latest hint about the killed leader
	// came, after the kill (its port closed: the dead process's kernel
	// closed its sockets); 0 when none came before the agreement.
	Hinted time.Duration
	// Taken, Ignored, GaveUp and TimedOut count, from the kill to the
	// agreement, the hints it acted on (an episode of probes), those it
	// ignored (detail.hints_ignored), the leaders it gave up on a hint,
	// and those it gave up for silence (its leader timeout).
	Taken, Ignored, GaveUp, TimedOut uint64
}

// NoHint reports whether hints were accounted and no survivor took one:
// the trial was left to the leader timeout.
func NoHint(hints map[int]HintAccount) bool {
	if len(hints) == 0 {
		return false
	}
	for _, h := range hints {
		if h.Taken > 0 {
			return false
		}
	}
	return true
}

// HintsText says each survivor's HintAccount in host order:
// "h1 linked, took 1; h2 not linked, took 0, ignored 1, timed out 1".
func HintsText(hints map[int]HintAccount) string {
	var s []string
	for _, h := range slices.Sorted(maps.Keys(hints)) {
		a := hints[h]
		linked := "linked"
		if !a.Linked {
			linked = "not linked"
		}
		p := fmt.Sprintf("h%d %s, took %d", h, linked, a.Taken)
		if a.Hinted > 0 {
			p = fmt.Sprintf("h%d %s, port closed at kill + %s, took %d", h, linked, Millis(a.Hinted), a.Taken)
		}
		for _, c := range []struct {
			n    uint64
			what string
		}{{a.Ignored, "ignored"}, {a.GaveUp, "gave up on it"}, {a.TimedOut, "timed out"}} {
			if c.n > 0 {
				p += fmt.Sprintf(", %s %d", c.what, c.n)
			}
		}
		s = append(s, p)
	}
	return strings.Join(s, "; ")
}

// SlowTrial is a trial kept for reading, and why.
type SlowTrial struct {
	TrialRecord
	Why string
}

// SlowTrials returns the trials whose traces are worth keeping, in trial
// order: those that took longer than goal, and those that cost more
// election frames than the fewest any trial of the same run cost (the
// run's own best case: the rightful member's one claim, whatever the
// algorithm and the transport make of it). A run whose trials all cost
// the same has no trial kept for its frames.
func SlowTrials(trials []TrialRecord, goal time.Duration) []SlowTrial {
	if len(trials) == 0 {
		return nil
	}
	fewest := trials[0].Election
	for _, t := range trials[1:] {
		fewest = min(fewest, t.Election)
	}
	var slow []SlowTrial
	for _, t := range trials {
		var why []string
		if t.Took > goal {
			why = append(why, fmt.Sprintf("%s, over the goal of %s", Millis(t.Took), Millis(goal)))
		}
		if t.Election > fewest {
			why = append(why, fmt.Sprintf("%.0f election frames, the fewest of the run %.0f", t.Election, fewest))
		}
		if NoHint(t.Hints) {
			why = append(why, "no survivor took a port hint")
		}
		if len(why) > 0 {
			slow = append(slow, SlowTrial{TrialRecord: t, Why: strings.Join(why, "; ")})
		}
	}
	return slow
}

// FramesByKind says a trial's frames kind by kind, most first (then by
// name): "coordinator 4, leader_probe 15". Kinds with no frame are left
// out.
func FramesByKind(frames map[string]uint64) string {
	kinds := slices.Collect(maps.Keys(frames))
	slices.SortFunc(kinds, func(a, b string) int {
		if frames[a] != frames[b] {
			if frames[a] > frames[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var s []string
	for _, k := range kinds {
		if frames[k] > 0 {
			s = append(s, fmt.Sprintf("%s %d", k, frames[k]))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Slug is a label as a directory name: "electd --probe 4ms" ->
// "electd-probe-4ms".
func Slug(label string) string {
	f := strings.FieldsFunc(strings.ToLower(label), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.')
	})
	return strings.Join(f, "-")
}

// Account is a kept trial's own file (trial.txt beside its traces): what
// the traces cannot say, the kill's instant and when each survivor
// learned the new leader, as offsets from the kill, with why it was kept
// and its frames.
func (t SlowTrial) Account(label string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, trial %d: leader %d SIGKILLed at %s; all survivors on %d after %s\n", label, t.Trial, t.Killed,
		t.KilledAt.UTC().Format("2006-01-02T15:04:05.000000Z"), t.Leader, Millis(t.Took))
	fmt.Fprintf(&b, "kept: %s\n", t.Why)
	for _, h := range slices.Sorted(maps.Keys(t.Since)) {
		fmt.Fprintf(&b, "h%d learned leader %d at %s (kill + %s)\n", h, t.Leader, t.Since[h].UTC().Format("15:04:05.000000"), Millis(t.Since[h].Sub(t.KilledAt)))
	}
	fmt.Fprintf(&b, "frames the survivors sent from the kill to their agreement: %s\n", FramesByKind(t.Frames))
	if t.Reaped > 0 {
		fmt.Fprintf(&b, "the killed process reaped at kill + %s\n", Millis(t.Reaped))
	}
	if len(t.Hints) > 0 {
		fmt.Fprintf(&b, "port hints (link to the leader before the kill; from the kill to the agreement): %s\n", HintsText(t.Hints))
	}
	return b.String()
}
