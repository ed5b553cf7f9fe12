// Package svg is a small SVG writer for bench-compare's charts: shapes, text, linear and
// logarithmic scales with tick marks, and a plot frame. It has no dependency and keeps the output
// plain (one element per line), so that a chart's diff in git is readable.
package svg

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Doc is an SVG document being written.
type Doc struct {
	W, H float64
	b    strings.Builder
}

// New starts a document of w×h pixels on a white background, text in a sans-serif font.
func New(w, h float64) *Doc {
	d := &Doc{W: w, H: h}
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		f(w), f(h), f(w), f(h))
	d.Rect(0, 0, w, h, Style{Fill: "#ffffff"})
	return d
}

// Style is how a shape is drawn; empty fields are left out.
type Style struct {
	Fill, Stroke string
	Width        float64 // stroke width
	Dash         string  // stroke-dasharray, e.g. "4 3"
	Opacity      float64
}

func (s Style) attrs() string {
	var b strings.Builder
	fill := s.Fill
	if fill == "" {
		fill = "none"
	}
	fmt.Fprintf(&b, ` fill="%s"`, fill)
	if s.Stroke != "" {
		fmt.Fprintf(&b, ` stroke="%s"`, s.Stroke)
		w := s.Width
		if w == 0 {
			w = 1
		}
		fmt.Fprintf(&b, ` stroke-width="%s"`, f(w))
	}
	if s.Dash != "" {
		fmt.Fprintf(&b, ` stroke-dasharray="%s"`, s.Dash)
	}
	if s.Opacity > 0 && s.Opacity < 1 {
		fmt.Fprintf(&b, ` opacity="%s"`, f(s.Opacity))
	}
	return b.String()
}

// f formats a coordinate with at most two decimals.
func f(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// Rect draws a rectangle with its top-left corner at (x, y).
func (d *Doc) Rect(x, y, w, h float64, s Style) {
	fmt.Fprintf(&d.b, `<rect x="%s" y="%s" width="%s" height="%s"%s/>`+"\n", f(x), f(y), f(w), f(h), s.attrs())
}

// Line draws a line.
func (d *Doc) Line(x1, y1, x2, y2 float64, s Style) {
	fmt.Fprintf(&d.b, `<line x1="%s" y1="%s" x2="%s" y2="%s"%s/>`+"\n", f(x1), f(y1), f(x2), f(y2), s.attrs())
}

// Circle draws a circle.
func (d *Doc) Circle(cx, cy, r float64, s Style) {
	fmt.Fprintf(&d.b, `<circle cx="%s" cy="%s" r="%s"%s/>`+"\n", f(cx), f(cy), f(r), s.attrs())
}

// Polyline draws connected points.
func (d *Doc) Polyline(xs, ys []float64, s Style) {
	var pts []string
	for i := range xs {
		pts = append(pts, f(xs[i])+","+f(ys[i]))
	}
	fmt.Fprintf(&d.b, `<polyline points="%s"%s/>`+"\n", strings.Join(pts, " "), s.attrs())
}

// Anchor is where text sits relative to its point.
type Anchor string

// The text anchors.
const (
	Start  Anchor = "start"
	Middle Anchor = "middle"
	End    Anchor = "end"
)

// Text writes text at (x, y) (the baseline), size in pixels (0: the document's 12), rotated by rot
// degrees around its point.
func (d *Doc) Text(x, y float64, text string, anchor Anchor, size float64, color string, rot float64) {
	var extra string
	if size > 0 {
		extra += fmt.Sprintf(` font-size="%s"`, f(size))
	}
	if color != "" {
		extra += fmt.Sprintf(` fill="%s"`, color)
	}
	if rot != 0 {
		extra += fmt.Sprintf(` transform="rotate(%s %s %s)"`, f(rot), f(x), f(y))
	}
	fmt.Fprintf(&d.b, `<text x="%s" y="%s" text-anchor="%s"%s>%s</text>`+"\n", f(x), f(y), anchor, extra, html.EscapeString(text))
}

// Bold writes bold text.
func (d *Doc) Bold(x, y float64, text string, anchor Anchor, size float64) {
	fmt.Fprintf(&d.b, `<text x="%s" y="%s" text-anchor="%s" font-size="%s" font-weight="bold">%s</text>`+"\n",
		f(x), f(y), anchor, f(size), html.EscapeString(text))
}

// String ends the document and returns it.
func (d *Doc) String() string { return d.b.String() + "</svg>\n" }

// Scale maps data values to pixels.
type Scale struct {
	Min, Max float64 // data range
	From, To float64 // pixel range (To < From for a y axis)
	Log      bool
}

// Map returns the pixel of v.
func (s Scale) Map(v float64) float64 {
	a, b, x := s.Min, s.Max, v
	if s.Log {
		a, b, x = math.Log10(a), math.Log10(b), math.Log10(math.Max(v, s.Min/10))
	}
	if b == a {
		return s.From
	}
	return s.From + (x-a)/(b-a)*(s.To-s.From)
}

// Ticks returns tick values: about n "nice" steps for a linear scale, the powers of ten (and 2 and 5
// times them when few) for a log scale.
func (s Scale) Ticks(n int) []float64 {
	if s.Log {
		var out []float64
		lo, hi := math.Floor(math.Log10(s.Min)), math.Ceil(math.Log10(s.Max))
		for e := lo; e <= hi; e++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, e)
				if v >= s.Min*0.999 && v <= s.Max*1.001 && (m == 1 || hi-lo <= 2) {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep((s.Max - s.Min) / float64(n))
	var out []float64
	for v := math.Ceil(s.Min/step) * step; v <= s.Max+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// NiceMax rounds v up to a tick of a linear axis with about n ticks.
func NiceMax(v float64, n int) float64 {
	if v <= 0 {
		return 1
	}
	step := niceStep(v / float64(n))
	return math.Ceil(v/step) * step
}

// Label formats a tick value briefly: 0.5, 2, 1k, 10k.
func Label(v float64) string {
	switch {
	case v >= 1000 && math.Mod(v, 1000) == 0:
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Frame is a plot area with its two scales.
type Frame struct {
	X, Y          Scale
	Left, Top     float64
	Width, Height float64
}

// NewFrame returns a frame whose plot area starts at (left, top) and is w×h pixels.
func NewFrame(left, top, w, h float64, x, y Scale) Frame {
	x.From, x.To = left, left+w
	y.From, y.To = top+h, top
	return Frame{X: x, Y: y, Left: left, Top: top, Width: w, Height: h}
}

// Axes draws the frame's grid, its y ticks and labels, its x axis, a title above and the y axis's
// name. xTicks nil leaves the x labels to the caller.
func (d *Doc) Axes(fr Frame, title, yName string, yTicks, xTicks []float64) {
	grid := Style{Stroke: "#e3e3e3"}
	for _, v := range yTicks {
		y := fr.Y.Map(v)
		d.Line(fr.Left, y, fr.Left+fr.Width, y, grid)
		d.Text(fr.Left-6, y+4, Label(v), End, 11, "#444", 0)
	}
	for _, v := range xTicks {
		x := fr.X.Map(v)
		d.Line(x, fr.Top, x, fr.Top+fr.Height, grid)
		d.Text(x, fr.Top+fr.Height+15, Label(v), Middle, 11, "#444", 0)
	}
	axis := Style{Stroke: "#555"}
	d.Line(fr.Left, fr.Top+fr.Height, fr.Left+fr.Width, fr.Top+fr.Height, axis)
	d.Line(fr.Left, fr.Top, fr.Left, fr.Top+fr.Height, axis)
	if title != "" {
		d.Bold(fr.Left+fr.Width/2, fr.Top-10, title, Middle, 13)
	}
	if yName != "" {
		d.Text(fr.Left-40, fr.Top+fr.Height/2, yName, Middle, 11, "#444", -90)
	}
}
