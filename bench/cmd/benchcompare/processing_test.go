package main

import (
	"encoding/xml"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func sampleProcessing() *Processing {
	pr := &Processing{Records: 1000, Partitions: 4, Keys: 10, ValueBytes: 16, Restore: 1000}
	add := func(id string, side Side, perSec, perCPU, rss float64) {
		pr.Runs = append(pr.Runs, &Proc{ID: id, Side: side, Name: id, Records: 1000, RecPerSec: perSec, RecPerCPU: perCPU, PeakRSSMiB: rss})
	}
	add("consumer", Go, 1e6, 2e6, 40)
	add("map", Go, 2e5, 4e5, 50)
	add("map", Java, 3e4, 4e4, 300)
	add("count-memory", Go, 1e5, 3e5, 90)
	add("count-memory", Java, 2e4, 2e4, 300)
	add("handwritten", Go, 1e5, 4e5, 60) // 4e5/3e5: the runtime spends 1.33× its CPU per record
	add("pipe", Go, 3e5, 5e5, 40)        // 3e5/5e5: the runtime does 0.6× its records per CPU-s
	add("count-memory-2t", Go, 1.5e5, 2.4e5, 95)
	add("count-memory-2t", Java, 3e4, 1.6e4, 320)
	add("count-memory-eos", Go, 1e5, 1.5e5, 90)
	add("count-memory-eos", Java, 2e4, 1e5, 300)
	add("restore-memory", Go, 5e5, 1e6, 80)
	add("restore-memory", Java, 6e5, 1e6, 150)
	pr.Runs = append(pr.Runs, &Proc{ID: "count-persistent", Side: Go, Failure: "broke"})
	pr.UncleanRecords, pr.UncleanKeys = 1000, 1000
	pr.Runs = append(pr.Runs,
		&Proc{ID: "restore-unclean", Side: Go, Name: "unclean", Records: 3, Seconds: 0.01, StartSeconds: 6.5, StateMiB: 40, ChangelogEnd: 1010},
		&Proc{ID: "restore-unclean", Side: Java, Name: "unclean", Records: 1000, Seconds: 4, StartSeconds: 12, StateMiB: 20, ChangelogEnd: 1040, WipedTasks: 4})
	pr.Goals = goals(pr)
	return pr
}

// The goals are the issues' ratios, computed the right way round, and a failed run yields none.
func TestProcessingGoals(t *testing.T) {
	want := map[string]struct {
		v   float64
		met bool
	}{
		"map: Go ÷ Kafka Streams, records per CPU-s":                                               {10, true},
		"map: Go ÷ Kafka Streams, peak RSS":                                                        {50.0 / 300, true},
		"count-memory: Go ÷ Kafka Streams, records per CPU-s":                                      {15, true},
		"count-memory: Go ÷ Kafka Streams, peak RSS":                                               {0.3, false},
		"restore-memory: Go ÷ Kafka Streams, records/s":                                            {5.0 / 6, false},
		"count-memory: the runtime's CPU per record ÷ the hand-written app's":                      {4.0 / 3, false},
		"count-memory: the runtime's records per CPU-s ÷ the bare pipe's":                          {0.6, true},
		"Go: CPU per record, exactly_once_v2 ÷ at_least_once":                                      {2, false},
		"exactly_once_v2: Go ÷ Kafka Streams, records per CPU-s":                                   {1.5, false},
		"restore after an unclean stop under exactly_once_v2: Go ÷ Kafka Streams, restore seconds": {0.0025, true},
	}
	got := sampleProcessing().Goals
	if len(got) != len(want) {
		t.Fatalf("%d goals, want %d: %+v", len(got), len(want), got)
	}
	for _, g := range got {
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("unexpected goal %q", g.Name)
			continue
		}
		if math.Abs(g.Value-w.v) > 1e-9 || g.Met != w.met {
			t.Errorf("%s = %.3f (met %v), want %.3f (met %v)", g.Name, g.Value, g.Met, w.v, w.met)
		}
	}
}

// The processing section renders into the table with its chart, a failed run is named, and a
// partial run's processing replaces the earlier one when folded in.
func TestProcessingRender(t *testing.T) {
	res := &Results{Broker: map[string]string{"kafka.version": "4.4.0"}, Plan: quickPlan(), Processing: sampleProcessing(),
		Load: []PhaseLoad{{Phase: "processing", Mean: 3, Min: 2, Max: 4}}}
	svg := processingChart(res)
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("processing.svg is not well-formed: %v", err)
		}
	}
	md := markdown(res, "../bench/results/")
	for _, want := range []string{
		"| map | 200000 | 400000 | 50 | 30000 | 40000 | 300 | 10.00 | 0.17 |",
		"count-persistent go: broke",
		"Load average (1 min) during this phase: 3.0 (2.0–4.0)",
		"**1000000 records/s**",
		"../bench/results/processing.svg",
		"| records restored | 3 | 1000 | 0.003 |",
		"| exec of the restarted process → every task ready (s) | 6.500 | 12.000 | 0.54 |",
		"| tasks whose state the restart wiped (its log) | 0 | 4 | – |",
		"| ≤ 1 | 0.0025 (records restored: Go 3, Kafka Streams 1000, Go ÷ KS 0.003; seconds: Go 0.010, Kafka Streams 4.000) | yes |",
		"processes 1000 records over 1000 distinct keys until",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the processing section lacks %q:\n%s", want, md)
		}
	}
	old := &Results{Processing: &Processing{Records: 1}, Errors: []string{"P1: x", "processing map go: y"}}
	res.Errors = []string{"processing map java: z"}
	got := merge(old, res)
	if got.Processing != res.Processing {
		t.Error("merge kept the earlier processing results")
	}
	if strings.Join(got.Errors, "; ") != "P1: x; processing map java: z" {
		t.Errorf("merged errors %q: want the earlier P1 one and the new processing one", got.Errors)
	}
	if got := merge(res, &Results{}); got.Processing != res.Processing {
		t.Error("merge dropped the processing results of a run that measured none")
	}
}

// procLine keeps the first FIRST line, the latest one per partition, the RESTORING, RESTORED and
// DONE lines with their counts, and every READY line.
func TestProcLine(t *testing.T) {
	cmd := exec.Command("true")
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process = p // procLine reads the CPU of this process
	c := &child{cmd: cmd}
	for _, l := range []string{"FIRST 1000 2", "FIRST 2000 3", "FIRST 3000 2", "RESTORING 4000", "RESTORED 5000 77", "DONE 6000 9", "FIRST"} {
		c.handle(l)
	}
	c.handle("ASSIGNED 6500")
	c.handle("ASSIGNED 6600")
	c.handle("READY 7000 2 55")
	c.handle("READY 8000 1")
	m := c.marks()
	if m.assigned.UnixMicro() != 6500 {
		t.Errorf("ASSIGNED lines: %v, want the first", m.assigned.UnixMicro())
	}
	if len(m.ready) != 2 || m.ready[0].at.UnixMicro() != 7000 || m.ready[0].partition != 2 || m.ready[0].restored != 55 ||
		m.ready[1].partition != 1 || m.ready[1].restored != 0 {
		t.Errorf("READY lines: %+v", m.ready)
	}
	if m.first.UnixMicro() != 1000 || m.firsts[2].UnixMicro() != 3000 || m.firsts[3].UnixMicro() != 2000 || len(m.firsts) != 2 {
		t.Errorf("FIRST lines: first %v, per partition %v", m.first.UnixMicro(), m.firsts)
	}
	if m.restoring.UnixMicro() != 4000 || m.restored.UnixMicro() != 5000 || m.restoredN != 77 || m.done.UnixMicro() != 6000 || m.doneN != 9 {
		t.Errorf("restore and done lines: %+v", m)
	}
}

// A run of some processing scenarios (-proc) replaces only the runs it measured again and the
// errors about them; the goals are set again from the merged runs; a run of all of them replaces
// the section.
func TestMergeProcessingScenarios(t *testing.T) {
	old := &Results{Processing: sampleProcessing(), Errors: []string{"P1: x", "processing map go: y", "processing restore-unclean java: z"}}
	part := &Results{Date: "today", Ran: []string{"processing(unclean)"}, Processing: &Processing{Scenarios: []string{"unclean"},
		UncleanRecords: 2000, UncleanKeys: 2000, Runs: []*Proc{
			{ID: "restore-unclean", Side: Go, Records: 0, Seconds: 0.02},
			{ID: "restore-unclean", Side: Java, Records: 2000, Seconds: 2},
		}}, Errors: []string{"processing restore-unclean go: w"}}
	got := merge(old, part)
	pr := got.Processing
	if pr == part.Processing || pr == old.Processing {
		t.Fatal("merge did not fold the scenario into a copy of the earlier section")
	}
	if g := pr.run("map", Java); g == nil || g.RecPerSec != 3e4 {
		t.Errorf("the earlier map run was lost: %+v", g)
	}
	if g := pr.run("restore-unclean", Java); g == nil || g.Records != 2000 {
		t.Errorf("the restore after an unclean stop was not replaced: %+v", g)
	}
	if n := len(pr.Runs); n != len(old.Processing.Runs) {
		t.Errorf("%d runs after the merge, want %d (two replaced)", n, len(old.Processing.Runs))
	}
	if pr.UncleanRecords != 2000 || pr.Records != 1000 || len(pr.Scenarios) != 0 {
		t.Errorf("section sizes %d/%d, scenarios %v: want the new scenario's, the earlier throughput's, and all", pr.UncleanRecords, pr.Records, pr.Scenarios)
	}
	var unclean *Goal
	for i, g := range pr.Goals {
		if strings.HasPrefix(g.Name, "restore after an unclean stop") {
			unclean = &pr.Goals[i]
		}
	}
	if unclean == nil || math.Abs(unclean.Value-0.01) > 1e-9 || len(pr.Goals) != len(old.Processing.Goals) {
		t.Errorf("goals after the merge: %+v", pr.Goals)
	}
	if e := strings.Join(got.Errors, "; "); e != "P1: x; processing map go: y; processing restore-unclean go: w" {
		t.Errorf("merged errors %q", e)
	}
	if old.Processing.run("restore-unclean", Java).Records != 1000 {
		t.Error("the merge changed the earlier results")
	}
	full := &Results{Processing: &Processing{Records: 5}}
	if merge(old, full).Processing != full.Processing {
		t.Error("a run of every scenario did not replace the section")
	}
}

// A part measured on another machine says so where it is listed; one on the same machine does not.
func TestMergeNamesAnotherMachine(t *testing.T) {
	old := &Results{Machine: Machine{NProc: 2, CPUModel: "AMD EPYC"}}
	same := merge(old, &Results{Date: "d1", Ran: []string{"micro"}, Machine: Machine{NProc: 2, CPUModel: "AMD EPYC"}})
	other := merge(same, &Results{Date: "d2", Ran: []string{"micro"}, Machine: Machine{NProc: 2, CPUModel: "Intel Xeon"}})
	more := merge(same, &Results{Date: "d3", Ran: []string{"micro"}, Machine: Machine{NProc: 4, CPUModel: "AMD EPYC"}})
	if got := strings.Join(other.Updated, "; "); got != "d1: micro; d2: micro (on 2 CPUs, Intel Xeon)" {
		t.Errorf("updated %q", got)
	}
	if got := more.Updated[1]; got != "d3: micro (on 4 CPUs, AMD EPYC)" {
		t.Errorf("updated %q", got)
	}
	if other.Machine.CPUModel != "AMD EPYC" {
		t.Error("the earlier run's machine was replaced")
	}
}

func TestProcScenariosOf(t *testing.T) {
	if m, err := procScenariosOf(""); m != nil || err != nil {
		t.Errorf("empty: %v, %v", m, err)
	}
	if m, err := procScenariosOf("throughput,restore,failover,unclean"); m != nil || err != nil {
		t.Errorf("every scenario: %v, %v; want nil (all)", m, err)
	}
	if m, err := procScenariosOf(" unclean "); err != nil || len(m) != 1 || !m["unclean"] {
		t.Errorf("unclean: %v, %v", m, err)
	}
	if _, err := procScenariosOf("unclean,bogus"); err == nil {
		t.Error("an unknown scenario was accepted")
	}
	e := &env{procOnly: map[string]bool{"unclean": true, "restore": true}}
	if l := e.procLabel(); l != "processing(restore,unclean)" {
		t.Errorf("label %q", l)
	}
}

func TestProcAppsOf(t *testing.T) {
	if m, err := procAppsOf(" "); m != nil || err != nil {
		t.Errorf("empty: %v, %v", m, err)
	}
	m, err := procAppsOf("session-dsl, hopping-dsl")
	if err != nil || len(m) != 2 || !m["hopping-dsl"] || !m["session-dsl"] {
		t.Errorf("two apps: %v, %v", m, err)
	}
	if _, err := procAppsOf("hopping-dsl,pipe"); err == nil {
		t.Error("a Go-only baseline was accepted as a side-by-side app")
	}
	// Listed in the order the apps run, whatever the order given.
	e := &env{procOnly: map[string]bool{"throughput": true}, procApps: m}
	if l := e.procLabel(); l != "processing(throughput: session-dsl,hopping-dsl)" {
		t.Errorf("label %q", l)
	}
}

// allReady finds the line at which the last of the tasks became ready, counting each once.
func TestAllReady(t *testing.T) {
	m := procMarks{ready: []readyMark{{partition: 0}, {partition: 1, restored: 5}, {partition: 0}, {partition: 2, restored: 9}, {partition: 1}}}
	if r, ok := allReady(m, 3); !ok || r.restored != 9 {
		t.Errorf("3 tasks: %+v, %v", r, ok)
	}
	if _, ok := allReady(m, 4); ok {
		t.Error("4 tasks ready out of 3")
	}
}

// tasksNamed counts each task a wipe line names once, however often it is named.
func TestTasksNamed(t *testing.T) {
	path := t.TempDir() + "/log"
	log := "x WARN ProcessorStateManager - ... wipe out the local state of task 0_2 before re-bootstrapping\n" +
		"y WARN StateDirectory - other\n" +
		"z WARN ProcessorStateManager - stream-task [0_2] ... wipe out the local state of task 0_2 before re-bootstrapping\n" +
		"w WARN ... wipe out the local state of task 0_0 before re-bootstrapping\n" +
		`time=… level=WARN msg="wiping a store that cannot be opened; it restores from its changelog" store="store \"counts\" of task 0_1 (/d)"` + "\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := tasksNamed(path, wipeMarks[Java]); n != 2 {
		t.Errorf("Kafka Streams: %d tasks, want 2", n)
	}
	if n := tasksNamed(path, wipeMarks[Go]); n != 1 {
		t.Errorf("Go: %d tasks, want 1", n)
	}
}

// Two threads against one, per side: records/s and records per CPU-s as ratios of the one-thread
// run's.
func TestThreadsLine(t *testing.T) {
	got := threadsLine(sampleProcessing())
	for _, want := range []string{"the runtime 1.50× the records/s of one thread (0.80× its records per CPU-s)",
		"Kafka Streams 1.50× the records/s of one thread (0.80× its records per CPU-s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if threadsLine(&Processing{}) != "" {
		t.Error("a line without runs")
	}
}
