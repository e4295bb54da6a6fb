package tracecheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/trace"
)

// WriteText prints the verdicts for people: one block per property, the
// counterexample's events under a violation, the notes last.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%s %s: %s: %s\n", res.Daemon, clusterName(res.Cluster), res.Property, strings.ToUpper(string(res.Verdict)))
		fmt.Fprintf(&b, "  promise: %s\n", res.Promise)
		fmt.Fprintf(&b, "  %s\n", res.Why)
		if res.ClockBound != "" {
			fmt.Fprintf(&b, "  clock error bound: %s\n", res.ClockBound)
		}
		if len(res.Events) > 0 {
			what := "counterexample (* the offending pair)"
			if res.Verdict != Violated {
				what = "left undecided (* the pair the clocks cannot order)"
			}
			fmt.Fprintf(&b, "  %s:\n", what)
			for _, e := range res.Events {
				mark := " "
				if e.Offending {
					mark = "*"
				}
				fmt.Fprintf(&b, "  %s %s:%d  member %d (%s)  %s  %s\n", mark, e.File, e.Line, e.ID, e.Host, stamp(e.T), e.What)
			}
		}
	}
	if len(r.Results) == 0 {
		b.WriteString("no property checked\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func clusterName(c string) string {
	if c == "" {
		return "(no cluster name)"
	}
	return fmt.Sprintf("cluster %q", c)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "(no time)"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

// Draw writes, as a self-contained HTML page (internal/diagram), the run
// cut to res's counterexample: every host's events from a little before
// its first event to a little after its last, the offending pair
// highlighted and the verdict shown above the diagram.
func (r *Report) Draw(w io.Writer, res Result) error {
	if len(res.Events) == 0 {
		return fmt.Errorf("tracecheck: %s %s has no events to draw", res.Daemon, res.Property)
	}
	var lo, hi time.Time
	keep := map[string]bool{}
	hl := map[string]bool{}
	key := func(file string, line int) string { return fmt.Sprintf("%s\x00%d", file, line) }
	for _, e := range res.Events {
		keep[key(e.File, e.Line)] = true
		if e.Offending {
			hl[key(e.File, e.Line)] = true
		}
		if e.T.IsZero() {
			continue
		}
		if lo.IsZero() || e.T.Before(lo) {
			lo = e.T
		}
		if e.T.After(hi) {
			hi = e.T
		}
	}
	margin := max(hi.Sub(lo)/10, time.Millisecond)
	lo, hi = lo.Add(-margin), hi.Add(margin)
	var files []*trace.File
	for _, name := range r.Files {
		f := r.run.files[name]
		if f == nil {
			continue
		}
		c := *f
		c.Events = nil
		for _, e := range f.Events {
			if keep[key(f.Name, e.Line)] || (!e.T.IsZero() && !e.T.Before(lo) && !e.T.After(hi)) {
				c.Events = append(c.Events, e)
			}
		}
		if len(c.Events) > 0 {
			files = append(files, &c)
		}
	}
	d, err := diagram.Build(files)
	if err != nil {
		return fmt.Errorf("tracecheck: drawing the counterexample: %w", err)
	}
	d.Highlight = map[int]bool{}
	for i, e := range d.Events {
		if hl[key(e.File, e.Line)] {
			d.Highlight[i] = true
		}
	}
	d.Note = fmt.Sprintf("%s %s: %s %s. %s", res.Daemon, res.Property, strings.ToUpper(string(res.Verdict)), res.Promise, res.Why)
	return d.WriteHTML(w)
}

// Expect compares the violated properties with want (property names, as
// Result.Property): it returns an error naming each violated property not
// in want, with its verdict and counterexample, and each one in want that
// was not violated. A test of a run that must keep its promises expects
// none; a run made to break one expects it.
func (r *Report) Expect(want ...string) error {
	var msgs []string
	violated := map[string]bool{}
	for _, res := range r.Violations() {
		violated[res.Property] = true
		if !slices.Contains(want, res.Property) {
			var b strings.Builder
			one := Report{Results: []Result{res}}
			one.WriteText(&b)
			msgs = append(msgs, "unexpected violation:\n"+b.String())
		}
	}
	for _, w := range want {
		if !violated[w] {
			verdict := "not checked"
			for _, res := range r.Results {
				if res.Property == w {
					verdict = string(res.Verdict) + ": " + res.Why
				}
			}
			msgs = append(msgs, fmt.Sprintf("%s was to be violated, but %s", w, verdict))
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "\n"))
	}
	return nil
}

// CheckRun checks files with no clock bound assumed (the simulator's
// traces need none) and returns Expect's error: what a harness that
// records every run calls (internal/testkit/mutexscript, electscript).
func CheckRun(files []*trace.File, expect ...string) error {
	rep, err := Check(files, Options{ClockBound: -1})
	if err != nil {
		return err
	}
	return rep.Expect(expect...)
}
