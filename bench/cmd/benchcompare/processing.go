package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The processing phase: stream apps on the Go runtime (bench/procapp) side by side with the same
// apps on Kafka Streams (bench/javaapp's ProcApp), one process with one member each, reading one
// pre-produced input topic: records per second and per CPU-second, and peak RSS; the restore rate
// of a changelog; the time from a kill -9 to the tasks processing again on a standby; and a bare kgo
// consumer reading the same input, the broker's own limit on this machine.

// Processing is what the processing phase measured.
type Processing struct {
	Records    int64  `json:"records"`     // input records, pre-produced
	Partitions int32  `json:"partitions"`  // of the input (tasks of each app)
	Keys       int    `json:"keys"`        // distinct keys of the input
	ValueBytes int    `json:"value_bytes"` // bytes per input value
	Restore    int64  `json:"restore_records"`
	Commit     string `json:"commit"` // commit intervals used
	// ProduceRate is the records per second at which one kgo producer (acks=all) wrote the input
	// before the apps started: the broker's write path on this machine, which bounds every app
	// that writes a record (output, changelog) per record it reads.
	ProduceRate float64 `json:"produce_records_per_s,omitempty"`
	// UncleanRecords and UncleanKeys size the input of the restore after an unclean stop.
	UncleanRecords int64 `json:"unclean_records,omitempty"`
	UncleanKeys    int   `json:"unclean_keys,omitempty"`
	// Scenarios are the scenarios measured (-proc) when not all of them were; empty: all.
	Scenarios []string `json:"scenarios,omitempty"`
	Runs      []*Proc  `json:"runs"`
	Goals     []Goal   `json:"goals"`
}

// Proc is one measured process: an app on one side, the bare consumer, a restore or a failover.
type Proc struct {
	ID      string `json:"id"`   // e.g. count-memory-alos, restore-pebble, failover, consumer
	Kind    string `json:"kind"` // throughput, restore, failover, consumer
	Side    Side   `json:"side"`
	Name    string `json:"name"`
	Records int64  `json:"records"`
	// Seconds is from the first record processed to the last one committed (restore: from the
	// first restore's start to the last record applied; failover: from the kill to the last of the
	// killed member's tasks processing a record on the survivor).
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"` // of the process over Seconds
	RecPerSec  float64 `json:"records_per_s"`
	RecPerCPU  float64 `json:"records_per_cpu_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib"` // VmHWM at the end
	TotalCPU   float64 `json:"total_cpu_seconds"`
	// The restore after an unclean stop: from the restarted process's exec until every task was
	// ready to process; the state directory's size on disk when the first process was killed; the
	// changelog's end offsets then (their sum, transaction markers included); and how many tasks'
	// state the side said in its log that it wiped.
	StartSeconds float64 `json:"start_seconds,omitempty"`
	StateMiB     float64 `json:"state_mib,omitempty"`
	ChangelogEnd int64   `json:"changelog_end_offsets,omitempty"`
	WipedTasks   int     `json:"wiped_tasks,omitempty"`
	Failure      string  `json:"failure,omitempty"`
}

// Goal is one of the targets the issues set, against what was measured.
type Goal struct {
	Name   string  `json:"name"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail,omitempty"` // the figures behind Value, shown beside it
}

// procVariant is one throughput app.
type procVariant struct {
	id, name  string
	mode      string // map or count
	store     string // memory, pebble (Go), rocksdb (Java)
	guarantee string
	threads   int // num.stream.threads; 0: 1
}

const (
	alos = "at_least_once"
	eos  = "exactly_once_v2"
	// alosCommitMS is commit.interval.ms under at-least-once on both sides (Kafka Streams' default of
	// 30 s would put up to 30 s of idle time into the end of every measurement); under
	// exactly_once_v2 both keep their default of 100 ms.
	alosCommitMS = 1000
)

// procScenarios are the parts of the processing phase, in the order they run; -proc picks some:
// the throughput apps (with the bare consumer), the restores of a changelog written beforehand, the
// failover with a standby, and the restore after an unclean stop under exactly_once_v2.
var procScenarios = []string{"throughput", "restore", "failover", "unclean"}

// procScenariosOf parses -proc: nil (every scenario) when empty.
func procScenariosOf(list string) (map[string]bool, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(procScenarios, f) {
			return nil, fmt.Errorf("-proc: %q is not one of %s", f, strings.Join(procScenarios, ","))
		}
		out[f] = true
	}
	if len(out) == len(procScenarios) {
		return nil, nil
	}
	return out, nil
}

// procAppsOf parses -proc-apps: nil (every app) when empty.
func procAppsOf(list string) (map[string]bool, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var ids []string
	for _, v := range throughputVariants {
		ids = append(ids, v.id)
	}
	out := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(ids, f) {
			return nil, fmt.Errorf("-proc-apps: %q is not one of %s", f, strings.Join(ids, ","))
		}
		out[f] = true
	}
	return out, nil
}

// procWants reports whether the processing scenario s runs.
func (e *env) procWants(s string) bool { return e.procOnly == nil || e.procOnly[s] }

// procLabel is the processing phase's name in the list of phases run: "processing", or with the
// scenarios measured when not all were, e.g. "processing(unclean)".
func (e *env) procLabel() string {
	if e.procOnly == nil {
		return "processing"
	}
	var ran []string
	for _, s := range procScenarios {
		if e.procOnly[s] {
			ran = append(ran, s)
		}
	}
	label := strings.Join(ran, ",")
	if e.procApps != nil {
		var apps []string
		for _, v := range throughputVariants {
			if e.procApps[v.id] {
				apps = append(apps, v.id)
			}
		}
		label += ": " + strings.Join(apps, ",")
	}
	return "processing(" + label + ")"
}

func (e *env) processing(fail func(string, error)) *Processing {
	pr := &Processing{Records: e.ProcRecords, Partitions: e.ProcPartitions, Keys: e.ProcKeys, ValueBytes: 16,
		Restore: e.RestoreRecords, Commit: fmt.Sprintf("at_least_once: commit.interval.ms=%d on both sides; exactly_once_v2: the default (100 ms) on both", alosCommitMS)}
	for _, s := range procScenarios {
		if e.procOnly != nil && e.procOnly[s] {
			pr.Scenarios = append(pr.Scenarios, s)
		}
	}
	add := func(p *Proc, err error) {
		if err != nil {
			p.Failure = err.Error()
			fail("processing "+p.ID+" "+string(p.Side), err)
		}
		pr.Runs = append(pr.Runs, p)
	}
	if e.procWants("throughput") || e.procWants("restore") || e.procWants("failover") {
		e.load.setPhase("processing")
	}
	if e.procWants("throughput") {
		e.throughputRuns(pr, add, fail)
	}
	if e.procWants("restore") {
		for i, st := range []string{"memory", "persistent"} {
			order := []Side{Go, Java}
			if i%2 == 1 {
				order = []Side{Java, Go}
			}
			for _, side := range order {
				add(e.restoreRun(side, st))
			}
		}
	}
	if e.procWants("failover") {
		for _, side := range []Side{Go, Java} {
			add(e.failoverRun(side))
		}
	}
	if e.procWants("unclean") {
		e.load.setPhase(uncleanPhase)
		pr.UncleanRecords, pr.UncleanKeys = e.ProcRecords, int(e.RestoreRecords)
		for _, side := range []Side{Go, Java} {
			add(e.uncleanRun(side, pr.UncleanRecords, pr.UncleanKeys))
		}
	}
	pr.Goals = goals(pr)
	return pr
}

// throughputVariants are the throughput scenario's apps, run on both sides, in order.
var throughputVariants = []procVariant{
	{"map", "stateless map (value upper-cased)", "map", "memory", alos, 0},
	{"count-memory", "count, in-memory store", "count", "memory", alos, 0},
	// The same count written with each side's DSL (groupByKey().count(), no record cache).
	{"count-dsl", "count on the DSL, in-memory store", "dsl-count", "memory", alos, 0},
	// And with the record cache on at Kafka's default size on both sides (statestore.cache.max.bytes).
	{"count-dsl-cache", "count on the DSL, in-memory store, record cache (10 MiB)", "dsl-count-cache", "memory", alos, 0},
	// Issue 28's DSL workloads, record cache off on both sides: a tumbling 1-minute count, a
	// session count (5-minute gap), a stream-table join (each record with its key's previous value).
	{"window-dsl", "tumbling 1-minute count on the DSL, in-memory window store", "dsl-window", "memory", alos, 0},
	{"session-dsl", "session count (5-minute gap) on the DSL, in-memory session store", "dsl-session", "memory", alos, 0},
	{"join-dsl", "stream-table join on the DSL (each record with its key's previous value), in-memory store", "dsl-join", "memory", alos, 0},
	{"hopping-dsl", "hopping 1-minute count advancing by 10 s on the DSL, in-memory window store", "dsl-hopping", "memory", alos, 0},
	{"stream-join-dsl", "stream-stream join on the DSL (the input with a mapped copy, within 1 ms), in-memory join stores", "dsl-stream-join", "memory", alos, 0},
	{"count-persistent", "count, persistent store (Go: Pebble, Kafka Streams: RocksDB)", "count", "persistent", alos, 0},
	{"count-memory-eos", "count, in-memory store, exactly_once_v2", "count", "memory", eos, 0},
	// The same count on two stream threads (num.stream.threads=2) on each side: what a second
	// thread buys on this machine, where the broker shares the CPUs.
	{"count-memory-2t", "count, in-memory store, num.stream.threads=2", "count", "memory", alos, 2},
	// The tumbling count on each side's persistent window store: Pebble's segments against
	// RocksDB's (last, so that the apps before keep their order of sides).
	{"window-dsl-persistent", "tumbling 1-minute count on the DSL, persistent window store (Go: Pebble, Kafka Streams: RocksDB)", "dsl-window", "persistent", alos, 0},
}

// throughputRuns measures the throughput apps side by side, and the bare consumer.
func (e *env) throughputRuns(pr *Processing, add func(*Proc, error), fail func(string, error)) {
	for i, v := range throughputVariants {
		if e.procApps != nil && !e.procApps[v.id] {
			continue
		}
		// Each pair reads a copy of the input written just before it: the Go runtime stops on input
		// records more than 2 minutes old (their timestamps pass to what it produces, and kgo's
		// delivery timeout counts from a record's timestamp), so one copy for every app would fail
		// the later ones.
		input := fmt.Sprintf("bench-%s-proc-in-%s", e.runID, v.id)
		if err := e.createTopic(input, e.ProcPartitions, nil); err != nil {
			fail("processing", err)
			continue
		}
		t := time.Now()
		if err := e.produceInput(input, e.ProcRecords, e.ProcKeys, pr.ValueBytes); err != nil {
			fail("processing", err)
			continue
		}
		rate := float64(e.ProcRecords) / time.Since(t).Seconds()
		logf("processing: %d records over %d partitions produced in %v (%.0f records/s)", e.ProcRecords, e.ProcPartitions, time.Since(t).Round(time.Millisecond), rate)
		if i == 0 {
			// The bare consumer reads the first app's copy: the broker's own read limit.
			pr.ProduceRate = rate
			add(e.consumerRun(input))
		}
		order := []Side{Go, Java}
		if i%2 == 1 {
			order = []Side{Java, Go}
		}
		for _, side := range order {
			add(e.throughputRun(side, v, input))
		}
		if v.id == "count-memory" {
			// The baselines the runtime's own cost is judged against (issue 26), Go only, on the
			// same copy: the count app hand-written on the runtime's pieces, and a bare pipe.
			for _, b := range baselines {
				add(e.throughputRun(Go, b, input))
			}
		}
	}
}

// sideBySide are the goals of apps run on both sides: Go's records per CPU-s at least minRatio
// times Kafka Streams', and its peak RSS at most 0.2 times.
func sideBySide(pr *Processing, ids []string, minRatio float64) []Goal {
	var out []Goal
	for _, id := range ids {
		g, j := pr.run(id, Go), pr.run(id, Java)
		if g == nil || j == nil || j.RecPerCPU == 0 || j.PeakRSSMiB == 0 {
			continue
		}
		r := g.RecPerCPU / j.RecPerCPU
		out = append(out, Goal{Name: id + ": Go ÷ Kafka Streams, records per CPU-s", Target: fmt.Sprintf("≥ %g", minRatio), Value: r, Met: r >= minRatio})
		m := g.PeakRSSMiB / j.PeakRSSMiB
		out = append(out, Goal{Name: id + ": Go ÷ Kafka Streams, peak RSS", Target: "≤ 0.2", Value: m, Met: m <= 0.2})
	}
	return out
}

// issue28Workloads are the DSL workloads of issue 28 (windows and joins).
var issue28Workloads = []string{"window-dsl", "window-dsl-persistent", "hopping-dsl", "session-dsl", "join-dsl", "stream-join-dsl"}

// baselines are the Go-only apps of the throughput scenario that measure what the runtime itself
// costs: the same count written by hand on the pieces (membership, consume, commit; a map per task
// as its store), and a bare kgo consume→produce pipe in a classic consumer group (every record to
// output unchanged; no store, no changelog).
var baselines = []procVariant{
	{"handwritten", "count, hand-written on the pieces (a map per task; Go only)", "handwritten", "memory", alos, 0},
	{"pipe", "bare kgo consume → produce pipe (classic group; Go only)", "pipe", "memory", alos, 0},
}

// storeFor names the store of a side: "persistent" is Pebble in Go and RocksDB in Kafka Streams.
func storeFor(side Side, st string) string {
	if st != "persistent" {
		return st
	}
	if side == Go {
		return "pebble"
	}
	return "rocksdb"
}

// procCmd is the command line of a processing app.
func (e *env) procCmd(side Side, app, mode, input, output, st, guarantee string, commitMS int, extra map[string]string) (*exec.Cmd, error) {
	stateDir := extra["state-dir"]
	if stateDir == "" {
		// A fresh state directory for each launch, unless the caller gives one (a restart on the
		// state a killed process left).
		var err error
		if stateDir, err = os.MkdirTemp(e.work, "state-"); err != nil {
			return nil, err
		}
	}
	flags := map[string]string{"bootstrap": e.bootstrap, "app": app, "mode": mode, "input": input, "output": output,
		"store": storeFor(side, st), "guarantee": guarantee, "state-dir": stateDir}
	if commitMS > 0 {
		flags["commit-ms"] = strconv.Itoa(commitMS)
	}
	for k, v := range extra {
		flags[k] = v
	}
	var args []string
	for k, v := range flags {
		if side == Go {
			args = append(args, "-"+k+"="+v)
		} else {
			args = append(args, "--"+k+"="+v)
		}
	}
	if side == Go {
		return exec.Command(e.procBinary, args...), nil
	}
	args = append(append(append([]string{}, e.javaOpts...), "-cp", e.javaClasspath, "io.github.streamsgroup.bench.ProcApp"), args...)
	return exec.Command(e.javaBinary, args...), nil
}

// marks returns a copy of what the child printed so far.
func (c *child) marks() procMarks {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.proc
	m.firsts = make(map[int32]time.Time, len(c.proc.firsts))
	for p, t := range c.proc.firsts {
		m.firsts[p] = t
	}
	m.ready = append([]readyMark(nil), c.proc.ready...)
	return m
}

// procLine records one processing line (FIRST, RESTORING, ASSIGNED, RESTORED, DONE, READY); c.mu
// is held.
func (c *child) procLine(word, rest string) {
	f := strings.Fields(rest)
	if len(f) == 0 {
		return
	}
	at := micros(f[0])
	cpu, _ := cpuSeconds(c.pid())
	n := int64(0)
	if len(f) > 1 {
		n, _ = strconv.ParseInt(f[1], 10, 64)
	}
	m := &c.proc
	switch word {
	case "FIRST":
		if m.first.IsZero() {
			m.first, m.firstCPU = at, cpu
		}
		if m.firsts == nil {
			m.firsts = map[int32]time.Time{}
		}
		m.firsts[int32(n)] = at // the latest: a task that came back is marked again
	case "RESTORING":
		if m.restoring.IsZero() {
			m.restoring, m.restoringCPU = at, cpu
		}
	case "ASSIGNED":
		if m.assigned.IsZero() {
			m.assigned, m.assignedCPU = at, cpu
		}
	case "RESTORED":
		m.restored, m.restoredCPU, m.restoredN = at, cpu, n
	case "DONE":
		m.done, m.doneCPU, m.doneN = at, cpu, n
	case "READY":
		r := readyMark{at: at, cpu: cpu, partition: int32(n)}
		if len(f) > 2 {
			r.restored, _ = strconv.ParseInt(f[2], 10, 64)
		}
		m.ready = append(m.ready, r)
	}
}

// waitMark polls the child's marks until ok says so, the child exits, or timeout passes.
func (c *child) waitMark(what string, timeout time.Duration, ok func(procMarks) bool) (procMarks, error) {
	deadline := time.Now().Add(timeout)
	for {
		m := c.marks()
		if ok(m) {
			return m, nil
		}
		select {
		case <-c.exited:
			return m, fmt.Errorf("%s exited before %s (log: %s)", c.name, what, c.logPath)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return m, fmt.Errorf("%s: no %s within %v (log: %s)", c.name, what, timeout, c.logPath)
		}
	}
}

// peakRSS is VmHWM of the process in MiB.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == "VmHWM" {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return float64(kb) / 1024
		}
	}
	return 0
}

// finishProc fills in the rates and the process's totals, then stops it.
func finishProc(p *Proc, c *child, secs, cpu float64) {
	p.Seconds, p.CPUSeconds = secs, cpu
	if secs > 0 {
		p.RecPerSec = float64(p.Records) / secs
	}
	if cpu > 0 {
		p.RecPerCPU = float64(p.Records) / cpu
	}
	p.PeakRSSMiB = peakRSS(c.pid())
	p.TotalCPU, _ = cpuSeconds(c.pid())
}

// consumerRun: a bare kgo consumer reads the whole input (bench/procapp -mode consume).
func (e *env) consumerRun(input string) (*Proc, error) {
	p := &Proc{ID: "consumer", Kind: "consumer", Side: Go, Name: "bare kgo consumer (no group, no processing)", Records: e.ProcRecords}
	c, err := e.launch(Go, exec.Command(e.procBinary, "-mode=consume", "-bootstrap="+e.bootstrap, "-input="+input))
	if err != nil {
		return p, err
	}
	defer stopAll([]*child{c}, 30*time.Second)
	m, err := c.waitMark("DONE", 5*time.Minute, func(m procMarks) bool { return !m.done.IsZero() })
	if err != nil {
		return p, err
	}
	p.Records = m.doneN
	finishProc(p, c, m.done.Sub(m.first).Seconds(), m.doneCPU-m.firstCPU)
	logf("processing consumer: %d records in %.2fs, %.0f records/s, %.0f records per CPU-s, peak RSS %.1f MiB",
		p.Records, p.Seconds, p.RecPerSec, p.RecPerCPU, p.PeakRSSMiB)
	return p, nil
}

// throughputRun runs one app over the whole input: from its first record processed until its
// committed offsets reach the input's end.
func (e *env) throughputRun(side Side, v procVariant, input string) (*Proc, error) {
	p := &Proc{ID: v.id, Kind: "throughput", Side: side, Name: v.name, Records: e.ProcRecords}
	app := e.app("proc", v.id, side)
	output := app + "-out"
	if err := e.createTopic(output, e.ProcPartitions, nil); err != nil {
		return p, err
	}
	commit := alosCommitMS
	if v.guarantee == eos {
		commit = 0
	}
	var extra map[string]string
	if v.threads > 1 {
		extra = map[string]string{"threads": strconv.Itoa(v.threads)}
	}
	cmd, err := e.procCmd(side, app, v.mode, input, output, v.store, v.guarantee, commit, extra)
	if err != nil {
		return p, err
	}
	c, err := e.launch(side, cmd)
	if err != nil {
		return p, err
	}
	defer stopAll([]*child{c}, 60*time.Second)
	m, err := c.waitMark("first record", 3*time.Minute, func(m procMarks) bool { return !m.first.IsZero() })
	if err != nil {
		return p, err
	}
	at, cpu, err := e.waitCommitted(c, app, input, 10*time.Minute)
	if err != nil {
		return p, err
	}
	finishProc(p, c, at.Sub(m.first).Seconds(), cpu-m.firstCPU)
	logf("processing %-16s %-4s: %d records in %.2fs, %.0f records/s, %.0f records per CPU-s (%.2f CPU-s), peak RSS %.1f MiB",
		v.id, side, p.Records, p.Seconds, p.RecPerSec, p.RecPerCPU, p.CPUSeconds, p.PeakRSSMiB)
	return p, nil
}

// waitCommitted polls the group's committed offsets (every 100 ms) until they reach input's end
// offsets; it returns the midpoint of the fetch that showed it and the process's CPU-seconds then.
func (e *env) waitCommitted(c *child, group, input string, timeout time.Duration) (time.Time, float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	adm := kadm.NewClient(e.cl)
	ends, err := adm.ListEndOffsets(ctx, input)
	if err != nil {
		return time.Time{}, 0, err
	}
	for {
		t0 := time.Now()
		committed, err := adm.FetchOffsets(ctx, group)
		t1 := time.Now()
		if err == nil {
			behind := 0
			ends.Each(func(o kadm.ListedOffset) {
				if got, ok := committed.Lookup(input, o.Partition); o.Offset > 0 && (!ok || got.At < o.Offset) {
					behind++
				}
			})
			if behind == 0 {
				cpu, _ := cpuSeconds(c.pid())
				return t0.Add(t1.Sub(t0) / 2), cpu, nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, 0, fmt.Errorf("%s: committed offsets did not reach the end of %s within %v (log: %s)", group, input, timeout, c.logPath)
		case <-c.exited:
			return time.Time{}, 0, fmt.Errorf("%s exited before its offsets reached the end (log: %s)", c.name, c.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restoreRun fills an app's changelog with RestoreRecords records (distinct keys, 8-byte counts)
// before the app starts, over an empty input, and times the restore from its start to the last
// record applied, as each side reports it.
func (e *env) restoreRun(side Side, st string) (*Proc, error) {
	id := "restore-" + st
	name := map[string]string{"memory": "restore, in-memory store", "persistent": "restore, persistent store (Go: Pebble, Kafka Streams: RocksDB)"}[st]
	p := &Proc{ID: id, Kind: "restore", Side: side, Name: name, Records: e.RestoreRecords}
	app := e.app("proc", id, side)
	input, output, changelog := app+"-in", app+"-out", app+"-counts-changelog"
	for _, t := range []struct {
		name string
		cfg  map[string]*string
	}{{input, nil}, {output, nil}, {changelog, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}}} {
		if err := e.createTopic(t.name, e.ProcPartitions, t.cfg); err != nil {
			return p, err
		}
	}
	t := time.Now()
	if err := e.produceChangelog(changelog, e.RestoreRecords); err != nil {
		return p, err
	}
	logf("processing %s %s: %d changelog records produced in %v", id, side, e.RestoreRecords, time.Since(t).Round(time.Millisecond))
	cmd, err := e.procCmd(side, app, "count", input, output, st, alos, alosCommitMS,
		map[string]string{"expect-restore": strconv.FormatInt(e.RestoreRecords, 10)})
	if err != nil {
		return p, err
	}
	c, err := e.launch(side, cmd)
	if err != nil {
		return p, err
	}
	defer stopAll([]*child{c}, 60*time.Second)
	m, err := c.waitMark("RESTORED", 10*time.Minute, func(m procMarks) bool { return !m.restored.IsZero() })
	if err != nil {
		return p, err
	}
	if m.restoring.IsZero() {
		return p, fmt.Errorf("%s reported no restore start", c.name)
	}
	p.Records = m.restoredN
	finishProc(p, c, m.restored.Sub(m.restoring).Seconds(), m.restoredCPU-m.restoringCPU)
	logf("processing %-16s %-4s: %d records restored in %.2fs, %.0f records/s, %.0f records per CPU-s, peak RSS %.1f MiB",
		id, side, p.Records, p.Seconds, p.RecPerSec, p.RecPerCPU, p.PeakRSSMiB)
	return p, nil
}

// failoverRun: two processes of the counting app (in-memory store) with one standby replica per
// task; input keeps arriving on every partition; one process is killed (SIGKILL), and the time
// runs until the survivor processed a record of every task the killed one held.
func (e *env) failoverRun(side Side) (*Proc, error) {
	p := &Proc{ID: "failover", Kind: "failover", Side: side, Name: "kill -9 of one of 2 members → its tasks processing on the other (1 standby replica)"}
	app := e.app("proc", "failover", side)
	input, output := app+"-in", app+"-out"
	for _, t := range []string{input, output} {
		if err := e.createTopic(t, e.ProcPartitions, nil); err != nil {
			return p, err
		}
	}
	if err := e.setGroupConfig(app, "streams.num.standby.replicas", "1"); err != nil {
		return p, err
	}
	if err := e.produceInput(input, e.ProcRecords/10, e.ProcKeys, 16); err != nil {
		return p, err
	}
	// A starts alone and takes every task; B joins and takes its share, so B only ever gained tasks
	// and every task it processes a record of after the trickle starts is one it holds at the kill.
	var procs []*child
	defer func() { stopAll(procs, 60*time.Second) }()
	for i := range 2 {
		cmd, err := e.procCmd(side, app, "count", input, output, "memory", alos, alosCommitMS, nil)
		if err != nil {
			return p, err
		}
		c, err := e.launch(side, cmd)
		if err != nil {
			return p, err
		}
		procs = append(procs, c)
		if _, err := e.waitConverged(app, i+1, e.ProcPartitions, 0, 3*time.Minute); err != nil {
			return p, err
		}
	}
	if _, _, err := e.waitCommitted(procs[0], app, input, 5*time.Minute); err != nil {
		return p, err
	}
	stop := e.trickle(input)
	defer stop()
	// The standbys follow the changelogs; the trickle reaches every task within a few of its ticks.
	time.Sleep(3 * time.Second)
	survivor, victim := procs[0], procs[1]
	owned := victim.marks().firsts
	if len(owned) == 0 {
		return p, fmt.Errorf("%s (the second member) processed no record (log: %s)", victim.name, victim.logPath)
	}
	t0 := time.Now()
	victim.kill()
	m, err := survivor.waitMark("the killed member's tasks processing", e.session+2*time.Minute, func(m procMarks) bool {
		for part := range owned {
			if at, ok := m.firsts[part]; !ok || at.Before(t0) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return p, err
	}
	last := t0
	for part := range owned {
		last = maxTime(last, m.firsts[part])
	}
	p.Records = int64(len(owned))
	p.Seconds = last.Sub(t0).Seconds()
	p.PeakRSSMiB = peakRSS(survivor.pid())
	p.TotalCPU, _ = cpuSeconds(survivor.pid())
	logf("processing failover %-4s: %d tasks processing on the survivor %.3fs after the kill", side, len(owned), p.Seconds)
	return p, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// trickle writes a record to every partition of topic every 20 ms until the returned stop.
func (e *env) trickle(topic string) (stop func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		logf("trickle: %v", err)
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for part := range e.ProcPartitions {
				cl.Produce(context.Background(), &kgo.Record{Partition: part, Key: []byte(fmt.Sprintf("t%04d", i%1000)),
					Value: []byte("trickle")}, nil)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		cl.Close()
	}
}

// createTopic creates topic with partitions (replication 1) and waits until metadata shows them.
func (e *env) createTopic(topic string, partitions int32, cfg map[string]*string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(e.cl)
	resp, err := adm.CreateTopic(ctx, partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err == nil && td.Has(topic) && len(td[topic].Partitions) == int(partitions) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s did not show %d partitions", topic, partitions)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// produce writes n records made by rec to topic and waits for every acknowledgement.
func (e *env) produce(topic string, n int64, rec func(i int64) *kgo.Record) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var first error
	for i := range n {
		cl.Produce(ctx, rec(i), func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return fmt.Errorf("producing to %s: %w", topic, first)
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// produceInput writes n records with keys k00000… (keys of them, round robin) and values of
// valueBytes bytes: the input every app reads.
func (e *env) produceInput(topic string, n int64, keys, valueBytes int) error {
	return e.produce(topic, n, func(i int64) *kgo.Record {
		v := fmt.Sprintf("value-%0*d", valueBytes-6, i)
		return &kgo.Record{Key: []byte(fmt.Sprintf("k%05d", i%int64(keys))), Value: []byte(v[:valueBytes])}
	})
}

// produceChangelog writes n records with distinct keys and 8-byte big-endian counts (Kafka's
// LongSerializer) to a changelog, partitioned by key as both sides' producers partition.
func (e *env) produceChangelog(topic string, n int64) error {
	return e.produce(topic, n, func(i int64) *kgo.Record {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, uint64(i%1000+1))
		return &kgo.Record{Key: []byte(fmt.Sprintf("r%08d", i)), Value: v}
	})
}

// setGroupConfig sets a dynamic group config (resource type GROUP) and waits until a describe
// shows it, so that a member started next reads it.
func (e *env) setGroupConfig(group, key, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, &value
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, e.cl)
	if err == nil && len(resp.Resources) > 0 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("setting %s=%s on group %s: %w", key, value, group, err)
	}
	for {
		d := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{key}
		d.Resources = append(d.Resources, r)
		if resp, err := d.RequestWith(ctx, e.cl); err == nil {
			for _, res := range resp.Resources {
				for _, c := range res.Configs {
					if c.Name == key && c.Value != nil && *c.Value == value {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %s: %s not %s after the alter", group, key, value)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// run finds a measured process.
func (pr *Processing) run(id string, side Side) *Proc {
	for _, p := range pr.Runs {
		if p.ID == id && p.Side == side && p.Failure == "" {
			return p
		}
	}
	return nil
}

// goals sets the figures against the targets of issues 18 and 19.
func goals(pr *Processing) []Goal {
	out := sideBySide(pr, []string{"map", "count-memory", "count-persistent"}, 2)
	for _, st := range []string{"memory", "persistent"} {
		j := pr.run("restore-"+st, Java)
		if j == nil || j.RecPerSec == 0 {
			continue
		}
		for _, g := range []*Proc{pr.run("restore-"+st, Go)} {
			if g == nil {
				continue
			}
			r := g.RecPerSec / j.RecPerSec
			out = append(out, Goal{Name: "restore-" + st + ": Go ÷ Kafka Streams, records/s", Target: "≥ 1", Value: r, Met: r >= 1})
		}
	}
	if a, x := pr.run("count-memory", Go), pr.run("count-memory-eos", Go); a != nil && x != nil && x.RecPerCPU > 0 {
		r := a.RecPerCPU / x.RecPerCPU
		out = append(out, Goal{Name: "Go: CPU per record, exactly_once_v2 ÷ at_least_once", Target: "≤ 1.5", Value: r, Met: r <= 1.5})
	}
	// Issue 26: the runtime's own cost. Its CPU per record against the same count hand-written on
	// its pieces, and its records per CPU-s against a bare pipe's.
	if r, h := pr.run("count-memory", Go), pr.run("handwritten", Go); r != nil && h != nil && r.RecPerCPU > 0 {
		x := h.RecPerCPU / r.RecPerCPU
		out = append(out, Goal{Name: "count-memory: the runtime's CPU per record ÷ the hand-written app's", Target: "≤ 1.2", Value: x, Met: x <= 1.2,
			Detail: fmt.Sprintf("CPU-s: runtime %.2f, hand-written %.2f", r.CPUSeconds, h.CPUSeconds)})
	}
	if r, p := pr.run("count-memory", Go), pr.run("pipe", Go); r != nil && p != nil && p.RecPerCPU > 0 {
		x := r.RecPerCPU / p.RecPerCPU
		out = append(out, Goal{Name: "count-memory: the runtime's records per CPU-s ÷ the bare pipe's", Target: "≥ 0.5", Value: x, Met: x >= 0.5,
			Detail: fmt.Sprintf("CPU-s: runtime %.2f, pipe %.2f", r.CPUSeconds, p.CPUSeconds)})
	}
	// Issue 27: the DSL's cost over the Processor API for the same count, and the DSL count side by
	// side with Kafka Streams' DSL count.
	if d, p := pr.run("count-dsl", Go), pr.run("count-memory", Go); d != nil && p != nil && d.RecPerCPU > 0 {
		x := p.RecPerCPU / d.RecPerCPU
		out = append(out, Goal{Name: "count-dsl: the DSL's CPU per record ÷ the Processor API's (count-memory)", Target: "≤ 1.1", Value: x, Met: x <= 1.1,
			Detail: fmt.Sprintf("CPU-s: DSL %.2f, Processor API %.2f", d.CPUSeconds, p.CPUSeconds)})
	}
	if g, j := pr.run("count-dsl", Go), pr.run("count-dsl", Java); g != nil && j != nil && j.RecPerCPU > 0 && j.PeakRSSMiB > 0 {
		r := g.RecPerCPU / j.RecPerCPU
		out = append(out, Goal{Name: "count-dsl: Go ÷ Kafka Streams, records per CPU-s", Target: "≥ 3", Value: r, Met: r >= 3})
		m := g.PeakRSSMiB / j.PeakRSSMiB
		out = append(out, Goal{Name: "count-dsl: Go ÷ Kafka Streams, peak RSS", Target: "≤ 0.2", Value: m, Met: m <= 0.2})
	}
	if g, j := pr.run("count-dsl-cache", Go), pr.run("count-dsl-cache", Java); g != nil && j != nil && j.RecPerCPU > 0 && j.PeakRSSMiB > 0 {
		r := g.RecPerCPU / j.RecPerCPU
		out = append(out, Goal{Name: "count-dsl-cache: Go ÷ Kafka Streams, records per CPU-s (record cache on, both sides)", Target: "≥ 3", Value: r, Met: r >= 3})
		m := g.PeakRSSMiB / j.PeakRSSMiB
		out = append(out, Goal{Name: "count-dsl-cache: Go ÷ Kafka Streams, peak RSS (record cache on, both sides)", Target: "≤ 0.2", Value: m, Met: m <= 0.2})
	}
	// Issue 28: the DSL's windowed and join workloads side by side with Kafka Streams' (record
	// cache off on both sides).
	out = append(out, sideBySide(pr, issue28Workloads, 3)...)
	if g, j := pr.run("count-memory-eos", Go), pr.run("count-memory-eos", Java); g != nil && j != nil && j.RecPerCPU > 0 {
		r := g.RecPerCPU / j.RecPerCPU
		out = append(out, Goal{Name: "exactly_once_v2: Go ÷ Kafka Streams, records per CPU-s", Target: "≥ 2", Value: r, Met: r >= 2})
	}
	// Issue 19: after a crash a persistent store restores only what follows its checkpoint, where
	// Kafka Streams under exactly_once_v2 wipes it and restores all of it. The target is not to be
	// slower than that.
	if g, j := pr.run("restore-unclean", Go), pr.run("restore-unclean", Java); g != nil && j != nil && j.Seconds > 0 {
		r := g.Seconds / j.Seconds
		d := fmt.Sprintf("records restored: Go %d, Kafka Streams %d", g.Records, j.Records)
		if j.Records > 0 {
			d += ", Go ÷ KS " + fineRatio(float64(g.Records)/float64(j.Records))
		}
		d += fmt.Sprintf("; seconds: Go %.3f, Kafka Streams %.3f", g.Seconds, j.Seconds)
		out = append(out, Goal{Name: "restore after an unclean stop under exactly_once_v2: Go ÷ Kafka Streams, restore seconds",
			Target: "≤ 1", Value: r, Met: r <= 1, Detail: d})
	}
	return out
}

// fineRatio prints a ratio that may be far below 1 (a few records against a million) with the
// digits that show it.
func fineRatio(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0.01:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return fmt.Sprintf("%.2f", v)
}

// procBuild builds bench/procapp (a module of its own: it imports Pebble) into the work directory.
func (e *env) procBuild() error {
	e.procBinary = filepath.Join(e.work, "procapp")
	build := exec.Command("go", "build", "-o", e.procBinary, ".")
	build.Dir = filepath.Join(e.root, "bench", "procapp")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in bench/procapp: %v\n%s", err, out)
	}
	return nil
}
