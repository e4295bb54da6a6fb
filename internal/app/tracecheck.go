package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/internal/tracecheck"
)

// traceCheckCommand is `X trace check`: the verdicts of a run's
// properties from its traces (internal/tracecheck).
func traceCheckCommand(name string) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "decide from the traces of every host of a run whether the daemon kept its promises (one verdict per property)",
		ArgsUsage: "FILE... [--json] [--clock-bound D] [--draw OUT.html]",
		Description: "Reads the trace files (one per host; several per host after restarts; several daemons may be mixed)\n" +
			"and prints, for each property of each daemon traced, whether it holds, is violated, or cannot be\n" +
			"decided, and why. mutexd: no two holders of one lock at once, fences increasing in grant order,\n" +
			"every grant released or expired; electd: at most one leader per term, and for the majority election\n" +
			"at most one leader at any instant; orderd: one total order at every member, FIFO per sender, no\n" +
			"delivery twice, every delivery sent, causal delivery, one sequencer per term; timed: every\n" +
			"synchronised clock within its published error bound of its reference (on simulated clocks, whose\n" +
			"truth the trace records). A violation is shown as the smallest set of events that proves it\n" +
			"(file:line, the offending pair marked *); --draw writes the diagram cut to it, the pair in red.\n" +
			"Events on different hosts are ordered by the messages between them, else by their times with both\n" +
			"hosts' clock error bounds: 0 for the simulator's true time and for simulated clocks (their true\n" +
			"offsets are recorded), the clock's own maximum error recorded with each event while it is\n" +
			"synchronised, else the --clock-bound you give; without any, only messages order them, and an overlap\n" +
			"the clocks cannot settle is \"cannot decide\", never a violation.\n" +
			"Example: " + name + " trace check h1.trace h2.trace h3.trace --clock-bound 2ms --draw why.html",
		Flags: []cli.Flag{JSONFlag,
			&cli.StringFlag{Name: "clock-bound", Usage: "assume every host's clock whose trace records no bound is within `D` of true time (e.g. 1ms; 0 for hosts sharing one machine's clock); unset: unknown"},
			&cli.StringFlag{Name: "draw", Usage: "write the diagram of each violation, cut to its events, to `OUT.html` (OUT-2.html... for more)"},
		},
		Action: traceCheckAction,
	}
}

// checkExits are `trace check`'s exit statuses for the manual.
func checkExits() []Exit {
	return []Exit{
		{"0", "every property checked holds"},
		{fmt.Sprint(tracecheck.ExitUndecided), "no property is violated, but one cannot be decided from the traces (the verdict says what is missing: a clock bound, a trace, the end of a lease)"},
		{fmt.Sprint(tracecheck.ExitViolated), "a property is violated: the run broke a promise (the verdict shows the events that prove it)"},
		{fmt.Sprint(tracecheck.ExitUnreadable), "a file cannot be read as a trace, or the files do not make one run (frames sent twice, messages in a cycle: traces of different runs mixed)"},
	}
}

func traceCheckAction(c *cli.Context) error {
	jsonOut, bound, draw := c.Bool("json"), c.String("clock-bound"), c.String("draw")
	paths, err := trailingArgs(c, []string{"json"}, []string{"clock-bound", "draw"}, func(name, val string) error {
		switch name {
		case "json":
			jsonOut = true
		case "clock-bound":
			bound = val
		default:
			draw = val
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return Usagef("trace check: name the trace files of the run (one per host)")
	}
	opt := tracecheck.Options{ClockBound: -1}
	if bound != "" {
		d, err := time.ParseDuration(bound)
		if err != nil || d < 0 {
			return Usagef("trace check: --clock-bound %q: want a duration of 0 or more, such as 500us or 2ms", bound)
		}
		opt.ClockBound = d
	}
	if draw != "" && filepath.Ext(draw) != ".html" {
		return Usagef("trace check: --draw %q: the diagram is an HTML page; name it OUT.html", draw)
	}
	files, err := trace.ReadFiles(paths...)
	if err != nil {
		return ExitError{Code: tracecheck.ExitUnreadable, Msg: err.Error()}
	}
	rep, err := tracecheck.Check(files, opt)
	if err != nil {
		return ExitError{Code: tracecheck.ExitUnreadable, Msg: err.Error()}
	}
	if jsonOut {
		err = rep.WriteJSON(c.App.Writer)
	} else {
		err = rep.WriteText(c.App.Writer)
	}
	if err != nil {
		return err
	}
	if draw != "" {
		for i, res := range rep.Violations() {
			out := draw
			if i > 0 {
				out = strings.TrimSuffix(draw, ".html") + fmt.Sprintf("-%d.html", i+1)
			}
			var b bytes.Buffer
			if err := rep.Draw(&b, res); err != nil {
				return err
			}
			if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "wrote %s: %s %s, its counterexample\n", out, res.Daemon, res.Property)
		}
		if len(rep.Violations()) == 0 {
			fmt.Fprintf(c.App.ErrWriter, "no violation to draw: %s not written\n", draw)
		}
	}
	if code := rep.Exit(); code != 0 {
		return ExitError{Code: code}
	}
	return nil
}
