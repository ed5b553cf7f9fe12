package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EOSSummary is what S4 found in an exactly-once run.
type EOSSummary struct {
	Keys          int   `json:"keys"`           // keys checked (every key of the input, the output or a store)
	Inputs        int64 `json:"inputs"`         // input records read back
	OutputRecords int   `json:"output_records"` // committed output records
	StoreKeys     int   `json:"store_keys"`     // keys in the final store dumps
	// Lost and Duplicated sum, over the keys, how far the key's total falls short of or exceeds its
	// input count: the larger of the committed output's last count and the stores' count.
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	// OutputLost / OutputDuplicated and StoreLost / StoreDuplicated are the same, for the output's
	// last count and for the store alone.
	OutputLost       int64 `json:"output_lost"`
	OutputDuplicated int64 `json:"output_duplicated"`
	StoreLost        int64 `json:"store_lost"`
	StoreDuplicated  int64 `json:"store_duplicated"`
	// VisibleRepeats counts committed output records that repeat a count already visible for their
	// key; VisibleGaps counts counts 1..last that never became visible. Exactly-once makes both 0:
	// each key's visible counts are 1, 2, …, n.
	VisibleRepeats int64   `json:"visible_repeats"`
	VisibleGaps    int64   `json:"visible_gaps"`
	SettleMs       float64 `json:"settle_ms"`
	// Windows, WindowOutputRecords, WindowLost and WindowDuplicated are the windowed count's: the
	// windows checked, their committed output records, and how far each window's last committed
	// count falls short of or exceeds the input records it holds, summed.
	Windows             int   `json:"windows,omitempty"`
	WindowOutputRecords int   `json:"window_output_records,omitempty"`
	WindowLost          int64 `json:"window_lost,omitempty"`
	WindowDuplicated    int64 `json:"window_duplicated,omitempty"`
}

// checkS4 is S4, for an exactly-once run (Config.App "eos"): after the schedule, every key's total
// in the committed output (its last count) and in the stores (the members' final dumps) equals the
// number of input records with that key, and the committed counts of each key are exactly 1..n;
// and so for every window of the windowed count (checkWindows).
func checkS4(run Run, drv []DriverRecord, rep *Report) {
	rep.S4.OK = true
	if run.Config.App != "eos" {
		return
	}
	sum := &EOSSummary{}
	rep.EOS = sum
	defer func() { rep.S4.OK = rep.S4.Count == 0 }()
	rep.HangDetector = !run.Config.RepairHangs
	looks := 0
	for _, r := range drv {
		if r.Kind == DKHangLooks {
			looks += r.Looks
		}
	}
	if rep.HangDetector && looks == 0 {
		rep.S4.add("the hang detector never looked at the open transactions (it found no hang for want of looking)")
	}
	// A transaction the broker left hanging breaks exactly-once for whoever reads its partition
	// (read_committed readers stop at it; the group's offsets stay unstable) whether or not the
	// totals come out right; a marker the driver wrote is a repair, which only a run about the
	// single-node broker limitation (RepairHangs) may make.
	for _, r := range drv {
		switch {
		case r.Kind == DKHang:
			rep.S4.add("hanging transaction found (the driver wrote nothing): %s", r.Detail)
		case r.Kind == DKMarker && !run.Config.RepairHangs:
			rep.S4.add("the driver wrote a transaction marker, in a run that may not repair: %s", r.Detail)
		}
	}
	e := run.EOS
	if e == nil {
		rep.S4.add("no record of the input and output topics (eos.json): the driver did not read them")
		return
	}
	if e.Err != "" {
		rep.S4.add("reading the topics after the schedule: %s", e.Err)
	}
	sum.SettleMs = e.SettleMs
	if !e.Settled {
		rep.S4.add("the group did not process and commit every input record before the members were stopped (%.0f ms after the last fault)", e.SettleMs)
	}
	keys := map[string]bool{}
	for k, n := range e.Input {
		keys[k] = true
		sum.Inputs += n
	}
	// Every key of either side: a key the input topic holds but the driver never had acknowledged
	// (Acked has no entry for it) is more input than acknowledged like any other.
	ackKeys := map[string]bool{}
	for k := range e.Acked {
		ackKeys[k] = true
	}
	for k := range e.Input {
		ackKeys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(ackKeys)) {
		// A write the driver saw fail may have reached the topic all the same (its answer was
		// lost): more input than acknowledged is then no fault; less is a record lost by the broker.
		if e.Acked[k] > e.Input[k] || e.Acked[k] < e.Input[k] && e.ProduceFailed == 0 {
			rep.S4.add("key %s: the driver had %d input records acknowledged, the input topic holds %d", k, e.Acked[k], e.Input[k])
		}
	}

	// The committed output, per key in (partition, offset) order.
	out := slices.Clone(e.Output)
	slices.SortStableFunc(out, func(a, b OutputRecord) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	sum.OutputRecords = len(out)
	seqs := map[string][]int64{}
	parts := map[string]int32{}
	rounds := map[string]map[int64]OutputRecord{} // key → round → its first committed output
	twice := map[string][]string{}                // key → each round counted again, described
	for _, r := range out {
		if r.Round > 0 {
			if rounds[r.Key] == nil {
				rounds[r.Key] = map[int64]OutputRecord{}
			}
			if first, ok := rounds[r.Key][r.Round]; ok {
				twice[r.Key] = append(twice[r.Key], fmt.Sprintf("round %d: count %d at output %d@%d (%s), again count %d at %d@%d",
					r.Round, first.Count, first.Partition, first.Offset, msTime(first.Time), r.Count, r.Partition, r.Offset))
			} else {
				rounds[r.Key][r.Round] = r
			}
		}
		if p, ok := parts[r.Key]; ok && p != r.Partition {
			rep.S4.add("key %s: output in partitions %d and %d (a key's counts must stay in one partition to be ordered)", r.Key, p, r.Partition)
		}
		parts[r.Key] = r.Partition
		seqs[r.Key] = append(seqs[r.Key], r.Count)
		keys[r.Key] = true
	}

	// The stores: the last dump of each member after the schedule ended.
	var end int64
	for _, r := range drv {
		if r.Kind == DKEnd {
			end = r.T
		}
	}
	last := map[holderKey]Record{}
	for _, r := range run.Members {
		if r.Kind != KindStore || r.T < end {
			continue
		}
		hk := holderKey{procKey{r.Proc, r.Inc}, r.Member}
		if prev, ok := last[hk]; !ok || r.T >= prev.T {
			last[hk] = r
		}
	}
	stored := map[string]int64{}
	storedBy := map[string]holderKey{}
	taskBy := map[string]holderKey{}
	for _, hk := range sortedKeys(last) {
		r := last[hk]
		if r.Err != "" {
			rep.S4.add("%s: reading its store at the end: %s", hk, r.Err)
		}
		for _, t := range r.Active {
			if o, ok := taskBy[t]; ok {
				rep.S4.add("task %s in the final store dumps of both %s and %s", t, o, hk)
			}
			taskBy[t] = hk
		}
		for k, v := range r.Counts {
			if o, ok := storedBy[k]; ok {
				rep.S4.add("key %s in the stores of both %s (%d) and %s (%d)", k, o, stored[k], hk, v)
			}
			stored[k], storedBy[k] = v, hk
			keys[k] = true
		}
	}
	sum.StoreKeys = len(stored)
	for p := range run.Config.Partitions {
		if _, ok := taskBy[Task(p)]; !ok {
			rep.S4.add("task %s: no member dumped its store at the end (its keys' stored counts are unknown)", Task(p))
		}
	}

	sum.Keys = len(keys)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		n := e.Input[k]
		if tw := twice[k]; len(tw) > 0 {
			rep.S4.add("key %s: %d input rounds counted twice, the first %s", k, len(tw), tw[0])
		}
		if rs := rounds[k]; len(rs) > 0 {
			want := e.InputRounds[k]
			if len(want) == 0 {
				for r := int64(1); r <= n; r++ {
					want = append(want, r)
				}
			}
			var never []int64
			for _, r := range want {
				if _, ok := rs[r]; !ok {
					never = append(never, r)
				}
			}
			if len(never) > 0 {
				rep.S4.add("key %s: %d input rounds never counted in the committed output: %s", k, len(never), seqText(never))
			}
		}
		seq := seqs[k]
		var lastCount int64
		if len(seq) > 0 {
			lastCount = seq[len(seq)-1]
		}
		seen := map[int64]bool{}
		var repeats int64
		ordered := true
		for i, c := range seq {
			if seen[c] {
				repeats++
			}
			seen[c] = true
			if i > 0 && c != seq[i-1]+1 {
				ordered = false
			}
		}
		var gaps int64
		for c := int64(1); c <= lastCount; c++ {
			if !seen[c] {
				gaps++
			}
		}
		sum.VisibleRepeats += repeats
		sum.VisibleGaps += gaps
		if repeats > 0 || gaps > 0 || !ordered || len(seq) > 0 && seq[0] != 1 {
			rep.S4.add("key %s: committed counts are not 1..%d in order: %s (%d repeated, %d missing)", k, lastCount, seqText(seq), repeats, gaps)
		}
		ol, od := max(n-lastCount, 0), max(lastCount-n, 0)
		sv, inStore := stored[k]
		sl, sd := max(n-sv, 0), max(sv-n, 0)
		sum.OutputLost += ol
		sum.OutputDuplicated += od
		sum.StoreLost += sl
		sum.StoreDuplicated += sd
		sum.Lost += max(ol, sl)
		sum.Duplicated += max(od, sd)
		if lastCount != n {
			rep.S4.add("key %s: %d input records, the committed output's last count is %d (%d lost, %d duplicated)", k, n, lastCount, ol, od)
		}
		if sv != n {
			where := "not in any store"
			if inStore {
				where = "stored by " + storedBy[k].String()
			}
			rep.S4.add("key %s: %d input records, the store's count is %d, %s (%d lost, %d duplicated)", k, n, sv, where, sl, sd)
		}
	}
	checkWindows(e, sum, rep)
}

// checkWindows is S4 for the windowed count: every window's committed counts (the windowed
// output topic, per window in partition and offset order) are exactly 1, 2, …, m in order, m the
// input records the window holds by their timestamps. Reports of runs before the windowed count
// have neither side, and are not checked for it.
func checkWindows(e *EOSData, sum *EOSSummary, rep *Report) {
	if e.InputWindows == nil && len(e.WindowOutput) == 0 {
		return
	}
	out := slices.Clone(e.WindowOutput)
	slices.SortStableFunc(out, func(a, b OutputRecord) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	sum.WindowOutputRecords = len(out)
	seqs := map[string][]int64{}
	parts := map[string]int32{}
	wins := map[string]bool{}
	for w := range e.InputWindows {
		wins[w] = true
	}
	for _, r := range out {
		if p, ok := parts[r.Key]; ok && p != r.Partition {
			rep.S4.add("window %s: output in partitions %d and %d", r.Key, p, r.Partition)
		}
		parts[r.Key] = r.Partition
		seqs[r.Key] = append(seqs[r.Key], r.Count)
		wins[r.Key] = true
	}
	sum.Windows = len(wins)
	for _, w := range slices.Sorted(maps.Keys(wins)) {
		m, seq := e.InputWindows[w], seqs[w]
		ok := int64(len(seq)) == m
		for i := 0; ok && i < len(seq); i++ {
			ok = seq[i] == int64(i+1)
		}
		var last int64
		if len(seq) > 0 {
			last = seq[len(seq)-1]
		}
		sum.WindowLost += max(m-last, 0)
		sum.WindowDuplicated += max(last-m, 0)
		if !ok {
			rep.S4.add("window %s: %d input records, committed counts %s (want 1..%d once each, in order)", w, m, seqText(seq), m)
		}
	}
}

// seqText prints a sequence of counts shortly: runs of consecutive counts as a-b.
func seqText(seq []int64) string {
	if len(seq) == 0 {
		return "none"
	}
	var parts []string
	start := 0
	for i := 1; i <= len(seq); i++ {
		if i < len(seq) && seq[i] == seq[i-1]+1 {
			continue
		}
		if i-1 == start {
			parts = append(parts, itoa(seq[start]))
		} else {
			parts = append(parts, itoa(seq[start])+"-"+itoa(seq[i-1]))
		}
		start = i
	}
	if len(parts) > 12 {
		parts = append(parts[:6], append([]string{"…"}, parts[len(parts)-5:]...)...)
	}
	return strings.Join(parts, ",")
}

// msTime prints a record timestamp (Unix ms) as UTC wall-clock time, to find it in the logs.
func msTime(ms int64) string {
	if ms == 0 {
		return "no time"
	}
	return time.UnixMilli(ms).UTC().Format("15:04:05.000")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
