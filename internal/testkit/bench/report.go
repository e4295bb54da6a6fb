package bench

import (
	"fmt"
	"io"
	"strings"
)

// Table is a side-by-side report: one row per metric, one column per system
// measured, and the target last, so a reader compares along a line.
//
//	metric            electd (unicast)  etcd 3.4    target
//	failover p99      531.0 ms MISS     1980.2 ms   <= 500 ms
type Table struct {
	Title   string
	Systems []string // column headings, in order
	rows    [][]string
	notes   []string
}

// Row adds a metric. cells holds one value per system (missing trailing
// cells print as "-"; extra ones are an error caught by Write).
func (t *Table) Row(metric, target string, cells ...string) {
	r := make([]string, 0, len(t.Systems)+2)
	r = append(r, "  "+metric) // indented under its section
	r = append(r, cells...)
	for len(r) < len(t.Systems)+1 {
		r = append(r, "-")
	}
	t.rows = append(t.rows, append(r, target))
}

// Section adds a heading row that groups the rows after it.
func (t *Table) Section(name string) { t.rows = append(t.rows, []string{"# " + name}) }

// Note adds a line printed under the table: how a figure was taken.
func (t *Table) Note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Write prints the table, aligned with spaces, then its notes. Section
// headings stand on lines of their own and do not widen the first column.
func (t *Table) Write(w io.Writer) error {
	header := append(append([]string{"metric"}, t.Systems...), "target")
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, t.rows...) {
		if len(r) == 1 {
			continue
		}
		if len(r) != len(header) {
			return fmt.Errorf("bench: table row %q has %d values for %d systems", r[0], len(r)-2, len(t.Systems))
		}
		for c, cell := range r {
			widths[c] = max(widths[c], len(cell))
		}
	}
	var b strings.Builder
	line := func(r []string) {
		var l strings.Builder
		for c, cell := range r {
			l.WriteString(cell)
			if c < len(r)-1 {
				l.WriteString(strings.Repeat(" ", widths[c]-len(cell)+2))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	if t.Title != "" {
		fmt.Fprintf(&b, "%s\n%s\n", t.Title, strings.Repeat("=", len(t.Title)))
	}
	line(header)
	for _, r := range t.rows {
		if len(r) == 1 {
			fmt.Fprintf(&b, "%s\n", r[0])
			continue
		}
		line(r)
	}
	for _, n := range t.notes {
		fmt.Fprintf(&b, "  * %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Verdict appends "ok" or "MISS" to a figure that has a target.
func Verdict(figure string, meets bool) string {
	if meets {
		return figure + " ok"
	}
	return figure + " MISS"
}
