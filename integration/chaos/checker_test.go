package chaos

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The checker decides whether a chaos run passed, so these tests feed it synthetic logs whose
// verdict is known: clean runs must pass, and every kind of violation must be caught.

const t0 = int64(1_700_000_000_000_000) // a wall clock in Unix micros

func sec(s float64) int64 { return t0 + int64(s*1e6) }

type synth struct {
	run Run
}

func newSynth(partitions int) *synth {
	cfg := DefaultConfig()
	cfg.Partitions = partitions
	return &synth{run: Run{Config: cfg}}
}

func (s *synth) d(r DriverRecord) *synth { s.run.Driver = append(s.run.Driver, r); return s }
func (s *synth) m(r Record) *synth       { s.run.Members = append(s.run.Members, r); return s }

// member spawns process name (one member of the same name, incarnation inc) at t and starts it
// with member ID id.
func (s *synth) member(name string, inc int, t float64, id string) *synth {
	s.d(DriverRecord{T: sec(t), Kind: DKSpawn, Proc: name, Inc: inc, Members: []string{name}})
	return s.m(Record{T: sec(t) + 1000, Proc: name, Inc: inc, Member: name, Kind: KindStart, MemberID: id})
}

func (s *synth) own(name string, inc int, t float64, tasks ...string) *synth {
	return s.m(Record{T: sec(t), Proc: name, Inc: inc, Member: name, Kind: KindOwned, Active: tasks})
}

func (s *synth) hb(name string, inc int, t float64, answered bool) *synth {
	return s.m(Record{T: sec(t), Proc: name, Inc: inc, Member: name, Kind: KindHeartbeat, Answered: answered})
}

func (s *synth) died(name string, inc int, t float64, expected bool) *synth {
	return s.d(DriverRecord{T: sec(t), Kind: DKDied, Proc: name, Inc: inc, Expected: expected, Code: -1, Signal: "killed"})
}

func (s *synth) fault(n int, typ, proc string, inc int, start, end float64, expiring, paused bool) *synth {
	return s.d(DriverRecord{T: sec(end), Kind: DKFault, Fault: &Fault{N: n, Type: typ, Proc: proc, Inc: inc,
		Start: sec(start), End: sec(end), Expiring: expiring, Paused: paused}})
}

// snap records the broker's view: members as id → active tasks (current = target).
func (s *synth) snap(t float64, state string, members ...SnapMember) *synth {
	return s.d(DriverRecord{T: sec(t), Kind: DKSnapshot, Snap: &Snapshot{State: state, Members: members}})
}

func sm(id string, tasks ...string) SnapMember {
	return SnapMember{ID: id, Active: tasks, Target: tasks}
}

func (s *synth) end(t float64) *synth { return s.d(DriverRecord{T: sec(t), Kind: DKEnd}) }

func (s *synth) check(t *testing.T) Report {
	t.Helper()
	rep := Check(s.run)
	t.Log("\n" + rep.Text())
	return rep
}

// twoMembers: a and b share four tasks from t=1 s, and the broker agrees from t=2 s.
func twoMembers() *synth {
	s := newSynth(4)
	s.member("a", 1, 0, "ida").member("b", 1, 0, "idb")
	s.own("a", 1, 1, "0_0", "0_1").own("b", 1, 1, "0_2", "0_3")
	s.snap(2, "Stable", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3"))
	return s
}

func TestCleanRunPasses(t *testing.T) {
	s := twoMembers().fault(1, "net-latency", "a", 1, 10, 15, false, false).end(30)
	rep := s.check(t)
	if !rep.Pass {
		t.Fatalf("a clean run failed")
	}
	if got := rep.Faults[0].RecoveryMs; got != 0 {
		t.Errorf("recovery %v ms, want 0 (the group was converged at the fault's end)", got)
	}
}

func TestOverlappingOwnershipFails(t *testing.T) {
	// b gets 0_0 at 19 s while a lets it go only at 20 s, and no fault excuses it.
	s := twoMembers().own("b", 1, 19, "0_0", "0_2", "0_3").own("a", 1, 20, "0_1").end(30)
	rep := s.check(t)
	if rep.S1.OK || rep.Pass {
		t.Fatalf("overlapping ownership passed S1")
	}
	if rep.S1.Count != 1 || !strings.Contains(rep.S1.Violations[0], "0_0") || !strings.Contains(rep.S1.Violations[0], "1000 ms") {
		t.Errorf("violations %v, want one of 1000 ms on 0_0", rep.S1.Violations)
	}
}

func TestOverlapOneMicrosecondFails(t *testing.T) {
	s := twoMembers()
	s.m(Record{T: sec(19), Proc: "b", Inc: 1, Member: "b", Kind: KindOwned, Active: []string{"0_0", "0_2", "0_3"}})
	s.m(Record{T: sec(19) + 1, Proc: "a", Inc: 1, Member: "a", Kind: KindOwned, Active: []string{"0_1"}})
	if rep := s.end(30).check(t); rep.S1.OK {
		t.Fatalf("a 1 µs overlap passed S1")
	}
}

func TestHandOverWithoutOverlapPasses(t *testing.T) {
	// a lets 0_0 go at 19 s (start of OnTasksRevoked), b holds it from 19.5 s.
	s := twoMembers().own("a", 1, 19, "0_1").own("b", 1, 19.5, "0_0", "0_2", "0_3").end(30)
	if rep := s.check(t); !rep.S1.OK {
		t.Fatalf("a clean hand-over failed S1")
	}
}

func TestExpiredMemberOverlapIsExcusedAndMeasured(t *testing.T) {
	// a is paused from 10 s to 18 s (past the session); the broker gives 0_0 to b at 16 s; a gets its
	// first answer at 18.3 s and lets go at 18.35 s: excused, window 2.35 s, 2 s of it while paused.
	s := twoMembers().fault(1, "pause-long", "a", 1, 10, 18, true, true)
	s.own("b", 1, 16, "0_0", "0_2", "0_3").hb("a", 1, 18.2, false).hb("a", 1, 18.3, true).own("a", 1, 18.35, "0_1").end(30)
	rep := s.check(t)
	if !rep.S1.OK {
		t.Fatalf("an excused overlap failed S1")
	}
	f := rep.Faults[0]
	if f.WindowMs != 2350 || f.PausedMs != 2000 || f.AfterMs != 350 {
		t.Errorf("window %v paused %v after %v, want 2350 2000 350", f.WindowMs, f.PausedMs, f.AfterMs)
	}
	if d := rep.Windows["pause-long"]; d.N != 1 || d.Max != 2350 {
		t.Errorf("window stats %+v", d)
	}
}

func TestOverlapPastTheFirstAnswerFails(t *testing.T) {
	// As above, but a holds on until 20 s: 1.7 s after its first answer, past the 1 s grace.
	s := twoMembers().fault(1, "net-cut-long", "a", 1, 10, 18, true, false)
	s.own("b", 1, 16, "0_0", "0_2", "0_3").hb("a", 1, 18.3, true).own("a", 1, 20, "0_1").end(30)
	rep := s.check(t)
	if rep.S1.OK {
		t.Fatalf("holding a task past the first answer + grace passed S1")
	}
	if !strings.Contains(rep.S1.Violations[0], "700 ms") {
		t.Errorf("violation %q, want the 700 ms past the grace", rep.S1.Violations[0])
	}
}

func TestNoAnswerAfterTheFaultMeansNoLongExcuse(t *testing.T) {
	// a never gets an answer after the fault; the excuse ends at the fault's end + grace.
	s := twoMembers().fault(1, "net-cut-long", "a", 1, 10, 18, true, false)
	s.own("b", 1, 16, "0_0", "0_2", "0_3").own("a", 1, 25, "0_1").end(30)
	if rep := s.check(t); rep.S1.OK {
		t.Fatalf("an overlap with no answer after the fault passed S1")
	}
}

func TestExpiringFaultExcusesOnlyItsTarget(t *testing.T) {
	// The fault hit c, but a and b overlap: not excused.
	s := twoMembers().member("c", 1, 0, "idc").fault(1, "pause-long", "c", 1, 10, 18, true, true)
	s.own("b", 1, 16, "0_0", "0_2", "0_3").own("a", 1, 17, "0_1").end(30)
	if rep := s.check(t); rep.S1.OK {
		t.Fatalf("an overlap between members the fault did not hit passed S1")
	}
}

func TestExpiringFaultExcusesOnlyItsIncarnation(t *testing.T) {
	s := twoMembers().fault(1, "pause-long", "a", 2, 10, 18, true, true)
	s.own("b", 1, 16, "0_0", "0_2", "0_3").hb("a", 1, 18.3, true).own("a", 1, 18.35, "0_1").end(30)
	if rep := s.check(t); rep.S1.OK {
		t.Fatalf("a fault on incarnation 2 excused incarnation 1")
	}
}

func TestKilledProcessHoldsNothingAfterItsDeath(t *testing.T) {
	// a is killed at 10 s holding 0_0 and 0_1 (no record says it let them go); b takes them at 17 s.
	s := twoMembers().died("a", 1, 10, true).fault(1, "kill9", "a", 1, 10, 10.5, false, false)
	s.member("a", 2, 10.5, "ida2")
	s.own("b", 1, 17, "0_0", "0_2", "0_3").own("a", 2, 17.2, "0_1")
	s.snap(17.4, "Stable", sm("ida2", "0_1"), sm("idb", "0_0", "0_2", "0_3")).end(30)
	rep := s.check(t)
	if !rep.Pass {
		t.Fatalf("a kill and restart failed")
	}
	if got := rep.Faults[0].RecoveryMs; got != 6900 {
		t.Errorf("recovery %v ms, want 6900", got)
	}
}

func TestProcessWithoutDeathHoldsOn(t *testing.T) {
	// The same without the died record: a still holds its tasks, so b's are an overlap.
	s := twoMembers().own("b", 1, 17, "0_0", "0_2", "0_3").end(30)
	if rep := s.check(t); rep.S1.OK {
		t.Fatalf("a live process's tasks were forgotten")
	}
}

func TestMissedRecoveryDeadlineFails(t *testing.T) {
	// The fault ends at 10 s; the group is converged again only at 20 s (deadline 7 s).
	s := twoMembers().fault(1, "kill9", "a", 1, 9.5, 10, false, false)
	s.snap(9, "Reconciling", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3"))
	s.snap(20, "Stable", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3")).end(30)
	rep := s.check(t)
	if rep.S2.OK {
		t.Fatalf("a recovery of 10 s passed S2 with a 7 s deadline")
	}
	if got := rep.Faults[0].RecoveryMs; got != 10000 {
		t.Errorf("recovery %v ms, want 10000", got)
	}
}

func TestRecoveryJustInsideTheDeadlinePasses(t *testing.T) {
	s := twoMembers().fault(1, "kill9", "a", 1, 9.5, 10, false, false)
	s.snap(9, "Reconciling", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3"))
	s.snap(17, "Stable", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3")).end(30)
	rep := s.check(t)
	if !rep.S2.OK || rep.Faults[0].RecoveryMs != 7000 {
		t.Fatalf("recovery at exactly the deadline: ok=%v recovery=%v", rep.S2.OK, rep.Faults[0].RecoveryMs)
	}
}

func TestNeverConvergedFails(t *testing.T) {
	// The broker still lists a member that no longer runs until the next fault.
	s := twoMembers().died("a", 1, 10, true).fault(1, "remove", "a", 1, 10, 10, false, false)
	s.own("b", 1, 12, "0_0", "0_1", "0_2", "0_3")
	s.fault(2, "net-latency", "b", 1, 20, 22, false, false)
	s.snap(13, "Stable", sm("ida"), sm("idb", "0_0", "0_1", "0_2", "0_3")).end(30)
	rep := s.check(t)
	if rep.S2.OK || rep.Faults[0].RecoveryMs != -1 {
		t.Fatalf("a group that kept a dead member passed S2 (recovery %v)", rep.Faults[0].RecoveryMs)
	}
	if !strings.Contains(rep.S2.Violations[0], "no live member") {
		t.Errorf("reason %q", rep.S2.Violations[0])
	}
}

func TestMemberDisagreeingWithBrokerIsNotConverged(t *testing.T) {
	// The broker says a owns 0_0 and 0_1, but a's log says it holds only 0_1 until 15 s.
	s := twoMembers().fault(1, "net-reset", "a", 1, 9, 10, false, false)
	s.own("a", 1, 9.5, "0_1").own("a", 1, 15, "0_0", "0_1").end(30)
	rep := s.check(t)
	if got := rep.Faults[0].RecoveryMs; got != 5000 {
		t.Fatalf("recovery %v ms, want 5000 (when a's log agrees with the broker again)", got)
	}
}

func TestFatalEventFails(t *testing.T) {
	s := twoMembers()
	s.m(Record{T: sec(5), Proc: "a", Inc: 1, Member: "a", Kind: KindEvent, Event: "fatal", Err: "GROUP_AUTHORIZATION_FAILED"})
	rep := s.end(30).check(t)
	if rep.S3.OK || !strings.Contains(rep.S3.Violations[0], "GROUP_AUTHORIZATION_FAILED") {
		t.Fatalf("a fatal event passed S3: %v", rep.S3.Violations)
	}
}

func TestUnexpectedExitFails(t *testing.T) {
	s := twoMembers().died("b", 1, 12, false).end(30)
	if rep := s.check(t); rep.S3.OK {
		t.Fatalf("an unexpected exit passed S3")
	}
	s = twoMembers().end(30).died("b", 1, 31, false) // a failed Close when the run ended
	if rep := s.check(t); rep.S3.OK {
		t.Fatalf("an unexpected exit after the end passed S3")
	}
	s = twoMembers().died("b", 1, 12, true).end(30)
	if rep := s.check(t); !rep.S3.OK {
		t.Fatalf("an expected exit failed S3")
	}
}

func TestResourceBoundsFail(t *testing.T) {
	s := twoMembers()
	s.m(Record{T: sec(3), Proc: "a", Inc: 1, Kind: KindSample, Goroutines: 20, HeapInuse: 10 << 20})
	s.m(Record{T: sec(4), Proc: "a", Inc: 1, Kind: KindSample, Goroutines: 500, HeapInuse: 10 << 20})
	s.m(Record{T: sec(5), Proc: "b", Inc: 1, Kind: KindSample, Goroutines: 20, HeapInuse: 900 << 20})
	rep := s.end(30).check(t)
	if rep.S3.Count != 2 {
		t.Fatalf("S3 violations %v, want the goroutines of a and the heap of b", rep.S3.Violations)
	}
}

func TestGrowthOverALongRunFails(t *testing.T) {
	s := twoMembers()
	for i := range 1200 { // 20 minutes, goroutines creeping from 10 to 40, within the absolute bound
		s.m(Record{T: sec(float64(i)), Proc: "a", Inc: 1, Kind: KindSample, Goroutines: 10 + i/40, HeapInuse: 8 << 20})
	}
	rep := s.end(1300).check(t)
	if rep.S3.Count != 1 || !strings.Contains(rep.S3.Violations[0], "grew") {
		t.Fatalf("growth: %v, want one growth violation", rep.S3.Violations)
	}
	s = twoMembers()
	for i := range 1200 {
		s.m(Record{T: sec(float64(i)), Proc: "a", Inc: 1, Kind: KindSample, Goroutines: 20 + i%7, HeapInuse: 8 << 20})
	}
	if rep := s.end(1300).check(t); !rep.S3.OK {
		t.Fatalf("a flat run failed S3: %v", rep.S3.Violations)
	}
}

func TestConnectionBound(t *testing.T) {
	s := twoMembers()
	s.d(DriverRecord{T: sec(5), Kind: DKConns, Conns: 20})
	if rep := s.end(30).check(t); !rep.S3.OK {
		t.Fatalf("20 connections for 2 clients failed (bound 4x2+16)")
	}
	s.d(DriverRecord{T: sec(6), Kind: DKConns, Conns: 25})
	if rep := s.end(30).check(t); rep.S3.OK {
		t.Fatalf("25 connections for 2 clients passed")
	}
}

func TestConverged(t *testing.T) {
	live := []LiveMember{{Name: "a", MemberID: "ida", Active: []string{"0_1", "0_0"}}, {Name: "b", MemberID: "idb", Active: []string{"0_2"}}}
	good := &Snapshot{State: "Stable", Members: []SnapMember{sm("ida", "0_0", "0_1"), sm("idb", "0_2")}}
	if ok, why := Converged(good, live, 3); !ok {
		t.Fatalf("converged group refused: %s", why)
	}
	cases := map[string]struct {
		s    *Snapshot
		live []LiveMember
		want string
	}{
		"no snapshot":   {nil, live, "no description"},
		"reconciling":   {&Snapshot{State: "Reconciling", Members: good.Members}, live, "Reconciling"},
		"describe fail": {&Snapshot{State: "unavailable", Err: "boom"}, live, "boom"},
		"twice":         {&Snapshot{State: "Stable", Members: []SnapMember{sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_1")}}, live, "at 2 members"},
		"missing task":  {&Snapshot{State: "Stable", Members: []SnapMember{sm("ida", "0_0", "0_1"), sm("idb")}}, live, "0_2 active at 0"},
		"extra task":    {&Snapshot{State: "Stable", Members: []SnapMember{sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_7")}}, live, "distinct"},
		"unreconciled": {&Snapshot{State: "Stable", Members: []SnapMember{sm("ida", "0_0", "0_1"),
			{ID: "idb", Active: []string{"0_2"}, Target: []string{"0_2", "0_3"}}}}, live, "reconciled"},
		"dead in group": {&Snapshot{State: "Stable", Members: append(slices.Clone(good.Members), sm("idc"))}, live, "no live member"},
		"live missing":  {good, append(slices.Clone(live), LiveMember{Name: "c", MemberID: "idc"}), "not in the group"},
		"not started":   {good, append(slices.Clone(live), LiveMember{Name: "c"}), "not started"},
		"disagree":      {good, []LiveMember{live[0], {Name: "b", MemberID: "idb"}}, "holds []"},
	}
	for name, c := range cases {
		ok, why := Converged(c.s, c.live, 3)
		if ok || !strings.Contains(why, c.want) {
			t.Errorf("%s: ok=%v why=%q, want a refusal saying %q", name, ok, why, c.want)
		}
	}
}

func TestUncovered(t *testing.T) {
	got := uncovered(0, 100, [][2]int64{{50, 60}, {10, 20}, {15, 30}})
	want := [][2]int64{{0, 10}, {30, 50}, {60, 100}}
	if !slices.Equal(got, want) {
		t.Fatalf("uncovered %v, want %v", got, want)
	}
	if got := uncovered(0, 100, [][2]int64{{-5, 200}}); len(got) != 0 {
		t.Fatalf("fully covered left %v", got)
	}
}

func TestNewDist(t *testing.T) {
	var xs []float64
	for i := 1; i <= 20; i++ {
		xs = append(xs, float64(i))
	}
	d := NewDist(xs)
	if d.N != 20 || d.Median != 10 || d.P95 != 19 || d.Max != 20 {
		t.Fatalf("%+v", d)
	}
	if d := NewDist(nil); d.N != 0 {
		t.Fatalf("%+v", d)
	}
}

func TestDecodeAndTail(t *testing.T) {
	// A last line cut short by a kill is ignored; a bad line in the middle is an error.
	recs, err := DecodeJSONL[Record](strings.NewReader(`{"t":1,"k":"own"}`+"\n"+`{"t":2,"k":"o`), "x")
	if err != nil || len(recs) != 1 {
		t.Fatalf("truncated tail: %v %v", recs, err)
	}
	if _, err := DecodeJSONL[Record](strings.NewReader("{\"t\":1}\nnot json\n{\"t\":2}\n"), "x"); err == nil {
		t.Fatalf("a bad middle line was accepted")
	}
	path := filepath.Join(t.TempDir(), "log.jsonl")
	tail := &Tail[Record]{Path: path}
	if got, err := tail.Next(); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"t":1,"k":"a"}` + "\n" + `{"t":2,`)
	got, err := tail.Next()
	if err != nil || len(got) != 1 || got[0].T != 1 {
		t.Fatalf("first read: %v %v", got, err)
	}
	f.WriteString(`"k":"b"}` + "\n")
	got, err = tail.Next()
	if err != nil || len(got) != 1 || got[0].T != 2 || got[0].Kind != "b" {
		t.Fatalf("second read: %v %v", got, err)
	}
}

func TestMembersOfAProcessThatHaveNotStartedBlockConvergence(t *testing.T) {
	// Process big is spawned with two members; only big-01 has started when the broker's view
	// matches it, so the group is not converged until big-02 has joined too.
	s := newSynth(2)
	s.d(DriverRecord{T: sec(0), Kind: DKSpawn, Proc: "big", Inc: 1, Members: []string{"big-01", "big-02"}})
	s.m(Record{T: sec(0.1), Proc: "big", Inc: 1, Member: "big-01", Kind: KindStart, MemberID: "id1"})
	s.m(Record{T: sec(1), Proc: "big", Inc: 1, Member: "big-01", Kind: KindOwned, Active: []string{"0_0", "0_1"}})
	s.snap(1.1, "Stable", sm("id1", "0_0", "0_1"))
	s.fault(1, "add", "big", 1, 0, 0.5, false, false)
	s.m(Record{T: sec(3), Proc: "big", Inc: 1, Member: "big-02", Kind: KindStart, MemberID: "id2"})
	s.m(Record{T: sec(4), Proc: "big", Inc: 1, Member: "big-01", Kind: KindOwned, Active: []string{"0_0"}})
	s.m(Record{T: sec(4.5), Proc: "big", Inc: 1, Member: "big-02", Kind: KindOwned, Active: []string{"0_1"}})
	s.snap(5, "Stable", sm("id1", "0_0"), sm("id2", "0_1")).end(10)
	rep := s.check(t)
	if got := rep.Faults[0].RecoveryMs; got != 4500 {
		t.Fatalf("recovery %v ms, want 4500 (when both members hold what the broker says)", got)
	}
}

// The S2 deadline and the S3 bounds pinned from both sides, with the figures written out (not read
// from DefaultConfig): a deadline raised by a millisecond, or a bound raised by one, fails here.

func TestRecoveryOneMillisecondPastTheDeadlineFails(t *testing.T) {
	// Session 6 s + 2 heartbeats of 500 ms: the deadline is 7000 ms from the fault's end at 10 s.
	s := twoMembers().fault(1, "kill9", "a", 1, 9.5, 10, false, false)
	s.snap(9, "Reconciling", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3"))
	s.d(DriverRecord{T: sec(17) + 1000, Kind: DKSnapshot, Snap: &Snapshot{State: "Stable",
		Members: []SnapMember{sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3")}}}).end(30)
	rep := s.check(t)
	if got := rep.Faults[0].DeadlineMs; got != 7000 {
		t.Fatalf("deadline %v ms, want 7000 (session 6 s + 2 heartbeat intervals)", got)
	}
	if got := rep.Faults[0].RecoveryMs; got != 7001 {
		t.Fatalf("recovery %v ms, want 7001", got)
	}
	if rep.S2.OK {
		t.Fatalf("a recovery 1 ms past the 7000 ms deadline passed S2")
	}
}

// oneMemberSample is twoMembers with one sample of process a (one member): goroutines and heap.
func oneMemberSample(goroutines int, heap uint64) Report {
	s := twoMembers()
	s.m(Record{T: sec(3), Proc: "a", Inc: 1, Kind: KindSample, Goroutines: goroutines, HeapInuse: heap})
	return Check(s.end(30).run)
}

func TestGoroutineBoundIsExact(t *testing.T) {
	// One member: 30 + 15 goroutines.
	if rep := oneMemberSample(45, 1<<20); !rep.S3.OK {
		t.Fatalf("45 goroutines in a one-member process failed S3 (bound 45): %v", rep.S3.Violations)
	}
	if rep := oneMemberSample(46, 1<<20); rep.S3.OK || !strings.Contains(rep.S3.Violations[0], "46 goroutines, bound 45") {
		t.Fatalf("46 goroutines in a one-member process: %v, want a violation of the bound 45", rep.S3.Violations)
	}
}

func TestHeapBoundIsExact(t *testing.T) {
	// One member: 32 + 2 MiB in use.
	if rep := oneMemberSample(10, 34<<20); !rep.S3.OK {
		t.Fatalf("34 MiB in a one-member process failed S3 (bound 34 MiB): %v", rep.S3.Violations)
	}
	if rep := oneMemberSample(10, 34<<20+1); rep.S3.OK || !strings.Contains(rep.S3.Violations[0], "bound 34.0") {
		t.Fatalf("34 MiB + 1 byte in a one-member process: %v, want a violation of the bound 34 MiB", rep.S3.Violations)
	}
}

func TestConnectionBoundIsExact(t *testing.T) {
	// Two one-member processes on one broker: 4 x 2 + 16 = 24 connections.
	s := twoMembers()
	s.d(DriverRecord{T: sec(5), Kind: DKConns, Conns: 24})
	if rep := Check(s.end(30).run); !rep.S3.OK {
		t.Fatalf("24 connections for 2 clients failed (bound 24): %v", rep.S3.Violations)
	}
	s = twoMembers()
	s.d(DriverRecord{T: sec(5), Kind: DKConns, Conns: 25})
	if rep := Check(s.end(30).run); rep.S3.OK || !strings.Contains(rep.S3.Violations[0], "bound 24") {
		t.Fatalf("25 connections for 2 clients: %v, want a violation of the bound 24", rep.S3.Violations)
	}
}

func TestConnectionBoundCountsTheTransactionalClient(t *testing.T) {
	// Two one-member exactly-once processes: each member has two clients, 4 x 4 + 16 = 32.
	for _, c := range []struct {
		conns int
		ok    bool
	}{{32, true}, {33, false}} {
		s := twoMembers()
		s.run.Config.App = "eos"
		s.d(DriverRecord{T: sec(5), Kind: DKConns, Conns: c.conns})
		rep := Check(s.end(30).run)
		var connViolations []string
		for _, v := range rep.S3.Violations {
			if strings.Contains(v, "connections") {
				connViolations = append(connViolations, v)
			}
		}
		if got := len(connViolations) == 0; got != c.ok || !c.ok && !strings.Contains(connViolations[0], "bound 32 (4 clients)") {
			t.Fatalf("%d connections for 2 exactly-once members: violations %q; want ok=%v against the bound 32", c.conns, connViolations, c.ok)
		}
	}
}
