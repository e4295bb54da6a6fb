package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/trace"
)

// traceCommand is `X trace`, the same for every binary: a trace is a
// trace whichever daemon (or the simulator) wrote it, and one diagram may
// hold several daemons' hosts.
func traceCommand(name string) *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "work with protocol traces (send, receive and local events with Lamport and vector times)",
		Subcommands: []*cli.Command{{
			Name:      "draw",
			Usage:     "draw the traces of several hosts as a space-time diagram (SVG, HTML page, or ShiViz log)",
			ArgsUsage: "FILE... -o OUT.svg|OUT.html|OUT.shiviz",
			Description: "Reads the trace files (one per host; several per host after restarts) and draws one line per\n" +
				"process and one arrow per message, matched by frame, in happened-before order (every arrow points\n" +
				"right; events in one column are concurrent), labelled with Lamport times (--vector: vector times),\n" +
				"real time as the bottom scale. Heartbeats are folded away (--heartbeats draws them; the page has a\n" +
				"switch); the lines are labelled with the hosts' names from the lab file or --names, else the traces'\n" +
				"hosts where they tell the members apart, else \"member N\". The format follows OUT's extension: .svg for reports, .html for a\n" +
				"self-contained page to explore (hover, filters, happened-before cones), .shiviz for ShiViz\n" +
				"(paste it at ShiViz with its default expression). -o - writes SVG to the standard output.\n" +
				"Example: " + name + " trace draw h1.trace h2.trace h3.trace -o failover.html",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the diagram to `OUT` (.svg, .html, .shiviz; - for SVG on stdout)"},
				&cli.StringFlag{Name: "format", Usage: "svg, html or shiviz, whatever OUT's extension says"},
				&cli.BoolFlag{Name: "vector", Usage: "label events with their vector times instead of their Lamport times"},
				&cli.DurationFlag{Name: "from", Usage: "draw only events at least `D` after the run's first event"},
				&cli.DurationFlag{Name: "until", Usage: "draw only events at most `D` after the run's first event (0: to the end)"},
				&cli.BoolFlag{Name: "from-first-event", Usage: "start at the run's first protocol event (the heartbeats before it left out); --from and --until count from it"},
				&cli.StringFlag{Name: "from-kind", Usage: "start at the first frame of kind `KIND` (a Berkeley round at its first clock_poll); --from and --until count from it"},
				&cli.BoolFlag{Name: "heartbeats", Usage: "draw the heartbeat frames too (folded away by default; the HTML page opens with them shown)"},
				&cli.StringFlag{Name: "names", Usage: "name the lines' hosts: `ID=NAME,...` (over the lab file's names)"},
				&cli.StringFlag{Name: "lab-file", EnvVars: []string{"SYNCLAB_LAB_FILE"}, Value: DefaultLabFile,
					Usage: "take the hosts' names from the lab file `PATH` (not there: not used, unless named; \"\": none)"},
			},
			Action: drawAction,
		}, traceCheckCommand(name), {
			Name:      "start",
			Usage:     "start recording a trace of the running daemon (vector timestamps go on the wire while it records)",
			ArgsUsage: "[FILE]",
			Description: "Creates FILE (never overwrites one) and records every frame the daemon sends, receives or refuses\n" +
				"and every event of its protocol, with Lamport and vector times, until `" + name + " trace stop` (or the\n" +
				"daemon stops). Without FILE, a new file in the state directory's traces/ (the only place a member of\n" +
				"the control group who is not root may name). Draw the files of every host with `" + name + " trace draw`.",
			Flags: []cli.Flag{ControlFlag(name), JSONFlag,
				&cli.Int64Flag{Name: "max-bytes", Usage: fmt.Sprintf("bound the file to `N` bytes (0: %d); past it, events are counted, not written", trace.DefaultMaxBytes)}},
			Action: func(c *cli.Context) error {
				if c.NArg() > 1 {
					if strings.HasPrefix(c.Args().Get(1), "-") {
						return Usagef("trace start: flags go before FILE: %s trace start %s %s", c.App.Name, strings.Join(c.Args().Tail(), " "), c.Args().First())
					}
					return Usagef("trace start takes at most one FILE (got %q)", c.Args().Slice())
				}
				req := daemon.TraceRequest{File: c.Args().First(), MaxBytes: c.Int64("max-bytes")}
				if req.MaxBytes < 0 {
					return Usagef("trace start: --max-bytes %d: want a positive bound (0: the default)", req.MaxBytes)
				}
				if req.File != "" {
					abs, err := filepath.Abs(req.File)
					if err != nil {
						return err
					}
					req.File = abs
				}
				return traceRequest(c, http.MethodPost, "/v1/trace/start", req)
			},
		}, {
			Name:  "stop",
			Usage: "stop recording the trace and close its file",
			Flags: []cli.Flag{ControlFlag(name), JSONFlag},
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return Usagef("trace stop takes no arguments")
				}
				return traceRequest(c, http.MethodPost, "/v1/trace/stop", struct{}{})
			},
		}, {
			Name:  "status",
			Usage: "say whether a trace is being recorded, to which file, and how much of it",
			Flags: []cli.Flag{ControlFlag(name), JSONFlag},
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return Usagef("trace status takes no arguments")
				}
				return traceRequest(c, http.MethodGet, "/v1/trace", nil)
			},
		}},
	}
}

// traceRequest sends one of the trace commands to the daemon and prints
// what it answers.
func traceRequest(c *cli.Context, method, path string, body any) error {
	ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
	defer cancel()
	var st daemon.TraceStatus
	var err error
	if method == http.MethodGet {
		err = Client(c).Get(ctx, path, &st)
	} else {
		err = Client(c).Post(ctx, path, body, &st)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		raw, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return PrintJSON(c.App.Writer, raw)
	}
	fmt.Fprintln(c.App.Writer, traceLine(st, strings.HasSuffix(path, "/stop")))
	return nil
}

// traceLine says what a TraceStatus means, in one line.
func traceLine(st daemon.TraceStatus, stopped bool) string {
	if !st.On && !stopped {
		return "tracing off"
	}
	what := "tracing to"
	if stopped {
		what = "stopped tracing to"
	}
	line := fmt.Sprintf("%s %s: %d of at most %d bytes", what, st.File, st.Bytes, st.MaxBytes)
	if st.Dropped > 0 {
		line += fmt.Sprintf(", the bound left out %d events", st.Dropped)
	}
	if st.Error != "" {
		line += ", WRITE FAILED: " + st.Error
	}
	return line
}

// traceWindowLine is `status`'s line of the trace window the members'
// live pages ask for.
func traceWindowLine(w *daemon.TraceWindowStatus) string {
	var by []string
	for _, m := range slices.Sorted(maps.Keys(w.AskedAgoNs)) {
		by = append(by, fmt.Sprintf("member %d %s ago", m, agoText(time.Duration(w.AskedAgoNs[m]))))
	}
	line := fmt.Sprintf("on since %s for the members' live pages (in memory; off %v after the last ask), asked by %s; %s sent, %s held",
		w.Since.Local().Format("15:04:05"), daemon.TraceWindowIdle, strings.Join(by, ", "), Plural(w.Chunks, "chunk"), Plural(uint64(w.Lines), "event"))
	if w.Dropped > 0 {
		line += fmt.Sprintf(", %d older ones dropped (the window is bounded)", w.Dropped)
	}
	return line
}

// traceAskLine is `status`'s line of this member's last ask for member
// a.Member's trace window.
func traceAskLine(a daemon.TraceAsk) string {
	ago := agoText(time.Duration(a.AgoNs))
	if a.Answered {
		return fmt.Sprintf("member %d answered %s ago", a.Member, ago)
	}
	return fmt.Sprintf("member %d NOT ANSWERING TRACES (asked %s ago): %s", a.Member, ago, a.Why)
}

// drawFlags are draw's flags, wherever they were written.
type drawFlags struct {
	out, format        string
	vector, heartbeats bool
	fromFirst          bool
	from, until        time.Duration
	names, labFile     string
	fromKind           string
	labFileSet         bool
}

// trailingArgs splits a trace command's arguments into files and the
// flags written after them (`draw FILE... -o OUT`: urfave/cli stops
// reading flags at the first argument): bools are the command's boolean
// flags, valued the ones that take a value (without dashes). set is
// called with each flag found and its value ("" for a boolean).
func trailingArgs(c *cli.Context, bools, valued []string, set func(name, val string) error) ([]string, error) {
	cmd := c.Command.Name
	var paths []string
	args := c.Args().Slice()
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "--":
			return append(paths, args[i+1:]...), nil
		case !strings.HasPrefix(a, "-") || a == "-":
			paths = append(paths, a)
			continue
		case slices.Contains(bools, name) && !hasVal:
			if err := set(name, ""); err != nil {
				return nil, err
			}
			continue
		case !slices.Contains(valued, name):
			return nil, Usagef("trace %s: unknown flag %s", cmd, a)
		}
		if !hasVal {
			if i+1 == len(args) {
				return nil, Usagef("trace %s: %s needs a value", cmd, a)
			}
			i++
			val = args[i]
		}
		if err := set(name, val); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// drawArgs reads draw's files and flags.
func drawArgs(c *cli.Context) ([]string, drawFlags, error) {
	fl := drawFlags{out: c.String("output"), format: c.String("format"), vector: c.Bool("vector"),
		from: c.Duration("from"), until: c.Duration("until"), heartbeats: c.Bool("heartbeats"), fromFirst: c.Bool("from-first-event"),
		names: c.String("names"), labFile: c.String("lab-file"), labFileSet: c.IsSet("lab-file"), fromKind: c.String("from-kind")}
	bools := []string{"vector", "heartbeats", "from-first-event"}
	valued := []string{"o", "output", "format", "from", "until", "names", "lab-file", "from-kind"}
	paths, err := trailingArgs(c, bools, valued, func(name, val string) error {
		switch name {
		case "vector":
			fl.vector = true
		case "heartbeats":
			fl.heartbeats = true
		case "from-first-event":
			fl.fromFirst = true
		case "format":
			fl.format = val
		case "names":
			fl.names = val
		case "from-kind":
			fl.fromKind = val
		case "lab-file":
			fl.labFile, fl.labFileSet = val, true
		case "from", "until":
			d, err := time.ParseDuration(val)
			if err != nil {
				return Usagef("trace draw: --%s %q: %v", name, val, err)
			}
			if name == "from" {
				fl.from = d
			} else {
				fl.until = d
			}
		default:
			fl.out = val
		}
		return nil
	})
	return paths, fl, err
}

func drawAction(c *cli.Context) error {
	paths, fl, err := drawArgs(c)
	if err != nil {
		return err
	}
	out, format := fl.out, fl.format
	if len(paths) == 0 {
		return Usagef("trace draw: name the trace files to draw")
	}
	if out == "" {
		return Usagef("trace draw: say where the diagram goes: -o OUT.svg, OUT.html or OUT.shiviz")
	}
	if format == "" {
		format = strings.TrimPrefix(filepath.Ext(out), ".")
		if out == "-" {
			format = "svg"
		}
	}
	if format != "svg" && format != "html" && format != "shiviz" {
		return Usagef("trace draw: cannot tell the format of %q: give it the extension .svg, .html or .shiviz, or --format", out)
	}
	if fl.from < 0 || fl.until < 0 || (fl.until > 0 && fl.until < fl.from) {
		return Usagef("trace draw: --from %v --until %v is no time window", fl.from, fl.until)
	}
	names, err := hostNames(c, fl)
	if err != nil {
		return err
	}
	files, err := trace.ReadFiles(paths...)
	if err != nil {
		return err
	}
	drawn := files
	if fl.fromFirst {
		drawn = diagram.FromFirstEvent(drawn)
	}
	if fl.fromKind != "" {
		drawn = diagram.FromFirstKind(drawn, fl.fromKind)
	}
	d, err := diagram.Build(diagram.Window(drawn, fl.from, fl.until))
	if err != nil {
		return err
	}
	d.HostNames = names
	opt := diagram.Options{Vector: fl.vector, Heartbeats: fl.heartbeats}
	var b bytes.Buffer
	switch format {
	case "svg":
		err = d.WriteSVG(&b, opt)
	case "html":
		err = d.WriteHTMLOptions(&b, opt)
	case "shiviz":
		err = d.WriteShiViz(&b)
	}
	if err != nil {
		return err
	}
	for _, f := range files {
		switch {
		case f.Dropped > 0:
			fmt.Fprintf(c.App.ErrWriter, "%s: the trace reached its bound; %d later events are not in it\n", f.Name, f.Dropped)
		case f.Partial:
			fmt.Fprintf(c.App.ErrWriter, "%s: its last line was cut short (the writer was killed) and is left out\n", f.Name)
		}
	}
	if out == "-" {
		_, err = c.App.Writer.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %s\n", out, d.Title())
	return nil
}

// hostNames are the names draw labels the lines with: the lab file's
// hosts' names, then --names over them.
func hostNames(c *cli.Context, fl drawFlags) (map[uint32]string, error) {
	names := map[uint32]string{}
	if fl.labFile != "" {
		lab, err := LoadLab(fl.labFile, fl.labFileSet)
		switch {
		case err != nil && fl.labFileSet:
			return nil, err
		case err != nil:
			// The machine's lab file: a mistake in it is for the daemons
			// to refuse; the drawing goes on without its names.
			fmt.Fprintf(c.App.ErrWriter, "trace draw: the hosts' names of the lab file are not used: %v\n", err)
		case lab != nil:
			for _, h := range lab.Hosts {
				if h.Name != "" {
					names[h.ID] = h.Name
				}
			}
		}
	}
	if fl.names != "" {
		for _, kv := range strings.Split(fl.names, ",") {
			if strings.TrimSpace(kv) == "" {
				continue // "1=a,2=b," as a list is often written
			}
			id, name, ok := strings.Cut(strings.TrimSpace(kv), "=")
			n, err := strconv.ParseUint(id, 10, 32)
			if !ok || err != nil || n == 0 || strings.TrimSpace(name) == "" {
				return nil, Usagef("trace draw: --names %q: want ID=NAME,... (ID a member's, NAME not empty)", fl.names)
			}
			names[uint32(n)] = strings.TrimSpace(name)
		}
	}
	return names, nil
}
