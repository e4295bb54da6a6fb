package diagram

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/trace"
)

// Options change how a diagram is drawn.
type Options struct {
	// Vector labels events with their vector times instead of their
	// Lamport times.
	Vector bool
}

// Geometry shared by the SVG and the HTML page's script.
const (
	marginLeft = 120
	marginTop  = 76
	colWidth   = 46
	rowHeight  = 86
	axisHeight = 46
	legendRow  = 18
)

// palette colours message kinds, in the order of Diagram.Kinds.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}

func (d *Diagram) kindColor(kind string) string {
	for i, k := range d.Kinds {
		if k == kind {
			return palette[i%len(palette)]
		}
	}
	return "#444"
}

func colX(col int) float64 { return marginLeft + 24 + float64(col)*colWidth }
func rowY(row int) float64 { return marginTop + 24 + float64(row)*rowHeight }

// size is the drawing's width and height.
func (d *Diagram) size() (float64, float64) {
	w := max(colX(max(d.Cols-1, 0))+90, 820)
	h := rowY(max(len(d.Procs)-1, 0)) + 40 + axisHeight + legendRow*float64((len(d.Kinds)+5)/6) + 20
	return w, h
}

func (d *Diagram) at(event int) (float64, float64) {
	g := &d.Groups[d.Events[event].Group]
	return colX(g.Col), rowY(g.Proc)
}

func esc(s string) string { return html.EscapeString(s) }

// f formats a coordinate: fixed precision, so the output is deterministic
// and compact.
func f(v float64) string { return fmt.Sprintf("%.1f", v) }

// WriteSVG draws the diagram as a standalone SVG document. The same
// diagram and options always give the same bytes.
func (d *Diagram) WriteSVG(w io.Writer, opt Options) error {
	var b strings.Builder
	width, height := d.size()
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="11">`+"\n",
		f(width), f(height), f(width), f(height))
	b.WriteString(`<defs>`)
	for _, k := range d.Kinds {
		fmt.Fprintf(&b, `<marker id="arrow-%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`,
			esc(k), d.kindColor(k))
	}
	b.WriteString("</defs>\n")
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="12" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", esc(d.Title()))
	label := "Lamport times"
	if opt.Vector {
		label = "vector times " + esc(memberList(d.Members))
	}
	fmt.Fprintf(&b, `<text x="12" y="40" fill="#555">x: happened-before order (each arrow points right; events in one column are concurrent); labels: %s; bottom: real time</text>`+"\n", label)
	for p, pr := range d.Procs {
		y := rowY(p)
		name := d.label(p)
		fmt.Fprintf(&b, `<g class="proc" data-id="%d"><line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1.5"/><text x="12" y="%s" font-weight="bold">%s</text>`,
			pr.ID, marginLeft, f(y), f(width-30), f(y), f(y+4), esc(name))
		if cut := pr.cut(); cut != "" {
			fmt.Fprintf(&b, `<text x="12" y="%s" fill="#b00" font-size="9">%s</text>`, f(y+16), esc(cut))
		}
		b.WriteString("</g>\n")
	}
	for _, m := range d.Messages {
		d.svgMessage(&b, m)
	}
	for gi := range d.Groups {
		d.svgGroup(&b, gi, opt)
	}
	d.svgAxis(&b, height)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cut says how a process's traces were cut short, if they were.
func (p *Process) cut() string {
	switch {
	case p.Dropped > 0 && p.Partial > 0:
		return fmt.Sprintf("trace cut: %d+ dropped, partial line", p.Dropped)
	case p.Dropped > 0:
		return fmt.Sprintf("trace cut: %d dropped", p.Dropped)
	case p.Partial > 0:
		return "trace cut: writer killed"
	}
	return ""
}

func memberList(ids []uint32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return "over members (" + strings.Join(parts, ",") + ")"
}

func (d *Diagram) svgMessage(b *strings.Builder, m Message) {
	color := d.kindColor(m.Kind)
	dash := ""
	if m.Dropped {
		dash = ` stroke-dasharray="4 3"`
	}
	var x1, y1, x2, y2 float64
	switch {
	case m.Send >= 0 && m.Recv >= 0:
		x1, y1 = d.at(m.Send)
		x2, y2 = d.at(m.Recv)
	case m.Send >= 0: // nobody received it: a short stub towards its receiver
		x1, y1 = d.at(m.Send)
		x2, y2 = x1+0.7*colWidth, y1+0.35*rowHeight
		if to := d.procOf(d.Events[m.Send].Proc, d.Events[m.Send].To); to >= 0 {
			// Towards its receiver's line, a third of the way.
			y2 = y1 + (rowY(to)-y1)*0.35
		}
		dash = ` stroke-dasharray="2 2"`
	default: // received, its send not traced: a stub from the left
		x2, y2 = d.at(m.Recv)
		x1, y1 = x2-0.7*colWidth, y2-0.35*rowHeight
		dash = ` stroke-dasharray="2 2"`
	}
	// Shorten the arrow so its head stops at the receiving dot.
	dx, dy := x2-x1, y2-y1
	if l := math.Hypot(dx, dy); l > 8 && m.Recv >= 0 {
		x2, y2 = x2-dx/l*5, y2-dy/l*5
	}
	fmt.Fprintf(b, `<line class="msg" data-kind="%s" data-frame="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.3"%s marker-end="url(#arrow-%s)"><title>%s %s</title></line>`,
		esc(m.Kind), esc(m.Frame), f(x1), f(y1), f(x2), f(y2), color, dash, esc(m.Kind), esc(m.Kind), esc(m.Frame))
	if m.Recv < 0 {
		fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s" font-size="12" text-anchor="middle">×</text>`, f(x2+4), f(y2+4), color)
	}
	b.WriteString("\n")
}

func (d *Diagram) svgGroup(b *strings.Builder, gi int, opt Options) {
	g := &d.Groups[gi]
	first := g.Events[0]
	e := &d.Events[first]
	x, y := colX(g.Col), rowY(g.Proc)
	title := d.describe(first)
	if len(g.Events) > 1 {
		title += fmt.Sprintf(" (one logical send, %d frames)", len(g.Events))
	}
	fmt.Fprintf(b, `<g class="ev" data-ev="%s"><title>%s</title>`, e.Ev, esc(title))
	switch e.Ev {
	case trace.EvLocal:
		fmt.Fprintf(b, `<path d="M%s,%s l5,5 l-5,5 l-5,-5 z" fill="#222"/>`, f(x), f(y-5))
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="9" fill="#222" transform="rotate(-35 %s %s)">%s</text>`,
			f(x+2), f(y-9), f(x+2), f(y-9), esc(e.Name))
	case trace.EvDrop:
		fmt.Fprintf(b, `<path d="M%s,%s l8,8 m0,-8 l-8,8" stroke="#c00" stroke-width="2"/>`, f(x-4), f(y-4))
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="9" fill="#c00" transform="rotate(-35 %s %s)">%s</text>`,
			f(x+2), f(y-9), f(x+2), f(y-9), esc("drop "+e.Reason))
	default:
		color := d.kindColor(e.Kind)
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="4" fill="%s"/>`, f(x), f(y), color)
	}
	if l := d.Label(first, opt.Vector); l != "" {
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="9" fill="#555" text-anchor="middle">%s</text>`, f(x), f(y+16), esc(l))
	}
	b.WriteString("</g>\n")
}

// describe is an event's text for tooltips and ShiViz.
func (d *Diagram) describe(i int) string {
	e := &d.Events[i]
	var s string
	switch e.Ev {
	case trace.EvSend:
		to := "all"
		if e.To != 0 {
			to = fmt.Sprint(e.To)
		}
		s = fmt.Sprintf("send %s to %s", e.Kind, to)
	case trace.EvRecv:
		s = fmt.Sprintf("recv %s from %d", e.Kind, e.From)
	case trace.EvDrop:
		s = "drop " + e.Reason
		if e.Kind != "" {
			s += fmt.Sprintf(" (%s from %d)", e.Kind, e.From)
		}
	default:
		s = e.Name
		if e.Msg != "" {
			s += ": " + e.Msg
		}
	}
	if e.Frame != "" {
		s += " frame " + e.Frame
	}
	if e.Term != 0 {
		s += fmt.Sprintf(" term %d", e.Term)
	}
	for _, kv := range sortedKV(e.Fields) {
		s += " " + kv
	}
	for _, kv := range sortedKV(e.Args) {
		s += " " + kv
	}
	if e.Lamport != 0 {
		s += fmt.Sprintf(" | lamport %d", e.Lamport)
	}
	if len(e.VC) > 0 {
		s += " vc " + e.VC.String(d.Members)
	}
	if !e.T.IsZero() {
		s += " | t " + e.T.UTC().Format("15:04:05.000000")
	}
	return s
}

func sortedKV(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return out
}

// svgAxis draws the real-time scale under the lines: each labelled column
// shows the earliest real time of its events, relative to the run's start.
func (d *Diagram) svgAxis(b *strings.Builder, height float64) {
	y := rowY(max(len(d.Procs)-1, 0)) + 40
	fmt.Fprintf(b, `<g class="axis"><line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#999"/>`, marginLeft, f(y), f(colX(max(d.Cols-1, 0))+20), f(y))
	first := make([]time.Time, d.Cols)
	for _, g := range d.Groups {
		for _, i := range g.Events {
			t := d.Events[i].T
			if !t.IsZero() && (first[g.Col].IsZero() || t.Before(first[g.Col])) {
				first[g.Col] = t
			}
		}
	}
	lastX := math.Inf(-1)
	for c, t := range first {
		x := colX(c)
		if t.IsZero() || x-lastX < 70 {
			continue
		}
		lastX = x
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999"/><text x="%s" y="%s" font-size="9" fill="#555" text-anchor="middle">%s</text>`,
			f(x), f(y), f(x), f(y+4), f(x), f(y+15), esc(relTime(t.Sub(d.Start))))
	}
	fmt.Fprintf(b, `<text x="12" y="%s" font-size="9" fill="#555">real time</text></g>`+"\n", f(y+4))
	ly := y + axisHeight
	for i, k := range d.Kinds {
		x := 12 + float64(i%6)*150
		yy := ly + float64(i/6)*legendRow
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/><text x="%s" y="%s">%s</text>`+"\n",
			f(x), f(yy), f(x+24), f(yy), d.kindColor(k), f(x+30), f(yy+4), esc(k))
	}
	_ = height
}

// relTime prints an offset from the start: +12.345ms, +1.2s.
func relTime(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("+%.3fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("+%.3fs", d.Seconds())
	}
}
