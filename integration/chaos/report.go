package chaos

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteText prints the report for humans: the seed and how to run it again, recovery per fault
// type, the S1 windows, the process extremes, and the verdicts with their violations.
func (r *Report) WriteText(w io.Writer) {
	c := r.Config
	if c.App != "" {
		fmt.Fprintf(w, "app: %s (the counting application on the stream runtime, exactly_once_v2, Pebble store; %d keys)\n", c.App, c.Keys)
	}
	fmt.Fprintf(w, "chaos: seed %d, %d faults, %d brokers, %d partitions, session %d ms, heartbeat %d ms, wall %.0f s\n",
		c.Seed, len(r.Faults), max(c.Brokers, 1), c.Partitions, c.SessionMs, c.HeartbeatMs, r.WallSecs)
	if c.Soak != "" {
		fmt.Fprintf(w, "soak: %s\n", c.Soak)
	}
	if c.ExtraDeadlineMs > 0 {
		fmt.Fprintf(w, "\nrecovery after each fault (S2; deadline %d ms = session + 2 heartbeats + %d ms for the exactly-once app's start):\n", c.SessionMs+2*c.HeartbeatMs+c.ExtraDeadlineMs, c.ExtraDeadlineMs)
	} else {
		fmt.Fprintf(w, "\nrecovery after each fault (S2; deadline %d ms = session + 2 heartbeats):\n", c.SessionMs+2*c.HeartbeatMs)
	}
	fmt.Fprintf(w, "  %-16s %5s %10s %10s %10s\n", "fault", "n", "median", "p95", "max")
	for _, k := range slices.Sorted(maps.Keys(r.Recovery)) {
		d := r.Recovery[k]
		fmt.Fprintf(w, "  %-16s %5d %8.0fms %8.0fms %8.0fms\n", k, d.N, d.Median, d.P95, d.Max)
	}
	if len(r.Windows) > 0 {
		fmt.Fprintf(w, "\nS1 double-processing windows (faults past the session timeout; a task held by the faulted member and another):\n")
		fmt.Fprintf(w, "  %-16s %5s %14s %14s %14s %14s\n", "fault", "n", "window median", "window max", "after-resume max", "while-paused max")
		for _, k := range slices.Sorted(maps.Keys(r.Windows)) {
			d, a, p := r.Windows[k], r.After[k], r.Paused[k]
			paused := "-"
			if p.N > 0 {
				paused = fmt.Sprintf("%.0fms", p.Max)
			}
			fmt.Fprintf(w, "  %-16s %5d %12.0fms %12.0fms %14.0fms %16s\n", k, d.N, d.Median, d.Max, a.Max, paused)
		}
	}
	if len(r.Procs) > 0 {
		var g, h float64
		var gp, hp string
		for _, p := range r.Procs {
			if perM := float64(p.MaxGoroutines); perM > g {
				g, gp = perM, fmt.Sprintf("%s#%d (%d members)", p.Proc, p.Inc, p.Members)
			}
			if p.MaxHeapMiB > h {
				h, hp = p.MaxHeapMiB, fmt.Sprintf("%s#%d (%d members)", p.Proc, p.Inc, p.Members)
			}
		}
		fmt.Fprintf(w, "\nprocesses: %d incarnations; most goroutines %.0f in %s; most heap in use %.1f MiB in %s\n", len(r.Procs), g, gp, h, hp)
		fmt.Fprintf(w, "  S3 bounds per process: goroutines <= %d + %d x members, heap in use <= %.0f + %.0f MiB x members; over runs of 10 min or more the median of the last fifth <= 1.25 x (goroutines, +10) / 1.5 x (heap, +8 MiB) the median of the second fifth\n",
			c.GoroutinesBase, c.GoroutinesPerMember, c.HeapBaseMiB, c.HeapPerMemberMiB)
	}
	if r.Conns.N > 0 {
		fmt.Fprintf(w, "broker connections: %d samples, median %.0f, max %.0f (bound %d x clients x brokers + %d)\n", r.Conns.N, r.Conns.Median, r.Conns.Max, c.ConnsPerClient, c.ConnsBase)
	}
	if len(r.Markers) > 0 {
		fmt.Fprintf(w, "\nhanging transactions the driver ended (a run about the single-node broker limitation, HANGS=abort: markers the coordinator skipped; see README): %d\n", len(r.Markers))
		for _, m := range r.Markers {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
	if r.HangDetector || len(r.Hanging) > 0 {
		fmt.Fprintf(w, "\nhanging transactions found by the detector (%d looks; each fails S4): %d\n", r.HangLooks, len(r.Hanging))
		for _, m := range r.Hanging {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
	if e := r.EOS; e != nil {
		fmt.Fprintf(w, "\nexactly-once (S4): %d keys, %d input records, %d committed output records, %d keys in the final stores, settled %.0f ms after the last fault\n",
			e.Keys, e.Inputs, e.OutputRecords, e.StoreKeys, e.SettleMs)
		fmt.Fprintf(w, "  lost %d, duplicated %d (output: %d lost, %d duplicated; stores: %d lost, %d duplicated); visible counts repeated %d, missing %d\n",
			e.Lost, e.Duplicated, e.OutputLost, e.OutputDuplicated, e.StoreLost, e.StoreDuplicated, e.VisibleRepeats, e.VisibleGaps)
		if e.Windows > 0 {
			fmt.Fprintf(w, "  windowed count: %d windows, %d committed output records, lost %d, duplicated %d\n",
				e.Windows, e.WindowOutputRecords, e.WindowLost, e.WindowDuplicated)
		}
	}
	fmt.Fprintln(w)
	verdicts := []struct {
		name string
		v    Verdict
		what string
	}{
		{"S1", r.S1, "no task held twice outside the expiry windows"},
		{"S2", r.S2, "converged within the deadline after every fault"},
		{"S3", r.S3, "no fatal event, no unexpected exit, bounded goroutines/heap/connections"},
	}
	if c.App == "eos" {
		verdicts = append(verdicts, struct {
			name string
			v    Verdict
			what string
		}{"S4", r.S4, "every key's (and window's) committed output and stored count equal its input count; visible counts exactly 1..n"})
	}
	for _, v := range verdicts {
		verdict := "PASS"
		if !v.v.OK {
			verdict = fmt.Sprintf("FAIL (%d violations)", v.v.Count)
		}
		fmt.Fprintf(w, "%s %s: %s\n", v.name, verdict, v.what)
		for _, s := range v.v.Violations {
			fmt.Fprintf(w, "    %s\n", s)
		}
	}
	if !r.Pass && c.Command != "" {
		fmt.Fprintf(w, "\nreproduce: %s\n", c.Command)
	}
}

// Text is WriteText into a string.
func (r *Report) Text() string {
	var b strings.Builder
	r.WriteText(&b)
	return b.String()
}
