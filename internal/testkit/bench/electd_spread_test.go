package bench

import (
	"testing"
	"time"
)

func TestAcceptSpread(t *testing.T) {
	kill := time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC)
	at := func(ms int) leaderView {
		return leaderView{Leader: 2, Since: kill.Add(time.Duration(ms) * time.Millisecond)}
	}
	after := map[int]leaderView{2: at(500), 3: at(560), 4: at(510), 5: at(900)}
	want := "claimed at 500.0 ms, followed at 510.0 ms / 560.0 ms / 900.0 ms (first, median, last of 3)"
	if got := acceptSpread(after, 2, kill); got != want {
		t.Errorf("acceptSpread = %q, want %q", got, want)
	}
	if got := acceptSpread(map[int]leaderView{2: at(500)}, 2, kill); got != "no follower" {
		t.Errorf("acceptSpread with the leader alone = %q", got)
	}
}

func TestMachineBusy(t *testing.T) {
	before := machineCPU{total: 1000, idle: 600}
	if got := (machineCPU{total: 1200, idle: 650}).busySince(before); got != "75%" {
		t.Errorf("busy = %q, want 75%% (50 of 200 ticks idle)", got)
	}
	if got := (machineCPU{total: 1000, idle: 600}).busySince(before); got != "?" {
		t.Errorf("busy with no tick passed = %q, want ?", got)
	}
	if m := readMachineCPU(); m.total == 0 || m.idle > m.total {
		t.Errorf("readMachineCPU = %+v: want some ticks, idle among them", m)
	}
}

func TestCountsText(t *testing.T) {
	var before, after electdStatus
	before.Node.Core.Detail = map[string]any{"checks": 1.0, "probes": 2.0, "leader": 3.0}
	after.Node.Core.Detail = map[string]any{"checks": 4.0, "probes": 2.0, "mistakes": 1.0, "leader": 9.0}
	how := map[string]float64{}
	for k, n := range detailCounts(after) {
		how[k] += n - detailCounts(before)[k]
	}
	if got, want := countsText(how), "; the survivors' checks 3, mistakes 1"; got != want {
		t.Errorf("countsText = %q, want %q", got, want)
	}
	if got := countsText(map[string]float64{}); got != "" {
		t.Errorf("countsText of nothing = %q, want empty", got)
	}
}
