package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
	"github.com/synclab/synclab/pkg/truetime"
)

// truetimeFlags are run's: where the bound is published, and for how
// long readers may trust a page the daemon no longer updates.
func truetimeFlags() []cli.Flag {
	return []cli.Flag{
		truetimeFileFlag(),
		&cli.DurationFlag{Name: "truetime-stale-after", EnvVars: app.Env(name, "truetime-stale-after"), Value: daemon.DefaultTrueTimeStaleAfter,
			Usage: "readers refuse the page when timed has not published for `D` (it publishes every second; at least 2s)"},
	}
}

func truetimeFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "truetime-file", EnvVars: app.Env(name, "truetime-file"),
		Usage: "`PATH` of the shared page applications read the error bound from (pkg/truetime, timed now); default beside the control socket: /run/timed/truetime, or X.truetime for a socket X.sock; none: not published"}
}

// truetimePath resolves --truetime-file: beside the control socket by
// default (/run/timed/truetime beside control.sock, X.truetime beside a
// socket X.sock or X, so that daemons sharing a directory do not share a
// page), "" when turned off.
func truetimePath(c *cli.Context) string {
	switch p := c.String("truetime-file"); p {
	case "none":
		return ""
	case "":
		return defaultTruetimePath(c.String("control"))
	default:
		return p
	}
}

func defaultTruetimePath(control string) string {
	dir, base := filepath.Split(control)
	if base == "control.sock" {
		return filepath.Join(dir, "truetime")
	}
	return filepath.Join(dir, strings.TrimSuffix(base, ".sock")+".truetime")
}

// trueTimeConfig is run's publication of the discipline's bound.
func trueTimeConfig(c *cli.Context) (*daemon.TrueTime, error) {
	path := truetimePath(c)
	if path == "" {
		return nil, nil
	}
	tt := &daemon.TrueTime{Path: path, StaleAfter: c.Duration("truetime-stale-after"), Bound: trueTimeBound}
	if tt.StaleAfter < 2*daemon.TrueTimeInterval {
		return nil, app.Usagef("--truetime-stale-after %v: want at least %v (two publications)", tt.StaleAfter, 2*daemon.TrueTimeInterval)
	}
	return tt, nil
}

// trueTimeBound is the discipline's bound (the NTP client's, or
// Berkeley's), for the page.
func trueTimeBound(c core.Core, now time.Time) (daemon.TrueTimeBound, bool) {
	tc, ok := c.(*timedcore.Core)
	if !ok {
		return daemon.TrueTimeBound{}, false
	}
	w, ok := tc.Window(now)
	return daemon.TrueTimeBound{Earliest: w.Earliest, Latest: w.Latest, GrowthPPM: w.GrowthPPM, Pending: w.Pending, GroupTime: w.GroupTime}, ok
}

func nowCommand() *cli.Command {
	return &cli.Command{
		Name:  "now",
		Usage: "print the interval that holds the true time now, read from timed's shared page as applications read it (pkg/truetime)",
		Description: "Reads the page timed publishes its error bound in (--truetime-file of `timed run`; readable by\n" +
			"root and the --control-group) and prints [earliest, latest]: the true time, or the Berkeley\n" +
			"group's, lies within it at the instant of the read. No request reaches the daemon: this is\n" +
			"what a program using pkg/truetime gets, at the cost of a clock read. A page timed stopped\n" +
			"updating is widened with its age, and refused after --truetime-stale-after of `timed run`.",
		Flags:  []cli.Flag{app.ControlFlag(name), truetimeFileFlag(), app.JSONFlag},
		Action: now,
	}
}

// nowJSON is `timed now --json`.
type nowJSON struct {
	Earliest       time.Time `json:"earliest,omitzero"`
	Latest         time.Time `json:"latest,omitzero"`
	EarliestUnixNS int64     `json:"earliest_unix_ns,omitempty"`
	LatestUnixNS   int64     `json:"latest_unix_ns,omitempty"`
	WidthNS        int64     `json:"width_ns,omitempty"`
	// Clock is CLOCK_REALTIME's reading the interval is for.
	Clock     time.Time `json:"clock,omitzero"`
	AgeNS     int64     `json:"age_ns"`
	GroupTime bool      `json:"group_time"`
	Simulated bool      `json:"simulated"`
	PID       uint64    `json:"pid,omitempty"`
	// Error and Kind say why there is no interval: kind is one of
	// unsynchronised, stale, clock_stepped, version, invalid.
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Path  string `json:"path"`
}

// errorKinds names pkg/truetime's error kinds in --json.
var errorKinds = []struct {
	err  error
	name string
}{
	{truetime.ErrUnsynchronised, "unsynchronised"},
	{truetime.ErrStale, "stale"},
	{truetime.ErrClockStepped, "clock_stepped"},
	{truetime.ErrVersion, "version"},
	{truetime.ErrInvalid, "invalid"},
}

func now(c *cli.Context) error {
	if c.NArg() > 0 {
		return app.Usagef("now takes no arguments (flags: --truetime-file PATH, --json)")
	}
	path := truetimePath(c)
	if path == "" {
		return app.Usagef("--truetime-file none: give the page's path")
	}
	r, err := truetime.Open(path)
	if err != nil {
		return app.ExitError{Code: 1, Msg: err.Error()}
	}
	defer r.Close()
	rd, err := r.Read()
	out := nowJSON{Path: path, AgeNS: int64(rd.Age), GroupTime: rd.Flags&truetime.FlagGroupTime != 0,
		Simulated: rd.Flags&truetime.FlagSimulated != 0, PID: rd.PID}
	if err == nil {
		out.Earliest, out.Latest, out.Clock = rd.Earliest.UTC(), rd.Latest.UTC(), rd.Now.UTC()
		out.EarliestUnixNS, out.LatestUnixNS = rd.Earliest.UnixNano(), rd.Latest.UnixNano()
		out.WidthNS = int64(rd.Latest.Sub(rd.Earliest))
	} else {
		out.Error = err.Error()
		for _, k := range errorKinds {
			if errors.Is(err, k.err) {
				out.Kind = k.name
			}
		}
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if errors.Is(err, truetime.ErrUnsynchronised) {
		return app.ExitError{Code: exitUnsynchronised, Msg: err.Error()}
	}
	if err != nil {
		return app.ExitError{Code: 1, Msg: err.Error()}
	}
	return renderNow(c.App.Writer, rd)
}

func renderNow(w io.Writer, rd truetime.Reading) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	what := "the true time (UTC, as timed's sources keep it)"
	if rd.Flags&truetime.FlagGroupTime != 0 {
		what = "the Berkeley group's time (not UTC)"
	}
	fmt.Fprintf(tw, "Earliest\t: %s\n", rd.Earliest.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(tw, "Latest\t: %s\n", rd.Latest.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(tw, "Width\t: %s; %s lies within, when this clock read %s\n",
		app.FormatDuration(rd.Latest.Sub(rd.Earliest)), what, rd.Now.UTC().Format(time.RFC3339Nano))
	sim := ""
	if rd.Flags&truetime.FlagSimulated != 0 {
		sim = "; --clock sim: the bound is the simulated clock's, mapped onto this clock"
	}
	fmt.Fprintf(tw, "Published\t: %s ago by timed (pid %d), every %s; refused after %s%s\n",
		app.FormatDuration(rd.Age), rd.PID, rd.Interval, rd.StaleAfter, sim)
	return tw.Flush()
}
