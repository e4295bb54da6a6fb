package diagram

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	svgArrowRE = regexp.MustCompile(`<line class="msg"[^>]* x1="([-\d.]+)" y1="([-\d.]+)" x2="([-\d.]+)" y2="([-\d.]+)"[^>]*marker-end`)
	svgLabelRE = regexp.MustCompile(`<text class="(tl|name)" x="([-\d.]+)" y="([-\d.]+)" font-size="9" fill="[^"]*"(?: text-anchor="(\w+)")?(?: transform="rotate\(([-\d.]+) [-\d.]+ [-\d.]+\)")?>([^<]*)</text>`)
)

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// labelClashes reads an SVG drawing back (its arrows' ends, its labels'
// places, anchors and slants) and returns the labels whose box covers an
// arrowhead, and how many labels there are.
func labelClashes(t *testing.T, svg string) (clashes []string, labels int) {
	t.Helper()
	var heads []poly
	for _, m := range svgArrowRE.FindAllStringSubmatch(svg, -1) {
		heads = append(heads, headPoly(num(t, m[1]), num(t, m[2]), num(t, m[3]), num(t, m[4])))
	}
	for _, m := range svgLabelRE.FindAllStringSubmatch(svg, -1) {
		labels++
		anchor, rot := m[4], 0.0
		if anchor == "" {
			anchor = "start"
		}
		if m[5] != "" {
			rot = num(t, m[5])
		}
		text := strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'").Replace(m[6])
		box := textPoly(num(t, m[2]), num(t, m[3]), text, 9, anchor, rot)
		for _, h := range heads {
			if overlap(box, h) {
				clashes = append(clashes, m[0])
				break
			}
		}
	}
	return clashes, labels
}

// TestNoLabelOnAnArrowhead draws the notes' example and every bully
// scenario (Lamport and vector labels, heartbeats folded and shown) and
// checks on the SVG itself that no time label or event name covers an
// arrowhead. Drawn at their first place (under the point, names slanted
// above), labels of these runs do cover some: the check is not vacuous.
func TestNoLabelOnAnArrowhead(t *testing.T) {
	ds := map[string]*Diagram{"notes": notes(t)}
	files, _ := filepath.Glob("../../pkg/elect/bully/testdata/scenarios/*.txt")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		ds[name] = scenario(t, name)
	}
	moved := 0
	for name, d := range ds {
		for _, opt := range []Options{{}, {Vector: true}, {Heartbeats: true}, {Vector: true, Heartbeats: true}} {
			var b bytes.Buffer
			if err := d.WriteSVG(&b, opt); err != nil {
				t.Fatal(err)
			}
			clashes, labels := labelClashes(t, b.String())
			if labels == 0 {
				t.Fatalf("%s %+v: no labels read back from the SVG", name, opt)
			}
			for _, c := range clashes {
				t.Errorf("%s %+v: a label covers an arrowhead: %s", name, opt, c)
			}
			labelled, first := firstSpot(b.String())
			if labelled == 0 {
				t.Fatalf("%s %+v: no point's label read back", name, opt)
			}
			moved += labelled - first
		}
	}
	if moved == 0 {
		t.Error("every label is at its first place: the runs drawn test nothing")
	}
}

// firstSpot counts the points (circles) with a time label, and those
// whose label is at its first place, centred 16 px under the point.
func firstSpot(svg string) (labelled, first int) {
	re := regexp.MustCompile(`<circle cx="([-\d.]+)" cy="([-\d.]+)"[^>]*/><text class="tl" x="([-\d.]+)" y="([-\d.]+)"[^>]*?( text-anchor="middle")?[ >]`)
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		labelled++
		cy, _ := strconv.ParseFloat(m[2], 64)
		y, _ := strconv.ParseFloat(m[4], 64)
		if m[1] == m[3] && y-cy == 16 && m[5] != "" {
			first++
		}
	}
	return labelled, first
}
