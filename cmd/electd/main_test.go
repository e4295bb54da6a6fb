package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/elect/omega"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/elect/yoyo"
	"github.com/synclab/synclab/pkg/epoch"
)

// buildWith runs build on `electd run` flags args and returns the core its
// factory makes, or build's error.
func buildWith(t *testing.T, args ...string) (elect.Elector, error) {
	t.Helper()
	set := flag.NewFlagSet("run", flag.ContinueOnError)
	for _, f := range runFlags() {
		if err := f.Apply(set); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg := &daemon.Config{ID: 1, StateDir: t.TempDir(), Members: map[uint32]netip.AddrPort{
		1: netip.MustParseAddrPort("127.0.0.1:7501"), 2: netip.MustParseAddrPort("127.0.0.1:7502"), 3: netip.MustParseAddrPort("127.0.0.1:7503")}}
	factory, err := build(cli.NewContext(cli.NewApp(), set, nil), cfg)
	if err != nil {
		return nil, err
	}
	c, err := factory(core.Env{ID: cfg.ID, Members: []uint32{1, 2, 3}, Now: time.Now(), Rand: rand.New(rand.NewPCG(1, 1)), Lamport: new(clock.Lamport)})
	if err != nil {
		t.Fatalf("factory: %v", err)
	}
	el, ok := c.(elect.Elector)
	if !ok {
		t.Fatalf("core %T is not an elect.Elector", c)
	}
	return el, nil
}

// TestDurationsUsedAsGiven: --heartbeat 55ms runs a 55 ms heartbeat (it
// used to be truncated to 50 ms, a multiple of the tick), and the other
// timeouts keep their proportions.
func TestDurationsUsedAsGiven(t *testing.T) {
	el, err := buildWith(t, "--heartbeat", "55ms", "--leader-timeout", "401ms", "--priorities", "2=9")
	if err != nil {
		t.Fatal(err)
	}
	st := el.Report()
	d := st.Detail.(bully.Detail)
	if d.Heartbeat != 55*time.Millisecond || d.LeaderTimeout != 401*time.Millisecond || d.AnswerTimeout != 50*time.Millisecond ||
		d.CoordinatorTimeout != 160*time.Millisecond || d.Stagger != 25*time.Millisecond {
		t.Errorf("timeouts %+v", d)
	}
	if st.Algorithm != "bully" || st.Members[1].Priority != 9 {
		t.Errorf("status %+v", st)
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--algorithm", "raft"}, `unknown election algorithm "raft" (known: bully`},
		{[]string{"--heartbeat", "500us"}, "--heartbeat 500µs: timeout out of range"},
		{[]string{"--answer-timeout", "0s"}, "--answer-timeout 0s: timeout out of range"},
		// Taken silently (the config audit): every election with a
		// member down would have waited 1000 hours for its answer.
		{[]string{"--answer-timeout", "1000h"}, "--answer-timeout 1000h0m0s: at most 10s: an answer is one round trip"},
		{[]string{"--answer-timeout", "10001ms", "--algorithm", "majority"}, "--answer-timeout 10.001s: at most 10s"},
		{[]string{"--heartbeat", "400ms"}, "--leader-timeout (400ms) must exceed --heartbeat (400ms)"},
		{[]string{"--heartbeat", "400ms", "--probe", "0"}, "--leader-timeout (400ms) must exceed --heartbeat (400ms)"},
		{[]string{"--heartbeat", "397ms"}, "--heartbeat (397ms) + --probe (4ms) must be below --leader-timeout (400ms): a follower probes only between the heartbeat it missed and its leader timeout (bully's defaults: --heartbeat 200ms --leader-timeout 400ms --probe 4ms; --probe 0 turns probing off, and then --leader-timeout must span several heartbeats: 50ms / 400ms)"},
		{[]string{"--heartbeat", "400ms", "--algorithm", "ring-naive"}, "--leader-timeout (400ms) must exceed --heartbeat (400ms)"},
		{[]string{"--heartbeat", "200ms", "--leader-timeout", "240ms", "--probe", "40ms"}, "--heartbeat (200ms) + --probe (40ms) must be below --leader-timeout (240ms)"},
		{[]string{"--probe", "1ms", "--algorithm", "majority"}, "--probe: only bully and omega probe their leader (majority waits --leader-timeout)"},
		{[]string{"--algorithm", "omega", "--probe", "41ms"}, "--probe 41ms with --heartbeat 200ms and --leader-timeout 400ms: 5 asks of omega's, 41ms apart, must fit in the first window (--leader-timeout) less a heartbeat (omega's defaults: --heartbeat 200ms --leader-timeout 400ms --probe 10ms; --probe 0 turns asking off"},
		{[]string{"--algorithm", "omega", "--heartbeat", "360ms"}, "--probe 10ms with --heartbeat 360ms and --leader-timeout 400ms"},
		{[]string{"--probe", "500us"}, "--probe 500µs: timeout out of range"},
		{[]string{"--topology", "1-2,2-3"}, "--topology: only --algorithm yoyo runs on a topology"},
		{[]string{"--algorithm", "yoyo", "--topology", "1-2"}, "not connected: members [3] cannot reach member 1"},
		{[]string{"--algorithm", "yoyo", "--topology", "1-2,2-4"}, "4 is not a member"},
		{[]string{"--algorithm", "yoyo", "--topology", "1-2,2-2,1-3"}, "joins a member to itself"},
		{[]string{"--algorithm", "yoyo", "--topology", "1-2,2-1,1-3"}, "listed twice"},
		{[]string{"--algorithm", "yoyo", "--topology", "1_2"}, `edge "1_2": want ID-ID`},
		{[]string{"--algorithm", "yoyo", "--topology", "1-x"}, `edge "1-x": want ID-ID`},
		// A negative timeout killed every hook as it started; 0 was the
		// default taken silently.
		{[]string{"--hook-timeout", "-1s"}, "--hook-timeout -1s: want a positive duration"},
		{[]string{"--hook-timeout", "0s"}, "--hook-timeout 0s: want a positive duration"},
	} {
		_, err := buildWith(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestBuildDefaults: bully runs with probes by default (200 ms
// heartbeats, a 400 ms timeout, 4 ms probes), omega with asks (200 ms,
// 400 ms, 10 ms), and with --probe 0 both take the timings without probes
// (50 ms / 400 ms), which every other algorithm keeps; a flag set is used as given, the others keep their defaults
// (fast failover is --leader-timeout 240ms).
func TestBuildDefaults(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		hb, lt, prob time.Duration
	}{
		{nil, 200 * time.Millisecond, 400 * time.Millisecond, 4 * time.Millisecond},
		{[]string{"--probe", "0"}, 50 * time.Millisecond, 400 * time.Millisecond, 0},
		{[]string{"--probe", "8ms"}, 200 * time.Millisecond, 400 * time.Millisecond, 8 * time.Millisecond},
		{[]string{"--leader-timeout", "240ms"}, 200 * time.Millisecond, 240 * time.Millisecond, 4 * time.Millisecond},
		{[]string{"--heartbeat", "50ms"}, 50 * time.Millisecond, 400 * time.Millisecond, 4 * time.Millisecond},
		{[]string{"--heartbeat", "100ms", "--probe", "0"}, 100 * time.Millisecond, 400 * time.Millisecond, 0},
	} {
		el, err := buildWith(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if d := el.Report().Detail.(bully.Detail); d.Heartbeat != tc.hb || d.LeaderTimeout != tc.lt || d.Probe != tc.prob {
			t.Errorf("bully %v: %v / %v / %v, want %v / %v / %v", tc.args, d.Heartbeat, d.LeaderTimeout, d.Probe, tc.hb, tc.lt, tc.prob)
		}
	}
	// omega asks its leader by default (omega.Probed: 200 ms heartbeats,
	// a 400 ms first window, asks every 10 ms); with --probe 0 it keeps
	// the timings without them, as bully. Its window grows by 50 ms at
	// most, not by a longer heartbeat.
	for _, tc := range []struct {
		args              []string
		hb, lt, ask, step time.Duration
	}{
		{nil, 200 * time.Millisecond, 400 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond},
		{[]string{"--probe", "0"}, 50 * time.Millisecond, 400 * time.Millisecond, 0, 50 * time.Millisecond},
		{[]string{"--probe", "4ms"}, 200 * time.Millisecond, 400 * time.Millisecond, 4 * time.Millisecond, 50 * time.Millisecond},
		{[]string{"--heartbeat", "20ms", "--probe", "0"}, 20 * time.Millisecond, 400 * time.Millisecond, 0, 20 * time.Millisecond},
		{[]string{"--heartbeat", "300ms", "--leader-timeout", "600ms"}, 300 * time.Millisecond, 600 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond},
	} {
		el, err := buildWith(t, append([]string{"--algorithm", "omega"}, tc.args...)...)
		if err != nil {
			t.Fatalf("omega %v: %v", tc.args, err)
		}
		if d := el.Report().Detail.(omega.Detail); d.Heartbeat != tc.hb || d.Interval != tc.lt || d.Ask != tc.ask || d.Step != tc.step {
			t.Errorf("omega %v: %v / %v / ask %v / step %v, want %v / %v / %v / %v", tc.args, d.Heartbeat, d.Interval, d.Ask, d.Step, tc.hb, tc.lt, tc.ask, tc.step)
		}
	}
	for _, args := range [][]string{{"--algorithm", "ring-naive"}, {"--algorithm", "ring-naive", "--probe", "0"}} {
		el, err := buildWith(t, args...)
		if err != nil {
			t.Fatalf("%v (--probe 0 is off, as a shared ELECTD_PROBE=0 gives it): %v", args, err)
		}
		if d := el.Report().Detail.(ring.Detail); d.Heartbeat != 50*time.Millisecond || d.LeaderTimeout != 400*time.Millisecond {
			t.Errorf("ring-naive %v: %+v", args, d)
		}
	}
}

// TestBuildEveryAlgorithm: every algorithm of the table builds from the
// flags' defaults (yoyo with a topology as well), and its status names it.
func TestBuildEveryAlgorithm(t *testing.T) {
	for _, a := range algorithms {
		el, err := buildWith(t, "--algorithm", a.Name)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if st := el.Report(); st.Algorithm != a.Name || st.ID != 1 || len(st.Members) != 3 {
			t.Errorf("%s: status %+v", a.Name, st)
		}
	}
	el, err := buildWith(t, "--algorithm", "yoyo", "--topology", "1-2, 2-3")
	if err != nil {
		t.Fatal(err)
	}
	if d := el.Report().Detail.(yoyo.Detail); len(d.Neighbours) != 1 || d.Neighbours[0] != 2 {
		t.Errorf("member 1 of 1-2,2-3 has neighbours %v", d.Neighbours)
	}
}

// TestRenderStatus: the human status is rendered from elect.Status as the
// daemon serves it, bully's detail included.
func TestRenderStatus(t *testing.T) {
	el, err := buildWith(t)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(el.Status())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := renderStatus(&out, raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Algorithm: bully (waiting for answers)", "Role     : candidate", "Leader   : none known",
		"Elections: 1 started, 0 leader timeouts; last", "terms claimed 0", "ID  Priority  Last heard", "(self)", "(bully: only the leader sends while all is well"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	// The algorithm's durations read as durations, not as nanoseconds in
	// a float's exponent form ("answer timeout ns 5e+07").
	if !regexp.MustCompile(`answer timeout [0-9.]+m?s`).MatchString(out.String()) || strings.Contains(out.String(), "e+0") {
		t.Errorf("status prints a duration as a number:\n%s", out.String())
	}
}

// TestEventLevel: a leadership lost against the leader's will (a lease
// run out, a step back) is a WARN line; the algorithm's own hand-overs
// are not.
func TestEventLevel(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   slog.Level
	}{{"lease_expired", slog.LevelWarn}, {"stepped_back", slog.LevelWarn}, {"higher_ranked_leader", slog.LevelInfo}, {"resigned", slog.LevelInfo}} {
		e := elect.Change{Event: elect.EventDemoted, Leader: 1, Term: 1, Reason: tc.reason}.CoreEvent()
		if got := eventLevel(e); got != tc.want {
			t.Errorf("demoted (%s): %v, want %v", tc.reason, got, tc.want)
		}
	}
	if got := eventLevel(elect.Change{Event: elect.EventElected, Leader: 1}.CoreEvent()); got != slog.LevelInfo {
		t.Errorf("elected: %v", got)
	}
}

// TestAgreementParams: what must agree is spelt one way whatever the
// operator wrote, and holds the majority election's lease, never the
// per-host timings of the others.
func TestAgreementParams(t *testing.T) {
	opts := elect.Options{Priorities: map[uint32]uint32{5: 3, 2: 10, 7: 0}, LeaderTimeout: 400 * time.Millisecond, Heartbeat: 50 * time.Millisecond}
	b, err := elect.Lookup(algorithms, "bully")
	if err != nil {
		t.Fatal(err)
	}
	if a := agreement(b, opts); a.Algorithm != "bully" || len(a.Params) != 1 || a.Params["priorities"] != "2=10,5=3" {
		t.Errorf("bully: %+v", a)
	}
	m, _ := elect.Lookup(algorithms, "majority")
	if a := agreement(m, opts); a.Params["leader-timeout"] != "400ms" {
		t.Errorf("majority: %+v", a)
	}
	y, _ := elect.Lookup(algorithms, "yoyo")
	opts.Topology = [][2]uint32{{3, 1}, {1, 2}, {2, 3}}
	if a := agreement(y, opts); a.Params["topology"] != "1-2,1-3,2-3" {
		t.Errorf("yoyo: %+v", a)
	}
}

// TestRenderForPeople: terms read "5 by 2", not 21474836482; an election
// won by 2 does not pass for the present when 3 leads now; a watched event
// without a leader shows none (it printed leader=<nil>).
func TestRenderForPeople(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := elect.Status{Algorithm: "bully", ID: 1, Role: elect.RoleFollower, Term: epoch.Make(5, 3), Leader: 3,
		LastElection: &elect.ElectionStats{Term: epoch.Make(4, 1), Started: now.Add(-time.Minute), Decided: now.Add(-time.Minute + 3*time.Millisecond), Leader: 2}}
	raw, _ := json.Marshal(st)
	var out bytes.Buffer
	if err := renderStatus(&out, raw, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Term     : 5 by 3 (round 5, claimed by member 3)\n", "won by 2 in 3ms, since replaced by 3 without an election here"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "21474836") {
		t.Errorf("status shows a raw term:\n%s", out.String())
	}

	out.Reset()
	started := daemon.EventRecord{Time: now, Name: elect.EventElectionStarted, Attrs: map[string]any{"term": json.Number("21474836481"), "reason": "leader timeout"}}
	printEvent(&out, started)
	elected := daemon.EventRecord{Time: now, Name: elect.EventLeaderElected, Attrs: map[string]any{"leader": json.Number("2"), "term": json.Number("21474836482")}}
	printEvent(&out, elected)
	want := "2026-12-01T09:00:00Z election_started term 5 by 1 (leader timeout)\n2026-12-01T09:00:00Z leader_elected leader 2 term 5 by 2\n"
	if out.String() != want {
		t.Errorf("watch printed\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRenderLastTimeout: bully's last leader timeout reads as a line of
// its own, durations as durations (it printed a Go map of floats); at the
// defaults, without probes, it says no probes were due rather than "0 of
// 0, none answered".
func TestRenderLastTimeout(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		cause bully.TimeoutCause
		want  string
	}{
		{bully.TimeoutCause{Leader: 5, At: now.Add(-3 * time.Second), Silent: 250 * time.Millisecond, Timeout: 250 * time.Millisecond, Extra: 10 * time.Millisecond,
			Probes: 9, ProbesDue: 9, TickLate: 66 * time.Microsecond, Rechecked: true, Verdict: bully.VerdictLeaderSilent},
			"Timed out: leader 5, 3s ago: leader_silent (silent 250ms, timeout 250ms of which 10ms for its lateness, 9 probes sent of 9 due, none answered, this loop at most 66µs late, rechecked after a late tick)\n"},
		{bully.TimeoutCause{Leader: 5, At: now.Add(-3 * time.Second), Silent: 410 * time.Millisecond, Timeout: 400 * time.Millisecond,
			TickLate: 66 * time.Microsecond, Verdict: bully.VerdictNoProbes},
			"Timed out: leader 5, 3s ago: no_probes (silent 410ms, timeout 400ms of which 0s for its lateness, this loop at most 66µs late)\n"},
	} {
		cause := tc.cause
		st := elect.Status{Algorithm: "bully", ID: 1, Role: elect.RoleFollower, Term: epoch.Make(5, 4), Leader: 4,
			Detail: bully.Detail{Heartbeat: 200 * time.Millisecond, LastTimeout: &cause}}
		raw, _ := json.Marshal(st)
		var out bytes.Buffer
		if err := renderStatus(&out, raw, now); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "map[") {
			t.Errorf("status:\n%s\nwant the line\n%s", out.String(), tc.want)
		}
	}
}
