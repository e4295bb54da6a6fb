package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/web"
)

// ClusterView is what a binary adds to `status --cluster`: the columns of
// its own facts (electd: role, leader, term), between the common ones.
type ClusterView struct {
	Headers []string
	// Cells returns one cell per header for a row that answered (or this
	// member's own); a member that did not answer shows "-" in each.
	Cells func(r daemon.ClusterRow) []string
}

// ExitIncomplete is `status --cluster`'s exit status when a member did not
// answer or its configuration differs.
const ExitIncomplete = 3

// clusterFlags are `status`'s flags for the whole lab's table.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "cluster", Usage: "ask every member over the cluster's authenticated protocol and print one row per member (members that do not answer included)"},
		&cli.DurationFlag{Name: "timeout", Value: daemon.DefaultClusterTimeout, Usage: "with --cluster: how long to wait for the members' answers (10ms to 30s); a member that has not answered by then is a row marked as not answering"},
	}
}

// clusterStatus runs `status --cluster`: the table, or its JSON; exit
// ExitIncomplete unless every member answered and agrees.
func clusterStatus(c *cli.Context, spec Spec) error {
	timeout := c.Duration("timeout")
	if timeout < daemon.MinClusterTimeout || timeout > daemon.MaxClusterTimeout {
		return Usagef("--timeout %v: want %v to %v", timeout, daemon.MinClusterTimeout, daemon.MaxClusterTimeout)
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout+10*time.Second)
	defer cancel()
	var raw json.RawMessage
	if err := Client(c).Get(ctx, "/v1/cluster?timeout="+url.QueryEscape(timeout.String()), &raw); err != nil {
		return err
	}
	var st daemon.ClusterStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected answer from the daemon: %w", err)
	}
	if c.Bool("json") {
		if err := PrintJSON(c.App.Writer, raw); err != nil {
			return err
		}
	} else if err := renderCluster(c.App.Writer, &st, spec.Cluster); err != nil {
		return err
	}
	if !st.Complete {
		return ExitError{Code: ExitIncomplete, Msg: incompleteText(&st)}
	}
	return nil
}

// incompleteText says, for stderr, why the exit status is not 0.
func incompleteText(st *daemon.ClusterStatus) string {
	var silent, differ []string
	for _, r := range st.Rows {
		if !r.Reachable {
			silent = append(silent, fmt.Sprint(r.ID))
		}
		if !r.Agrees && (r.Config == "differs" || r.Reachable && r.Config != "off") {
			differ = append(differ, fmt.Sprint(r.ID))
		}
	}
	var parts []string
	if len(silent) > 0 {
		parts = append(parts, "no answer from "+memberWord(len(silent))+" "+strings.Join(silent, ", "))
	}
	if len(differ) > 0 {
		parts = append(parts, "the configuration of "+memberWord(len(differ))+" "+strings.Join(differ, ", ")+" differs")
	}
	return strings.Join(parts, "; ") + " (see the table)"
}

func memberWord(n int) string {
	if n == 1 {
		return "member"
	}
	return "members"
}

// renderCluster prints the lab's table: a header line, one row per member,
// then a line per member that did not answer, differs or stepped back,
// saying why.
func renderCluster(w io.Writer, st *daemon.ClusterStatus, view *ClusterView) error {
	fp := ""
	for _, r := range st.Rows {
		if r.Self && r.Fingerprint != "" {
			fp = fmt.Sprintf(", configuration %s", shortHex(r.Fingerprint))
		}
	}
	fmt.Fprintf(w, "%s cluster %q seen from member %d%s: %d of %d members answered within %v\n\n",
		st.Daemon, st.Cluster, st.From, fp, st.Answered, st.Members, time.Duration(st.TimeoutNs))
	tab := ClusterTable(st, view)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tab.Headers, "\t"))
	for _, row := range tab.Rows {
		fmt.Fprintln(tw, strings.Join(row.Cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(tab.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range tab.Notes {
			fmt.Fprintln(w, n)
		}
	}
	return nil
}

// ClusterTable is the lab's table as `status --cluster` prints it (and the
// live page, `X web`, shows it): the headers, one row of cells per member
// (control characters left out), and a note per member that did not
// answer, differs or stepped back, saying why.
func ClusterTable(st *daemon.ClusterStatus, view *ClusterView) web.Table {
	own := []string{"Role"}
	if view != nil {
		own = view.Headers
	}
	tab := web.Table{Headers: append(append([]string{"ID", "Address", "Answer", "Config"}, own...), "Offset", "Clock", "Version", "Up")}
	for _, r := range st.Rows {
		cells := []string{fmt.Sprint(r.ID), r.Address, answerCell(r), configCell(r)}
		switch {
		case !r.Reachable:
			for range own {
				cells = append(cells, "-")
			}
			cells = append(cells, "-", "-", "-", "-")
		default:
			var mine []string
			if view != nil && view.Cells != nil {
				mine = view.Cells(r)
			} else {
				mine = []string{orDash(r.Role)}
			}
			for len(mine) < len(own) {
				mine = append(mine, "-")
			}
			cells = append(cells, mine[:len(own)]...)
			cells = append(cells, offsetCell(r), clockCell(r.Clock), versionCell(r), uptimeCell(r.UptimeSeconds))
		}
		for i := range cells {
			cells[i] = printable(cells[i])
		}
		tab.Rows = append(tab.Rows, web.TableRow{ID: r.ID, Self: r.Self, Reachable: r.Reachable, Differs: r.Config == "differs", SteppedBack: r.SteppedBack, Cells: cells})
	}
	for _, r := range st.Rows {
		if !r.Reachable {
			tab.Notes = append(tab.Notes, printable(fmt.Sprintf("Member %d: %s.", r.ID, r.Why)))
		}
		if len(r.Differs) > 0 && !r.Agrees {
			fp := ""
			if r.Fingerprint != "" {
				fp = " (configuration " + shortHex(r.Fingerprint) + ")"
			}
			tab.Notes = append(tab.Notes, printable(fmt.Sprintf("Member %d DIFFERS%s: %s.", r.ID, fp, strings.Join(r.Differs, "; "))))
		}
		if len(r.Timing) > 0 {
			tab.Notes = append(tab.Notes, printable(fmt.Sprintf("Member %d TIMING MISMATCH: %s.", r.ID, strings.Join(r.Timing, "; "))))
		}
		if r.SteppedBack {
			who := fmt.Sprintf("Member %d", r.ID)
			if r.Self {
				who += " (this member)"
			}
			tab.Notes = append(tab.Notes, printable(who+" stepped back: its configuration is in the minority of the members it hears; it does not lead, grant, vote or sequence until they agree."))
		}
	}
	return tab
}

func answerCell(r daemon.ClusterRow) string {
	switch {
	case r.Self:
		return "(self)"
	case !r.Reachable:
		if r.Config == "differs" && !r.Authenticated && r.AuthFailures > 0 {
			return "NONE, fails auth"
		}
		if r.HeardAgoNs != nil {
			return "NONE, heard " + agoText(time.Duration(*r.HeardAgoNs)) + " ago"
		}
		return "NONE, never heard"
	case r.RTTNs > 0:
		return "rtt " + ShortDuration(time.Duration(r.RTTNs))
	}
	return "yes"
}

func configCell(r daemon.ClusterRow) string {
	var s string
	switch r.Config {
	case "self":
		s = "(this)"
	case "differs":
		s = "DIFFERS"
	case "":
		s = "-"
	default:
		s = r.Config
	}
	if r.SteppedBack {
		s += ", STEPPED BACK"
	} else if r.Standing == "starting" {
		s += ", starting"
	}
	return s
}

func offsetCell(r daemon.ClusterRow) string {
	switch {
	case r.Self:
		return "(self)"
	case r.Clock == nil || !r.Clock.Wall:
		return "- (steady clock)"
	case r.Clock.OffsetNs == nil:
		return "-"
	}
	return FormatOffset(time.Duration(*r.Clock.OffsetNs)) + " ±" + ShortDuration(time.Duration(r.Clock.OffsetBoundNs))
}

func clockCell(c *daemon.RowClock) string {
	switch {
	case c == nil:
		return "-"
	case !c.Wall:
		return "steady"
	case !c.Synchronized:
		return "unsynchronised"
	case c.MaxErrorNs > 0:
		return "synchronised ±" + ShortDuration(time.Duration(c.MaxErrorNs))
	}
	return "synchronised"
}

func versionCell(r daemon.ClusterRow) string {
	v := orDash(r.Version)
	if r.Commit != "" {
		v += " (" + r.Commit[:min(len(r.Commit), 7)] + ")"
	}
	return v
}

func uptimeCell(s uint32) string {
	d := time.Duration(s) * time.Second
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return d.String()
}

// ShortDuration shows a positive duration with about three significant
// digits: 412us, 1.25ms, 3.20s.
func ShortDuration(d time.Duration) string {
	three := func(v float64, unit string) string {
		switch {
		case v >= 99.95:
			return fmt.Sprintf("%.0f%s", v, unit)
		case v >= 9.995:
			return fmt.Sprintf("%.1f%s", v, unit)
		}
		return fmt.Sprintf("%.2f%s", v, unit)
	}
	switch {
	case d >= time.Second:
		return three(d.Seconds(), "s")
	case d >= time.Millisecond:
		return three(float64(d)/1e6, "ms")
	case d >= time.Microsecond:
		return three(float64(d)/1e3, "us")
	}
	return fmt.Sprintf("%dns", d.Nanoseconds())
}

// agoText shows how long ago, to a human's precision.
func agoText(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// printable keeps what a terminal shows as it is: the strings of a row come
// from the members (checked on the wire for control characters), and a
// format character (a right-to-left override) would still turn the table
// around.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || unicode.IsGraphic(r) {
			return r
		}
		return -1
	}, s)
}

func shortHex(s string) string { return s[:min(len(s), 8)] }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
