package elect

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func names(evs []core.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprint(e.Name, e.Args))
	}
	return out
}

// TestAnnouncerRules: leader_elected on a new leader or term,
// leader_changed only for another member, leader_lost when none is known,
// nothing when nothing changed; the typed Changes say the same.
func TestAnnouncerRules(t *testing.T) {
	var a Announcer
	steps := []struct {
		lead uint32
		term uint64
		want []string
	}{
		{0, 0, nil},
		{5, 5, []string{"leader_elected[leader 5 term 5]"}},
		{5, 5, nil},
		{0, 5, []string{"leader_lost[leader 5 term 5 reason r]"}},
		{5, 5, []string{"leader_elected[leader 5 term 5]"}}, // found again: no leader_changed
		{4, 9, []string{"leader_elected[leader 4 term 9]", "leader_changed[leader 4 term 9 previous 5]"}},
		{4, 12, []string{"leader_elected[leader 4 term 12]"}},
	}
	var all []string
	for i, s := range steps {
		got := names(a.Leader(s.lead, s.term, t0.Add(time.Duration(i)*time.Second), "r"))
		if !slices.Equal(got, s.want) {
			t.Fatalf("step %d: %q, want %q", i, got, s.want)
		}
		all = append(all, got...)
	}
	var fromChanges []string
	for _, c := range a.Changes() {
		fromChanges = append(fromChanges, fmt.Sprint(c.CoreEvent().Name, c.CoreEvent().Args))
	}
	if !slices.Equal(all, fromChanges) {
		t.Fatalf("changes %q differ from events %q", fromChanges, all)
	}
	if a.Changes() != nil {
		t.Fatal("Changes did not drain")
	}
	if !a.Since().Equal(t0.Add(5 * time.Second)) {
		t.Errorf("Since = %v, want when 4 became leader", a.Since())
	}
}

func TestAnnouncerBounded(t *testing.T) {
	var a Announcer
	for i := range MaxPendingChanges + 10 {
		a.ElectionStarted(uint64(i), "startup", t0)
	}
	c := a.Changes()
	if len(c) != MaxPendingChanges || a.Dropped() != 10 || c[0].Term != 10 {
		t.Fatalf("%d kept, %d dropped, first term %d", len(c), a.Dropped(), c[0].Term)
	}
}

func TestEveryEventIsALeadershipEvent(t *testing.T) {
	for _, c := range []Change{{Event: EventElectionStarted}, {Event: EventElected}, {Event: EventDemoted},
		{Event: EventLeaderElected}, {Event: EventLeaderChanged}, {Event: EventLeaderLost}} {
		e := c.CoreEvent()
		if !LeadershipEvent(e.Name) || e.Msg == "" || len(e.Args)%2 != 0 {
			t.Errorf("%s: %+v", c.Event, e)
		}
	}
	if LeadershipEvent("terms_exhausted") {
		t.Error("an algorithm's own event counted as a leadership event")
	}
}

func TestLookup(t *testing.T) {
	table := []Algorithm{{Name: "bully"}, {Name: "ring"}}
	if a, err := Lookup(table, "ring"); err != nil || a.Name != "ring" {
		t.Fatalf("Lookup(ring) = %v, %v", a, err)
	}
	_, err := Lookup(table, "raft")
	if err == nil || !strings.Contains(err.Error(), `"raft"`) || !strings.Contains(err.Error(), "bully, ring") {
		t.Fatalf("Lookup(raft) = %v, want an error naming it and listing bully, ring", err)
	}
}

func TestStatusJSONRoundTrip(t *testing.T) {
	st := Status{Algorithm: "bully", ID: 2, Role: RoleCandidate, Term: 7, Leader: 0,
		Members: []MemberStatus{{ID: 1}, {ID: 2, Self: true}}, Detail: map[string]any{"yielding": true}}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back Status
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Role != RoleCandidate || back.Algorithm != "bully" || back.Detail.(map[string]any)["yielding"] != true {
		t.Fatalf("round trip: %s -> %+v", b, back)
	}
	if err := new(Role).UnmarshalText([]byte("king")); err == nil {
		t.Error("unknown role accepted")
	}
}
