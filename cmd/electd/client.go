package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
)

func conflict(err error, v leaderView) error {
	if errors.Is(err, elect.ErrCannotResign) {
		return ctl.Conflict(err.Error())
	}
	if errors.Is(err, elect.ErrNotLeader) {
		if v.Leader != 0 {
			return ctl.Conflict(fmt.Sprintf("this node is not the leader (node %d is): run resign on the leader", v.Leader))
		}
		return ctl.Conflict("this node is not the leader (no leader is known: an election is in progress)")
	}
	return err
}

func leaderCommand() *cli.Command {
	return &cli.Command{
		Name:  "leader",
		Usage: "print the current leader (exit 1 if none is known)",
		Flags: []cli.Flag{app.ControlFlag(name), app.JSONFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return app.Usagef("leader takes no arguments")
			}
			ctx, cancel := context.WithTimeout(c.Context, 5*time.Second)
			defer cancel()
			var v leaderView
			if err := app.Client(c).Get(ctx, "/v1/leader", &v); err != nil {
				return err
			}
			if c.Bool("json") {
				b, _ := json.Marshal(v)
				fmt.Fprintln(c.App.Writer, string(b))
			} else if v.Leader != 0 {
				self := ""
				if v.Self {
					self = " (this node)"
				}
				fmt.Fprintf(c.App.Writer, "leader %d%s at %s, term %s, since %s\n",
					v.Leader, self, v.Address, epoch.Format(v.Term), v.Since.Format(time.RFC3339Nano))
			}
			if v.Leader == 0 {
				msg := "no leader known: an election is in progress or this node is cut off"
				if v.Why != "" {
					msg = "no leader known (" + v.Why + ")"
				}
				return app.ExitError{Code: 1, Msg: msg}
			}
			return nil
		},
	}
}

func resignCommand() *cli.Command {
	return &cli.Command{
		Name:  "resign",
		Usage: "make this node, if it leads, step down (another member takes over at once)",
		Flags: []cli.Flag{app.ControlFlag(name)},
		Action: func(c *cli.Context) error {
			ctx, cancel := context.WithTimeout(c.Context, 5*time.Second)
			defer cancel()
			var v leaderView
			if err := app.Client(c).Post(ctx, "/v1/resign", struct{}{}, &v); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "resigned leadership of term %s; a new leader is being elected\n", epoch.Format(v.Term))
			return nil
		},
	}
}

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "print every leadership change as it happens, until interrupted",
		Flags: []cli.Flag{app.ControlFlag(name), app.JSONFlag},
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			// The current leader first, so a watcher starts from a known state.
			var v leaderView
			if err := app.Client(c).Get(ctx, "/v1/leader", &v); err != nil {
				return err
			}
			w := c.App.Writer
			if c.Bool("json") {
				b, _ := json.Marshal(map[string]any{"event": "current", "attrs": v})
				fmt.Fprintln(w, string(b))
			} else {
				cur := "none known"
				if v.Leader != 0 {
					cur = fmt.Sprint(v.Leader)
				}
				fmt.Fprintf(w, "%s current leader %s, term %s\n", time.Now().Format(time.RFC3339Nano), cur, epoch.Format(v.Term))
			}
			err := app.Client(c).Stream(ctx, "/v1/events", func(raw json.RawMessage) error {
				var e daemon.EventRecord
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.UseNumber() // terms are 64-bit: keep every digit
				if err := dec.Decode(&e); err != nil {
					return err
				}
				// The shared events of every algorithm (pkg/elect) but
				// leader_changed, which follows a leader_elected.
				if !elect.LeadershipEvent(e.Name) || e.Name == elect.EventLeaderChanged {
					return nil
				}
				if c.Bool("json") {
					fmt.Fprintln(w, string(raw))
				} else {
					printEvent(w, e)
				}
				return nil
			})
			if ctx.Err() != nil {
				return nil // interrupted: the normal end
			}
			if err == nil {
				return errors.New("the daemon closed the event stream (stopping?)")
			}
			return err
		},
	}
}

// printEvent prints a leadership event for people: what happened, the
// leader it names (election_started names none), the term as "3 by 2",
// the reason, if any.
func printEvent(w io.Writer, e daemon.EventRecord) {
	line := e.Time.Format(time.RFC3339Nano) + " " + e.Name
	if l, ok := e.Attrs["leader"]; ok && l != nil {
		line += " leader " + fmt.Sprint(l)
	}
	if t, ok := e.Attrs["term"]; ok && t != nil {
		line += " term " + termText(t)
	}
	if r, ok := e.Attrs["reason"].(string); ok && r != "" {
		line += " (" + r + ")"
	}
	if e.Lost > 0 {
		line += fmt.Sprintf(" (%d earlier events lost: reading too slowly)", e.Lost)
	}
	fmt.Fprintln(w, line)
}

// termText prints a term read from JSON (a json.Number: every digit of
// the 64 bits kept) as "3 by 2".
func termText(v any) string {
	if t, err := strconv.ParseUint(fmt.Sprint(v), 10, 64); err == nil {
		return epoch.Format(t)
	}
	return fmt.Sprint(v)
}

func renderStatus(w io.Writer, raw []byte, now time.Time) error {
	var st elect.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected election status: %w", err)
	}
	leader := "none known"
	if st.Leader != 0 {
		leader = fmt.Sprintf("%d", st.Leader)
		if st.Leader == st.ID {
			leader += " (this node)"
		}
		if !st.LeaderSince.IsZero() {
			leader += fmt.Sprintf(", for %s", now.Sub(st.LeaderSince).Round(time.Millisecond))
		}
	}
	fmt.Fprintf(w, "Algorithm: %s", st.Algorithm)
	if st.Phase != "" {
		fmt.Fprintf(w, " (%s)", st.Phase)
	}
	term := epoch.Format(st.Term)
	if st.Term != 0 {
		term += fmt.Sprintf(" (round %d, claimed by member %d)", epoch.Round(st.Term), epoch.Owner(st.Term))
	}
	fmt.Fprintf(w, "\nRole     : %s\nTerm     : %s\nLeader   : %s\n", st.Role, term, leader)
	fmt.Fprintf(w, "Elections: %d started, %d leader timeouts", st.ElectionsStarted, st.LeaderTimeouts)
	if e := st.LastElection; e != nil {
		took := "running"
		if !e.Decided.IsZero() {
			took = fmt.Sprintf("won by %d in %s", e.Leader, e.Decided.Sub(e.Started).Round(time.Millisecond))
			// Leadership may have moved since without an election here
			// (a coordinator of a higher term heard): say so, rather
			// than name the old winner as if it led.
			switch {
			case st.Leader == 0:
				took += ", no leader known now"
			case st.Leader != e.Leader:
				took += fmt.Sprintf(", since replaced by %d without an election here", st.Leader)
			}
		}
		fmt.Fprintf(w, "; last %s ago, %s, %d messages sent for it", now.Sub(e.Started).Round(time.Millisecond), took, e.Sent)
	}
	fmt.Fprintln(w)
	if d, ok := st.Detail.(map[string]any); ok && len(d) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if k == "last_timeout" {
				continue // a line of its own, below
			}
			parts = append(parts, detailPart(k, d[k]))
		}
		fmt.Fprintf(w, "Detail   : %s\n", strings.Join(parts, ", "))
		if c, ok := d["last_timeout"].(map[string]any); ok {
			fmt.Fprintf(w, "Timed out: %s\n", timeoutLine(c, now))
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPriority\tLast heard")
	for _, m := range st.Members {
		heard := "-"
		switch {
		case m.Self:
			heard = "(self)"
		case !m.LastHeard.IsZero():
			heard = now.Sub(m.LastHeard).Round(time.Millisecond).String() + " ago"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\n", m.ID, m.Priority, heard)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch st.Algorithm {
	case "bully", "omega":
		// A student reads "4.5s ago" as a dead member.
		fmt.Fprintf(w, "(%s: only the leader sends while all is well; the others are heard when it falls silent, so their silence is no sign of a crash)\n", st.Algorithm)
	}
	return nil
}

// timeoutLine says in one line why bully last gave up on its leader
// (detail.last_timeout, bully.TimeoutCause): "leader 5, 3m2s ago:
// leader_silent (silent 240ms, timeout 240ms of which 0s for its
// lateness, 9 probes sent of 9 due, none answered, this loop at most
// 66µs late)".
func timeoutLine(c map[string]any, now time.Time) string {
	num := func(k string) float64 { f, _ := c[k].(float64); return f }
	dur := func(k string) time.Duration { return time.Duration(num(k)).Round(time.Microsecond) }
	when := ""
	if s, ok := c["at"].(string); ok {
		if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
			when = ", " + now.Sub(at).Round(time.Millisecond).String() + " ago"
		}
	}
	probes := ""
	if c["verdict"] != bully.VerdictNoProbes {
		probes = fmt.Sprintf(", %d probes sent of %d due, none answered", int64(num("probes")), int64(num("probes_due")))
	}
	line := fmt.Sprintf("leader %d%s: %v (silent %v, timeout %v of which %v for its lateness%s, this loop at most %v late",
		int64(num("leader")), when, c["verdict"], dur("silent_ns"), dur("timeout_ns"), dur("extra_ns"), probes, dur("tick_late_ns"))
	if num("stall_ns") > 0 {
		line += fmt.Sprintf(", suspicion put off %v for a stall", dur("stall_ns"))
	}
	if c["rechecked"] == true {
		line += ", rechecked after a late tick"
	}
	return line + ")"
}

// detailPart prints one of an algorithm's detail fields for people: a
// "_ns" field as a duration ("leader timeout 400ms", not "leader timeout
// ns 4e+08"), a whole number as one.
func detailPart(key string, v any) string {
	f, isNum := v.(float64)
	if name, ok := strings.CutSuffix(key, "_ns"); ok && isNum {
		return fmt.Sprintf("%s %v", strings.ReplaceAll(name, "_", " "), time.Duration(f))
	}
	if isNum && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		v = int64(f)
	}
	return fmt.Sprintf("%s %v", strings.ReplaceAll(key, "_", " "), v)
}
