package chaos

import (
	"fmt"
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

func TestVerdictListsAtMost25(t *testing.T) {
	for _, c := range []struct{ n, listed int }{{25, 25}, {26, 25}} {
		var v Verdict
		for i := range c.n {
			v.add("violation %d", i)
		}
		if v.Count != c.n || len(v.Violations) != c.listed || v.Violations[len(v.Violations)-1] != fmt.Sprintf("violation %d", c.listed-1) {
			t.Errorf("%d violations: count %d, listed %d (last %q); want count %d, the first %d listed", c.n, v.Count, len(v.Violations), v.Violations[len(v.Violations)-1], c.n, c.listed)
		}
	}
}

func TestCleanRunFigures(t *testing.T) {
	// The run goes from the first spawn at 0 s to the end at 30 s; the fault's recovery of 0 ms is
	// part of its type's distribution.
	rep := twoMembers().fault(1, "net-latency", "a", 1, 10, 15, false, false).end(30).check(t)
	if rep.WallSecs != 30 {
		t.Errorf("wall %v s, want 30", rep.WallSecs)
	}
	if d := rep.Recovery["net-latency"]; d != (Dist{N: 1}) {
		t.Errorf("recovery of net-latency %+v, want one recovery of 0 ms", d)
	}
}

func TestNeverConvergedIsNoRecoveryFigure(t *testing.T) {
	// As TestNeverConvergedFails: fault 1 never converged (-1), and -1 is no recovery time; the
	// violation names the fault's target and the next fault's start (20 s after the first spawn).
	s := twoMembers().died("a", 1, 10, true).fault(1, "remove", "a", 1, 10, 10, false, false)
	s.own("b", 1, 12, "0_0", "0_1", "0_2", "0_3")
	s.fault(2, "net-latency", "b", 1, 20, 22, false, false)
	s.snap(13, "Stable", sm("ida"), sm("idb", "0_0", "0_1", "0_2", "0_3")).end(30)
	rep := s.check(t)
	if d, ok := rep.Recovery["remove"]; ok {
		t.Errorf("recovery of remove %+v, want none (it never converged)", d)
	}
	// (Fault 2 never converges either: the broker keeps ida to the end.)
	const want = "fault 1 (remove on a#1): not converged before +20.000s; last reason: the group has member ida, which is no live member"
	if rep.S2.Count != 2 || rep.S2.Violations[0] != want {
		t.Errorf("S2 violations %q, want [%q]", rep.S2.Violations, want)
	}
}

func TestBrokerFaultIsNamedAsSuch(t *testing.T) {
	s := twoMembers().fault(1, "broker-restart", "", 0, 10, 12, false, false)
	s.d(DriverRecord{T: sec(10), Kind: DKSnapshot, Snap: &Snapshot{State: "unavailable", Err: "connection refused"}})
	rep := s.end(30).check(t)
	const want = "fault 1 (broker-restart on the broker): not converged before +30.000s; last reason: describe failed: connection refused"
	if rep.S2.Count != 1 || rep.S2.Violations[0] != want {
		t.Errorf("S2 violations %q, want [%q]", rep.S2.Violations, want)
	}
}

func TestRecoveryAtTheClocksZero(t *testing.T) {
	// Times are Unix microseconds, and 0 is a time like any other: a fault ending at 0 with the
	// group converged then recovered in 0 ms (not "never").
	run := Run{Config: DefaultConfig()}
	run.Config.Partitions = 1
	run.Driver = []DriverRecord{
		{T: 0, Kind: DKSpawn, Proc: "a", Inc: 1, Members: []string{"a"}},
		{T: 0, Kind: DKSnapshot, Snap: &Snapshot{State: "Stable", Members: []SnapMember{sm("ida", "0_0")}}},
		{T: 0, Kind: DKFault, Fault: &Fault{N: 1, Type: "net-latency", Proc: "a", Inc: 1}},
		{T: 5_000_000, Kind: DKEnd},
	}
	run.Members = []Record{
		{T: 0, Proc: "a", Inc: 1, Member: "a", Kind: KindStart, MemberID: "ida"},
		{T: 0, Proc: "a", Inc: 1, Member: "a", Kind: KindOwned, Active: []string{"0_0"}},
	}
	rep := Check(run)
	if got := rep.Faults[0].RecoveryMs; got != 0 || !rep.S2.OK || rep.Recovery["net-latency"] != (Dist{N: 1}) {
		t.Fatalf("recovery %v ms, S2 %v %q, distribution %+v; want 0 ms, passed", got, rep.S2.OK, rep.S2.Violations, rep.Recovery["net-latency"])
	}
}

func TestMembersThatNeverLoggedBlockConvergence(t *testing.T) {
	// Process big is spawned with two members; big-02 never writes a record. The broker's view
	// matches big-01, but the group is not converged while big-02 runs without having started.
	s := newSynth(2)
	s.d(DriverRecord{T: sec(0), Kind: DKSpawn, Proc: "big", Inc: 1, Members: []string{"big-01", "big-02"}})
	s.m(Record{T: sec(0.1), Proc: "big", Inc: 1, Member: "big-01", Kind: KindStart, MemberID: "id1"})
	s.m(Record{T: sec(1), Proc: "big", Inc: 1, Member: "big-01", Kind: KindOwned, Active: []string{"0_0", "0_1"}})
	s.snap(1.1, "Stable", sm("id1", "0_0", "0_1"))
	s.fault(1, "add", "big", 1, 0, 0.5, false, false).end(10)
	rep := s.check(t)
	const want = "fault 1 (add on big#1): not converged before +10.000s; last reason: member big#1/big-02 has not started"
	if got := rep.Faults[0].RecoveryMs; got != -1 || rep.S2.Count != 1 || rep.S2.Violations[0] != want {
		t.Fatalf("recovery %v ms, violations %q; want -1 and [%q]", got, rep.S2.Violations, want)
	}
}

// TestRecoveryIsMeasuredAtTheRightMoment pins firstConverged's window [fault end, next fault's
// start] and each member's life (spawn, start, close, death) at their instants.
func TestRecoveryIsMeasuredAtTheRightMoment(t *testing.T) {
	reconciling := func(s *synth, at float64) {
		s.snap(at, "Reconciling", sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3"))
	}
	stable := func(s *synth, at float64, more ...SnapMember) {
		s.snap(at, "Stable", append([]SnapMember{sm("ida", "0_0", "0_1"), sm("idb", "0_2", "0_3")}, more...)...)
	}
	spawn := func(s *synth, name string, at float64, members ...string) {
		s.d(DriverRecord{T: sec(at), Kind: DKSpawn, Proc: name, Inc: 1, Members: members})
	}
	for _, c := range []struct {
		name  string
		build func(s *synth)
		want  float64 // fault 1's recovery, ms
	}{
		{"a snapshot at the next fault's start counts", func(s *synth) {
			reconciling(s, 9)
			s.fault(1, "net-latency", "a", 1, 9.5, 10, false, false)
			stable(s, 15)
			s.fault(2, "net-latency", "b", 1, 15, 16, false, false)
		}, 5000},
		{"a member record at the next fault's start counts", func(s *synth) {
			s.fault(1, "net-reset", "a", 1, 9, 10, false, false)
			s.own("a", 1, 9.5, "0_1").own("a", 1, 15, "0_0", "0_1")
			s.fault(2, "net-latency", "b", 1, 15, 16, false, false)
		}, 5000},
		{"a process's end at the next fault's start counts", func(s *synth) {
			spawn(s, "c", 0, "c") // c never starts: the group is not converged while it runs
			s.fault(1, "net-latency", "a", 1, 9.5, 10, false, false)
			s.died("c", 1, 15, true)
			s.fault(2, "net-latency", "b", 1, 15, 16, false, false)
		}, 5000},
		{"a process's end after the next fault's start does not count", func(s *synth) {
			spawn(s, "c", 0, "c")
			s.fault(1, "net-latency", "a", 1, 9.5, 10, false, false)
			s.fault(2, "net-latency", "b", 1, 15, 16, false, false)
			s.died("c", 1, 15.5, true)
		}, -1},
		{"convergence before the fault's end is not its recovery", func(s *synth) {
			spawn(s, "c", 3, "c") // converged again when c ends at 5 s, before the fault
			s.died("c", 1, 5, true)
			reconciling(s, 9)
			s.fault(1, "net-latency", "a", 1, 9.5, 10, false, false)
			stable(s, 12)
		}, 2000},
		{"a member spawned at the fault's end is live from then, its ID known from its start record", func(s *synth) {
			s.fault(1, "add", "c", 1, 9.5, 10, false, false)
			spawn(s, "c", 10, "c")
			stable(s, 10.2, sm("idc"))
			s.m(Record{T: sec(10.5), Proc: "c", Inc: 1, Member: "c", Kind: KindStart, MemberID: "idc"})
		}, 500},
		{"a member is gone from its close on", func(s *synth) {
			s.member("c", 1, 0, "idc")
			stable(s, 3, sm("idc"))
			s.fault(1, "remove", "c", 1, 11, 11.5, false, false)
			stable(s, 11.5)
			s.m(Record{T: sec(12), Proc: "c", Inc: 1, Member: "c", Kind: KindClosed})
			s.died("c", 1, 13, true)
		}, 500},
		{"a process spawned without members is live from its spawn to its end", func(s *synth) {
			s.fault(1, "add", "x", 1, 11.5, 12, false, false)
			spawn(s, "x", 12)
			s.died("x", 1, 14, true)
		}, 2000},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := twoMembers()
			c.build(s)
			rep := s.end(30).check(t)
			if got := rep.Faults[0].RecoveryMs; got != c.want {
				t.Fatalf("recovery %v ms, want %v", got, c.want)
			}
		})
	}
}

func TestAnswerAtTheFaultsEndEndsTheExcuse(t *testing.T) {
	// a is cut off from 10 s to 18 s; b takes 0_0 at 16 s. a's first answer comes at exactly 18 s
	// (another at 19 s): the excuse ends at 18 s + the 1 s grace, so a's holding 0_0 until 19.5 s is
	// 500 ms too long. The excused window is 16-19 s.
	s := twoMembers().fault(1, "net-cut-long", "a", 1, 10, 18, true, false)
	s.own("b", 1, 16, "0_0", "0_2", "0_3").hb("a", 1, 18, true).hb("a", 1, 19, true).own("a", 1, 19.5, "0_1").end(30)
	rep := s.check(t)
	const want = "task 0_0 held by a#1/a and b#1/b at once from +19.000s for 500 ms (no exception covers it)"
	if rep.S1.Count != 1 || rep.S1.Violations[0] != want {
		t.Fatalf("S1 violations %q, want [%q]", rep.S1.Violations, want)
	}
	if f := rep.Faults[0]; f.WindowMs != 3000 || f.PausedMs != 0 || f.AfterMs != 3000 {
		t.Errorf("window %v paused %v after %v, want 3000 0 3000", f.WindowMs, f.PausedMs, f.AfterMs)
	}
}

func TestEmptyExcuseCoversNothing(t *testing.T) {
	// An expiring fault of no length with no grace excuses nothing: the overlap of 0_0 from 12 s to
	// 20 s is one violation of 8000 ms, not two cut at the fault.
	s := twoMembers()
	s.run.Config.GraceMs = 0
	s.fault(1, "net-cut-long", "a", 1, 15, 15, true, false)
	s.own("b", 1, 12, "0_0", "0_2", "0_3").own("a", 1, 20, "0_1").end(30)
	rep := s.check(t)
	const want = "task 0_0 held by a#1/a and b#1/b at once from +12.000s for 8000 ms (no exception covers it)"
	if rep.S1.Count != 1 || rep.S1.Violations[0] != want || rep.Faults[0].WindowMs != 0 {
		t.Fatalf("S1 violations %q, window %v ms; want [%q], 0 ms", rep.S1.Violations, rep.Faults[0].WindowMs, want)
	}
}

func TestUncoveredEdges(t *testing.T) {
	for _, c := range []struct {
		a, b  int64
		cover [][2]int64
		want  [][2]int64
	}{
		{0, 100, [][2]int64{{0, 100}, {150, 160}}, nil},                            // covered to b; a cover past b adds nothing
		{0, 100, [][2]int64{{20, 30}, {100, 120}}, [][2]int64{{0, 20}, {30, 100}}}, // a cover starting at b
		{5, 5, nil, nil}, // an empty range has no uncovered part
	} {
		if got := uncovered(c.a, c.b, c.cover); !slices.Equal(got, c.want) {
			t.Errorf("uncovered(%d, %d, %v) = %v, want %v", c.a, c.b, c.cover, got, c.want)
		}
	}
}

func TestBoundsOfATwoMemberProcess(t *testing.T) {
	// Two members: 30 + 15 x 2 = 60 goroutines, 32 + 2 x 2 = 36 MiB.
	for _, c := range []struct {
		goroutines int
		heap       uint64
		want       []string
	}{
		{60, 36 << 20, nil},
		{61, 36 << 20, []string{"process big#1: 61 goroutines, bound 60"}},
		{60, 36<<20 + 1, []string{"process big#1: 36.0 MiB heap in use, bound 36.0"}},
	} {
		s := newSynth(2)
		s.d(DriverRecord{T: sec(0), Kind: DKSpawn, Proc: "big", Inc: 1, Members: []string{"big-01", "big-02"}})
		s.m(Record{T: sec(3), Proc: "big", Inc: 1, Kind: KindSample, Goroutines: c.goroutines, HeapInuse: c.heap})
		if rep := Check(s.end(30).run); !slices.Equal(rep.S3.Violations, c.want) {
			t.Errorf("%d goroutines, %d bytes: S3 violations %q, want %q", c.goroutines, c.heap, rep.S3.Violations, c.want)
		}
	}
}

func TestConnectionBoundFollowsTheProcessesAlive(t *testing.T) {
	// c runs from 10 s to 20 s: at 10 s there are 3 clients (bound 4 x 3 + 16 = 28), at 20 s 2
	// (bound 24).
	s := twoMembers()
	s.d(DriverRecord{T: sec(10), Kind: DKSpawn, Proc: "c", Inc: 1, Members: []string{"c"}})
	s.died("c", 1, 20, true)
	s.d(DriverRecord{T: sec(10), Kind: DKConns, Conns: 28})
	s.d(DriverRecord{T: sec(20), Kind: DKConns, Conns: 25})
	rep := Check(s.end(30).run)
	want := []string{"25 connections to the broker at +20.000s, bound 24 (2 clients)"}
	if !slices.Equal(rep.S3.Violations, want) {
		t.Fatalf("S3 violations %q, want %q", rep.S3.Violations, want)
	}
}

func TestConnectionBoundPerBroker(t *testing.T) {
	// Three brokers: 4 x 2 clients x 3 + 16 = 40.
	for _, c := range []struct {
		conns int
		want  []string
	}{{40, nil}, {41, []string{"41 connections to the broker at +5.000s, bound 40 (2 clients)"}}} {
		s := twoMembers()
		s.run.Config.Brokers = 3
		s.d(DriverRecord{T: sec(5), Kind: DKConns, Conns: c.conns})
		if rep := Check(s.end(30).run); !slices.Equal(rep.S3.Violations, c.want) {
			t.Errorf("%d connections to 3 brokers: %q, want %q", c.conns, rep.S3.Violations, c.want)
		}
	}
}

// growthRun is twoMembers with n samples of process a (one member) and n counts of the broker's
// connections, at 0, 60, 120, … s and the last one at span µs after the first: all but the last two
// with the values early, the last two with late (goroutines, heap in use, connections).
func growthRun(n int, span int64, early, late [3]int) Report {
	s := twoMembers()
	for i := range n {
		at := t0 + int64(i)*60_000_000
		if i == n-1 {
			at = t0 + span
		}
		v := early
		if i >= n-2 {
			v = late
		}
		s.m(Record{T: at, Proc: "a", Inc: 1, Kind: KindSample, Goroutines: v[0], HeapInuse: uint64(v[1])})
		s.d(DriverRecord{T: at, Kind: DKConns, Conns: v[2]})
	}
	return Check(s.end(1300).run)
}

func TestGrowthBoundIsExact(t *testing.T) {
	// Ten samples over exactly 10 minutes: the second fifth (samples 3 and 4) has medians 20
	// goroutines, 8 MiB, 8 connections; the last fifth may reach 1.25 x 20 + 10 = 35 goroutines,
	// 1.5 x 8 + 8 = 20 MiB and 1.25 x 8 + 10 = 20 connections, and no more.
	const mib = 1 << 20
	early := [3]int{20, 8 * mib, 8}
	for _, c := range []struct {
		name string
		late [3]int
		want []string
	}{
		{"at the bounds", [3]int{35, 20 * mib, 20}, nil},
		{"one goroutine more", [3]int{36, 20 * mib, 20}, []string{"process a#1: goroutines grew from a median of 20 to 36"}},
		{"one byte more", [3]int{35, 20*mib + 1, 20}, []string{"process a#1: heap in use grew from a median of 8.0 MiB to 20.0 MiB"}},
		{"one connection more", [3]int{35, 20 * mib, 21}, []string{"broker connections grew from a median of 8 to 21"}},
	} {
		if rep := growthRun(10, 600_000_000, early, c.late); !slices.Equal(rep.S3.Violations, c.want) {
			t.Errorf("%s: S3 violations %q, want %q", c.name, rep.S3.Violations, c.want)
		}
	}
	// Too short to judge: 1 µs less than 10 minutes, or 9 samples over 20 minutes.
	late := [3]int{40, 30 * mib, 24}
	if rep := growthRun(10, 600_000_000-1, early, late); !rep.S3.OK {
		t.Errorf("ten samples over 10 minutes less 1 µs were judged for growth: %q", rep.S3.Violations)
	}
	if rep := growthRun(9, 1_200_000_000, early, late); !rep.S3.OK {
		t.Errorf("nine samples were judged for growth: %q", rep.S3.Violations)
	}
}

func TestSnapshotEqual(t *testing.T) {
	base := func() *Snapshot {
		return &Snapshot{State: "Stable", Epoch: 4, Err: "", Members: []SnapMember{
			{ID: "ida", Epoch: 4, Active: []string{"0_0"}, Target: []string{"0_0"}},
			{ID: "idb", Epoch: 3, Active: []string{"0_1"}, Target: []string{"0_1", "0_2"}},
		}}
	}
	if !(*Snapshot)(nil).Equal(nil) {
		t.Errorf("nil != nil")
	}
	if base().Equal(nil) || (*Snapshot)(nil).Equal(base()) {
		t.Errorf("a snapshot equals nil")
	}
	if !base().Equal(base()) {
		t.Errorf("two copies of a snapshot differ")
	}
	for name, edit := range map[string]func(s *Snapshot){
		"state":         func(s *Snapshot) { s.State = "Reconciling" },
		"epoch":         func(s *Snapshot) { s.Epoch = 5 },
		"error":         func(s *Snapshot) { s.Err = "boom" },
		"member ID":     func(s *Snapshot) { s.Members[1].ID = "idc" },
		"member epoch":  func(s *Snapshot) { s.Members[1].Epoch = 4 },
		"active":        func(s *Snapshot) { s.Members[1].Active = []string{"0_2"} },
		"target":        func(s *Snapshot) { s.Members[1].Target = []string{"0_1"} },
		"members count": func(s *Snapshot) { s.Members = s.Members[:1] },
	} {
		o := base()
		edit(o)
		if base().Equal(o) || o.Equal(base()) {
			t.Errorf("snapshots differing in %s are equal", name)
		}
	}
}

func TestReadJSONL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(`{"t":1,"k":"own"}`+"\n"+`{"t":2,"k":"hb"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadJSONL[Record](path)
	if err != nil || len(recs) != 2 || recs[1].T != 2 || recs[1].Kind != KindHeartbeat {
		t.Fatalf("ReadJSONL: %+v %v", recs, err)
	}
	if _, err := ReadJSONL[Record](path + ".missing"); !os.IsNotExist(err) {
		t.Fatalf("a missing file: %v, want not exist", err)
	}
}

func TestDecodeJSONLDetails(t *testing.T) {
	// A bad line is named by its number (blank lines count).
	_, err := DecodeJSONL[Record](strings.NewReader("{\"t\":1}\n\nnot json\n{\"t\":2}\n"), "x")
	if err == nil || !strings.HasPrefix(err.Error(), "x:3: ") {
		t.Fatalf("error %v, want one about x:3", err)
	}
	// A line longer than 64 KiB (a store dump of many keys) is read.
	long := `{"t":1,"k":"store","err":"` + strings.Repeat("x", 100<<10) + `"}`
	recs, err := DecodeJSONL[Record](strings.NewReader(long+"\n"+`{"t":2}`+"\n"), "x")
	if err != nil || len(recs) != 2 || len(recs[0].Err) != 100<<10 {
		t.Fatalf("a 100 KiB line: %d records, %v", len(recs), err)
	}
}

// lines is a text with every run of spaces made one space: the report's columns are padded, and
// the tests below check the words and figures, not the padding.
func lines(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return out
}

func TestReportTextPlain(t *testing.T) {
	r := Report{
		Config:   Config{Seed: 7, Partitions: 4, SessionMs: 6000, HeartbeatMs: 500, Command: "SEED=7 make chaos"},
		Faults:   make([]FaultResult, 2),
		Recovery: map[string]Dist{"kill9": {N: 2, Median: 5800, P95: 6100, Max: 6100}},
		S1:       Verdict{OK: true}, S2: Verdict{OK: true}, S3: Verdict{OK: true}, S4: Verdict{OK: true},
		Pass: true, WallSecs: 53.4,
	}
	want := []string{
		"chaos: seed 7, 2 faults, 1 brokers, 4 partitions, session 6000 ms, heartbeat 500 ms, wall 53 s",
		"",
		"recovery after each fault (S2; deadline 7000 ms = session + 2 heartbeats):",
		"fault n median p95 max",
		"kill9 2 5800ms 6100ms 6100ms",
		"",
		"S1 PASS: no task held twice outside the expiry windows",
		"S2 PASS: converged within the deadline after every fault",
		"S3 PASS: no fatal event, no unexpected exit, bounded goroutines/heap/connections",
		"",
	}
	if got := lines(r.Text()); !slices.Equal(got, want) {
		t.Fatalf("text:\n%s\nwant (spaces collapsed):\n%s", r.Text(), strings.Join(want, "\n"))
	}
}

func TestReportTextFull(t *testing.T) {
	r := Report{
		Config: Config{App: "eos", Keys: 36, Seed: 20261201, Partitions: 12, Brokers: 3, SessionMs: 6000, HeartbeatMs: 500,
			ExtraDeadlineMs: 10000, Soak: "30m", Command: "APP=eos SEED=20261201 make chaos",
			GoroutinesBase: 100, HeapBaseMiB: 64, ConnsPerClient: 4, ConnsBase: 16},
		Faults:   make([]FaultResult, 3),
		Recovery: map[string]Dist{"pause-long": {N: 1, Median: 564, P95: 564, Max: 564}},
		Windows:  map[string]Dist{"net-cut-long": {N: 2}, "pause-long": {N: 1, Median: 2973, P95: 2973, Max: 4180}},
		After:    map[string]Dist{"net-cut-long": {N: 2}, "pause-long": {N: 1, Median: 1, P95: 1, Max: 1}},
		Paused:   map[string]Dist{"pause-long": {N: 1, Median: 4180, P95: 4180, Max: 4180}},
		// Two incarnations tie on both figures: the first is named.
		Procs: []ProcStats{{Proc: "p01", Inc: 1, Members: 1, Samples: 9, MaxGoroutines: 54, MaxHeapMiB: 6.6},
			{Proc: "p02", Inc: 2, Members: 1, Samples: 9, MaxGoroutines: 54, MaxHeapMiB: 6.6}},
		Conns: Dist{N: 100, Median: 6, P95: 12, Max: 13},
		EOS: &EOSSummary{Keys: 36, Inputs: 141876, OutputRecords: 141877, StoreKeys: 35, Lost: 1, Duplicated: 2,
			OutputLost: 3, OutputDuplicated: 4, StoreLost: 5, StoreDuplicated: 6, VisibleRepeats: 7, VisibleGaps: 8, SettleMs: 1234},
		S1:           Verdict{OK: true},
		S2:           Verdict{OK: false, Count: 1, Violations: []string{"fault 3 (kill9 on p01#1): converged after 17500 ms, deadline 17000 ms"}},
		S3:           Verdict{OK: true},
		S4:           Verdict{OK: true},
		Markers:      []string{"ended a hanging transaction: wrote the ABORT marker for chaos-output[1] producer 0 epoch 16 from offset 281"},
		Hanging:      []string{"hanging transaction: COMMIT marker for chaos-output[2] producer 3 epoch 1 from offset 9"},
		HangDetector: true,
		HangLooks:    321,
		WallSecs:     997,
	}
	want := []string{
		"app: eos (the counting application on the stream runtime, exactly_once_v2, Pebble store; 36 keys)",
		"chaos: seed 20261201, 3 faults, 3 brokers, 12 partitions, session 6000 ms, heartbeat 500 ms, wall 997 s",
		"soak: 30m",
		"",
		"recovery after each fault (S2; deadline 17000 ms = session + 2 heartbeats + 10000 ms for the exactly-once app's start):",
		"fault n median p95 max",
		"pause-long 1 564ms 564ms 564ms",
		"",
		"S1 double-processing windows (faults past the session timeout; a task held by the faulted member and another):",
		"fault n window median window max after-resume max while-paused max",
		"net-cut-long 2 0ms 0ms 0ms -",
		"pause-long 1 2973ms 4180ms 1ms 4180ms",
		"",
		"processes: 2 incarnations; most goroutines 54 in p01#1 (1 members); most heap in use 6.6 MiB in p01#1 (1 members)",
		"S3 bounds per process: goroutines <= 100 + 0 x members, heap in use <= 64 + 0 MiB x members; over runs of 10 min or more the median of the last fifth <= 1.25 x (goroutines, +10) / 1.5 x (heap, +8 MiB) the median of the second fifth",
		"broker connections: 100 samples, median 6, max 13 (bound 4 x clients x brokers + 16)",
		"",
		"hanging transactions the driver ended (a run about the single-node broker limitation, HANGS=abort: markers the coordinator skipped; see README): 1",
		"ended a hanging transaction: wrote the ABORT marker for chaos-output[1] producer 0 epoch 16 from offset 281",
		"",
		"hanging transactions found by the detector (321 looks; each fails S4): 1",
		"hanging transaction: COMMIT marker for chaos-output[2] producer 3 epoch 1 from offset 9",
		"",
		"exactly-once (S4): 36 keys, 141876 input records, 141877 committed output records, 35 keys in the final stores, settled 1234 ms after the last fault",
		"lost 1, duplicated 2 (output: 3 lost, 4 duplicated; stores: 5 lost, 6 duplicated); visible counts repeated 7, missing 8",
		"",
		"S1 PASS: no task held twice outside the expiry windows",
		"S2 FAIL (1 violations): converged within the deadline after every fault",
		"fault 3 (kill9 on p01#1): converged after 17500 ms, deadline 17000 ms",
		"S3 PASS: no fatal event, no unexpected exit, bounded goroutines/heap/connections",
		"S4 PASS: every key's (and window's) committed output and stored count equal its input count; visible counts exactly 1..n",
		"",
		"reproduce: APP=eos SEED=20261201 make chaos",
		"",
	}
	if got := lines(r.Text()); !slices.Equal(got, want) {
		t.Fatalf("text:\n%s\nwant (spaces collapsed):\n%s", r.Text(), strings.Join(want, "\n"))
	}
}

// The markers the driver wrote for hanging transactions reach the report, in order; in a run of
// plain members (no S4) they decide no verdict (an exactly-once run's verdict: TestS4HangsAndMarkers).
func TestCheckReportsTheMarkersTheDriverWrote(t *testing.T) {
	s := twoMembers()
	s.d(DriverRecord{T: sec(3), Kind: DKMarker, Detail: "ended a hanging transaction: wrote the ABORT marker for log[1] producer 7 epoch 8 from offset 46"})
	s.d(DriverRecord{T: sec(4), Kind: DKMarker, Detail: "ended a hanging transaction: wrote the ABORT marker for log[2] producer 7 epoch 16 from offset 3"})
	rep := s.end(10).check(t)
	want := []string{"ended a hanging transaction: wrote the ABORT marker for log[1] producer 7 epoch 8 from offset 46",
		"ended a hanging transaction: wrote the ABORT marker for log[2] producer 7 epoch 16 from offset 3"}
	if !slices.Equal(rep.Markers, want) {
		t.Fatalf("Markers = %q, want %q", rep.Markers, want)
	}
	if !rep.Pass {
		t.Fatalf("a run whose only news is two markers failed: %s", rep.Text())
	}
}
