package plot

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestReadRejectsMalformedLines(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n", "1 h1\n", "x h1 5\n", "1 h1 NaN\n", "1 h1 5 6\n"} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("read(%q): no error", in)
		}
	}
}

// TestRenderIsWellFormedSVG: the chart parses as XML, has one line per
// host and a legend entry naming it, and titles are escaped.
func TestRenderIsWellFormedSVG(t *testing.T) {
	s, err := Read(strings.NewReader("# t host ns\n0 h1 200000000\n0 h2 -150000000\n1.5 h1 3000\n1.5 h2 -20\n3 h1 -800\n3 h2 400\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Render(&out, `clocks <&> "demo"`, s); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(out.String()))
	lines, texts := 0, map[string]bool{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, out.String())
		}
		switch v := tok.(type) {
		case xml.StartElement:
			if v.Name.Local == "polyline" {
				lines++
			}
		case xml.CharData:
			texts[strings.TrimSpace(string(v))] = true
		}
	}
	if lines != 2 {
		t.Errorf("%d polylines, want one per host (2)", lines)
	}
	for _, want := range []string{"h1", "h2", `clocks <&> "demo"`, "1µs", "1s"} {
		if !texts[want] {
			t.Errorf("no text %q in the chart", want)
		}
	}
}

// TestRenderTitleFits: the demo's long title is wrapped into lines that
// fit the chart's width (as estimated for a bold sans-serif font), every
// word kept, and the plot moved down below them.
func TestRenderTitleFits(t *testing.T) {
	s, err := Read(strings.NewReader("0 h1 2000000\n1 h1 3000\n"))
	if err != nil {
		t.Fatal(err)
	}
	title := "synclab demo: each clock's |offset| from the group's time (client: from its NTP server), and then some more words"
	var out strings.Builder
	if err := Render(&out, title, s); err != nil {
		t.Fatal(err)
	}
	var svg struct {
		Width int `xml:"width,attr"`
		Texts []struct {
			X    float64 `xml:"x,attr"`
			Size string  `xml:"font-size,attr"`
			Text string  `xml:",chardata"`
		} `xml:"text"`
		Rects []struct {
			Y string `xml:"y,attr"`
		} `xml:"rect"`
	}
	if err := xml.Unmarshal([]byte(out.String()), &svg); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, tx := range svg.Texts {
		if tx.Size != "15" {
			continue
		}
		lines = append(lines, tx.Text)
		if w := tx.X + float64(len([]rune(tx.Text)))*titleEm*titleSize; w > float64(svg.Width)-titleX {
			t.Errorf("title line %q ends at %.0f, beyond the chart's %d (less its margin)", tx.Text, w, svg.Width)
		}
	}
	if got := strings.Join(lines, " "); got != title || len(lines) < 2 {
		t.Errorf("title lines %q, want the whole title over at least two lines", lines)
	}
	if y := svg.Rects[len(svg.Rects)-1].Y; y != "59" {
		t.Errorf("plot frame at y=%s, want it moved down one title line (59)", y)
	}
	if got := wrapTitle("short", 700); len(got) != 1 || got[0] != "short" {
		t.Errorf("wrapTitle(short) = %q", got)
	}
	if got := wrapTitle("", 700); len(got) != 1 || got[0] != "" {
		t.Errorf("wrapTitle(empty) = %q", got)
	}
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{0.3: 0.5, 1: 1, 1.1: 2, 3: 5, 7: 10, 12: 20, 0: 1} {
		if got := niceStep(raw); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
}
