package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
)

func TestBerkeleyUsageErrors(t *testing.T) {
	base := []string{"timed", "run", "--id", "1", "--members", "1=127.0.0.1:9,2=127.0.0.2:9", "--clock", "sim", "--insecure"}
	bk := func(args ...string) []string { return slices.Concat(base, []string{"--mode", "berkeley"}, args) }
	other := func(args ...string) []string { return slices.Concat(base, args) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{bk("--server", "127.0.0.1"), "takes no --server or --peer"},
		{bk("--peer", "127.0.0.1"), "takes no --server or --peer"},
		{bk("--cristian-burst", "2"), "only used with --mode cristian"},
		{bk("--minpoll", "2"), "only used with --server or --peer"},
		{bk("--no-adjust"), "--no-adjust cannot be used with --mode berkeley"},
		{bk("--berkeley-round", "50ms"), "--berkeley-round 50ms: want 100ms to 1h"},
		{bk("--berkeley-threshold", "0s"), "--berkeley-threshold 0s"},
		{bk("--berkeley-max-rtt", "600ms"), "at most half of --berkeley-round"},
		{bk("--berkeley-heartbeat", "500ms"), "must exceed --berkeley-heartbeat"},
		{bk("--berkeley-heartbeat", "500us"), "--berkeley-heartbeat 500µs: timeout out of range"},
		{bk("--tick", "0s"), "--tick 0s: want 1ms to 1s"},
		{other("--berkeley-round", "2s"), "--berkeley-round is only used with --mode berkeley"},
		{other("--berkeley-leader-timeout", "2s"), "only used with --mode berkeley"},
	} {
		var stderr bytes.Buffer
		a := newApp()
		a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
		if code := app.Run(a, tc.args, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args[len(base):], code, stderr.String(), tc.want)
		}
	}
}

// TestBerkeleyCorruptState: a state file that cannot be restored stops the
// daemon at start with exit 1 and names the file.
func TestBerkeleyCorruptState(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(state, "core.state"), "not a berkeley state")
	var stderr bytes.Buffer
	a := newApp()
	a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
	args := []string{"timed", "run", "--id", "1", "--members", "1=127.0.0.1:9", "--clock", "sim", "--mode", "berkeley",
		"--state-dir", state, "--control", filepath.Join(dir, "ctl.sock")}
	code := app.Run(a, args, &stderr)
	if want := filepath.Join(state, "core.state"); code != 1 || !strings.Contains(stderr.String(), "corrupt state") || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, %q; want 1 naming %s", code, stderr.String(), want)
	}
}

// TestNewBerkeleyRestores: the term and frequency a run persisted come
// back in the next run's core.
func TestNewBerkeleyRestores(t *testing.T) {
	var cfg berkeley.Config
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	env := core.Env{ID: 1, Members: []uint32{1}, Now: now}
	first, err := newBerkeley(cfg, env, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The first write is the reservation at start (term 0); the claim's
	// follows it.
	var state []byte
	var savedTerm uint64
	for i := 0; i < 100 && savedTerm == 0; i++ {
		now = now.Add(10 * time.Millisecond)
		first.Tick(now)
		if rd := first.Ready(); rd.State != nil {
			state = rd.State
			saved, _ := berkeley.Restore(state)
			savedTerm, _ = bully.Restore(saved.Election)
		}
		first.Advance(true)
	}
	if savedTerm == 0 {
		t.Fatal("a member alone never persisted its term")
	}
	env.State, env.Now = state, now
	again, err := newBerkeley(cfg, env, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _ := again.Election().Leader(); got < savedTerm || savedTerm == 0 {
		t.Errorf("restored term %#x, saved %#x", got, savedTerm)
	}
}

// withSync fills st's summary in, as the composite's Status does.
func withSync(st timedcore.Status) timedcore.Status {
	st.Sync = timedcore.SyncOf(st)
	return st
}

// TestRenderBerkeley: one error bound, on the Time line, in the one style
// of every measured time; terms as "round by owner".
func TestRenderBerkeley(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC)
	term := uint64(2)<<32 | 8
	master := berkeley.Status{
		Role: "master", Master: 8, Term: term, Synchronized: true, ErrorBoundNS: 12_345, FrequencyPPM: -3.25,
		Counters: map[string]uint64{"rounds": 42, "readings": 290},
		Election: elect.Status{ID: 8, Role: elect.RoleLeader},
		LastRound: &berkeley.RoundReport{Term: term, Round: 42, At: now.Add(-400 * time.Millisecond), Clocks: 7, Method: "average",
			Agreeing: 6, Averaged: 4, SpreadNS: 23_000, SteerNS: -2, MasterCorrectionNS: 1_500,
			Members: []berkeley.MemberReport{
				{ID: 1, Answered: true, RTTNS: 120_000, OffsetNS: 2_000_000, Excluded: true, Why: "disagrees", CorrectionNS: -1_998_500, Acked: true},
				{ID: 2, Answered: true, RTTNS: 95_000, OffsetNS: -4_000, CorrectionNS: 5_500},
				{ID: 3, Why: "no reading"}, // the core leaves Excluded false here
			}},
	}
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ss := srv.Report()
	raw, _ := json.Marshal(withSync(timedcore.Status{Cluster: master, Server: &ss}))
	var out bytes.Buffer
	if err := renderCore(&out, raw, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Time     : synchronised to the Berkeley group's time (master 8), error bound ±12.345us\n",
		"Berkeley   : master, master 8 (this node), term 2 by 8\n",
		"Frequency  : -3.250 ppm\n",
		"Counters   : readings 290, rounds 42",
		"Last round : 42, 400ms ago: 7 clocks, average of 4 of 6 agreeing, spread 23.000us, rate pull -2ns",
		"8 (self)", "+1.500us",
		"excluded: disagrees", "-1.998ms", "yes",
		"95.000us", "-4.000us", "+5.500us",
		"excluded: no reading",
		"NTP server : stratum 16",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	worker := berkeley.Status{Role: "worker", Master: 8, Term: term, Election: elect.Status{ID: 3, Role: elect.RoleFollower},
		LastAdjust: &berkeley.AdjustReport{Term: term, Round: 41, CorrectionNS: -7_000, ErrorNS: 60_000, At: now.Add(-time.Second)}}
	raw, _ = json.Marshal(withSync(timedcore.Status{Cluster: worker}))
	out.Reset()
	if err := renderCore(&out, raw, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Time     : unsynchronised: no Berkeley correction applied yet (master 8)\n",
		"Berkeley        : worker, master 8, term 2 by 8\n",
		"Last correction : -7.000us received 1s ago (round 41 of term 2 by 8), accurate to ±60.000us then",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("worker output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "Member") {
		t.Errorf("a worker shows a round table:\n%s", out.String())
	}
}
