package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
)

// The election's timeouts in Berkeley mode: electd's LAN defaults, used as
// given whatever --tick is. A dead master is suspected after the leader
// timeout, the member ranked just below it takes over at once, and its
// first round is computed one collect timeout (at most 200 ms) after its
// poll: about 0.7 s from a crash to the first round under the new master,
// well within the 2 s the issue asks for.
const (
	berkeleyHeartbeat     = 50 * time.Millisecond
	berkeleyLeaderTimeout = 400 * time.Millisecond
	berkeleyAnswerTimeout = 50 * time.Millisecond
	berkeleyStagger       = 20 * time.Millisecond
	berkeleyCoordTimeout  = 250 * time.Millisecond
	// minBerkeleyRound keeps a round longer than its retries of
	// unacknowledged corrections need to be useful (AdjustRetry 100 ms).
	minBerkeleyRound = 100 * time.Millisecond
)

func berkeleyFlags() []cli.Flag {
	with := "with --mode berkeley: "
	return []cli.Flag{
		&cli.DurationFlag{Name: "berkeley-round", EnvVars: app.Env(name, "berkeley-round"), Value: berkeley.DefaultRoundInterval,
			Usage: with + "time between the master's rounds (poll every member, average, send each its correction)"},
		&cli.DurationFlag{Name: "berkeley-threshold", EnvVars: app.Env(name, "berkeley-threshold"), Value: berkeley.DefaultThreshold,
			Usage: with + "how far two clocks may differ, beyond half their round trips, and still agree: the largest agreeing set is averaged, clocks outside it are only corrected"},
		&cli.DurationFlag{Name: "berkeley-max-rtt", EnvVars: app.Env(name, "berkeley-max-rtt"), Value: berkeley.DefaultMaxRTT,
			Usage: with + "a reading with a longer round trip is too uncertain and left out of the average (at most half of --berkeley-round)"},
		&cli.DurationFlag{Name: "berkeley-heartbeat", EnvVars: app.Env(name, "berkeley-heartbeat"), Value: berkeleyHeartbeat,
			Usage: with + "the master's heartbeat interval (bully election among the --members)"},
		&cli.DurationFlag{Name: "berkeley-leader-timeout", EnvVars: app.Env(name, "berkeley-leader-timeout"), Value: berkeleyLeaderTimeout,
			Usage: with + "silence after which the master is suspected and the next-ranked member takes over (must exceed --berkeley-heartbeat, this member's and every other's: a member that beats slower is warned of, timing_mismatch); its first round follows within about 200 ms"},
	}
}

// berkeleyConfig reads the Berkeley flags; nil unless --mode berkeley.
// clientConfig has already refused --server and --peer with it.
func berkeleyConfig(c *cli.Context, cfg *daemon.Config) (*berkeley.Config, error) {
	if c.String("mode") != "berkeley" {
		for _, f := range berkeleyFlags() {
			if n := f.Names()[0]; c.IsSet(n) {
				return nil, app.Usagef("--%s is only used with --mode berkeley", n)
			}
		}
		return nil, nil
	}
	if cfg.Standalone() {
		return nil, app.Usagef("--mode berkeley synchronises the members of a cluster with each other: give --id and --members (the same list on every member)")
	}
	if c.Bool("no-adjust") {
		// A member that ignores its corrections still takes part in the
		// average, and its pending slews (reported, never applied) would
		// mislead the master about its clock.
		return nil, app.Usagef("--no-adjust cannot be used with --mode berkeley: every member must apply its corrections (use `timed query` against a member's --serve address to measure without taking part)")
	}
	round, threshold, maxRTT := c.Duration("berkeley-round"), c.Duration("berkeley-threshold"), c.Duration("berkeley-max-rtt")
	switch {
	case cfg.TickInterval < time.Millisecond || cfg.TickInterval > time.Second:
		// The daemon checks it too, once the cores are built: a usage
		// error comes first.
		return nil, app.Usagef("--tick %v: want 1ms to 1s", cfg.TickInterval)
	case round < minBerkeleyRound || round > time.Hour:
		// The cores are ticked at their own deadlines, so any --tick
		// serves any round.
		return nil, app.Usagef("--berkeley-round %v: want %v to 1h", round, minBerkeleyRound)
	case threshold <= 0 || threshold > time.Second:
		return nil, app.Usagef("--berkeley-threshold %v: want more than 0 and at most 1s", threshold)
	case maxRTT <= 0 || maxRTT > round/2:
		return nil, app.Usagef("--berkeley-max-rtt %v: want more than 0 and at most half of --berkeley-round (%v)", maxRTT, round/2)
	}
	hb, lt := c.Duration("berkeley-heartbeat"), c.Duration("berkeley-leader-timeout")
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{{"berkeley-heartbeat", hb}, {"berkeley-leader-timeout", lt}} {
		if err := liveness.CheckTimeout("--"+f.flag, f.d); err != nil {
			return nil, app.Usagef("%v", err)
		}
	}
	if lt <= hb {
		return nil, app.Usagef("--berkeley-leader-timeout (%v) must exceed --berkeley-heartbeat (%v): workers would suspect a live master between two heartbeats", lt, hb)
	}
	el := bully.DefaultLANConfig()
	el.Heartbeat, el.LeaderTimeout = hb, lt
	el.AnswerTimeout, el.Stagger = berkeleyAnswerTimeout, berkeleyStagger
	// A node told to wait must outlast a heartbeat and an answer (bully's
	// rule); with the default heartbeat that is the LAN default.
	el.CoordinatorTimeout = max(berkeleyCoordTimeout, 2*hb+el.AnswerTimeout)
	return &berkeley.Config{
		Election:      func(env core.Env) (elect.Elector, error) { return bully.New(env, berkeley.MasterElection(el)) },
		RoundInterval: round,
		// The readings are awaited at most 200 ms (sooner when all
		// arrived), less in short rounds, never less than the longest
		// round trip a reading may have.
		CollectTimeout: max(min(berkeley.DefaultCollectTimeout, round/2), maxRTT),
		MaxRTT:         maxRTT,
		Threshold:      threshold,
	}, nil
}

// newBerkeley builds the Berkeley core from cfg and env, whose State is
// what a previous run persisted (its election's term and its frequency);
// a state the core refuses is named with its file.
func newBerkeley(cfg berkeley.Config, env core.Env, stateDir string) (*berkeley.Core, error) {
	c, err := berkeley.New(env, cfg)
	if errors.Is(err, core.ErrState) {
		return nil, fmt.Errorf("%w in %s: remove the file only if you accept that this member's election terms restart and its frequency is learnt again",
			err, filepath.Join(stateDir, daemon.CoreStateFile))
	}
	return c, err
}

// isBerkeley tells the Berkeley core's status from the liveness
// detector's: only the former has a role.
func isBerkeley(raw json.RawMessage) bool {
	var probe struct {
		Role *string `json:"role"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.Role != nil
}

// renderBerkeley prints what `chronyc tracking` and `chronyc sources` would
// for Berkeley mode: the role, the master and its term, this clock's
// discipline, and on the master its last round, one line per member.
func renderBerkeley(w io.Writer, raw json.RawMessage, now time.Time) error {
	var st berkeley.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected Berkeley status: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	master := "none known (election in progress)"
	if st.Master != 0 {
		master = fmt.Sprint(st.Master)
		if st.Master == st.Election.ID {
			master += " (this node)"
		}
	}
	fmt.Fprintf(tw, "Berkeley\t: %s, master %s, term %s\n", st.Role, master, epoch.Format(st.Term))
	// The error bound is the Time line's.
	fmt.Fprintf(tw, "Frequency\t: %+.3f ppm\n", st.FrequencyPPM)
	if a := st.LastAdjust; a != nil {
		fmt.Fprintf(tw, "Last correction\t: %s received %s ago (round %d of term %s), accurate to %s then\n",
			app.FormatOffset(time.Duration(a.CorrectionNS)), ago(now, a.At), a.Round, epoch.Format(a.Term), app.FormatBound(time.Duration(a.ErrorNS)))
	}
	fmt.Fprintf(tw, "Counters\t: %s\n", counterList(st.Counters))
	r := st.LastRound
	if r == nil {
		return tw.Flush()
	}
	if r.Skipped != "" {
		fmt.Fprintf(tw, "Last round\t: %d, %s ago: skipped (%s)\n", r.Round, ago(now, r.At), r.Skipped)
	} else {
		how := fmt.Sprintf("average of %d of %d agreeing", r.Averaged, r.Agreeing)
		if r.Method == "median" {
			how = "median (no majority agreed)"
		}
		fmt.Fprintf(tw, "Last round\t: %d, %s ago: %d clocks, %s, spread %s, rate pull %s\n",
			r.Round, ago(now, r.At), r.Clocks, how, app.FormatDuration(time.Duration(r.SpreadNS)), app.FormatOffset(time.Duration(r.SteerNS)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Member\tRTT\tOffset\tCorrection\tAcked\tVerdict")
	fmt.Fprintf(tw, "%d (self)\t-\t0\t%s\t-\tmaster\n", st.Election.ID, correction(r, r.MasterCorrectionNS))
	for _, m := range r.Members {
		rtt, off, acked := "-", "-", "-"
		if m.Answered {
			rtt, off = app.FormatDuration(time.Duration(m.RTTNS)), app.FormatOffset(time.Duration(m.OffsetNS))
			if r.Skipped == "" {
				acked = "no"
				if m.Acked {
					acked = "yes"
				}
			}
		}
		verdict := "used"
		if m.Excluded || m.Why != "" {
			// Why says it for a member without a reading, whose
			// Excluded the core leaves false.
			verdict = "excluded: " + m.Why
		}
		corr := "-"
		if m.Answered {
			corr = correction(r, m.CorrectionNS)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", m.ID, rtt, off, corr, acked, verdict)
	}
	return tw.Flush()
}

// correction prints a correction of round r ("-" when the round was
// skipped and nobody was corrected).
func correction(r *berkeley.RoundReport, ns int64) string {
	if r.Skipped != "" {
		return "-"
	}
	return app.FormatOffset(time.Duration(ns))
}

func ago(now, at time.Time) string {
	if at.IsZero() {
		return "?"
	}
	return now.Sub(at).Round(time.Millisecond).String()
}

// counterList renders counters as "adjustments_applied 40, rounds 42".
func counterList(m map[string]uint64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none yet"
	}
	return strings.Join(parts, ", ")
}
