package diagram

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
)

//go:embed page.js
var pageJS string

//go:embed page.css
var pageCSS string

// page is what the HTML page's script draws from.
type page struct {
	Title   string `json:"title"`
	Members string `json:"members"`
	Start   string `json:"start"`
	Cols    int    `json:"cols"`
	// Heartbeats and Vector are the view the page opens with.
	Heartbeats bool        `json:"heartbeats"`
	Vector     bool        `json:"vector"`
	Geo        [4]int      `json:"geo"` // marginLeft, marginTop, colWidth, rowHeight
	Kinds      []pageKind  `json:"kinds"`
	Procs      []pageProc  `json:"procs"`
	Groups     []pageGroup `json:"groups"`
	Events     []pageEvent `json:"events"`
	Msgs       []pageMsg   `json:"msgs"`
	Note       string      `json:"note,omitempty"`
}

type pageKind struct {
	Name      string `json:"name"`
	Color     string `json:"color"`
	Heartbeat bool   `json:"hb,omitempty"`
}

type pageProc struct {
	ID      uint32   `json:"id"`
	Label   string   `json:"label"`
	Host    string   `json:"host"`
	Daemon  string   `json:"daemon"`
	Cluster string   `json:"cluster"`
	Files   []string `json:"files"`
	Cut     string   `json:"cut"`
}

type pageGroup struct {
	Proc      int      `json:"p"`
	Col       int      `json:"col"`
	FoldCol   int      `json:"fcol"`
	Heartbeat bool     `json:"hb,omitempty"`
	VC        []uint32 `json:"vc"`
	Events    []int    `json:"ev"`
}

type pageEvent struct {
	Group   int     `json:"g"`
	Ev      string  `json:"ev"`
	Kind    string  `json:"kind,omitempty"`
	Op      string  `json:"op,omitempty"`
	Name    string  `json:"name,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	To      uint32  `json:"to"`
	T       float64 `json:"t"` // ms since the start; -1 unknown
	Lamport string  `json:"lamport"`
	Vector  string  `json:"vector"`
	Desc    string  `json:"desc"`
	Hl      bool    `json:"hl,omitempty"` // highlighted (Diagram.Highlight)
}

type pageMsg struct {
	Send    int    `json:"s"`
	Recv    int    `json:"r"`
	Kind    string `json:"kind"`
	Op      string `json:"op,omitempty"`
	Frame   string `json:"frame"`
	Dropped bool   `json:"dropped,omitempty"`
}

// WriteHTML writes a self-contained page (no network resource: the script,
// style and data are inline) that draws the diagram and lets a reader
// explore it: hover an event or arrow for its fields and times; filter by
// process, message kind and time window; switch labels between Lamport
// and vector times and the x axis between causal order and real time;
// click an event to highlight its happened-before cone (past in blue,
// future in green, concurrent events ringed in orange). The page opens
// with the heartbeats folded away, a time axis and a legend under the
// lines, and Lamport labels placed clear of the arrowheads.
func (d *Diagram) WriteHTML(w io.Writer) error { return d.WriteHTMLOptions(w, Options{}) }

// WriteHTMLOptions is WriteHTML opening with the view opt says: vector
// labels, the heartbeats shown (the page's switches change both).
func (d *Diagram) WriteHTMLOptions(w io.Writer, opt Options) error {
	pg := page{Title: d.Title(), Members: memberList(d.Members), Start: d.Start.UTC().Format("2006-01-02 15:04:05.000000 MST"),
		Cols: d.Cols, Geo: [4]int{marginLeft, marginTop, colWidth, rowHeight}, Heartbeats: opt.Heartbeats, Vector: opt.Vector, Note: d.Note,
		// Empty, never null: the script walks every list (a run of local
		// events alone has no kinds and no messages).
		Kinds: []pageKind{}, Procs: []pageProc{}, Groups: []pageGroup{}, Events: []pageEvent{}, Msgs: []pageMsg{}}
	for _, k := range d.arrowKinds {
		pg.Kinds = append(pg.Kinds, pageKind{k.name, d.kindColor(k.name), IsHeartbeat(k.kind)})
	}
	for i, p := range d.Procs {
		pg.Procs = append(pg.Procs, pageProc{ID: p.ID, Label: d.label(i), Host: p.Host, Daemon: p.Daemon, Cluster: p.Cluster, Files: p.Files, Cut: p.cut()})
	}
	for _, g := range d.Groups {
		pg.Groups = append(pg.Groups, pageGroup{Proc: g.Proc, Col: g.Col, FoldCol: g.FoldCol, Heartbeat: g.Heartbeat, VC: g.VC, Events: g.Events})
	}
	for i, e := range d.Events {
		t := -1.0
		if !e.T.IsZero() {
			t = float64(e.T.Sub(d.Start).Nanoseconds()) / 1e6
		}
		pg.Events = append(pg.Events, pageEvent{Group: e.Group, Ev: e.Ev, Kind: e.Kind, Op: opOf(&d.Events[i].Event), Name: e.Name, Reason: e.Reason, To: e.To, T: t,
			Lamport: d.Label(i, false), Vector: d.Label(i, true), Desc: d.describe(i), Hl: d.Highlight[i]})
	}
	for _, m := range d.Messages {
		pg.Msgs = append(pg.Msgs, pageMsg{m.Send, m.Recv, m.Kind, m.Op, m.Frame, m.Dropped})
	}
	data, err := json.Marshal(pg) // escapes <, > and &: safe inside <script>
	if err != nil {
		return fmt.Errorf("diagram: %w", err)
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
	b.WriteString(html.EscapeString(pg.Title))
	b.WriteString("</title>\n<style>\n")
	b.WriteString(pageCSS)
	b.WriteString("</style></head>\n<body>\n")
	b.WriteString(`<header><h1 id="title"></h1><p id="subtitle"></p>
<form id="controls">
<fieldset><legend>processes</legend><span id="procFilter"></span></fieldset>
<fieldset><legend>message kinds</legend><span id="kindFilter"></span></fieldset>
<fieldset><legend>time window (ms from start)</legend><input id="tmin" type="number" step="any" size="8"> to <input id="tmax" type="number" step="any" size="8"></fieldset>
<fieldset><legend>view</legend><select id="label"><option value="lamport">Lamport times</option><option value="vector">vector times</option></select>
<select id="xaxis"><option value="causal">x: happened-before</option><option value="real">x: real time</option></select>
<label><input type="checkbox" id="heartbeats"> heartbeats</label>
<button type="button" id="clear">clear selection</button></fieldset>
</form></header>
<div id="info">Hover an event or an arrow for its fields and times; click an event for its happened-before cone.</div>
<div id="canvas"></div>
<script type="application/json" id="data">`)
	b.Write(data)
	b.WriteString("</script>\n<script>\n")
	b.WriteString(pageJS)
	b.WriteString("</script>\n</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}
