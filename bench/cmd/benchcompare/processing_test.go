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
	add("count-memory-eos", Go, 1e5, 1.5e5, 90)
	add("count-memory-eos", Java, 2e4, 1e5, 300)
	add("restore-memory", Go, 5e5, 1e6, 80)
	add("restore-memory", Java, 6e5, 1e6, 150)
	pr.Runs = append(pr.Runs, &Proc{ID: "count-persistent", Side: Go, Failure: "broke"})
	pr.Goals = goals(pr)
	return pr
}

// The goals are the issues' ratios, computed the right way round, and a failed run yields none.
func TestProcessingGoals(t *testing.T) {
	want := map[string]struct {
		v   float64
		met bool
	}{
		"map: Go ÷ Kafka Streams, records per CPU-s":             {10, true},
		"map: Go ÷ Kafka Streams, peak RSS":                      {50.0 / 300, true},
		"count-memory: Go ÷ Kafka Streams, records per CPU-s":    {15, true},
		"count-memory: Go ÷ Kafka Streams, peak RSS":             {0.3, false},
		"restore-memory: Go ÷ Kafka Streams, records/s":          {5.0 / 6, false},
		"Go: CPU per record, exactly_once_v2 ÷ at_least_once":    {2, false},
		"exactly_once_v2: Go ÷ Kafka Streams, records per CPU-s": {1.5, false},
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

// procLine keeps the first FIRST line, the latest one per partition, and the RESTORING, RESTORED
// and DONE lines with their counts.
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
	m := c.marks()
	if m.first.UnixMicro() != 1000 || m.firsts[2].UnixMicro() != 3000 || m.firsts[3].UnixMicro() != 2000 || len(m.firsts) != 2 {
		t.Errorf("FIRST lines: first %v, per partition %v", m.first.UnixMicro(), m.firsts)
	}
	if m.restoring.UnixMicro() != 4000 || m.restored.UnixMicro() != 5000 || m.restoredN != 77 || m.done.UnixMicro() != 6000 || m.doneN != 9 {
		t.Errorf("restore and done lines: %+v", m)
	}
}
