package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The restore after an unclean stop (issue 19): the count app on a persistent store under
// exactly_once_v2 builds a large store, is killed with SIGKILL once its committed offsets reached
// the input's end, and starts again on the state directory it left. The Go runtime records each
// committed transaction's changelog position with the store's data, so it restores only the
// changelog records after that position (read_committed). Kafka Streams (4.4, with its default
// enable.transactional.statestores=false) writes no changelog offsets for a store under
// exactly_once_v2 while the task runs, only when it closes or suspends the task cleanly: finding a
// store's files without them at start, it treats the task as corrupted, wipes its state and
// restores the whole changelog.

// uncleanPhase is the load phase the restore after an unclean stop runs in.
const uncleanPhase = "processing: restore after an unclean stop"

// uncleanIdle is how long the app idles once its committed offsets reached the input's end, before
// the kill: a crash at some moment after the work was done, not within the last commit.
const uncleanIdle = time.Second

// wipeMarks are what each side writes to its log (stderr) when it wipes a store's state at start,
// each naming the task after "of task ": the Go runtime when a store cannot be opened (and the
// store error handler says to wipe it; procapp sets none, so it would fail instead), Kafka
// Streams when it finds a task's stores without changelog offsets under exactly-once (it says so
// once when it registers the stores it found at start, and again when the stream thread
// initialises the task). Counting the tasks they name says what the side did.
var wipeMarks = map[Side]string{Go: "wiping a store", Java: "wipe out the local state"}

// uncleanRun runs the restore after an unclean stop on one side: records input records over keys
// distinct keys, counted into Pebble (Go) or RocksDB (Kafka Streams) under exactly_once_v2 until
// the committed offsets reach the input's end; a second later SIGKILL; then the same app (the same
// application.id and state directory) is started again. Measured are the records its restore
// listener saw applied, the time from the restore's start (Go: the start of the OnTasksAssigned
// that handed the member its active tasks, which opens their stores and looks up their changelogs'
// ends; Kafka Streams: the first onRestoreStart, after the wipe) until every task was ready to process (its processor
// initialised, which each side does once the task's restore is done), and the time from the exec
// until then.
func (e *env) uncleanRun(side Side, records int64, keys int) (*Proc, error) {
	p := &Proc{ID: "restore-unclean", Kind: "restore-unclean", Side: side,
		Name: "restore after an unclean stop (SIGKILL), exactly_once_v2, persistent store (Go: Pebble, Kafka Streams: RocksDB)"}
	app := e.app("proc", "unclean", side)
	input, output, changelog := app+"-in", app+"-out", app+"-counts-changelog"
	for _, t := range []string{input, output} {
		if err := e.createTopic(t, e.ProcPartitions, nil); err != nil {
			return p, err
		}
	}
	t := time.Now()
	if err := e.produceInput(input, records, keys, 16); err != nil {
		return p, err
	}
	logf("processing restore-unclean %s: %d records of %d keys produced in %v", side, records, keys, time.Since(t).Round(time.Millisecond))
	// One state directory for both processes: procCmd makes a fresh one for each launch otherwise.
	stateDir, err := os.MkdirTemp(e.work, "state-unclean-")
	if err != nil {
		return p, err
	}
	start := func() (*child, error) {
		cmd, err := e.procCmd(side, app, "count", input, output, "persistent", eos, 0, map[string]string{"state-dir": stateDir})
		if err != nil {
			return nil, err
		}
		return e.launch(side, cmd)
	}
	var procs []*child
	defer func() { stopAll(procs, 60*time.Second) }()
	first, err := start()
	if err != nil {
		return p, err
	}
	procs = append(procs, first)
	m, err := first.waitMark("first record", 3*time.Minute, func(m procMarks) bool { return !m.first.IsZero() })
	if err != nil {
		return p, err
	}
	at, _, err := e.waitCommitted(first, app, input, 10*time.Minute)
	if err != nil {
		return p, err
	}
	logf("processing restore-unclean %s: %d records processed and committed in %.2fs", side, records, at.Sub(m.first).Seconds())
	time.Sleep(uncleanIdle)
	first.kill()
	size, files, err := dirSize(stateDir)
	if err != nil {
		return p, err
	}
	if size == 0 {
		return p, fmt.Errorf("the state directory %s is empty after the kill (log: %s)", stateDir, first.logPath)
	}
	p.StateMiB = float64(size) / (1 << 20)
	if p.ChangelogEnd, err = e.endOffsets(changelog); err != nil {
		return p, err
	}
	logf("processing restore-unclean %s: killed; state directory %.1f MiB in %d files, changelog end offsets %d", side, p.StateMiB, files, p.ChangelogEnd)

	again, err := start()
	if err != nil {
		return p, err
	}
	procs = append(procs, again)
	var ready readyMark
	m, err = again.waitMark("every task ready to process", e.session+10*time.Minute, func(m procMarks) bool {
		var ok bool
		ready, ok = allReady(m, e.ProcPartitions)
		return ok
	})
	if err != nil {
		return p, err
	}
	p.Records = ready.restored
	p.StartSeconds = ready.at.Sub(again.execAt).Seconds()
	// The Go member's RESTORING follows its OnTasksAssigned, and can follow the tasks' READY too
	// when there is nothing to restore: the restore starts at that callback's start (ASSIGNED).
	from, fromCPU := m.restoring, m.restoringCPU
	if !m.assigned.IsZero() && (from.IsZero() || m.assigned.Before(from)) {
		from, fromCPU = m.assigned, m.assignedCPU
	}
	secs, cpu := 0.0, 0.0
	if !from.IsZero() {
		secs, cpu = ready.at.Sub(from).Seconds(), ready.cpu-fromCPU
	}
	finishProc(p, again, secs, cpu)
	p.WipedTasks = tasksNamed(again.logPath, wipeMarks[side])
	logf("processing restore-unclean %s: %d records restored in %.2fs (%.0f records/s), every task ready %.2fs after the exec; %d tasks wiped; peak RSS %.1f MiB",
		side, p.Records, p.Seconds, p.RecPerSec, p.StartSeconds, p.WipedTasks, p.PeakRSSMiB)
	return p, nil
}

// allReady returns the READY line at which partitions distinct tasks had become ready.
func allReady(m procMarks, partitions int32) (readyMark, bool) {
	seen := map[int32]bool{}
	for _, r := range m.ready {
		seen[r.partition] = true
		if len(seen) == int(partitions) {
			return r, true
		}
	}
	return readyMark{}, false
}

// dirSize is the bytes and files under dir.
func dirSize(dir string) (int64, int, error) {
	var size int64
	files := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
			files++
		}
		return nil
	})
	return size, files, err
}

// endOffsets is the sum of topic's end offsets.
func (e *env) endOffsets(topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(e.cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum, ends.Error()
}

// tasksNamed counts the distinct tasks that the lines of path containing mark name after "of
// task ".
func tasksNamed(path, mark string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, mark) {
			continue
		}
		_, rest, ok := strings.Cut(line, "of task ")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, " ")
		seen[id] = true
	}
	return len(seen)
}
