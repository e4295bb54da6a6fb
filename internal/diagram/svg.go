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
	// Heartbeats draws the heartbeat frames (IsHeartbeat: steady-state
	// traffic) and their points; by default they are folded away, and
	// the columns they took with them, so that the protocol's own steps
	// stand out. The HTML page starts with this view and has a switch.
	Heartbeats bool
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

// palette colours the arrows' kinds (drawKind), in their order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}

// arrowIndex is the index of an arrow kind (drawKind), -1 for none.
func (d *Diagram) arrowIndex(name string) int {
	for i, k := range d.arrowKinds {
		if k.name == name {
			return i
		}
	}
	return -1
}

func (d *Diagram) kindColor(name string) string {
	if i := d.arrowIndex(name); i >= 0 {
		return palette[i%len(palette)]
	}
	return "#444"
}

func colX(col int) float64 { return marginLeft + 24 + float64(col)*colWidth }
func rowY(row int) float64 { return marginTop + 24 + float64(row)*rowHeight }

// view is the diagram as one drawing shows it: heartbeats folded or not.
type view struct {
	d     *Diagram
	fold  bool
	cols  int
	kinds []arrowKind // the arrows' kinds drawn
	// folded counts the heartbeat frames left out, by kind.
	folded map[string]int
}

func (d *Diagram) view(opt Options) *view {
	v := &view{d: d, fold: !opt.Heartbeats, cols: d.Cols, folded: map[string]int{}}
	if v.fold {
		v.cols = d.FoldCols
	}
	for _, k := range d.arrowKinds {
		if !v.fold || !IsHeartbeat(k.kind) {
			v.kinds = append(v.kinds, k)
		}
	}
	if v.fold {
		for _, e := range d.Events {
			if e.Ev == trace.EvSend && IsHeartbeat(e.Kind) {
				v.folded[e.Kind]++
			}
		}
	}
	return v
}

func (v *view) shown(g int) bool { return !v.fold || !v.d.Groups[g].Heartbeat }

func (v *view) shownMsg(m Message) bool { return !v.fold || !IsHeartbeat(m.Kind) }

func (v *view) col(g int) int {
	if v.fold {
		return v.d.Groups[g].FoldCol
	}
	return v.d.Groups[g].Col
}

// size is the drawing's width and height.
func (v *view) size() (float64, float64) {
	w := max(colX(max(v.cols-1, 0))+90, 820)
	_, perRow := v.legendColumns(w)
	h := rowY(max(len(v.d.Procs)-1, 0)) + 40 + axisHeight + legendRow*float64((len(v.kinds)+perRow-1)/perRow+2) + 20
	return w, h
}

// legendColumns is the width of the legend's columns (the longest kind's
// name and its line) and how many fit in a row of the drawing's width.
func (v *view) legendColumns(width float64) (float64, int) {
	colw := 150.0
	for _, k := range v.kinds {
		colw = max(colw, 30+textWidth(k.name, 11)+16)
	}
	return colw, max(int((width-12)/colw), 1)
}

func (v *view) at(event int) (float64, float64) {
	g := v.d.Events[event].Group
	return colX(v.col(g)), rowY(v.d.Groups[g].Proc)
}

func esc(s string) string { return html.EscapeString(s) }

// f formats a coordinate: fixed precision, so the output is deterministic
// and compact.
func f(v float64) string { return fmt.Sprintf("%.1f", v) }

// WriteSVG draws the diagram as a standalone SVG document. The same
// diagram and options always give the same bytes.
func (d *Diagram) WriteSVG(w io.Writer, opt Options) error {
	v := d.view(opt)
	var b strings.Builder
	width, height := v.size()
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="11">`+"\n",
		f(width), f(height), f(width), f(height))
	b.WriteString(`<defs>`)
	for i, k := range d.arrowKinds {
		fmt.Fprintf(&b, `<marker id="arrow-%d" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`,
			i, d.kindColor(k.name))
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
		fmt.Fprintf(&b, `<g class="proc" data-id="%d"><line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1.5"/>`,
			pr.ID, marginLeft, f(y), f(width-30), f(y))
		cutY := y + 16
		if first, rest, long := wrapLabel(name); long {
			// A label longer than the margin (an NTP peer's address) on
			// two lines, clear of the process's line.
			fmt.Fprintf(&b, `<title>%s</title><text x="12" y="%s" font-weight="bold" font-size="9">%s</text><text x="12" y="%s" font-weight="bold" font-size="9">%s</text>`,
				esc(name), f(y-2), esc(first), f(y+10), esc(rest))
			cutY = y + 22
		} else {
			fmt.Fprintf(&b, `<text x="12" y="%s" font-weight="bold">%s</text>`, f(y+4), esc(name))
		}
		if cut := pr.cut(); cut != "" {
			fmt.Fprintf(&b, `<text x="12" y="%s" fill="#b00" font-size="9">%s</text>`, f(cutY), esc(cut))
		}
		b.WriteString("</g>\n")
	}
	pl := &placer{}
	for _, m := range d.Messages {
		if v.shownMsg(m) {
			pl.heads = append(pl.heads, v.svgMessage(&b, m))
		}
	}
	for gi := range d.Groups {
		if v.shown(gi) {
			v.svgGroup(&b, gi, opt, pl)
		}
	}
	v.svgAxis(&b)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapLabel splits a process label too long for the left margin at its
// first space ("ntp 192.0.2.1:123"); long is false for one that fits.
func wrapLabel(name string) (first, rest string, long bool) {
	if textWidth(name, 11) <= marginLeft-16 {
		return name, "", false
	}
	first, rest, long = strings.Cut(name, " ")
	return first, rest, long
}

// foldNote says which heartbeats a folded drawing leaves out.
func (v *view) foldNote() string {
	n := 0
	var kinds []string
	for _, k := range v.d.Kinds {
		if c := v.folded[k]; c > 0 {
			n += c
			kinds = append(kinds, k)
		}
	}
	return fmt.Sprintf("heartbeats folded away: %d sent (%s), and their receipts", n, strings.Join(kinds, ", "))
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

// ends is where an arrow is drawn: from its send to its receive, or a
// stub where one end is not in the traces; its end stops short of the
// receiving point so that its head does not cover it.
func (v *view) ends(m Message) (x1, y1, x2, y2 float64) {
	d := v.d
	switch {
	case m.Send >= 0 && m.Recv >= 0:
		x1, y1 = v.at(m.Send)
		x2, y2 = v.at(m.Recv)
	case m.Send >= 0: // nobody received it: a short stub towards its receiver
		x1, y1 = v.at(m.Send)
		x2, y2 = x1+0.7*colWidth, y1+0.35*rowHeight
		if to := d.procOf(d.Events[m.Send].Proc, d.Events[m.Send].To); to >= 0 {
			// Towards its receiver's line, a third of the way.
			y2 = y1 + (rowY(to)-y1)*0.35
		}
	default: // received, its send not traced: a stub from the left
		x2, y2 = v.at(m.Recv)
		x1, y1 = x2-0.7*colWidth, y2-0.35*rowHeight
	}
	dx, dy := x2-x1, y2-y1
	if l := math.Hypot(dx, dy); l > 8 && m.Recv >= 0 {
		x2, y2 = x2-dx/l*5, y2-dy/l*5
	}
	return
}

// svgMessage draws an arrow and returns its head's outline.
func (v *view) svgMessage(b *strings.Builder, m Message) poly {
	name := drawKind(m.Kind, m.Op)
	color := v.d.kindColor(name)
	dash := ""
	switch {
	case m.Dropped:
		dash = ` stroke-dasharray="4 3"`
	case m.Send < 0 || m.Recv < 0:
		dash = ` stroke-dasharray="2 2"`
	}
	x1, y1, x2, y2 := v.ends(m)
	op := ""
	if m.Op != "" {
		op = fmt.Sprintf(` data-op="%s"`, esc(m.Op))
	}
	fmt.Fprintf(b, `<line class="msg" data-kind="%s"%s data-frame="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.3"%s marker-end="url(#arrow-%d)"><title>%s %s</title></line>`,
		esc(m.Kind), op, esc(m.Frame), f(x1), f(y1), f(x2), f(y2), color, dash, v.d.arrowIndex(name), esc(name), esc(m.Frame))
	if m.Recv < 0 {
		fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s" font-size="12" text-anchor="middle">×</text>`, f(x2+4), f(y2+4), color)
	}
	b.WriteString("\n")
	// The head as drawn: from the rounded coordinates.
	r := func(x float64) float64 { return math.Round(x*10) / 10 }
	return headPoly(r(x1), r(y1), r(x2), r(y2))
}

// svgText writes a label placed at spot sp of point (x, y).
func svgText(b *strings.Builder, class string, x, y float64, sp spot, fill, s string) {
	tx, ty := x+sp.dx, y+sp.dy
	fmt.Fprintf(b, `<text class="%s" x="%s" y="%s" font-size="9" fill="%s"`, class, f(tx), f(ty), fill)
	if sp.anchor != "start" {
		fmt.Fprintf(b, ` text-anchor="%s"`, sp.anchor)
	}
	if sp.rot != 0 {
		fmt.Fprintf(b, ` transform="rotate(%g %s %s)"`, sp.rot, f(tx), f(ty))
	}
	fmt.Fprintf(b, `>%s</text>`, esc(s))
}

func (v *view) svgGroup(b *strings.Builder, gi int, opt Options, pl *placer) {
	d := v.d
	g := &d.Groups[gi]
	first := g.Events[0]
	e := &d.Events[first]
	x, y := colX(v.col(gi)), rowY(g.Proc)
	title := d.describe(first)
	if len(g.Events) > 1 {
		title += fmt.Sprintf(" (one logical send, %d frames)", len(g.Events))
	}
	fmt.Fprintf(b, `<g class="ev" data-ev="%s"><title>%s</title>`, e.Ev, esc(title))
	switch e.Ev {
	case trace.EvLocal:
		fmt.Fprintf(b, `<path d="M%s,%s l5,5 l-5,5 l-5,-5 z" fill="#222"/>`, f(x), f(y-5))
		sp, _ := pl.place(x, y, e.Name, 9, nameSpots)
		svgText(b, "name", x, y, sp, "#222", e.Name)
	case trace.EvDrop:
		fmt.Fprintf(b, `<path d="M%s,%s l8,8 m0,-8 l-8,8" stroke="#c00" stroke-width="2"/>`, f(x-4), f(y-4))
		sp, _ := pl.place(x, y, "drop "+e.Reason, 9, nameSpots)
		svgText(b, "name", x, y, sp, "#c00", "drop "+e.Reason)
	default:
		color := d.kindColor(drawKind(e.Kind, opOf(&e.Event)))
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="4" fill="%s"/>`, f(x), f(y), color)
	}
	if l := d.Label(first, opt.Vector); l != "" {
		sp, _ := pl.place(x, y, l, 9, timeSpots)
		svgText(b, "tl", x, y, sp, "#555", l)
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

// svgAxis draws the real-time scale under the lines (each labelled
// column shows the earliest real time of its points, relative to the
// run's start) and the legend: the kinds drawn, and the marks.
func (v *view) svgAxis(b *strings.Builder) {
	d := v.d
	y := rowY(max(len(d.Procs)-1, 0)) + 40
	fmt.Fprintf(b, `<g class="axis"><line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#999"/>`, marginLeft, f(y), f(colX(max(v.cols-1, 0))+20), f(y))
	first := make([]time.Time, v.cols)
	for gi, g := range d.Groups {
		if !v.shown(gi) {
			continue
		}
		for _, i := range g.Events {
			t := d.Events[i].T
			if c := v.col(gi); !t.IsZero() && (first[c].IsZero() || t.Before(first[c])) {
				first[c] = t
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
	width, _ := v.size()
	colw, perRow := v.legendColumns(width)
	b.WriteString(`<g class="legend">`)
	for i, k := range v.kinds {
		x := 12 + float64(i%perRow)*colw
		yy := ly + float64(i/perRow)*legendRow
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/><text x="%s" y="%s">%s</text>`+"\n",
			f(x), f(yy), f(x+24), f(yy), d.kindColor(k.name), f(x+30), f(yy+4), esc(k.name))
	}
	yy := ly + float64((len(v.kinds)+perRow-1)/perRow)*legendRow
	fmt.Fprintf(b, `<path d="M18,%s l5,5 l-5,5 l-5,-5 z" fill="#222"/><text x="30" y="%s">local event</text>`, f(yy-5), f(yy+4))
	fmt.Fprintf(b, `<path d="M158,%s l8,8 m0,-8 l-8,8" stroke="#c00" stroke-width="2"/><text x="172" y="%s">refused frame</text>`, f(yy-4), f(yy+4))
	fmt.Fprintf(b, `<line x1="302" y1="%s" x2="326" y2="%s" stroke="#444" stroke-dasharray="2 2"/><text x="332" y="%s">other end not traced (× nobody received it)</text>`, f(yy), f(yy), f(yy+4))
	if len(v.folded) > 0 {
		fmt.Fprintf(b, `<text x="12" y="%s" fill="#555">%s</text>`, f(yy+legendRow+4), esc(v.foldNote()))
	}
	b.WriteString("</g>\n")
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
