package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/streamsgroup/streamsgroup/bench/svg"
)

// processingMarkdown renders the processing phase: the runs side by side, the bare consumer, the
// goals, and the load the phase ran under.
func processingMarkdown(res *Results, imgDir string) string {
	pr := res.Processing
	if pr == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Processing (stream runtime vs Kafka Streams)\n\n")
	w("One process with one member (Kafka Streams: one stream thread) per app, two for the num.stream.threads=2 row; %d records (keys of %d distinct values, %d-byte values) over %d partitions, so %d tasks, written before the apps start (a fresh copy for each pair of apps, which both sides read). Throughput runs from the app's first record processed until its committed offsets (read with kadm) reach the input's end; CPU is the process's user + system time from /proc/<pid>/stat over that span; peak RSS is VmHWM from /proc/<pid>/status at its end. %s. Both sides write every count to the store's changelog (no cache) and to an output topic, except count-dsl-cache, where both have the DSL's record cache at Kafka's default size (statestore.cache.max.bytes, 10 MiB) and write a key's latest count once per commit. The DSL's windowed and join workloads (a tumbling and a hopping window count, a session count, a stream-table and a stream-stream join) run with in-memory stores and the cache off on both sides, the tumbling count also on each side's persistent window store (Pebble, RocksDB); the hopping count updates six windows per record. One run per app.\n\n",
		pr.Records, pr.Keys, pr.ValueBytes, pr.Partitions, pr.Partitions, pr.Commit)
	if l := phaseLoad(res, "processing"); l != "" {
		w("Load average (1 min) during this phase: %s, on %d CPUs.\n\n", l, res.Machine.NProc)
	}
	w("| app | Go records/s | Go records per CPU-s | Go peak RSS MiB | Kafka Streams records/s | KS records per CPU-s | KS peak RSS MiB | Go/KS per CPU | Go/KS RSS |\n|---|---|---|---|---|---|---|---|---|\n")
	rows := []string{"map", "count-memory", "count-memory-2t", "handwritten", "pipe", "count-persistent", "count-memory-eos", "count-dsl", "count-dsl-cache"}
	rows = append(append(rows, issue28Workloads...), "restore-memory", "restore-persistent")
	for _, id := range rows {
		g, j := pr.run(id, Go), pr.run(id, Java)
		if g == nil && j == nil {
			continue
		}
		name := id
		for _, p := range pr.Runs {
			if p.ID == id {
				name = p.Name
				break
			}
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, num(g, func(p *Proc) float64 { return p.RecPerSec }),
			num(g, func(p *Proc) float64 { return p.RecPerCPU }), num(g, func(p *Proc) float64 { return p.PeakRSSMiB }),
			num(j, func(p *Proc) float64 { return p.RecPerSec }), num(j, func(p *Proc) float64 { return p.RecPerCPU }),
			num(j, func(p *Proc) float64 { return p.PeakRSSMiB }), quot(g, j, func(p *Proc) float64 { return p.RecPerCPU }),
			quot(g, j, func(p *Proc) float64 { return p.PeakRSSMiB }))
	}
	if line := threadsLine(pr); line != "" {
		w("\n%s\n", line)
	}
	g, j := pr.run("failover", Go), pr.run("failover", Java)
	if g != nil || j != nil {
		sec := func(p *Proc) string {
			if p == nil {
				return "–"
			}
			return fmt.Sprintf("%.3f s", p.Seconds)
		}
		w("| %s | %s | | | %s | | | %s | |\n", "kill -9 → the killed member's tasks processing on the other (2 members, 1 standby replica)", sec(g), sec(j),
			quot(g, j, func(p *Proc) float64 { return p.Seconds }))
	}
	if c := pr.run("consumer", Go); c != nil {
		w("\nThe broker's own limit on this machine: a bare kgo consumer (no group, no processing, no commits) read the same %d records at **%s records/s** (%s records per CPU-s of the consumer, peak RSS %.1f MiB).\n",
			c.Records, fmtVal(c.RecPerSec, ""), num(c, func(p *Proc) float64 { return p.RecPerCPU }), c.PeakRSSMiB)
		if pr.ProduceRate > 0 {
			w("Writing it is slower: one kgo producer (acks=all) wrote the input at %s records/s before the apps started, and every app here writes one or two records per record it reads (output, changelog), so the broker's write path bounds records/s on both sides; records per CPU-s is the fairer comparison.\n", fmtVal(pr.ProduceRate, ""))
		}
	}
	w("\nRestore: a changelog of %d records (distinct keys, 8-byte counts) written before the app starts, over an empty input; from the first restore's start (Go: the end of the member's first OnTasksAssigned, in which the runtime opened the tasks' stores; Kafka Streams: the first StateRestoreListener.onRestoreStart, after its stores are open) to the last record applied; records per CPU-s over the same span. Failover: from the SIGKILL until the survivor processed a record of every task the killed process held (records keep arriving on every partition); the broker notices the crash after the session timeout (%s ms), so that bounds it from below.\n\n",
		pr.Restore, res.Broker["group.streams.session.timeout.ms"])
	b.WriteString(uncleanMarkdown(res))
	// The goals as this code judges the runs (the ones stored with the results were judged by the
	// code of their day, which may have had fewer).
	gls := goals(pr)
	if len(gls) == 0 {
		gls = pr.Goals
	}
	if len(gls) > 0 {
		w("| goal | target | measured | met |\n|---|---|---|---|\n")
		for _, gl := range gls {
			met := "no"
			if gl.Met {
				met = "yes"
			}
			v := fmt.Sprintf("%.2f", gl.Value)
			if gl.Value > 0 && gl.Value < 0.01 {
				v = fineRatio(gl.Value)
			}
			if gl.Detail != "" {
				v += " (" + gl.Detail + ")"
			}
			w("| %s | %s | %s | %s |\n", gl.Name, gl.Target, v, met)
		}
		w("\n")
	}
	var failed []string
	for _, p := range pr.Runs {
		if p.Failure != "" {
			failed = append(failed, fmt.Sprintf("%s %s: %s", p.ID, p.Side, p.Failure))
		}
	}
	if len(failed) > 0 {
		w("Not measured: %s.\n\n", strings.Join(failed, "; "))
	}
	w("![Processing: records per CPU-second and peak RSS, Go vs Kafka Streams](%sprocessing.svg)\n\n", imgDir)
	return b.String()
}

// uncleanMarkdown renders the restore after an unclean stop: both sides' figures in a table of
// their own, since they are counts and times rather than rates.
func uncleanMarkdown(res *Results) string {
	pr := res.Processing
	g, j := pr.run("restore-unclean", Go), pr.run("restore-unclean", Java)
	if g == nil && j == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("Restore after an unclean stop (issue 19): the count app on a persistent store under exactly_once_v2 (commit.interval.ms 100 on both sides) processes %d records over %d distinct keys until its committed offsets reach the input's end; %.0f s later it is killed (SIGKILL: no clean close) and started again on the same state directory with the same application.id. The Go runtime records each committed transaction's changelog position with the store's data and restores only what follows it (read_committed); Kafka Streams (4.4, with enable.transactional.statestores=false, its default) writes no changelog offsets for its stores under exactly_once_v2 while a task runs, only when it closes or suspends the task cleanly, so after a crash it finds stores without offsets, treats their tasks as corrupted, wipes their state and restores the whole changelog. Records restored are the restore listeners' counts; the restore runs from its start (Go: the start of the OnTasksAssigned that handed the member its active tasks, which opens their stores and looks up their changelogs' ends; Kafka Streams: the first onRestoreStart, after the wipe and the stores' opening) until every task is ready to process (its processor initialised, which both sides do once its restore is done); the restarted process waits for the broker to let the killed member's session expire (%s ms) before it is handed its tasks.",
		pr.UncleanRecords, pr.UncleanKeys, uncleanIdle.Seconds(), res.Broker["group.streams.session.timeout.ms"])
	if l := phaseLoad(res, uncleanPhase); l != "" {
		w(" Load average (1 min) during it: %s.", l)
	}
	w("\n\n| restore after an unclean stop, exactly_once_v2 | Go (Pebble) | Kafka Streams (RocksDB) | Go/KS |\n|---|---|---|---|\n")
	cell := func(p *Proc, f func(*Proc) string) string {
		if p == nil {
			return "–"
		}
		return f(p)
	}
	row := func(name string, val func(*Proc) float64, format string, ratio bool) {
		s := func(p *Proc) string { return fmt.Sprintf(format, val(p)) }
		r := "–"
		if ratio && g != nil && j != nil && val(j) > 0 {
			r = fineRatio(val(g) / val(j))
		}
		w("| %s | %s | %s | %s |\n", name, cell(g, s), cell(j, s), r)
	}
	row("records restored", func(p *Proc) float64 { return float64(p.Records) }, "%.0f", true)
	row("restore start → every task ready (s)", func(p *Proc) float64 { return p.Seconds }, "%.3f", true)
	row("exec of the restarted process → every task ready (s)", func(p *Proc) float64 { return p.StartSeconds }, "%.3f", true)
	row("CPU-s of the restore (from the first restore line's arrival)", func(p *Proc) float64 { return p.CPUSeconds }, "%.2f", true)
	row("state directory at the kill (MiB)", func(p *Proc) float64 { return p.StateMiB }, "%.1f", true)
	row("changelog end offsets at the kill (sum, transaction markers included)", func(p *Proc) float64 { return float64(p.ChangelogEnd) }, "%.0f", false)
	row("tasks whose state the restart wiped (its log)", func(p *Proc) float64 { return float64(p.WipedTasks) }, "%.0f", false)
	w("\n")
	return b.String()
}

func num(p *Proc, f func(*Proc) float64) string {
	if p == nil || f(p) == 0 {
		return "–"
	}
	return fmtVal(f(p), "")
}

func quot(a, b *Proc, f func(*Proc) float64) string {
	if a == nil || b == nil || f(b) == 0 {
		return "–"
	}
	return ratio(f(a) / f(b))
}

// phaseLoad is the load of one phase as "mean (min–max)".
func phaseLoad(res *Results, phase string) string {
	for _, l := range res.Load {
		if l.Phase == phase {
			return fmt.Sprintf("%.1f (%.1f–%.1f)", l.Mean, l.Min, l.Max)
		}
	}
	return ""
}

// processingChart: records per CPU-second and peak RSS of each app, Go beside Kafka Streams, and
// the bare consumer's records per CPU-second as a dashed line.
func processingChart(res *Results) string {
	pr := res.Processing
	apps := []struct{ id, label string }{
		{"map", "map"}, {"count-memory", "count, memory"}, {"count-persistent", "count, Pebble / RocksDB"},
		{"count-memory-eos", "count, EOS v2"}, {"restore-memory", "restore, memory"}, {"restore-persistent", "restore, Pebble / RocksDB"},
	}
	const pw, ph, left, top = 420.0, 260.0, 80.0, 60.0
	d := svg.New(left+2*(pw+90)+10, top+ph+120)
	d.Bold(10, 22, "Stream processing: Go runtime vs Kafka Streams "+res.Broker["kafka.version"]+" (one member per process)", svg.Start, 14)
	if pr == nil {
		return d.String()
	}
	load := phaseLoad(res, "processing")
	d.Text(10, 40, fmt.Sprintf("%d records over %d partitions, one run each; load average %s on %d CPUs", pr.Records, pr.Partitions, load, res.Machine.NProc),
		svg.Start, 11, "#444", 0)
	panels := []struct {
		title, y string
		get      func(*Proc) float64
	}{
		{"records per CPU-second (log scale; restores: over the restore)", "records per CPU-s", func(p *Proc) float64 { return p.RecPerCPU }},
		{"peak RSS of the process", "MiB (VmHWM)", func(p *Proc) float64 { return p.PeakRSSMiB }},
	}
	consumer := pr.run("consumer", Go)
	if consumer != nil && consumer.RecPerCPU == 0 {
		consumer = nil // too short to read its CPU
	}
	for i, pn := range panels {
		lo, hi := math.Inf(1), 0.0
		for _, a := range apps {
			for _, side := range []Side{Go, Java} {
				if p := pr.run(a.id, side); p != nil && pn.get(p) > 0 {
					lo, hi = min(lo, pn.get(p)), max(hi, pn.get(p))
				}
			}
		}
		if i == 0 && consumer != nil {
			hi = max(hi, consumer.RecPerCPU)
		}
		if hi == 0 || math.IsNaN(hi) {
			continue
		}
		y := svg.Scale{Min: 0, Max: svg.NiceMax(hi*1.1, 5)}
		if i == 0 {
			// Records per CPU-second differ by an order of magnitude between the sides: a log axis
			// keeps both readable.
			y = svg.Scale{Min: math.Pow(10, math.Floor(math.Log10(lo))), Max: math.Pow(10, math.Ceil(math.Log10(hi*1.05))), Log: true}
		}
		fr := svg.NewFrame(left+float64(i)*(pw+90), top+20, pw, ph, svg.Scale{Min: 0, Max: float64(len(apps))}, y)
		d.Axes(fr, pn.title, pn.y, y.Ticks(5), nil)
		slot := fr.Width / float64(len(apps))
		for k, a := range apps {
			cx := fr.Left + slot*(float64(k)+0.5)
			d.Text(cx, fr.Top+fr.Height+14, a.label, svg.End, 10, "#444", -30)
			for s, side := range []struct {
				side  Side
				color string
			}{{Go, goColor}, {Java, javaColor}} {
				p := pr.run(a.id, side.side)
				bw := slot * 0.34
				x := cx - bw + float64(s)*bw
				if p == nil {
					d.Text(x+bw/2, fr.Top+fr.Height-6, "n/a", svg.Middle, 9, "#888", 0)
					continue
				}
				v := pn.get(p)
				yv := fr.Y.Map(v)
				d.Rect(x, yv, bw-2, fr.Top+fr.Height-yv, svg.Style{Fill: side.color, Opacity: 0.85})
				d.Text(x+bw/2, yv-4, svg.Label(round3(v)), svg.Middle, 9, "#222", 0)
			}
		}
		if i == 0 && consumer != nil {
			ly := fr.Y.Map(consumer.RecPerCPU)
			d.Line(fr.Left, ly, fr.Left+fr.Width, ly, svg.Style{Stroke: limColor, Width: 1.5, Dash: "5 4"})
			d.Text(fr.Left+fr.Width, ly-4, fmt.Sprintf("bare kgo consumer %s/CPU-s", svg.Label(round3(consumer.RecPerCPU))), svg.End, 10, limColor, 0)
		}
	}
	for i, se := range []struct{ name, color string }{{"Go (stream runtime)", goColor}, {"Kafka Streams", javaColor}} {
		x := left + float64(i)*200
		yy := top + ph + 110
		d.Rect(x, yy-10, 14, 10, svg.Style{Fill: se.color})
		d.Text(x+20, yy, se.name, svg.Start, 11, "#222", 0)
	}
	return d.String()
}

// threadsLine compares the count on two stream threads with the count on one, per side: what a
// second thread buys in records/s (and costs per record).
func threadsLine(pr *Processing) string {
	var parts []string
	for _, side := range []Side{Go, Java} {
		one, two := pr.run("count-memory", side), pr.run("count-memory-2t", side)
		if one == nil || two == nil || one.RecPerSec <= 0 || one.RecPerCPU <= 0 {
			continue
		}
		name := map[Side]string{Go: "the runtime", Java: "Kafka Streams"}[side]
		parts = append(parts, fmt.Sprintf("%s %.2f× the records/s of one thread (%.2f× its records per CPU-s)",
			name, two.RecPerSec/one.RecPerSec, two.RecPerCPU/one.RecPerCPU))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Two stream threads against one (the count, in-memory store; one run each, on this machine's CPUs shared with the broker): " +
		strings.Join(parts, "; ") + "."
}
