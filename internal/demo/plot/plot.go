package plot

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Point is one sample: seconds since the start, and a true offset in
// nanoseconds.
type Point struct{ T, NS float64 }

// Series maps a host label to its samples in time order.
type Series map[string][]Point

// Read parses samples, one per line: "SECONDS HOST OFFSET_NS" separated by
// blanks. Blank lines and lines starting with # are skipped; any other
// malformed line is an error naming its line number.
func Read(r io.Reader) (Series, error) {
	s := Series{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %q: want SECONDS HOST OFFSET_NS", n, line)
		}
		t, err1 := strconv.ParseFloat(f[0], 64)
		ns, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || math.IsNaN(t) || math.IsInf(t, 0) || math.IsNaN(ns) || math.IsInf(ns, 0) {
			return nil, fmt.Errorf("line %d: %q: seconds and offset must be finite numbers", n, line)
		}
		s[f[1]] = append(s[f[1]], Point{t, ns})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("no samples")
	}
	return s, nil
}

// The chart's geometry, in SVG user units.
const (
	width, baseHeight          = 760, 420
	left, right, baseTop, bott = 70, 130, 40, 50
	// floorNS is the bottom of the log scale: 1 µs. An offset below it
	// (a clock right to the microsecond) is drawn on the floor.
	floorNS = 1e3

	// titleSize is the title's font size, titleLine its line height.
	titleSize, titleLine = 15, 19
	// titleEm is a generous average advance of a bold sans-serif
	// character, in ems (DejaVu Sans Bold, a common default, averages
	// about 0.6 on English text): the width of a line of the title is
	// estimated from it, since the viewer's font is not known here.
	titleEm = 0.66
	// titleX is where the title starts; it may use the width to the
	// right edge less the same margin.
	titleX = 16
)

// wrapTitle breaks title at spaces into lines that fit maxWidth (estimated
// with titleEm); a single word longer than that gets a line of its own.
func wrapTitle(title string, maxWidth float64) []string {
	perLine := max(1, int(maxWidth/(titleEm*titleSize)))
	var lines []string
	line := ""
	for _, w := range strings.Fields(title) {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+1+len([]rune(w)) <= perLine:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// Render writes an SVG chart of |offset| over time, one line per host, on
// a logarithmic scale from 1 µs up.
func Render(w io.Writer, title string, s Series) error {
	hosts := make([]string, 0, len(s))
	tmax, vmax := 0.0, floorNS*10
	for h, pts := range s {
		hosts = append(hosts, h)
		for _, p := range pts {
			tmax = math.Max(tmax, p.T)
			vmax = math.Max(vmax, math.Abs(p.NS))
		}
	}
	sort.Strings(hosts)
	if tmax <= 0 {
		tmax = 1
	}
	decTop := math.Ceil(math.Log10(vmax))
	decBot := math.Log10(floorNS)
	// A title too long for one line wraps, and the plot moves down.
	titles := wrapTitle(title, width-2*titleX)
	extra := titleLine * (len(titles) - 1)
	top, height := baseTop+extra, baseHeight+extra
	pw, ph := float64(width-left-right), float64(height-top-bott)
	ftop := float64(top)
	x := func(t float64) float64 { return left + pw*t/tmax }
	y := func(ns float64) float64 {
		v := math.Log10(math.Max(math.Abs(ns), floorNS))
		return ftop + ph*(decTop-v)/(decTop-decBot)
	}

	b := &strings.Builder{}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, line := range titles {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" font-weight="bold">%s</text>`+"\n", titleX, 24+titleLine*i, titleSize, escape(line))
	}
	// Horizontal grid: one line per decade, labelled in readable units.
	for d := decBot; d <= decTop; d++ {
		yy := y(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, yy, left+pw, yy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, yy+4, unit(math.Pow(10, d)))
	}
	// Vertical grid: about eight steps of a round number of seconds.
	step := niceStep(tmax / 8)
	for t := 0.0; t <= tmax+1e-9; t += step {
		xx := x(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", xx, top, xx, ftop+ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", xx, ftop+ph+16, t)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">seconds</text>`+"\n", left+pw/2, height-12)
	fmt.Fprintf(b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">|true offset| (log scale)</text>`+"\n", ftop+ph/2)
	for i, h := range hosts {
		c := palette[i%len(palette)]
		var pts []string
		for _, p := range s[h] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.T), y(p.NS)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		ly := float64(top + 10 + 18*i)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", left+pw+12, ly, left+pw+32, ly, c)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+pw+38, ly+4, escape(h))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// unit renders a power of ten of nanoseconds as 1µs, 10ms, 1s...
func unit(ns float64) string {
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(ns/1e9, 'g', -1, 64) + "s"
	case ns >= 1e6:
		return strconv.FormatFloat(ns/1e6, 'g', -1, 64) + "ms"
	case ns >= 1e3:
		return strconv.FormatFloat(ns/1e3, 'g', -1, 64) + "µs"
	}
	return strconv.FormatFloat(ns, 'g', -1, 64) + "ns"
}

// niceStep rounds a raw grid step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
