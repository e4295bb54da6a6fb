package app

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
)

func i64(v int64) *int64 { return &v }

// testTable is a lab of three seen from member 1: member 2 answered and
// agrees, member 3 answered and differs (stepped back), member 4 does not
// answer, member 5 has another key.
func testTable() *daemon.ClusterStatus {
	clk := &daemon.RowClock{Wall: true, Synchronized: true, MaxErrorNs: 1_250_000}
	return &daemon.ClusterStatus{
		Daemon: "electd", Cluster: "synclab", From: 1, TimeoutNs: int64(time.Second), Members: 5, Answered: 3,
		Rows: []daemon.ClusterRow{
			{ID: 1, Address: "10.0.0.1:7500", Self: true, Reachable: true, Config: "self", Agrees: true, Fingerprint: "a138142bb9be7ba3",
				Standing: "agreed", Version: "1.2.3", Commit: "0123456789abcdef", UptimeSeconds: 3723, Role: "follower", Clock: clk},
			{ID: 2, Address: "10.0.0.2:7500", Reachable: true, RTTNs: 412_000, Config: "agrees", Agrees: true, Standing: "agreed",
				Version: "1.2.3", UptimeSeconds: 90000, Role: "leader",
				Clock:  &daemon.RowClock{Wall: true, OffsetNs: i64(-1_500_000), OffsetBoundNs: 206_000},
				Timing: []string{"member 2 beats every 1s (its --heartbeat), this member gives a silent leader up after 400ms (its --leader-timeout)"}},
			{ID: 3, Address: "10.0.0.3:7500", Reachable: true, RTTNs: 1_000_000, Config: "differs", Differs: []string{"member 3's member list lacks member 2"},
				Fingerprint: "00ae23132c81b74d", Standing: "stepped_back", SteppedBack: true, Version: "1.2.2", Role: "follower",
				Clock: &daemon.RowClock{Wall: false}},
			{ID: 4, Address: "10.0.0.4:7500", Config: "agrees", Agrees: true, HeardAgoNs: i64(int64(4200 * time.Millisecond)),
				Why: "no answer within 1s; last heard 4.2s ago: down or unreachable (or its answer was lost)"},
			{ID: 5, Address: "10.0.0.5:7500", Config: "differs", AuthFailures: 7,
				Differs: []string{"member 5's key differs (key id 35ff8185.. here, b13ae2cd.. there)"},
				Why:     "no authenticated answer is possible: its frames fail authentication here (7 so far), and it cannot verify this member's query"},
		},
	}
}

func TestRenderCluster(t *testing.T) {
	var b bytes.Buffer
	view := &ClusterView{Headers: []string{"Role", "Extra"}, Cells: func(r daemon.ClusterRow) []string { return []string{r.Role} }}
	if err := renderCluster(&b, testTable(), view); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	for _, want := range []string{
		`electd cluster "synclab" seen from member 1, configuration a138142b: 3 of 5 members answered within 1s`,
		"ID  Address        Answer",
		"(self)", "(this)", "synchronised ±1.25ms", "1.2.3 (0123456)", "1h2m",
		"rtt 412us", "-1.500ms ±206us", "1d1h",
		"DIFFERS, STEPPED BACK", "- (steady clock)", "steady",
		"NONE, heard 4.2s ago", "NONE, fails auth",
		"Member 3 DIFFERS (configuration 00ae2313): member 3's member list lacks member 2.",
		"Member 3 stepped back:",
		"Member 2 TIMING MISMATCH: member 2 beats every 1s (its --heartbeat), this member gives a silent leader up after 400ms (its --leader-timeout).",
		"Member 4: no answer within 1s; last heard 4.2s ago",
		"Member 5: no authenticated answer is possible",
		"Member 5 DIFFERS: member 5's key differs",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// Every row has every column: a member that did not answer shows
	// dashes, a binary's short cells are padded.
	for _, l := range lines[2:7] {
		if f := strings.Fields(l); len(f) < 9 {
			t.Errorf("row %q has %d fields", l, len(f))
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("escape codes in the table")
	}
}

func TestIncompleteText(t *testing.T) {
	if got := incompleteText(testTable()); got != "no answer from members 4, 5; the configuration of members 3, 5 differs (see the table)" {
		t.Errorf("got %q", got)
	}
}

// TestClusterStatusJSONRoundTrip: the JSON a script reads carries the raw
// numbers (a 64-bit term whole) and decodes back into the table.
func TestClusterStatusJSONRoundTrip(t *testing.T) {
	st := testTable()
	st.Rows[1].Facts = map[string]json.Number{"term": "18446744069414584322", "offset_ns": "-12"}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"term":18446744069414584322`) {
		t.Fatalf("facts not raw numbers: %s", b)
	}
	var back daemon.ClusterStatus
	if err := json.Unmarshal(b, &back); err != nil || back.Rows[1].Facts["term"] != "18446744069414584322" || *back.Rows[1].Clock.OffsetNs != -1_500_000 {
		t.Fatalf("%v: %+v", err, back.Rows[1])
	}
}

// TestRenderClusterPrintable: a member's strings cannot turn the table
// around (a right-to-left override is dropped).
func TestRenderClusterPrintable(t *testing.T) {
	st := testTable()
	st.Rows[1].Version = "1.2\u202e3"
	st.Rows[2].Differs = []string{"member 3's algorithm differs (bully here, \u202eyllub there)"}
	var b bytes.Buffer
	if err := renderCluster(&b, st, nil); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(b.String(), '\u202e') || !strings.Contains(b.String(), "1.23") {
		t.Errorf("table %q", b.String())
	}
}
