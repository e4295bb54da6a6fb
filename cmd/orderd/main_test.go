package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/order"
)

func configWith(t *testing.T, args ...string) (order.Config, error) {
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
	return config(cli.NewContext(cli.NewApp(), set, nil))
}

// Settings no cluster can run with are usage errors (exit 2) naming the
// flag, before anything starts.
func TestConfigRefusals(t *testing.T) {
	for _, args := range [][]string{
		{"--total", "paxos"},
		{"--heartbeat", "400ms", "--leader-timeout", "400ms"},
		{"--retry", "0s"},
		{"--commit-delay", "0s"},
		{"--commit-delay", "60ms"},
		{"--probe", "200ms"}, // 200ms + 200ms leaves no room before the 400ms timeout
		{"--probe", "500us"},
		// The core's own checks named its fields (Window, RelayAfter), and
		// took --window 0 for its default.
		{"--window", "0"},
		{"--window", "65537"},
		{"--retry", "2s"},
	} {
		_, err := configWith(t, args...)
		var ue app.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v, want a usage error naming %s", args, err, args[0])
		}
	}
	cfg, err := configWith(t, "--total", "lamport", "--window", "32")
	if err != nil || cfg.Total != order.Lamport || cfg.Window != 32 {
		t.Fatalf("%+v %v", cfg, err)
	}
	// The flags' core runs, with the account behind it.
	c, err := order.New(core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Now(), Rand: rand.New(rand.NewPCG(1, 1)), Lamport: new(clock.Lamport)}, cfg)
	if err != nil || c.Machine() == nil {
		t.Fatalf("core: %v", err)
	}
}

// TestElectionDefaults: the sequencer's election is bully with leader
// probes (200 ms heartbeats, a 400 ms timeout, 4 ms probes: four times
// fewer idle frames than 50 ms heartbeats, a dead sequencer noticed after
// the same 400 ms),
// while the order's own repeats keep their 50 ms; --probe 0 gives the
// former election back.
func TestElectionDefaults(t *testing.T) {
	for _, c := range []struct {
		args               []string
		hb, timeout, probe time.Duration
		repeat             time.Duration
	}{
		{nil, 200 * time.Millisecond, 400 * time.Millisecond, 4 * time.Millisecond, 50 * time.Millisecond},
		{[]string{"--heartbeat", "50ms", "--leader-timeout", "400ms", "--probe", "0"}, 50 * time.Millisecond, 400 * time.Millisecond, 0, 50 * time.Millisecond},
		{[]string{"--heartbeat", "20ms", "--leader-timeout", "100ms"}, 20 * time.Millisecond, 100 * time.Millisecond, 4 * time.Millisecond, 20 * time.Millisecond},
	} {
		cfg, d := electionWith(t, c.args...)
		if d.Heartbeat != c.hb || d.LeaderTimeout != c.timeout || d.Probe != c.probe || cfg.Heartbeat != c.repeat {
			t.Errorf("%v: election %v / %v / probe %v, order's repeats %v; want %v / %v / %v, %v",
				c.args, d.Heartbeat, d.LeaderTimeout, d.Probe, cfg.Heartbeat, c.hb, c.timeout, c.probe, c.repeat)
		}
	}
}

// TestHintProbeDefault: the sequencer's election acts on a closed port
// by default (30 ms probes, the members watching the sequencer's link),
// not with --hint-probe 0, nor at its default with a leader timeout too
// short for five probes; a --hint-probe too long for the timeout is
// refused.
func TestHintProbeDefault(t *testing.T) {
	for _, c := range []struct {
		args         []string
		probe, watch time.Duration
	}{
		{nil, 30 * time.Millisecond, bully.WatchEvery},
		{[]string{"--hint-probe", "0"}, 0, 0},
		{[]string{"--heartbeat", "20ms", "--leader-timeout", "100ms"}, 0, 0},
	} {
		if _, d := electionWith(t, c.args...); d.HintProbe != c.probe || d.Watch != c.watch {
			t.Errorf("%v: hint probe %v watch %v, want %v and %v", c.args, d.HintProbe, d.Watch, c.probe, c.watch)
		}
	}
	if _, err := configWith(t, "--hint-probe", "100ms"); err == nil || !strings.Contains(err.Error(), "100ms x 5 probes must be below the leader timeout (400ms)") {
		t.Errorf("--hint-probe 100ms with a 400 ms timeout: %v", err)
	}
}

// electionWith is the order's configuration for the flags args and its
// election's bully Detail.
func electionWith(t *testing.T, args ...string) (order.Config, bully.Detail) {
	t.Helper()
	cfg, err := configWith(t, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	el, err := cfg.Election(core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Now(), Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return cfg, el.Report().Detail.(bully.Detail)
}

// status renders what is pending and why, the sequencer and the streams.
func TestRenderStatus(t *testing.T) {
	st := order.Status{ID: 2, Members: []uint32{1, 2, 3}, Total: "sequencer", CausalVector: []uint64{1, 0, 0},
		Streams:   []order.StreamStatus{{Member: 1, Acked: 3, Settled: 3, Received: 4, HeldBack: 2, Missing: 5}},
		Pending:   []order.Pending{{Order: order.Causal, Sender: 3, Seq: 1, Waiting: "member 1's causal message #2 (delivered 1)"}},
		Sequencer: &order.SequencerStatus{Sequencer: 3, Role: "member", Term: 3, Last: 9, Commit: 8, Applied: 8, LastSkip: &order.Skipped{From: 3, To: 7, Via: 3}},
		Delivered: map[string]uint64{"causal": 1, "total_index": 9}, Counters: map[string]uint64{"rejected_stale": 2, "skipped_numbers": 5}}
	raw, _ := json.Marshal(st)
	var b bytes.Buffer
	if err := renderStatus(&b, raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Sequencer: 3; this node is member, term 0 by 3", "last 9, committed 8, applied 8",
		"causal  3     1    member 1's causal message #2 (delivered 1)", "rejected_stale 2", "1       3                 3        0        4                2",
		"Skipped  : numbers 3 to 7, not delivered here one by one: caught up from member 3's snapshot (more than the log's entries behind; 5 numbers skipped since start"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}

	// A node whose sequencer's term waits for its state write says so
	// under the sequencer's line; a node that has delivered nothing says
	// so.
	for _, c := range []struct {
		edit func(*order.Status)
		want string
	}{
		{func(st *order.Status) {
			st.Sequencer = &order.SequencerStatus{Sequencer: 2, Role: "recovering", Term: 1<<32 | 2, Unsaved: 1<<32 | 2}
		}, "RECOVERING TERM 1 by 2 WAITS FOR ITS STATE WRITE (it failed: every frame of this node waits"},
		{func(st *order.Status) { st.Delivered = map[string]uint64{} }, "Delivered: nothing since start (0 in all)"},
	} {
		c.edit(&st)
		raw, _ = json.Marshal(st)
		b.Reset()
		if err := renderStatus(&b, raw, time.Now()); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("status lacks %q:\n%s", c.want, b.String())
		}
	}
}

// A sequenced send is answered on its own delivery's event (emitted once
// the delivery is written), and only on its own: another submission of
// this node's, or a delivery from another member, is not its commit.
func TestWaitDeliveryKnowsItsOwnSubmission(t *testing.T) {
	const me, sid = 2, 7<<32 | 5
	delivered := func(ord order.Order, sender uint32, s uint64) daemon.EventRecord {
		return daemon.EventRecord{Name: order.EventDelivered, Attrs: map[string]any{"order": ord.String(), "sender": sender, "seq": uint64(9), "sid": s}}
	}
	// Each event is handed over (an unbuffered send returns once
	// waitDelivery has it), then the wait is cancelled: a wait that
	// woke on the event has returned already, one that did not returns
	// not woken. The poll is an hour: only the event or the cancel ends a
	// wait, so nothing here races a timer.
	wait := func(e daemon.EventRecord, sid uint64) (woke, own bool) {
		events := make(chan daemon.EventRecord)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan [2]bool, 1)
		go func() {
			w, o := waitDelivery(ctx, events, me, sid, time.Hour)
			done <- [2]bool{w, o}
		}()
		events <- e
		cancel()
		r := <-done
		return r[0], r[1]
	}
	for _, c := range []struct {
		name      string
		e         daemon.EventRecord
		woke, own bool
	}{
		{"its own", delivered(order.TotalOrder, me, sid), true, true},
		{"an earlier one of this node", delivered(order.TotalOrder, me, sid-1), true, false},
		{"another member's", delivered(order.TotalOrder, 3, sid), false, false},
		{"fifo from this node", delivered(order.FIFO, me, 0), true, false},
		{"lost events", daemon.EventRecord{Name: "other", Lost: 3}, true, false},
	} {
		if woke, own := wait(c.e, sid); woke != c.woke || own != c.own {
			t.Errorf("%s: woke %v own %v, want %v %v", c.name, woke, own, c.woke, c.own)
		}
	}
	// Without a submission (not sequenced) nothing is its own.
	if woke, own := wait(delivered(order.TotalOrder, me, sid), 0); !woke || own {
		t.Errorf("no submission: woke %v own %v", woke, own)
	}
	// With nothing delivered, the poll ends the wait, woken: the caller
	// looks at the log again.
	if woke, own := waitDelivery(context.Background(), make(chan daemon.EventRecord), me, sid, time.Millisecond); !woke || own {
		t.Errorf("poll: woke %v own %v", woke, own)
	}
}
