// Package algdocs writes the documentation's algorithm and kind tables
// from the registries they describe: the mutual-exclusion algorithms
// (pkg/mutex/algorithms: each Factory's kinds, cost and guarantees), the
// elections (pkg/elect/algorithms: each Algorithm's kinds, cost and
// guarantees) and the message kinds (pkg/wire's registry: number, name,
// payload, class, block). The tables live in the guides between
// generated-section markers,
//
//	<!-- generated: NAME (go test ./internal/testkit/algdocs -docs.update) -->
//	...
//	<!-- end generated: NAME -->
//
// and docs/reference/kinds.md is generated whole. The package's test fails
// when a table differs from what the registries say now, and rewrites them
// with -docs.update; an algorithm or a kind added to its registry reaches
// the docs that way, never by hand.
package algdocs

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// Section is one generated part of a page.
type Section struct {
	Path string // from the repository's root
	Name string // the marker's name; "" for a whole generated file
	Text string
}

// Sections returns every generated part of the docs, from the registries
// given (pkg/mutex/algorithms.All, pkg/elect/algorithms.All).
func Sections(mutexes mutex.Registry, elections []elect.Algorithm) []Section {
	return []Section{
		{Path: "docs/mutexd.md", Name: "mutex-algorithms", Text: MutexTable(mutexes)},
		{Path: "docs/electd.md", Name: "elect-algorithms", Text: ElectTable(elections)},
		{Path: "docs/reference/kinds.md", Text: KindsPage()},
	}
}

// Begin and End are the markers around a generated section called name.
func Begin(name string) string {
	return "<!-- generated: " + name + " (go test ./internal/testkit/algdocs -docs.update) -->\n"
}

// End: see Begin.
func End(name string) string { return "<!-- end generated: " + name + " -->\n" }

// Replace returns page with the section called name set to text, and an
// error when the page has no such section (its markers are placed by
// hand, once).
func Replace(page, name, text string) (string, error) {
	b, e := Begin(name), End(name)
	i := strings.Index(page, b)
	j := strings.Index(page, e)
	if i < 0 || j < i {
		return page, fmt.Errorf("no section %q: put the lines %q and %q where it goes", name, strings.TrimSpace(b), strings.TrimSpace(e))
	}
	return page[:i+len(b)] + text + page[j:], nil
}

// kindList shows kinds as their names.
func kindList(kinds []wire.Kind) string {
	var out []string
	for _, k := range kinds {
		out = append(out, "`"+k.String()+"`")
	}
	return strings.Join(out, ", ")
}

// cell escapes a table cell's pipes.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// MutexTable is docs/mutexd.md's generated table: each algorithm's kinds,
// the notes' cost per entry, and its guarantees.
func MutexTable(reg mutex.Registry) string {
	var b strings.Builder
	b.WriteString("\nFrom the algorithms' registrations (`pkg/mutex/algorithms`): the frame kinds\n" +
		"their members send each other ([the kinds](reference/kinds.md)), the notes'\n" +
		"messages per entry with their count at 5 members, the synchronisation\n" +
		"delay, and what each promises (`mutexd status` shows the same).\n\n")
	b.WriteString("| algorithm | kinds | messages per entry (notes) | at N=5 | sync delay (notes) | survives | shared mode |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, f := range reg {
		var survives []string
		for _, s := range f.Guarantees.Survives {
			survives = append(survives, string(s))
		}
		shared := "no"
		if f.Guarantees.Shared {
			shared = "yes"
		}
		delay := f.Cost.Delay
		if delay == "" {
			delay = "-"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", f.Name, kindList(f.Kinds),
			cell(f.Cost.Text), f.Cost.Range(5), cell(delay), strings.Join(survives, ", "), shared)
	}
	b.WriteString("\n")
	return b.String()
}

// ElectTable is docs/electd.md's generated tables: what each election
// survives, then its kinds and the notes' cost per election.
func ElectTable(algs []elect.Algorithm) string {
	var b strings.Builder
	b.WriteString("\n| algorithm | two leaders at once? | a minority side | a leader cut off |\n")
	b.WriteString("| --- | --- | --- | --- |\n")
	// Algorithms with the same guarantees share a row, in table order.
	var rows []elect.Guarantees
	names := map[elect.Guarantees][]string{}
	for _, a := range algs {
		if _, ok := names[a.Guarantees]; !ok {
			rows = append(rows, a.Guarantees)
		}
		names[a.Guarantees] = append(names[a.Guarantees], "`"+a.Name+"`")
	}
	for _, g := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", strings.Join(names[g], ", "), cell(g.TwoLeaders), cell(g.Minority), cell(g.CutOff))
	}
	b.WriteString("\nWhat an election costs as the notes count it, and the frame kinds its\n" +
		"members send each other ([the kinds](reference/kinds.md)), from the\n" +
		"algorithms' registrations (`pkg/elect/algorithms`):\n\n")
	b.WriteString("| algorithm | kinds | messages per election (notes) | at N=4 | at N=15 | quorum |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, a := range algs {
		quorum := "no"
		if a.Quorum {
			quorum = "yes: a minority has no leader"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", a.Name, kindList(a.Kinds), cell(a.Cost.Text), a.Cost.Range(4), a.Cost.Range(15), quorum)
	}
	b.WriteString("\n")
	return b.String()
}

// KindsPage is docs/reference/kinds.md: every message kind by block.
func KindsPage() string {
	var b strings.Builder
	b.WriteString("# Message kinds\n\n" +
		"<!-- Generated from pkg/wire's registry by `go test ./internal/testkit/algdocs -docs.update`: do not edit. -->\n\n" +
		"Every synclab frame names its kind in one byte of its header (byte 3). A kind\n" +
		"is declared once, in `pkg/wire/registry.go`: its number, its name (the label of\n" +
		"`frames_in`/`frames_out` in `status --json`, of the metrics and of traces),\n" +
		"its payload (whose codec and diagram are in `pkg/wire`) and its class:\n" +
		"`message` is a message of the algorithm as the course notes count it,\n" +
		"`heartbeat` is steady-state traffic that is not the price of an operation,\n" +
		"`ack` is the reliability layer's acknowledgement, not counted by the notes.\n" +
		"A frame of a kind a build does not know is dropped and counted as\n" +
		"`unknown_kind`. Numbers are allotted by block, one per family of algorithms;\n" +
		"a number is never reused.\n\n")
	for _, blk := range wire.Blocks {
		fmt.Fprintf(&b, "## %d-%d: %s\n\n", blk.First, blk.Last, blk.Family)
		var rows []wire.KindInfo
		for _, i := range wire.Registered() {
			if i.Kind >= blk.First && i.Kind <= blk.Last {
				rows = append(rows, i)
			}
		}
		if len(rows) == 0 {
			b.WriteString("Free.\n\n")
			continue
		}
		b.WriteString("| number | kind | payload | class |\n| --- | --- | --- | --- |\n")
		for _, i := range rows {
			class := i.Class.String()
			if i.Messages() > 1 {
				class += fmt.Sprintf(" (%d of the notes' messages)", i.Messages())
			}
			fmt.Fprintf(&b, "| %d | `%s` | `wire.%s` | %s |\n", i.Kind, i.Name, reflect.TypeOf(i.New()).Elem().Name(), class)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "255 is never allotted: a later version that needs more kinds can make it an escape to a wider kind.\n")
	return b.String()
}
