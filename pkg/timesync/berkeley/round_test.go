package berkeley

import (
	"testing"
	"time"
)

const us = time.Microsecond

// The stages of finishRound, each alone.

func TestTallyReadings(t *testing.T) {
	readings := map[uint32]reading{
		2: {offset: 30 * us, rtt: 200 * us, freq: 1.5, answers: 3},
		4: {offset: -10 * us, rtt: 40 * time.Millisecond, answers: 1}, // too slow to trust
	}
	// 3 missed two rounds before and misses this one too; 5 has missed
	// missLimit rounds already and no longer counts towards the quorum.
	missed := map[uint32]int{3: 2, 5: missLimit, 4: 1}
	got := tallyReadings(1, -0.5, []uint32{2, 3, 4, 5}, readings, missed, 20*time.Millisecond)
	if len(got.cands) != 2 || got.cands[0].id != 1 || got.cands[0].freq != -0.5 || got.cands[1].id != 2 || got.cands[1].rtt != 200*us {
		t.Errorf("candidates %+v: want the master's clock and 2's", got.cands)
	}
	if got.expected != 4 {
		t.Errorf("expected %d clocks, want 4 (the master, 2, 3, 4: 5 missed too many rounds)", got.expected)
	}
	if got.missed[2] != 0 || got.missed[3] != 3 || got.missed[4] != 0 || got.missed[5] != missLimit+1 {
		t.Errorf("missed %v", got.missed)
	}
	if missed[3] != 2 {
		t.Error("the caller's missed counts were changed")
	}
	why := map[uint32]string{}
	for _, m := range got.members {
		why[m.ID] = m.Why
	}
	if why[2] != "" || why[3] != "no reading" || why[4] != "rtt" || why[5] != "no reading" {
		t.Errorf("reasons %v", why)
	}
}

func TestQuorate(t *testing.T) {
	for _, tc := range []struct {
		clocks, expected int
		want             bool
	}{{1, 1, true}, {2, 4, false}, {3, 4, true}, {3, 5, true}, {2, 5, false}} {
		if got := quorate(tc.clocks, tc.expected); got != tc.want {
			t.Errorf("quorate(%d, %d) = %v", tc.clocks, tc.expected, got)
		}
	}
}

func TestGroupTime(t *testing.T) {
	t.Run("the majority that agrees is averaged, the falseticker left out", func(t *testing.T) {
		cands := []candidate{{id: 1}, {id: 2, offset: 100 * us, freq: 2}, {id: 3, offset: 50 * us, freq: 1}, {id: 4, offset: 5 * time.Millisecond, freq: 90}}
		g := groupTime(cands, 500*us, 1)
		if g.method != "average" || g.agreeing != 3 || g.averaged != 3 || g.target != 50*us || g.spread != 100*us || g.in[4] || !g.in[1] {
			t.Errorf("%+v", g)
		}
	})
	t.Run("f highest and lowest dropped from 4 agreeing clocks", func(t *testing.T) {
		cands := []candidate{{id: 1}, {id: 2, offset: 100 * us}, {id: 3, offset: 200 * us}, {id: 4, offset: 400 * us}}
		g := groupTime(cands, time.Millisecond, 1)
		if g.agreeing != 4 || g.averaged != 2 || g.target != 150*us {
			t.Errorf("%+v, want the mean of 100µs and 200µs", g)
		}
	})
	t.Run("no majority agrees: the median clock", func(t *testing.T) {
		cands := []candidate{{id: 1}, {id: 2, offset: 10 * time.Millisecond}, {id: 3, offset: 20 * time.Millisecond}}
		g := groupTime(cands, 500*us, 1)
		if g.method != "median" || g.target != 10*time.Millisecond || g.averaged != 1 || !g.in[2] || g.spread != 20*time.Millisecond {
			t.Errorf("%+v", g)
		}
	})
}

func TestSteer(t *testing.T) {
	// The group's median frequency correction +10 ppm, a pull of 0.05 over
	// a 1 s round: -0.5 ppm of a second.
	if got := steer(0.05, []float64{10, -3, 12}, time.Second); got != -500*time.Nanosecond {
		t.Errorf("steer = %v, want -500ns", got)
	}
	freqs := []float64{3, 1, 2}
	steer(0.05, freqs, time.Second)
	if freqs[0] != 3 {
		t.Error("steer reordered the caller's frequencies")
	}
	if got := steer(0, []float64{100}, time.Second); got != 0 {
		t.Errorf("no pull steered %v", got)
	}
}

func TestCorrections(t *testing.T) {
	members := []MemberReport{
		{ID: 2, Answered: true},
		{ID: 3, Why: "no reading"},
		{ID: 4, Answered: true, Why: "rtt"},
		{ID: 5, Answered: true}, // outside the agreeing set
	}
	readings := map[uint32]reading{
		2: {offset: 20 * us, rtt: 100 * us},
		4: {offset: -5 * us, rtt: 30 * time.Millisecond},
		5: {offset: 3 * time.Millisecond, rtt: 100 * us, slew: 10 * us},
	}
	g := group{method: "average", avgRTT: 200 * us, spread: 40 * us, in: map[uint32]bool{1: true, 2: true}}
	got := corrections(members, readings, g, 50*us)
	want := []workerCorrection{
		{index: 0, send: true, corr: 30 * us, errBound: 50*us + 100*us + 20*us},
		{index: 1, why: "no reading", excluded: true},
		{index: 2, send: true, corr: 55 * us, errBound: 15*time.Millisecond + 100*us + 20*us, why: "rtt", excluded: true},
		{index: 3, send: true, corr: 50*us - 3*time.Millisecond, errBound: 60*us + 100*us + 20*us, why: "disagrees", excluded: true, disagrees: true},
	}
	if len(got) != len(want) {
		t.Fatalf("%d corrections, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("worker %d: %+v, want %+v", members[i].ID, got[i], want[i])
		}
	}
	// With the median, nobody is "disagrees": there was no agreeing set.
	g.method = "median"
	if k := corrections(members, readings, g, 50*us)[3]; k.disagrees || k.excluded {
		t.Errorf("median round: %+v", k)
	}
}
