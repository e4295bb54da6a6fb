package diagram

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ShiVizRegex is ShiViz's default log parsing expression, which GoVector
// logs follow and WriteShiViz writes for.
const ShiVizRegex = `(?<host>\S*) (?<clock>{.*})\n(?<event>.*)`

// hostNames names each process for ShiViz: its host's name (HostNames,
// else its trace's host) where that is unique, spaces made underscores,
// else with its daemon (several daemons on one machine) and its member ID.
func (d *Diagram) hostNames() []string {
	names := make([]string, len(d.Procs))
	for i, p := range d.Procs {
		host := p.Host
		if n := d.HostNames[p.ID]; n != "" && p.ID != 0 {
			host = n
		}
		names[i] = cmp.Or(strings.Join(strings.Fields(host), "_"), "member")
	}
	more := []func(p *Process) string{func(p *Process) string { return fmt.Sprintf("-%d", p.ID) }}
	if len(d.Daemons) > 1 {
		more = append([]func(p *Process) string{func(p *Process) string { return "-" + strings.Join(strings.Fields(p.Daemon), "_") }}, more...)
	}
	for _, more := range more {
		count := map[string]int{}
		for _, n := range names {
			count[n]++
		}
		for i := range names {
			if count[names[i]] > 1 {
				names[i] += more(&d.Procs[i])
			}
		}
	}
	return names
}

// WriteShiViz writes the run in the ShiViz log format: for every point of
// the diagram (an event, or the frames of one logical send) a line
// `host {"host":n,...}` and a line with the event's text. The clocks are
// the happened-before vectors rebuilt from the traces, over the hosts'
// names, each host's own entry counting its points one by one as ShiViz
// requires.
func (d *Diagram) WriteShiViz(w io.Writer) error {
	names := d.hostNames()
	order := make([]int, len(d.Groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(d.Groups[a].Col, d.Groups[b].Col), cmp.Compare(d.Groups[a].Proc, d.Groups[b].Proc))
	})
	var b strings.Builder
	for _, gi := range order {
		g := &d.Groups[gi]
		b.WriteString(names[g.Proc])
		b.WriteString(" {")
		first := true
		for p, v := range g.VC {
			if v == 0 {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			name, _ := json.Marshal(names[p])
			b.Write(name)
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(uint64(v), 10))
		}
		b.WriteString("}\n")
		text := d.describe(g.Events[0])
		if len(g.Events) > 1 {
			to := make([]string, len(g.Events))
			for i, e := range g.Events {
				to[i] = fmt.Sprint(d.Events[e].To)
			}
			text += " (one send to " + strings.Join(to, ",") + ")"
		}
		b.WriteString(strings.ReplaceAll(text, "\n", " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
