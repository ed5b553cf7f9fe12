package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func javaVersion(java string) string {
	out, err := exec.Command(java, "-version").CombinedOutput()
	if err != nil {
		return "?"
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first)
}

// write writes results.json, results.md and the charts, and, for a full run, the generated part of
// docs/performance.md.
func (e *env) write(res *Results, readme bool) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files := map[string]string{
		"results.json":    string(b) + "\n",
		"results.md":      markdown(res, ""),
		"convergence.svg": convergenceChart(res),
		"members.svg":     membersChart(res),
		"groups.svg":      groupsChart(res),
		"processing.svg":  processingChart(res),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(e.out, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	fmt.Print(markdown(res, ""))
	if readme {
		return updateDoc(filepath.Join(e.root, perfDoc), markdown(res, perfImgDir))
	}
	return nil
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}

// merge folds the results of a partial run (-only) into an earlier full one: figures, points and
// sections that were measured again replace the old ones; the rest is kept. The date and wall time
// stay the earlier run's; Updated says when and what was measured again.
func merge(old, part *Results) *Results {
	out := *old
	updated := fmt.Sprintf("%s: %s", part.Date, strings.Join(part.Ran, ","))
	if m := part.Machine; m.CPUModel != "" && (m.CPUModel != old.Machine.CPUModel || m.NProc != old.Machine.NProc) {
		// Measured on another machine than the earlier run's: the figures of each run compare the
		// two sides on one machine, but not with the other runs'.
		updated += fmt.Sprintf(" (on %d CPUs, %s)", m.NProc, m.CPUModel)
	}
	out.Updated = append(out.Updated, updated)
	for _, f := range part.Figures {
		if i := slices.IndexFunc(out.Figures, func(g *Figure) bool { return g.ID == f.ID }); i >= 0 {
			out.Figures[i] = f
		} else {
			out.Figures = append(out.Figures, f)
		}
	}
	for _, p := range part.Members {
		if i := slices.IndexFunc(out.Members, func(q *MembersPoint) bool { return q.Variant == p.Variant && q.Members == p.Members }); i >= 0 {
			out.Members[i] = p
		} else {
			out.Members = append(out.Members, p)
		}
	}
	if len(part.Groups) > 0 {
		out.Groups = part.Groups
	}
	if part.Processing != nil {
		var stale func(string) bool
		out.Processing, stale = mergeProcessing(old.Processing, part.Processing)
		// The earlier run's processing errors about figures just replaced go.
		var kept []string
		for _, e := range out.Errors {
			if !stale(e) {
				kept = append(kept, e)
			}
		}
		out.Errors = kept
	}
	if len(part.Micro) > 0 {
		out.Micro, out.Growth = part.Micro, part.Growth
	}
	for _, l := range part.Load {
		if l.Phase == "idle" {
			continue
		}
		if i := slices.IndexFunc(out.Load, func(m PhaseLoad) bool { return m.Phase == l.Phase }); i >= 0 {
			out.Load[i] = l
		} else {
			out.Load = append(out.Load, l)
		}
	}
	out.LoadSamples = append(out.LoadSamples, part.LoadSamples...)
	out.Errors = append(out.Errors, part.Errors...)
	return &out
}

// mergeProcessing folds a processing section into an earlier one. One that measured every scenario
// replaces it; one of some scenarios only (-proc) replaces the runs it measured again (by ID and
// side) and adds the new ones, keeping the rest, and the goals are set again from the runs. stale
// says which of the earlier run's errors were about what was measured again.
func mergeProcessing(old, part *Processing) (*Processing, func(string) bool) {
	if old == nil || len(part.Scenarios) == 0 {
		return part, func(e string) bool { return strings.HasPrefix(e, "processing") }
	}
	out := *old
	out.Runs = append([]*Proc(nil), old.Runs...)
	ids := map[string]bool{}
	for _, p := range part.Runs {
		ids[p.ID] = true
		if i := slices.IndexFunc(out.Runs, func(q *Proc) bool { return q.ID == p.ID && q.Side == p.Side }); i >= 0 {
			out.Runs[i] = p
		} else {
			out.Runs = append(out.Runs, p)
		}
	}
	if part.UncleanRecords > 0 {
		out.UncleanRecords, out.UncleanKeys = part.UncleanRecords, part.UncleanKeys
	}
	if len(old.Scenarios) > 0 {
		// Both partial: what the section holds now is the union.
		for _, s := range part.Scenarios {
			if !slices.Contains(out.Scenarios, s) {
				out.Scenarios = append(out.Scenarios, s)
			}
		}
	}
	out.Goals = goals(&out)
	return &out, func(e string) bool {
		id, _, _ := strings.Cut(strings.TrimPrefix(e, "processing "), " ")
		return strings.HasPrefix(e, "processing ") && ids[id]
	}
}

// rerender writes the Markdown and the charts of an earlier run again, into out (default: the
// directory of the JSON file).
func rerender(path, out string) error {
	res, err := readResults(path)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Dir(path)
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	e := &env{out: out, root: root}
	// The committed results also give docs/performance.md its generated part, so that the page's
	// figures are always those of bench/results/results.json (TestPerfDocIsTheCommittedResults).
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return e.write(res, abs == filepath.Join(root, "bench", "results", "results.json"))
}

const (
	beginMark = "<!-- bench-compare:begin (generated by make bench-compare; edit bench/cmd/benchcompare instead) -->"
	endMark   = "<!-- bench-compare:end -->"
)

// perfDoc is the page whose generated part a full run rewrites, and perfImgDir the charts' directory
// relative to it.
const (
	perfDoc    = "docs/performance.md"
	perfImgDir = "../bench/results/"
)

// updateDoc replaces what lies between the markers in path; without markers it does nothing.
func updateDoc(path, content string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		logf("%s has no bench-compare markers; not updated", path)
		return nil
	}
	s = s[:i+len(beginMark)] + "\n" + content + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

func fmtVal(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case unit == "s":
		if v < 10 {
			return fmt.Sprintf("%.3f", v)
		}
		return fmt.Sprintf("%.2f", v)
	case v >= 100 || (v == math.Trunc(v) && v < 1e6):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtSummary(s *Summary, unit string) string {
	if s == nil {
		return "–"
	}
	u := ""
	if unit != "" {
		u = " " + unit
	}
	if s.N == 1 {
		return fmtVal(s.Median, unit) + u
	}
	return fmt.Sprintf("%s%s (%s–%s)", fmtVal(s.Median, unit), u, fmtVal(s.Min, unit), fmtVal(s.Max, unit))
}

func ratio(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// markdown renders the results; imgDir prefixes the chart paths (for docs/performance.md).
func markdown(res *Results, imgDir string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	// The header says what results.json holds, no more: a run of some phases only (-only) is not a
	// "full run", and a run folded together from parts has no one wall time.
	mode := "full plan, all phases"
	if res.Plan.Quick {
		mode = "quick run (BENCH_QUICK=1: one repetition, short windows — indicative only)"
	} else if len(res.Ran) > 0 && len(res.Ran) < len(phasesOf("")) {
		mode = "full plan, phases " + strings.Join(res.Ran, ", ")
	}
	wall := fmt.Sprintf("%.0f s wall time", res.WallSeconds)
	switch {
	case len(res.Updated) > 0:
		// Phases measured again later (-only) are folded in; one wall time would mean nothing.
		wall = "the other phases in later parts: " + strings.Join(res.Updated, "; ")
	case res.WallSeconds == 0:
		wall = "wall time not recorded"
	}
	w("Measured %s (%s, %s) on %d CPUs (%s), %d MiB; %s; %s; Kafka %s broker, one node, with `group.streams.heartbeat.interval.ms=%s`, `group.streams.session.timeout.ms=%s`, `group.streams.initial.rebalance.delay.ms=%s`, `group.streams.assignment.interval.ms=%s` (integration/kafka/broker.sh). Java runs with default JVM options%s.\n\n",
		res.Date, mode, wall, res.Machine.NProc, res.Machine.CPUModel, res.Machine.MemMiB, res.Machine.Go, res.Machine.Java,
		res.Broker["kafka.version"], res.Broker["group.streams.heartbeat.interval.ms"], res.Broker["group.streams.session.timeout.ms"],
		res.Broker["group.streams.initial.rebalance.delay.ms"], res.Broker["group.streams.assignment.interval.ms"], javaOptsNote(res))
	w("The machine was shared with other work while measuring: 1-minute load average %s (per phase below). Medians and min–max over %d repetitions per side for P1–P3, %d for each point of the sweep and %d for each group size, Go and Kafka Streams alternating.\n\n",
		loadRange(res), res.Plan.Reps, res.Plan.SweepReps, res.Plan.GroupReps)

	w("| phase | figure | Go | Kafka Streams 4.4 | Go/Java | protocol limit | Go/limit |\n|---|---|---|---|---|---|---|\n")
	for _, f := range res.Figures {
		lim := "–"
		if f.Limit != nil {
			lim = fmtVal(f.Limit.Value, f.Unit)
			if f.Unit != "" {
				lim += " " + f.Unit
			}
		}
		w("| %s | %s | %s | %s | %s | %s | %s |\n", f.Phase, f.Name, fmtSummary(f.Go, f.Unit), fmtSummary(f.Java, f.Unit),
			ratio(f.GoOverJava), lim, ratio(f.GoOverLimit))
	}
	w("\nProtocol limits, from the broker's settings and the round trips Go members measured in this run (join %.1f ms, steady heartbeat %.1f ms, medians):\n\n", res.RTT.Join, res.RTT.Steady)
	seen := map[string]bool{}
	for _, f := range res.Figures {
		if f.Limit != nil && !seen[f.Limit.Derivation] {
			seen[f.Limit.Derivation] = true
			w("- %s: %s = %s s\n", f.Name, f.Limit.Derivation, fmtVal(f.Limit.Value, "s"))
		}
	}
	w("\nNotes: P1 is %s; convergence runs from the event until StreamsGroupDescribe (polled every 50 ms) shows the group Stable with the expected members, every member at the target epoch with its assignment equal to its target, and every task owned by exactly one member. P3 and the members-per-process sweep measure CPU from /proc/<pid>/stat over the window, RSS and threads from /proc/<pid>/status at its end, and the broker's CPU above its idle rate, measured for a few seconds before each window's process started (%.4f CPU-s/s at the start of the run).\n\n",
		p1Group(res), res.BrokerIdle)

	if imgDir != "" || true {
		w("![Convergence: Go vs Kafka Streams vs the protocol limit](%sconvergence.svg)\n\n", imgDir)
	}

	if len(res.Members) > 0 {
		w("## Members per process\n\n")
		w("| members | groups | variant | CPU-s per member-hour | RSS MiB per member | RSS MiB | threads | broker CPU-s per member-hour | heartbeat lateness p99 / max (ms) | > 10%% of an interval late | bare timer p99 / max (ms) | bare timer > 10%% late | kgo queue p99 (ms) | run-queue wait (ms/s) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		pts := append([]*MembersPoint(nil), res.Members...)
		sort.SliceStable(pts, func(i, j int) bool {
			if pts[i].Members != pts[j].Members {
				return pts[i].Members < pts[j].Members
			}
			return pts[i].Variant < pts[j].Variant
		})
		for _, p := range pts {
			late, probe, over, probeOver, wire := "–", "–", "–", "–", "–"
			if p.LateP99 != nil {
				late = fmt.Sprintf("%s / %s", fmtVal(p.LateP99.Median, ""), fmtVal(p.LateMax.Max, ""))
			}
			if p.ProbeP99 != nil {
				probe = fmt.Sprintf("%s / %s", fmtVal(p.ProbeP99.Median, ""), fmtVal(p.ProbeMax.Max, ""))
			}
			if p.LateOver != nil {
				over = fmt.Sprintf("%.2f%%", 100*p.LateOver.Max)
			}
			if p.ProbeOver != nil {
				probeOver = fmt.Sprintf("%.2f%%", 100*p.ProbeOver.Max)
			}
			if p.WireP99 != nil {
				wire = fmtVal(p.WireP99.Median, "")
			}
			n := 0
			if p.CPU != nil {
				n = p.CPU.N
			}
			w("| %d | %d | %s (×%d) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p.Members, p.Groups, p.Variant, n,
				fmtSummary(p.CPU, ""), fmtSummary(p.RSSPerMember, ""), fmtSummary(p.RSS, ""), fmtSummary(p.Threads, ""),
				fmtSummary(p.BrokerCPU, ""), late, over, probe, probeOver, wire, fmtSummary(p.RunQueueWait, ""))
		}
		w("\nLateness: a member's next heartbeat is due one interval after the answer to its last one; lateness is from then until the Manager hands it to the transport (its hooks), p99 is the median over repetitions of each window's p99 over every member, max the largest seen; the share late by more than 10%% of the interval is the largest over repetitions. The bare timer is a goroutine in the same process that sleeps a tenth of an interval again and again: how late it wakes is what the machine's load alone costs any timer, with no member code involved. The run-queue wait is how long the process's threads waited for a CPU per second (/proc/<pid>/task/*/schedstat). The kgo queue is the time a heartbeat request then waited in the client until written (kgo's HookBrokerWrite).\n\n")
		w("![CPU and RSS per member against members per process](%smembers.svg)\n\n", imgDir)
	}

	if len(res.Groups) > 0 {
		w("## Group size (all members in one process, %d tasks)\n\n", res.Groups[0].Tasks)
		w("| N | step | members before → after | Go | Kafka Streams | Go/Java | protocol limit | Go/limit | Go in heartbeat intervals |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range res.Groups {
			lim := "–"
			if g.Limit != nil {
				lim = fmtVal(g.Limit.Value, "s") + " s"
			}
			w("| %d | %s | %d → %d | %s | %s | %s | %s | %s | %s |\n", g.Base, g.Step, g.Members, g.Members+g.Add, fmtSummary(g.Go, "s"), fmtSummary(g.Java, "s"),
				ratio(g.GoOverJava), lim, ratio(g.GoOverLimit), ratio(g.Rounds))
		}
		w("\nEach size starts N members, adds one (timed), then 10%% of N more (timed, from N+1). Time runs from the ADD command (Go: Manager.Start; Kafka Streams: KafkaStreams.addStreamThread) until the group converged.\n\n")
		w("![Convergence against the group size](%sgroups.svg)\n\n", imgDir)
	}

	b.WriteString(processingMarkdown(res, imgDir))

	if len(res.Micro) > 0 {
		w("## Tasks per member (one member, no network; `go test -bench . ./bench/micro`)\n\n")
		w("| operation | 10 tasks | 1,000 tasks | 10,000 tasks | time ×, 1k→10k | allocs at 10 / 1k / 10k | growth |\n|---|---|---|---|---|---|---|\n")
		by := map[string]map[int]struct {
			ns     float64
			allocs int64
		}{}
		for _, r := range res.Micro {
			if by[r.Case] == nil {
				by[r.Case] = map[int]struct {
					ns     float64
					allocs int64
				}{}
			}
			by[r.Case][r.Tasks] = struct {
				ns     float64
				allocs int64
			}{r.NsPerOp, r.AllocsPerOp}
		}
		for _, g := range res.Growth {
			m := by[g.Case]
			w("| `%s` | %s | %s | %s | %.1f | %d / %d / %d | %s |\n", g.Case, dur(m[10].ns), dur(m[1000].ns), dur(m[10000].ns),
				g.TimeRatio, m[10].allocs, m[1000].allocs, m[10000].allocs, g.Verdict)
		}
		w("\n")
	}

	if len(res.Load) > 0 {
		w("Load average (1 min) during each phase: ")
		var parts []string
		for _, l := range res.Load {
			parts = append(parts, fmt.Sprintf("%s %.1f (%.1f–%.1f)", l.Phase, l.Mean, l.Min, l.Max))
		}
		w("%s.\n", strings.Join(parts, "; "))
	}
	if len(res.Updated) > 0 {
		w("\nMeasured again since: %s.\n", strings.Join(res.Updated, "; "))
	}
	if len(res.Errors) > 0 {
		w("\nNot measured (errors in this run): %s.\n", strings.Join(res.Errors, "; "))
	}
	return b.String()
}

func javaOptsNote(res *Results) string {
	if res.Machine.JavaOpts == "" || res.Machine.JavaOpts == "[]" {
		return ""
	}
	return " plus " + res.Machine.JavaOpts
}

func loadRange(res *Results) string {
	lo, hi, sum, n := math.Inf(1), 0.0, 0.0, 0
	for _, s := range res.LoadSamples {
		lo, hi = min(lo, s.Load[0]), max(hi, s.Load[0])
		sum += s.Load[0]
		n++
	}
	if n == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f on average, %.1f–%.1f", sum/float64(n), lo, hi)
}

func dur(ns float64) string {
	switch {
	case ns == 0:
		return "–"
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.2f ms", ns/1e6)
}
