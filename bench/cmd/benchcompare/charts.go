package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/streamsgroup/streamsgroup/bench/svg"
)

const (
	goColor   = "#1f77b4"
	javaColor = "#e4761b"
	limColor  = "#c0392b"
)

// convergenceChart: for scale-out, scale-in and crash, Go's and Kafka Streams' convergence (median
// bar, min–max whisker, every repetition as a dot) against the protocol limit (dashed line).
func convergenceChart(res *Results) string {
	ids := []struct{ id, title string }{
		{"p1.scale_out_join", "scale-out (from the join)"},
		{"p1.scale_in", "graceful scale-in"},
		{"p1.crash", "crash (kill -9)"},
	}
	const pw, ph, left, top = 230.0, 250.0, 70.0, 60.0
	d := svg.New(left+float64(len(ids))*(pw+70)+10, top+ph+95)
	d.Bold(10, 22, fmt.Sprintf("Convergence to a Stable group: Go vs Kafka Streams %s vs the protocol limit", res.Broker["kafka.version"]), svg.Start, 14)
	d.Text(10, 40, fmt.Sprintf("%s; heartbeat %s ms, session %s ms; bars: median, whiskers: min–max, dots: repetitions",
		p1Group(res), res.Broker["group.streams.heartbeat.interval.ms"], res.Broker["group.streams.session.timeout.ms"]), svg.Start, 11, "#444", 0)
	for i, id := range ids {
		fig := findFigure(res, id.id)
		x0 := left + float64(i)*(pw+70)
		if fig == nil {
			continue
		}
		hi := 0.0
		for _, s := range []*Summary{fig.Go, fig.Java} {
			if s != nil {
				hi = max(hi, s.Max)
			}
		}
		if fig.Limit != nil {
			hi = max(hi, fig.Limit.Value)
		}
		y := svg.Scale{Min: 0, Max: svg.NiceMax(hi*1.1, 5)}
		fr := svg.NewFrame(x0, top+20, pw, ph, svg.Scale{Min: 0, Max: 2}, y)
		d.Axes(fr, id.title, "seconds", y.Ticks(5), nil)
		for j, side := range []struct {
			name  string
			s     *Summary
			color string
		}{{"Go", fig.Go, goColor}, {"Kafka Streams", fig.Java, javaColor}} {
			cx := fr.Left + fr.Width*(0.3+0.4*float64(j))
			d.Text(cx, fr.Top+fr.Height+16, side.name, svg.Middle, 12, side.color, 0)
			if side.s == nil {
				d.Text(cx, fr.Top+fr.Height-8, "n/a", svg.Middle, 11, "#888", 0)
				continue
			}
			bw := fr.Width * 0.22
			yMed := fr.Y.Map(side.s.Median)
			d.Rect(cx-bw/2, yMed, bw, fr.Top+fr.Height-yMed, svg.Style{Fill: side.color, Opacity: 0.8})
			d.Line(cx, fr.Y.Map(side.s.Min), cx, fr.Y.Map(side.s.Max), svg.Style{Stroke: "#222", Width: 1.5})
			d.Line(cx-6, fr.Y.Map(side.s.Min), cx+6, fr.Y.Map(side.s.Min), svg.Style{Stroke: "#222", Width: 1.5})
			d.Line(cx-6, fr.Y.Map(side.s.Max), cx+6, fr.Y.Map(side.s.Max), svg.Style{Stroke: "#222", Width: 1.5})
			for k, v := range side.s.Values {
				d.Circle(cx+bw/2+6+float64(k%3)*4, fr.Y.Map(v), 2.2, svg.Style{Fill: "#222", Opacity: 0.6})
			}
			d.Text(cx, min(yMed, fr.Y.Map(side.s.Max))-6, fmt.Sprintf("%.2f s", side.s.Median), svg.Middle, 11, "#222", 0)
		}
		if fig.Limit != nil {
			ly := fr.Y.Map(fig.Limit.Value)
			d.Line(fr.Left, ly, fr.Left+fr.Width, ly, svg.Style{Stroke: limColor, Width: 1.5, Dash: "5 4"})
			d.Text(fr.Left+fr.Width, ly-4, fmt.Sprintf("limit %.2f s", fig.Limit.Value), svg.End, 11, limColor, 0)
		}
		if fig.GoOverJava > 0 {
			d.Text(fr.Left+fr.Width/2, fr.Top+fr.Height+34, fmt.Sprintf("Go/Java %.2f   Go/limit %.2f", fig.GoOverJava, fig.GoOverLimit), svg.Middle, 11, "#444", 0)
		}
	}
	d.Text(10, top+ph+88, "Limits: scale-out = join RTT + one heartbeat interval + ack RTT; scale-in = leave RTT + one interval + ack RTT; crash = session timeout + one interval + RTT.", svg.Start, 10, "#666", 0)
	return d.String()
}

func p1Group(res *Results) string {
	return fmt.Sprintf("%d members (one process each), %d tasks", res.Plan.P1Members, res.Plan.P1Tasks)
}

func findFigure(res *Results, id string) *Figure {
	for _, f := range res.Figures {
		if f.ID == id {
			return f
		}
	}
	return nil
}

// membersChart: CPU-seconds per member-hour and RSS per member against members per process, for Go
// with a shared client, Go with a client per member and Kafka Streams with N stream threads.
func membersChart(res *Results) string {
	series := []struct {
		variant, name, color, dash string
		anchor                     svg.Anchor
		dy                         float64
	}{
		{"go-shared", "Go, one shared client", goColor, "", svg.Start, 14},
		{"go-per-member", "Go, a client per member", "#6baed6", "5 4", svg.End, -6},
		{"java-threads", "Kafka Streams, N stream threads", javaColor, "", svg.Start, -6},
	}
	panels := []struct {
		title, y string
		get      func(*MembersPoint) *Summary
	}{
		{"CPU per member", "CPU-seconds per member-hour", func(p *MembersPoint) *Summary { return p.CPU }},
		{"memory per member", "RSS MiB per member", func(p *MembersPoint) *Summary { return p.RSSPerMember }},
	}
	var sizes []float64
	for _, p := range res.Members {
		if !slices.Contains(sizes, float64(p.Members)) {
			sizes = append(sizes, float64(p.Members))
		}
	}
	slices.Sort(sizes)
	const pw, ph, left, top = 330.0, 260.0, 80.0, 60.0
	d := svg.New(left+2*(pw+90)+10, top+ph+110)
	d.Bold(10, 22, "Steady-state cost per member against members per process (log–log)", svg.Start, 14)
	d.Text(10, 40, fmt.Sprintf("heartbeat %s ms; groups of at most %d members; %.0f s windows; points: median, whiskers: min–max",
		res.Broker["group.streams.heartbeat.interval.ms"], res.Plan.GroupMax, res.Plan.Window.Seconds()), svg.Start, 11, "#444", 0)
	if len(sizes) == 0 {
		return d.String()
	}
	xs := svg.Scale{Min: sizes[0] / 1.6, Max: sizes[len(sizes)-1] * 1.6, Log: true}
	for i, pn := range panels {
		lo, hi := math.Inf(1), 0.0
		for _, p := range res.Members {
			if s := pn.get(p); s != nil && s.Min > 0 {
				lo, hi = min(lo, s.Min), max(hi, s.Max)
			}
		}
		if hi == 0 {
			continue
		}
		ys := svg.Scale{Min: math.Pow(10, math.Floor(math.Log10(lo))), Max: math.Pow(10, math.Ceil(math.Log10(hi))), Log: true}
		fr := svg.NewFrame(left+float64(i)*(pw+90), top+20, pw, ph, xs, ys)
		d.Axes(fr, pn.title, pn.y, ys.Ticks(4), sizes)
		d.Text(fr.Left+fr.Width/2, fr.Top+fr.Height+32, "members per process", svg.Middle, 11, "#444", 0)
		for _, se := range series {
			var px, py []float64
			for _, n := range sizes {
				for _, p := range res.Members {
					s := pn.get(p)
					if p.Variant != se.variant || float64(p.Members) != n || s == nil || s.Median <= 0 {
						continue
					}
					x, y := fr.X.Map(n), fr.Y.Map(s.Median)
					px, py = append(px, x), append(py, y)
					d.Line(x, fr.Y.Map(s.Min), x, fr.Y.Map(s.Max), svg.Style{Stroke: se.color, Width: 1})
					d.Circle(x, y, 3.5, svg.Style{Fill: se.color})
					dx := 6.0
					if se.anchor == svg.End {
						dx = -6
					}
					d.Text(x+dx, y+se.dy, svg.Label(round3(s.Median)), se.anchor, 10, se.color, 0)
				}
			}
			if len(px) > 1 {
				d.Polyline(px, py, svg.Style{Stroke: se.color, Width: 1.8, Dash: se.dash})
			}
		}
	}
	for i, se := range series {
		x := left + float64(i)*230
		y := top + ph + 80
		d.Line(x, y-4, x+28, y-4, svg.Style{Stroke: se.color, Width: 2, Dash: se.dash})
		d.Text(x+34, y, se.name, svg.Start, 11, "#222", 0)
	}
	return d.String()
}

func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// groupsChart: convergence after a scale-out by one member and by 10% against the group size,
// Go and Kafka Streams, with the protocol limit (log–log).
func groupsChart(res *Results) string {
	const pw, ph, left, top = 420.0, 260.0, 80.0, 75.0
	d := svg.New(left+pw+230, top+ph+80)
	tasks := int32(0)
	if len(res.Groups) > 0 {
		tasks = res.Groups[0].Tasks
	}
	d.Bold(10, 22, fmt.Sprintf("Convergence after a scale-out against the group size (%d tasks, log–log)", tasks), svg.Start, 14)
	d.Text(10, 40, "All members in one process (Go: Managers on one client; Kafka Streams: stream threads). From the ADD until", svg.Start, 11, "#444", 0)
	d.Text(10, 54, "the group is Stable and reconciled; +10% starts from N+1. Points: median, whiskers: min–max.", svg.Start, 11, "#444", 0)
	var sizes []float64
	lo, hi := math.Inf(1), 0.0
	var limit float64
	for _, g := range res.Groups {
		if !slices.Contains(sizes, float64(g.Base)) {
			sizes = append(sizes, float64(g.Base))
		}
		for _, s := range []*Summary{g.Go, g.Java} {
			if s != nil {
				lo, hi = min(lo, s.Min), max(hi, s.Max)
			}
		}
		if g.Limit != nil {
			limit = g.Limit.Value
		}
	}
	if len(sizes) == 0 || hi == 0 {
		return d.String()
	}
	slices.Sort(sizes)
	if limit > 0 {
		lo, hi = min(lo, limit), max(hi, limit)
	}
	xs := svg.Scale{Min: sizes[0] / 1.6, Max: sizes[len(sizes)-1] * 1.6, Log: true}
	ys := svg.Scale{Min: math.Pow(10, math.Floor(math.Log10(lo))), Max: math.Pow(10, math.Ceil(math.Log10(hi))), Log: true}
	fr := svg.NewFrame(left, top+20, pw, ph, xs, ys)
	d.Axes(fr, "", "seconds", ys.Ticks(4), sizes)
	d.Text(fr.Left+fr.Width/2, fr.Top+fr.Height+32, "members in the group (N)", svg.Middle, 11, "#444", 0)
	series := []struct {
		name, color, dash, step string
		get                     func(*GroupPoint) *Summary
	}{
		{"Go, +1 member", goColor, "", "+1", func(g *GroupPoint) *Summary { return g.Go }},
		{"Go, +10%", goColor, "5 4", "+10%", func(g *GroupPoint) *Summary { return g.Go }},
		{"Kafka Streams, +1 thread", javaColor, "", "+1", func(g *GroupPoint) *Summary { return g.Java }},
		{"Kafka Streams, +10%", javaColor, "5 4", "+10%", func(g *GroupPoint) *Summary { return g.Java }},
	}
	for i, se := range series {
		var px, py []float64
		for _, g := range res.Groups {
			s := se.get(g)
			if g.Step != se.step || s == nil {
				continue
			}
			x, y := fr.X.Map(float64(g.Base))+float64(i-1)*5, fr.Y.Map(s.Median)
			px, py = append(px, x), append(py, y)
			d.Line(x, fr.Y.Map(s.Min), x, fr.Y.Map(s.Max), svg.Style{Stroke: se.color, Width: 1})
			d.Circle(x, y, 3.5, svg.Style{Fill: se.color})
		}
		if len(px) > 1 {
			d.Polyline(px, py, svg.Style{Stroke: se.color, Width: 1.8, Dash: se.dash})
		}
		ly := top + 40 + float64(i)*20
		d.Line(left+pw+20, ly-4, left+pw+48, ly-4, svg.Style{Stroke: se.color, Width: 2, Dash: se.dash})
		d.Text(left+pw+54, ly, se.name, svg.Start, 11, "#222", 0)
	}
	if limit > 0 {
		ly := fr.Y.Map(limit)
		d.Line(fr.Left, ly, fr.Left+fr.Width, ly, svg.Style{Stroke: limColor, Width: 1.5, Dash: "5 4"})
		d.Text(fr.Left+fr.Width, ly-4, fmt.Sprintf("limit %.2f s", limit), svg.End, 11, limColor, 0)
		d.Line(left+pw+20, top+40+4*20-4, left+pw+48, top+40+4*20-4, svg.Style{Stroke: limColor, Width: 1.5, Dash: "5 4"})
		d.Text(left+pw+54, top+40+4*20, "protocol limit", svg.Start, 11, "#222", 0)
	}
	return d.String()
}
