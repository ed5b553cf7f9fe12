package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// S4's tests: an exactly-once run of two members (a holds 0_0 and 0_1, b holds 0_2 and 0_3) over
// three keys, whose committed output and final store dumps are written by hand. The exact run
// passes; one record lost or one duplicated anywhere (in the output's last count, in a store, or
// as a repeated visible count) fails S4 and nothing else.

// eosInputs is the input of the synthetic run: key → records.
var eosInputs = map[string]int64{"k000": 3, "k001": 2, "k002": 4}

// eosRun builds the run: the members, converged; the output of every key as counts (by default
// 1..n); the stores as dumped at the end (by default the input counts; k000 and k001 in a's
// tasks, k002 in b's).
func eosRun(counts map[string][]int64, stores map[string]int64) *synth {
	s := twoMembers()
	s.run.Config.App = "eos"
	s.d(DriverRecord{T: sec(9), Kind: DKHangLooks, Looks: 4})
	e := &EOSData{Acked: map[string]int64{}, Input: map[string]int64{}, Settled: true, SettleMs: 1200}
	for k, n := range eosInputs {
		e.Acked[k], e.Input[k] = n, n
	}
	for p, k := range []string{"k000", "k001", "k002"} {
		seq, ok := counts[k]
		if !ok {
			for c := int64(1); c <= eosInputs[k]; c++ {
				seq = append(seq, c)
			}
		}
		for i, c := range seq {
			e.Output = append(e.Output, OutputRecord{Partition: int32(p), Offset: int64(2 * i), Key: k, Count: c, Round: roundOf(k, len(seq), i, c)})
		}
	}
	s.run.EOS = e
	st := map[string]int64{}
	for k, n := range eosInputs {
		st[k] = n
	}
	for k, v := range stores {
		if v < 0 {
			delete(st, k)
		} else {
			st[k] = v
		}
	}
	s.end(10)
	dumpA, dumpB := map[string]int64{}, map[string]int64{}
	for k, v := range st {
		if k == "k002" {
			dumpB[k] = v
		} else {
			dumpA[k] = v
		}
	}
	s.m(Record{T: sec(10.1), Proc: "a", Inc: 1, Member: "a", Kind: KindStore, Active: []string{"0_0", "0_1"}, Counts: dumpA})
	s.m(Record{T: sec(10.1), Proc: "b", Inc: 1, Member: "b", Kind: KindStore, Active: []string{"0_2", "0_3"}, Counts: dumpB})
	return s
}

// roundOf is the input round behind the i-th of n outputs of key k with count c: the count itself,
// except in the synthetic duplicate below (k001 counted to 3 of 2 inputs: its second output is round
// 1 again).
func roundOf(k string, n, i int, c int64) int64 {
	if k == "k001" && n == 3 && i == 1 {
		return 1
	}
	return c
}

func TestS4ExactPasses(t *testing.T) {
	rep := eosRun(nil, nil).check(t)
	if !rep.Pass || !rep.S4.OK {
		t.Fatalf("an exact run failed: %v", rep.S4.Violations)
	}
	e := rep.EOS
	if e == nil || e.Keys != 3 || e.Inputs != 9 || e.OutputRecords != 9 || e.StoreKeys != 3 || e.Lost != 0 || e.Duplicated != 0 {
		t.Fatalf("summary %+v; want 3 keys, 9 inputs, 9 output records, 3 stored keys, nothing lost or duplicated", e)
	}
	if !strings.Contains(rep.Text(), "S4 PASS") {
		t.Fatalf("the text does not say S4 PASS:\n%s", rep.Text())
	}
}

// TestS4OneOff pins S4 at its boundary: a single record lost or duplicated, in any of the places
// S4 looks, fails it, with the figure counted exactly once.
func TestS4OneOff(t *testing.T) {
	for _, c := range []struct {
		name                 string
		counts               map[string][]int64
		stores               map[string]int64
		lost, dup            int64
		repeats, gaps        int64
		want                 string
		outLost, storeLost   int64
		outDup, storeDupWant int64
	}{
		{name: "output lost its last count", counts: map[string][]int64{"k000": {1, 2}}, lost: 1, outLost: 1, want: "k000: 3 input records, the committed output's last count is 2"},
		{name: "output counted one twice", counts: map[string][]int64{"k001": {1, 2, 3}}, dup: 1, outDup: 1, want: "k001: 2 input records, the committed output's last count is 3"},
		{name: "the twice-counted round is named", counts: map[string][]int64{"k001": {1, 2, 3}}, dup: 1, outDup: 1, want: "key k001: 1 input rounds counted twice, the first round 1: count 1 at output 1@0"},
		{name: "a count visible twice", counts: map[string][]int64{"k002": {1, 2, 2, 3, 4}}, repeats: 1, want: "k002: committed counts are not 1..4 in order: 1-2,2-4"},
		{name: "a count never visible", counts: map[string][]int64{"k002": {1, 3, 4}}, gaps: 1, want: "k002: committed counts are not 1..4 in order: 1,3-4"},
		{name: "the round never counted is named", counts: map[string][]int64{"k002": {1, 3, 4}}, gaps: 1, want: "key k002: 1 input rounds never counted in the committed output: 2"},
		{name: "store one short", stores: map[string]int64{"k002": 3}, lost: 1, storeLost: 1, want: "k002: 4 input records, the store's count is 3"},
		{name: "store one over", stores: map[string]int64{"k000": 4}, dup: 1, storeDupWant: 1, want: "k000: 3 input records, the store's count is 4"},
		{name: "key missing from the stores", stores: map[string]int64{"k001": -1}, lost: 2, storeLost: 2, want: "k001: 2 input records, the store's count is 0, not in any store"},
		{name: "the last round never counted is named", counts: map[string][]int64{"k000": {1, 2}}, lost: 1, outLost: 1, want: "key k000: 1 input rounds never counted in the committed output: 3"},
		{name: "a key with no output at all", counts: map[string][]int64{"k001": {}}, lost: 2, outLost: 2, want: "key k001: 2 input records, the committed output's last count is 0 (2 lost, 0 duplicated)"},
		{name: "a count of 0 visible first", counts: map[string][]int64{"k000": {0, 1, 2, 3}}, want: "key k000: committed counts are not 1..3 in order: 0-3 (0 repeated, 0 missing)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := eosRun(c.counts, c.stores).check(t)
			if rep.S4.OK || rep.Pass {
				t.Fatal("S4 passed")
			}
			if !rep.S1.OK || !rep.S2.OK || !rep.S3.OK {
				t.Fatalf("another property failed: S1 %v S2 %v S3 %v", rep.S1.Violations, rep.S2.Violations, rep.S3.Violations)
			}
			if !strings.Contains(strings.Join(rep.S4.Violations, "\n"), c.want) {
				t.Fatalf("violations %q; want one with %q", rep.S4.Violations, c.want)
			}
			e := rep.EOS
			got := fmt.Sprint(e.Lost, e.Duplicated, e.VisibleRepeats, e.VisibleGaps, e.OutputLost, e.StoreLost, e.OutputDuplicated, e.StoreDuplicated)
			want := fmt.Sprint(c.lost, c.dup, c.repeats, c.gaps, c.outLost, c.storeLost, c.outDup, c.storeDupWant)
			if got != want {
				t.Fatalf("lost, duplicated, repeats, gaps, output lost, store lost, output dup, store dup = %s; want %s", got, want)
			}
		})
	}
}

func TestS4Conditions(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(s *synth)
		want string
	}{
		{"not settled", func(s *synth) { s.run.EOS.Settled = false }, "did not process and commit every input record"},
		{"no eos.json", func(s *synth) { s.run.EOS = nil }, "no record of the input and output topics"},
		{"acked input missing from the topic", func(s *synth) { s.run.EOS.Acked["k000"] = 4 }, "key k000: the driver had 4 input records acknowledged, the input topic holds 3"},
		{"a task without a dump", func(s *synth) {
			for i := range s.run.Members {
				if s.run.Members[i].Kind == KindStore && s.run.Members[i].Proc == "b" {
					s.run.Members[i].Active = []string{"0_2"}
				}
			}
		}, "task 0_3: no member dumped its store"},
		{"a key in two stores", func(s *synth) {
			s.m(Record{T: sec(10.2), Proc: "b", Inc: 1, Member: "b", Kind: KindStore, Active: []string{"0_2", "0_3"}, Counts: map[string]int64{"k002": 4, "k000": 3}})
		}, "key k000 in the stores of both"},
		{"a key in two output partitions", func(s *synth) {
			s.run.EOS.Output = append(s.run.EOS.Output, OutputRecord{Partition: 3, Offset: 0, Key: "k000", Count: 4})
		}, "key k000: output in partitions 0 and 3"},
		{"a dump before the end does not count", func(s *synth) {
			for i := range s.run.Members {
				if s.run.Members[i].Kind == KindStore && s.run.Members[i].Proc == "a" {
					s.run.Members[i].T = sec(9)
				}
			}
		}, "task 0_0: no member dumped its store"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := eosRun(nil, nil)
			c.edit(s)
			rep := s.check(t)
			if rep.S4.OK || rep.Pass {
				t.Fatal("S4 passed")
			}
			if !strings.Contains(strings.Join(rep.S4.Violations, "\n"), c.want) {
				t.Fatalf("violations %q; want one with %q", rep.S4.Violations, c.want)
			}
		})
	}
}

// TestS4OnlyInEOSMode: a plain run has no S4 to fail, and no summary.
func TestS4OnlyInEOSMode(t *testing.T) {
	s := eosRun(map[string][]int64{"k000": {1}}, nil)
	s.run.Config.App = ""
	rep := s.check(t)
	if !rep.S4.OK || rep.EOS != nil || strings.Contains(rep.Text(), "S4") {
		t.Fatalf("S4 checked outside the exactly-once mode: %v", rep.S4.Violations)
	}
}

// TestS2ExtraDeadline: the exactly-once mode's allowance moves S2's deadline by exactly its value
// (7 s + 10 s): a recovery of 17 s passes, one of 17.001 s fails.
func TestS2ExtraDeadline(t *testing.T) {
	for _, c := range []struct {
		at   float64
		pass bool
	}{{27, true}, {27.001, false}} {
		s := twoMembers().fault(1, "kill9", "a", 1, 9.5, 10, false, false)
		s.run.Config.ExtraDeadlineMs = 10_000
		s.snap(9, "Reconciling", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3"))
		s.snap(c.at, "Stable", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3")).end(40)
		rep := s.check(t)
		if rep.S2.OK != c.pass || rep.Faults[0].DeadlineMs != 17000 {
			t.Fatalf("converged at %v s: S2 ok=%v (want %v), deadline %v ms (want 17000)", c.at, rep.S2.OK, c.pass, rep.Faults[0].DeadlineMs)
		}
	}
}

// A round whose input write failed at the driver is not in the input topic: S4 expects the rounds
// the topic holds, not 1..n, and a write that failed but reached the topic all the same (more input
// than acknowledged) is no fault. Fewer input records than acknowledged is always one.
func TestS4GoesByTheInputTopic(t *testing.T) {
	// k000: 3 inputs, rounds 1, 2 and 4 (round 3's write failed and never reached the topic).
	withGap := func(outRounds []int64) *synth {
		s := eosRun(nil, nil)
		e := s.run.EOS
		e.ProduceFailed = 1
		e.InputRounds = map[string][]int64{"k000": {1, 2, 4}}
		for i := range e.Output {
			if e.Output[i].Key == "k000" {
				e.Output[i].Round = outRounds[e.Output[i].Count-1]
			}
		}
		return s
	}
	if rep := withGap([]int64{1, 2, 4}).check(t); !rep.S4.OK {
		t.Fatalf("the rounds the input topic holds were all counted, yet S4 failed: %q", rep.S4.Violations)
	}
	rep := withGap([]int64{1, 2, 3}).check(t)
	if rep.S4.OK || !strings.Contains(strings.Join(rep.S4.Violations, "\n"), "key k000: 1 input rounds never counted in the committed output: 4") {
		t.Fatalf("round 4 is in the input topic and was never counted; violations %q", rep.S4.Violations)
	}

	for _, c := range []struct {
		name           string
		acked, failed  int64
		wantViolations bool
	}{
		{"acknowledged as many as the topic holds", 3, 0, false},
		{"a failed write reached the topic", 2, 1, false},
		{"the topic holds one more than acknowledged, and no write failed", 2, 0, true},
		{"the topic holds one fewer than acknowledged", 4, 1, true},
	} {
		s := eosRun(nil, nil)
		s.run.EOS.Acked["k000"], s.run.EOS.ProduceFailed = c.acked, int(c.failed)
		rep := s.check(t)
		if got := !rep.S4.OK; got != c.wantViolations {
			t.Errorf("%s: S4 failed %v (%q); want %v", c.name, got, rep.S4.Violations, c.wantViolations)
		}
	}
}

// TestS4InputKeyNeverAcknowledged: a key the input topic holds but the driver never had
// acknowledged (no entry in Acked at all) is more input than acknowledged, as for any other key:
// with no failed write it is a violation; with one it may be that write.
func TestS4InputKeyNeverAcknowledged(t *testing.T) {
	for _, failed := range []int{0, 1} {
		s := eosRun(nil, nil)
		delete(s.run.EOS.Acked, "k001")
		s.run.EOS.ProduceFailed = failed
		rep := s.check(t)
		const want = "key k001: the driver had 0 input records acknowledged, the input topic holds 2"
		if got := slices.Contains(rep.S4.Violations, want); got != (failed == 0) {
			t.Errorf("%d failed writes: violations %q; want %q: %v", failed, rep.S4.Violations, want, failed == 0)
		}
	}
}

// TestS4WithoutRoundHeaders: output records without the round header (Round 0, older runs) are
// judged by their counts alone: the exact run passes, with no round counted twice or never.
func TestS4WithoutRoundHeaders(t *testing.T) {
	s := eosRun(nil, nil)
	for i := range s.run.EOS.Output {
		s.run.EOS.Output[i].Round = 0
	}
	if rep := s.check(t); !rep.S4.OK {
		t.Fatalf("an exact run without round headers failed S4: %q", rep.S4.Violations)
	}
}

// TestS4WhichDumpCounts: a dump written at the schedule's end counts (only earlier ones do not),
// and of a member's dumps the last one counts, the later line when two have the same time.
func TestS4WhichDumpCounts(t *testing.T) {
	s := eosRun(nil, nil)
	for i := range s.run.Members {
		if s.run.Members[i].Kind == KindStore {
			s.run.Members[i].T = sec(10) // the end
		}
	}
	if rep := s.check(t); !rep.S4.OK {
		t.Fatalf("dumps at the end did not count: %q", rep.S4.Violations)
	}

	s = eosRun(nil, nil)
	var members []Record
	for _, r := range s.run.Members {
		if r.Kind == KindStore && r.Proc == "a" {
			stale := r
			stale.Counts = map[string]int64{"k000": 1, "k001": 1}
			members = append(members, stale) // the same time, an earlier line
		}
		members = append(members, r)
	}
	s.run.Members = members
	if rep := s.check(t); !rep.S4.OK {
		t.Fatalf("the earlier of two dumps at the same time counted: %q", rep.S4.Violations)
	}
}

func TestSeqText(t *testing.T) {
	var twelve, thirteen []int64
	for i := range int64(13) {
		thirteen = append(thirteen, 2*i+1) // 1, 3, 5, …, 25: no two consecutive
	}
	twelve = thirteen[:12]
	for _, c := range []struct {
		seq  []int64
		want string
	}{
		{nil, "none"},
		{[]int64{4}, "4"},
		{[]int64{1, 2, 3, 5, 7, 8, 8}, "1-3,5,7-8,8"},
		{twelve, "1,3,5,7,9,11,13,15,17,19,21,23"},
		{thirteen, "1,3,5,7,9,11,…,17,19,21,23,25"}, // past 12 parts: the first 6 and the last 5
	} {
		if got := seqText(c.seq); got != c.want {
			t.Errorf("seqText(%v) = %q, want %q", c.seq, got, c.want)
		}
	}
}

func TestMsTime(t *testing.T) {
	// 1,700,000,000 s after the epoch is 19675 days and 80,000 s: 22:13:20 UTC.
	if got := msTime(1_700_000_000_123); got != "22:13:20.123" {
		t.Errorf("msTime = %q, want 22:13:20.123", got)
	}
	if got := msTime(0); got != "no time" {
		t.Errorf("msTime(0) = %q, want \"no time\"", got)
	}
}

// A hanging transaction the detector found fails S4 (and nothing else) although every total is
// exact; so does a marker the driver wrote, unless the run is about the single-node broker
// limitation (RepairHangs), where the markers are listed and the run passes.
func TestS4HangsAndMarkers(t *testing.T) {
	hang := "hanging transaction: COMMIT marker for chaos-output[1] producer 7 epoch 3 from offset 40"
	s := eosRun(nil, nil)
	s.d(DriverRecord{T: sec(5), Kind: DKHang, Detail: hang})
	rep := s.check(t)
	if rep.Pass || rep.S4.OK || !rep.S1.OK || !rep.S2.OK || !rep.S3.OK || len(rep.S4.Violations) != 1 ||
		!strings.Contains(rep.S4.Violations[0], hang) || !slices.Equal(rep.Hanging, []string{hang}) {
		t.Fatalf("a found hang: pass %v, S4 %v, hanging %q", rep.Pass, rep.S4.Violations, rep.Hanging)
	}
	marker := "ended a hanging transaction: wrote the ABORT marker for chaos-output[1] producer 7 epoch 3 from offset 40"
	for _, repair := range []bool{false, true} {
		s := eosRun(nil, nil)
		s.run.Config.RepairHangs = repair
		s.d(DriverRecord{T: sec(5), Kind: DKMarker, Detail: marker})
		rep := s.check(t)
		if rep.Pass != repair || rep.S4.OK != repair || !slices.Equal(rep.Markers, []string{marker}) {
			t.Fatalf("a marker written with RepairHangs %v: pass %v, S4 %v, markers %q", repair, rep.Pass, rep.S4.Violations, rep.Markers)
		}
		if !repair && (len(rep.S4.Violations) != 1 || !strings.Contains(rep.S4.Violations[0], marker)) {
			t.Fatalf("the violation does not name the marker: %v", rep.S4.Violations)
		}
	}
}

// A detector that never looked found no hang for want of looking: S4 fails; with HANGS=abort (no
// detector) nothing is asked of it.
func TestS4DetectorThatNeverLooked(t *testing.T) {
	for _, repair := range []bool{false, true} {
		s := eosRun(nil, nil)
		s.run.Config.RepairHangs = repair
		kept := s.run.Driver[:0]
		for _, r := range s.run.Driver {
			if r.Kind != DKHangLooks {
				kept = append(kept, r)
			}
		}
		s.run.Driver = kept
		rep := s.check(t)
		if rep.S4.OK == !repair || !repair && (len(rep.S4.Violations) != 1 || !strings.Contains(rep.S4.Violations[0], "never looked")) {
			t.Fatalf("no look, RepairHangs %v: S4 %v %v", repair, rep.S4.OK, rep.S4.Violations)
		}
	}
}

// The windowed count's part of S4: every window's committed counts are 1..m once each, in order, m
// the input records the window holds. The exact run passes; one windowed count lost, duplicated,
// repeated or missing, or a window only on one side, fails S4 with the window named.
func TestS4Windows(t *testing.T) {
	w1, w2 := WindowKey("k000", 0), WindowKey("k000", 10000)
	run := func(inputs map[string]int64, outputs map[string][]int64) Report {
		t.Helper()
		s := eosRun(nil, nil)
		s.run.EOS.InputWindows = inputs
		for p, w := range []string{w1, w2} {
			for i, c := range outputs[w] {
				s.run.EOS.WindowOutput = append(s.run.EOS.WindowOutput, OutputRecord{Partition: int32(p), Offset: int64(i), Key: w, Count: c})
			}
		}
		return s.check(t)
	}
	inputs := map[string]int64{w1: 2, w2: 1}
	rep := run(inputs, map[string][]int64{w1: {1, 2}, w2: {1}})
	if !rep.S4.OK || rep.EOS.Windows != 2 || rep.EOS.WindowOutputRecords != 3 || rep.EOS.WindowLost != 0 || rep.EOS.WindowDuplicated != 0 {
		t.Fatalf("the exact windows: %v, %+v", rep.S4.Violations, rep.EOS)
	}
	if !strings.Contains(rep.Text(), "windowed count: 2 windows, 3 committed output records, lost 0, duplicated 0") {
		t.Fatalf("the text does not report the windows:\n%s", rep.Text())
	}
	for _, c := range []struct {
		name      string
		inputs    map[string]int64
		outputs   map[string][]int64
		lost, dup int64
		want      string
	}{
		{"a window's last count lost", inputs, map[string][]int64{w1: {1}, w2: {1}}, 1, 0, "window k000@0: 2 input records, committed counts 1 (want 1..2"},
		{"a window counted twice", inputs, map[string][]int64{w1: {1, 2, 3}, w2: {1}}, 0, 1, "window k000@0: 2 input records, committed counts 1-3"},
		{"a count visible twice", inputs, map[string][]int64{w1: {1, 1, 2}, w2: {1}}, 0, 0, "window k000@0: 2 input records, committed counts 1,1-2"},
		{"a window never counted", inputs, map[string][]int64{w1: {1, 2}}, 1, 0, "window k000@10000: 1 input records, committed counts none"},
		{"a window no input holds", map[string]int64{w1: 2}, map[string][]int64{w1: {1, 2}, w2: {1}}, 0, 1, "window k000@10000: 0 input records, committed counts 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := run(c.inputs, c.outputs)
			if rep.S4.OK || rep.Pass {
				t.Fatal("S4 passed")
			}
			if len(rep.S4.Violations) != 1 || !strings.Contains(rep.S4.Violations[0], c.want) {
				t.Fatalf("violations %q, want one saying %q", rep.S4.Violations, c.want)
			}
			if rep.EOS.WindowLost != c.lost || rep.EOS.WindowDuplicated != c.dup {
				t.Fatalf("lost %d duplicated %d, want %d and %d", rep.EOS.WindowLost, rep.EOS.WindowDuplicated, c.lost, c.dup)
			}
		})
	}
	// A run before the windowed count (no windows on either side) is not checked for them.
	if rep := run(nil, nil); !rep.S4.OK || rep.EOS.Windows != 0 {
		t.Fatalf("an old report: %v", rep.S4.Violations)
	}
	if WindowOf(19999) != 10000 || WindowOf(20000) != 20000 || WindowOf(-1) != -10000 {
		t.Fatal("WindowOf")
	}
}
