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
	return b.String()
}
