package central_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestCoveredClaimUnsavedNotCoordinating: member 5 (the highest) restarts
// and follows 4 (sticky); then every state write of 5 fails and 4 dies.
// 5's claim is covered by the reservation it wrote while healthy, so its
// election leads without a write; central's own write of the term
// (lastLed, a promise) fails, so every frame of 5 is withheld while 3
// takes over. 5 must not report that it coordinates (status said
// coordinates=true for good: two coordinators in the cluster's status):
// it says its term waits for its state write, once at WARN. A review
// found it; no safety was lost (5 granted nothing).
func TestCoveredClaimUnsavedNotCoordinating(t *testing.T) {
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		s := defaultCluster(t, seed)
		s.Crash(5)
		s.Run(5 * time.Second)
		s.Restart(5)
		s.Run(5 * time.Second)
		if c := coordinator(s); c != 4 {
			t.Fatalf("after 5's restart coordinator %d, want 4 (sticky)", c)
		}
		from := s.Elapsed()
		s.SetDiskFaults(5, 1)
		s.Crash(4)
		s.Run(10 * time.Second)
		d5 := detail(s, 5)
		if d5.Coordinates || d5.Unsaved == 0 {
			t.Fatalf("member 5, every write failing and every frame withheld for 10 s: coordinates %v, unsaved term %#x, election phase %q (member 3 coordinates: %v)",
				d5.Coordinates, d5.Unsaved, d5.Election.Phase, detail(s, 3).Coordinates)
		}
		if !detail(s, 3).Coordinates {
			t.Fatalf("member 3 does not coordinate")
		}
		var warned []sim.Event
		for _, e := range s.Events() {
			if e.Node == 5 && e.At >= from && e.Name == central.EventCoordinatingUnsaved {
				warned = append(warned, e)
			}
		}
		if len(warned) != 1 || !warned[0].Warn || !strings.Contains(warned[0].Msg, "coordinating term "+epoch.Format(d5.Unsaved)+" waits for its state write") {
			t.Fatalf("member 5's WARNs of its unsaved term: %+v", warned)
		}
		raw, err := json.Marshal(d5)
		if err != nil {
			t.Fatal(err)
		}
		st := s.Core(5).(*central.Core).Report()
		lines, err := central.Factory.StatusLines(st, raw)
		if err != nil {
			t.Fatal(err)
		}
		if want := "COORDINATING TERM " + epoch.Format(d5.Unsaved) + " WAITS FOR ITS STATE WRITE"; !strings.Contains(lines[0], want) {
			t.Fatalf("status lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
		s.SetDiskFaults(5, 0)
		s.Run(5 * time.Second)
		if d := detail(s, 5); d.Unsaved != 0 {
			t.Fatalf("member 5's disk works again, yet its status says term %#x waits for its write", d.Unsaved)
		}
	})
}
