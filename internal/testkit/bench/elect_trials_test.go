package bench

import (
	"strings"
	"testing"
	"time"
)

func TestSlowTrials(t *testing.T) {
	ms := time.Millisecond
	trials := []TrialRecord{
		{Trial: 1, Took: 153 * ms, Election: 1},
		{Trial: 2, Took: 250 * ms, Election: 1}, // at the goal: not over it
		{Trial: 3, Took: 264 * ms, Election: 7}, // both
		{Trial: 4, Took: 251 * ms, Election: 1}, // slow only
		{Trial: 5, Took: 158 * ms, Election: 2}, // frames only
		{Trial: 6, Took: 152500 * time.Microsecond, Election: 1},
	}
	slow := SlowTrials(trials, 250*ms)
	want := map[int]string{
		3: "264.0 ms, over the goal of 250.0 ms; 7 election frames, the fewest of the run 1",
		4: "251.0 ms, over the goal of 250.0 ms",
		5: "2 election frames, the fewest of the run 1",
	}
	if len(slow) != len(want) {
		t.Fatalf("kept %d trials, want %d: %+v", len(slow), len(want), slow)
	}
	prev := 0
	for _, s := range slow {
		if s.Trial <= prev {
			t.Errorf("trial %d after %d: not in trial order", s.Trial, prev)
		}
		prev = s.Trial
		if s.Why != want[s.Trial] {
			t.Errorf("trial %d: why %q, want %q", s.Trial, s.Why, want[s.Trial])
		}
	}

	// The fewest frames are the run's own: a unicast run whose best case
	// is four frames keeps none of its four-frame trials.
	uni := []TrialRecord{{Trial: 1, Took: 153 * ms, Election: 4}, {Trial: 2, Took: 160 * ms, Election: 4}, {Trial: 3, Took: 209 * ms, Election: 7}}
	if s := SlowTrials(uni, 250*ms); len(s) != 1 || s[0].Trial != 3 {
		t.Errorf("unicast run: kept %+v, want trial 3 alone", s)
	}
	// Every trial alike and fast: nothing kept.
	if s := SlowTrials(uni[:2], 250*ms); len(s) != 0 {
		t.Errorf("kept %+v of two alike fast trials", s)
	}
	if s := SlowTrials(nil, 250*ms); s != nil {
		t.Errorf("kept %+v of no trial", s)
	}
}

func TestFramesByKind(t *testing.T) {
	got := FramesByKind(map[string]uint64{"coordinator": 4, "leader_probe": 15, "answer": 4, "election": 0})
	if want := "leader_probe 15, answer 4, coordinator 4"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := FramesByKind(nil); got != "none" {
		t.Errorf("no frames: got %q", got)
	}
}

func TestSlug(t *testing.T) {
	for label, want := range map[string]string{
		"electd multicast": "electd-multicast",
		"electd --heartbeat 200ms --leader-timeout 400ms --probe 4ms": "electd-heartbeat-200ms-leader-timeout-400ms-probe-4ms",
		"electd ring (16 hosts)": "electd-ring-16-hosts",
	} {
		if got := Slug(label); got != want {
			t.Errorf("Slug(%q) = %q, want %q", label, got, want)
		}
	}
}

func TestSlowTrialAccount(t *testing.T) {
	kill := time.Date(2026, 12, 6, 19, 45, 6, 900_000_000, time.UTC)
	s := SlowTrial{TrialRecord: TrialRecord{Trial: 18, Killed: 5, Leader: 4, Took: 307200 * time.Microsecond, KilledAt: kill,
		Since:  map[int]time.Time{2: kill.Add(307200 * time.Microsecond), 1: kill.Add(307100 * time.Microsecond)},
		Frames: map[string]uint64{"coordinator": 1, "leader_probe": 63}}, Why: "307.2 ms, over the goal of 250.0 ms"}
	want := `electd multicast, trial 18: leader 5 SIGKILLed at 2026-12-06T19:45:06.900000Z; all survivors on 4 after 307.2 ms
kept: 307.2 ms, over the goal of 250.0 ms
h1 learned leader 4 at 19:45:07.207100 (kill + 307.1 ms)
h2 learned leader 4 at 19:45:07.207200 (kill + 307.2 ms)
frames the survivors sent from the kill to their agreement: leader_probe 63, coordinator 1
`
	if got := s.Account("electd multicast"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestHintAccounts(t *testing.T) {
	none := map[int]HintAccount{1: {Linked: true, TimedOut: 1}, 4: {Ignored: 1, TimedOut: 1}}
	some := map[int]HintAccount{1: {Linked: true}, 4: {Linked: true, Taken: 1, GaveUp: 1}}
	if !NoHint(none) || NoHint(some) || NoHint(nil) {
		t.Errorf("NoHint: none %v, some %v, nil %v; want true, false, false", NoHint(none), NoHint(some), NoHint(nil))
	}
	if got, want := HintsText(none), "h1 linked, took 0, timed out 1; h4 not linked, took 0, ignored 1, timed out 1"; got != want {
		t.Errorf("HintsText = %q, want %q", got, want)
	}
	trials := []TrialRecord{
		{Trial: 1, Took: 150 * time.Millisecond, Election: 4, Hints: some},
		{Trial: 2, Took: 150 * time.Millisecond, Election: 4, Hints: none},
	}
	slow := SlowTrials(trials, 250*time.Millisecond)
	if len(slow) != 1 || slow[0].Trial != 2 || slow[0].Why != "no survivor took a port hint" {
		t.Errorf("SlowTrials = %+v, want trial 2 alone, kept for its hints", slow)
	}
	if got := slow[0].Account("electd unicast"); !strings.Contains(got, "port hints (link to the leader before the kill; from the kill to the agreement): h1 linked") {
		t.Errorf("Account lacks the hints:\n%s", got)
	}
}
