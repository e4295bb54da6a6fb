package diagram

import "math"

// The geometry of labels and arrowheads, so that no label is drawn over
// an arrowhead (the page's script does the same with the browser's own
// text boxes).

type pt struct{ x, y float64 }

// poly is a convex polygon, its corners in order.
type poly []pt

// Arrowheads: the marker is the path M0,0 L10,5 L0,10 in a 10x10 box,
// its reference point at (9,5), 7 units wide in stroke widths.
const (
	arrowStroke = 1.3
	markerScale = 7 * arrowStroke / 10 // px per marker unit
)

// headPoly is the arrowhead at the end (x2, y2) of a line from (x1, y1).
func headPoly(x1, y1, x2, y2 float64) poly {
	dx, dy := x2-x1, y2-y1
	l := math.Hypot(dx, dy)
	if l == 0 {
		dx, dy, l = 1, 0, 1
	}
	ux, uy := dx/l, dy/l
	nx, ny := -uy, ux
	tip := pt{x2 + ux*1*markerScale, y2 + uy*1*markerScale}
	bx, by := x2-ux*9*markerScale, y2-uy*9*markerScale
	w := 5 * markerScale
	return poly{tip, {bx + nx*w, by + ny*w}, {bx - nx*w, by - ny*w}}
}

// textWidth estimates the advance of s in a sans-serif font of size px,
// on the generous side: digits and letters 0.6 em, punctuation 0.35 em.
func textWidth(s string, size float64) float64 {
	w := 0.0
	for _, r := range s {
		switch r {
		case '(', ')', ',', '.', ':', ' ', '|', 'i', 'l', '1', 'j', 't', 'f', '-', '_':
			w += 0.42
		case 'm', 'w', 'M', 'W':
			w += 0.85
		default:
			w += 0.62
		}
	}
	return w * size
}

// textPoly is the box of text s drawn at (x, y) (its baseline) with the
// anchor (start, middle, end), rotated by rot degrees about (x, y) as SVG's
// rotate(rot x y) does.
func textPoly(x, y float64, s string, size float64, anchor string, rot float64) poly {
	w := textWidth(s, size)
	left := 0.0
	switch anchor {
	case "middle":
		left = -w / 2
	case "end":
		left = -w
	}
	asc, desc := 0.8*size, 0.25*size
	corners := []pt{{left, -asc}, {left + w, -asc}, {left + w, desc}, {left, desc}}
	sin, cos := math.Sincos(rot * math.Pi / 180)
	out := make(poly, len(corners))
	for i, c := range corners {
		out[i] = pt{x + c.x*cos - c.y*sin, y + c.x*sin + c.y*cos}
	}
	return out
}

// overlap says whether two convex polygons share interior points
// (separating axis theorem; touching edges do not overlap).
func overlap(a, b poly) bool {
	for _, p := range []poly{a, b} {
		for i := range p {
			j := (i + 1) % len(p)
			nx, ny := p[j].y-p[i].y, p[i].x-p[j].x
			amin, amax := project(a, nx, ny)
			bmin, bmax := project(b, nx, ny)
			if amax <= bmin || bmax <= amin {
				return false
			}
		}
	}
	return true
}

func project(p poly, nx, ny float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, c := range p {
		v := c.x*nx + c.y*ny
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// spot is a place a label may go, relative to its point.
type spot struct {
	dx, dy float64
	anchor string
	rot    float64
}

// timeSpots are where an event's time label may go, in order of
// preference: under the point, above it, then beside.
var timeSpots = []spot{
	{0, 16, "middle", 0}, {0, -8, "middle", 0}, {8, 15, "start", 0}, {-8, 15, "end", 0},
	{8, -7, "start", 0}, {-8, -7, "end", 0}, {0, 26, "middle", 0}, {0, -18, "middle", 0},
	{12, 24, "start", 0}, {-12, 24, "end", 0},
}

// nameSpots are where a local event's name (or a refusal's reason) may
// go: slanted up and to the right, or down and to the right.
var nameSpots = []spot{
	{2, -9, "start", -35}, {7, -7, "start", -35}, {2, -15, "start", -35}, {4, 11, "start", 35},
	{9, 9, "start", 35}, {-2, -9, "end", 35}, {-4, 11, "end", -35},
}

// placer places labels clear of the arrowheads (a must) and of the
// labels placed before (if it can).
type placer struct {
	heads  []poly
	placed []poly
}

// place picks the first of spots around (x, y) that covers no arrowhead
// and no earlier label, else the first that covers no arrowhead, else the
// one covering the fewest.
func (pl *placer) place(x, y float64, s string, size float64, spots []spot) (spot, poly) {
	pick, clear, fewest, fewestHits := -1, -1, 0, math.MaxInt
	var polys []poly
	for i, sp := range spots {
		p := textPoly(x+sp.dx, y+sp.dy, s, size, sp.anchor, sp.rot)
		polys = append(polys, p)
		hits := 0
		for _, h := range pl.heads {
			if overlap(p, h) {
				hits++
			}
		}
		if hits < fewestHits {
			fewest, fewestHits = i, hits
		}
		if hits > 0 {
			continue
		}
		if clear < 0 {
			clear = i
		}
		if pl.free(p) {
			pick = i
			break
		}
	}
	switch {
	case pick >= 0:
	case clear >= 0:
		pick = clear
	default:
		pick = fewest
	}
	pl.placed = append(pl.placed, polys[pick])
	return spots[pick], polys[pick]
}

func (pl *placer) free(p poly) bool {
	for _, q := range pl.placed {
		if overlap(p, q) {
			return false
		}
	}
	return true
}
