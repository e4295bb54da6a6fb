package epoch_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"testing/quick"

	"github.com/synclab/synclab/pkg/epoch"
)

var lim = epoch.Spaced(epoch.MaxRound, 1<<16, 1.0/4) // a round per 4 units

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		after uint64
		id    uint32
		want  uint64
	}{
		{0, 1, epoch.Make(0, 1)},
		{epoch.Make(0, 1), 5, epoch.Make(0, 5)},
		{epoch.Make(0, 5), 5, epoch.Make(1, 5)},
		{epoch.Make(0, 7), 5, epoch.Make(1, 5)},
		{epoch.Make(3, 2), 2, epoch.Make(4, 2)},
		{epoch.Make(lim.Last-1, 9), 3, epoch.Make(lim.Last, 3)},
		{epoch.Make(lim.Last, 2), 3, epoch.Make(lim.Last, 3)},
	} {
		got, err := lim.Next(tc.after, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("Next(%#x, %d) = %#x, %v; want %#x", tc.after, tc.id, got, err, tc.want)
		}
	}
}

// TestNextProperties: the epoch is owned by its creator, above what it has
// seen, and the smallest such epoch.
func TestNextProperties(t *testing.T) {
	f := func(round uint32, owner, id uint32) bool {
		round %= lim.Last
		id = max(id, 1)
		after := epoch.Make(round, owner)
		got, err := lim.Next(after, id)
		if err != nil || epoch.Owner(got) != id || got <= after {
			return false
		}
		return epoch.Round(got) == 0 || epoch.Make(epoch.Round(got)-1, id) <= after
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}

func TestNextRound(t *testing.T) {
	if got, err := lim.NextRound(epoch.Make(3, 9), 2); err != nil || got != epoch.Make(4, 2) {
		t.Errorf("NextRound = %#x, %v", got, err)
	}
	if got, err := lim.NextRound(epoch.Make(3, 1), 2); err != nil || got != epoch.Make(4, 2) {
		t.Errorf("NextRound from a lower owner = %#x, %v: the round must move", got, err)
	}
	if _, err := lim.NextRound(epoch.Make(lim.Last, 1), 2); !errors.Is(err, epoch.ErrExhausted) {
		t.Errorf("NextRound at the last round: %v", err)
	}
}

func TestNextExhausted(t *testing.T) {
	for _, after := range []uint64{epoch.Make(lim.Last, 9), epoch.Make(epoch.MaxRound, 1), 1<<64 - 1} {
		_, err := lim.Next(after, 3)
		if !errors.Is(err, epoch.ErrExhausted) || epoch.Reason(err) != "exhausted" {
			t.Errorf("Next(%#x) error %v, want exhausted", after, err)
		}
	}
}

func TestAdmitAbsurd(t *testing.T) {
	var g epoch.Guard
	for _, e := range []uint64{0xffffffff00000003, epoch.Make(lim.Last+1, 1), 1<<64 - 1} {
		err := g.Admit(lim, 0, 5, e)
		if !errors.Is(err, epoch.ErrAbsurd) {
			t.Errorf("Admit(%#x) = %v, want absurd", e, err)
		}
	}
	if c := g.Credit(lim, 0); c != lim.Burst {
		t.Errorf("refusals spent credit: %d left", c)
	}
	if err := lim.CheckRestored(0xffffffff00000003); !errors.Is(err, epoch.ErrAbsurd) {
		t.Errorf("CheckRestored: %v", err)
	}
	if err := lim.CheckRestored(epoch.Make(lim.Last, 7)); err != nil {
		t.Errorf("CheckRestored(last round): %v", err)
	}
}

// TestAdmitPace: a rested guard takes one Burst at once; then credit comes
// back at the protocol's rate and never beyond Burst.
func TestAdmitPace(t *testing.T) {
	var g epoch.Guard
	cur := epoch.Make(10, 1)
	if err := g.Admit(lim, 0, cur, epoch.Make(10+lim.Burst, 2)); err != nil {
		t.Fatalf("a full burst: %v", err)
	}
	cur = epoch.Make(10+lim.Burst, 2)
	if err := g.Admit(lim, 0, cur, epoch.Make(11+lim.Burst, 2)); !errors.Is(err, epoch.ErrTooFast) {
		t.Fatalf("one more round at once: %v", err)
	}
	// 40 units regain 10 rounds.
	if err := g.Admit(lim, 40, cur, epoch.Make(20+lim.Burst, 3)); err != nil {
		t.Fatalf("10 rounds after 40 units: %v", err)
	}
	if err := g.Admit(lim, 40, epoch.Make(20+lim.Burst, 3), epoch.Make(21+lim.Burst, 3)); err == nil {
		t.Fatal("credit spent twice")
	}
	// Same round, higher owner: free. Lower or equal: nothing to admit.
	if err := g.Admit(lim, 40, epoch.Make(5, 1), epoch.Make(5, 9)); err != nil {
		t.Error(err)
	}
	if err := g.Admit(lim, 40, epoch.Make(5, 9), epoch.Make(2, 9)); err != nil {
		t.Error(err)
	}
	// A long rest refills to Burst, not beyond.
	if c := g.Credit(lim, 1<<40); c != lim.Burst {
		t.Errorf("credit after a long rest %d, want %d", c, lim.Burst)
	}
	// Time going back regains nothing and breaks nothing.
	g2 := epoch.Guard{}
	_ = g2.Admit(lim, 100, 0, epoch.Make(lim.Burst, 1))
	if c := g2.Credit(lim, 50); c != 0 {
		t.Errorf("credit after time went back: %d", c)
	}
	if c := g2.Credit(lim, 104); c != 1 {
		t.Errorf("credit 4 units after: %d, want 1", c)
	}
}

// TestExhaustionTakesTime: a forger sending the largest admissible jump in
// every frame moves the round by Burst plus the rate, whatever the number of
// frames.
func TestExhaustionTakesTime(t *testing.T) {
	var g epoch.Guard
	cur := uint64(0)
	refused := 0
	for now := int64(0); now < 4000; now++ {
		for range 10 { // ten frames per unit of time
			next := epoch.Make(epoch.Round(cur)+g.Credit(lim, now)+1, 1)
			if g.Admit(lim, now, cur, next) != nil {
				refused++
				next = epoch.Make(epoch.Round(cur)+g.Credit(lim, now), 1)
			}
			if g.Admit(lim, now, cur, next) == nil {
				cur = next
			}
		}
	}
	if got, max := epoch.Round(cur), lim.Burst+1000; got > max || got < max-1 {
		t.Errorf("after 4000 units: round %d, want about %d", got, max)
	}
	if refused == 0 {
		t.Error("nothing refused")
	}
}

func TestLimitValidate(t *testing.T) {
	if err := lim.Validate(); err != nil {
		t.Error(err)
	}
	for _, l := range []epoch.Limit{{}, {Last: 1, Burst: 1}, {Last: 1, Burst: 1, Rate: -1}} {
		if l.Validate() == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}

func TestFormat(t *testing.T) {
	for e, want := range map[uint64]string{
		0:                                   "0",
		7:                                   "0 by 7",
		epoch.Make(3, 2):                    "3 by 2",
		4294967299:                          "1 by 3",
		21474836482:                         "5 by 2",
		epoch.Make(epoch.MaxRound, 1<<32-1): "4294967295 by 4294967295",
	} {
		if got := epoch.Format(e); got != want {
			t.Errorf("Format(%d) = %q, want %q", e, got, want)
		}
		if got := fmt.Sprint(epoch.Term(e)); got != want {
			t.Errorf("Term(%d) prints %q, want %q", e, got, want)
		}
	}
	if b, err := json.Marshal(epoch.Term(epoch.Make(3, 2))); err != nil || string(b) != "12884901890" {
		t.Errorf("Term marshals to %s, %v: want the raw number", b, err)
	}
}

// TestLifeUndoesAForgedIncarnation: a member at incarnation 1; a forged
// frame claims incarnation 99 (stamped 500, within the bound the node
// puts on stamps); the member's next real frame, stamped after it (every
// clock passes a stamp within a round trip of hearing it), brings
// incarnation 1 back; a late frame of a real earlier life stays stale.
func TestLifeUndoesAForgedIncarnation(t *testing.T) {
	var l epoch.Life
	for _, step := range []struct {
		inc, at uint64
		want    epoch.Verdict
		life    epoch.Life
	}{
		{1, 10, epoch.Newer, epoch.Life{1, 10}},
		{1, 20, epoch.Same, epoch.Life{1, 20}},
		{1, 15, epoch.Same, epoch.Life{1, 20}},      // reordered: still its life
		{99, 500, epoch.Newer, epoch.Life{99, 500}}, // forged
		{1, 400, epoch.Stale, epoch.Life{99, 500}},  // the member has not heard the forged stamp yet
		{1, 502, epoch.Back, epoch.Life{1, 502}},    // it has
		{2, 600, epoch.Newer, epoch.Life{2, 600}},   // it restarts
		{1, 590, epoch.Stale, epoch.Life{2, 600}},   // a late frame of its last life
		{1, 0, epoch.Stale, epoch.Life{2, 600}},
	} {
		if got := l.See(step.inc, step.at); got != step.want || l != step.life {
			t.Fatalf("incarnation %d at %d: %v, life %+v; want %v, %+v", step.inc, step.at, got, l, step.want, step.life)
		}
	}
}
