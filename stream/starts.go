package stream

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/streamsgroup/streamsgroup/consume"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// A task that starts processing without any committed input offset (a new group, new partitions)
// first commits where its inputs start, before its Init runs: otherwise what it writes to its
// stores before its first periodic commit — in Init, a punctuation, or its first records, whose
// changelog writes may reach the brokers long before the offsets — would outlive a stop with no
// committed offset beside it, and its successor would take that state for an upgrade gone wrong
// (OrphanedStateError). A task with orphaned state is refused before anything is committed.

// startTasks starts the restored, active tasks of ids that do not run yet: it refuses one whose
// stores hold state without any committed input offset, commits where the inputs of those without a
// committed offset start (firsts: the first offset of input partitions a batch brings; the others
// where auto.offset.reset puts them, listed), then runs their Init. It returns the error that stops
// the application (fatal), or a failed commit of the starting positions (again: the tasks are
// started later). Called with a.mu held.
func (a *App) startTasks(ctx context.Context, ids []tasks.ID, firsts map[tasks.TopicPartition]int64) (err error, again bool) {
	var fresh []tasks.ID
	for _, id := range ids {
		t := a.tasks[id]
		if t == nil || !t.active || a.mach.Running(id) || a.mach.HasCommitted(id) {
			continue
		}
		if err := a.checkOrphanedState(t); err != nil {
			return err, false
		}
		fresh = append(fresh, id)
	}
	if len(fresh) > 0 {
		if err, again := a.commitStartPositions(ctx, fresh, firsts); err != nil {
			return err, again
		}
	}
	if d := a.drive(ctx, sm.Ready{Tasks: tasks.NewSet(ids...)}); d.Err != nil {
		return d.Err, false
	}
	return nil, false
}

// commitStartPositions commits where the inputs of tasks fresh (none committed) start. Called with
// a.mu held.
func (a *App) commitStartPositions(ctx context.Context, fresh []tasks.ID, firsts map[tasks.TopicPartition]int64) (err error, again bool) {
	if now := a.now(); now.Before(a.startRetryAt) {
		return fmt.Errorf("stream: committing where new tasks start failed; retrying at %s", a.startRetryAt.Format(time.RFC3339Nano)), true
	}
	var unknown []tasks.TopicPartition
	for _, id := range fresh {
		for _, tp := range a.inputsOf(id) {
			if o, ok := firsts[tp]; ok {
				a.mach.StartAt(tp, o)
			} else {
				unknown = append(unknown, tp)
			}
		}
	}
	if len(unknown) > 0 {
		listed, err := a.resetOffsets(ctx, unknown)
		if err != nil {
			return a.startFailed(err), true
		}
		for tp, o := range listed {
			a.mach.StartAt(tp, o)
		}
	}
	// Not runCtx, as for the periodic commit: a signal must not cut it short.
	cctx, cancel := context.WithTimeout(a.failCtx, closeBound)
	defer cancel()
	d := a.drive(cctx, sm.Commit{Reason: sm.Periodic})
	switch {
	case d.Err == nil:
		a.metrics.commits.Add(1)
		a.startFailures = 0
		return nil, false
	case d.Fatal:
		a.metrics.failedCommits.Add(1)
		return d.Err, false
	}
	a.metrics.failedCommits.Add(1)
	return a.startFailed(d.Err), true
}

// startFailed schedules the next try of a failed start commit (retry.backoff.ms doubling up to
// retry.backoff.max.ms), logs it and returns it.
func (a *App) startFailed(err error) error {
	a.startRetryAt = a.now().Add(a.backoff.Delay(a.startFailures))
	a.startFailures++
	a.log.Warn("committing where new tasks start failed; they start once it succeeds", "err", err)
	return err
}

// resetOffsets lists where auto.offset.reset starts input partitions tps: their first offsets, or
// under latest their ends (the last stable offsets under exactly-once, where a read_committed
// consumer's reset puts it).
func (a *App) resetOffsets(ctx context.Context, tps []tasks.TopicPartition) (map[tasks.TopicPartition]int64, error) {
	var topics []string
	for _, tp := range tps {
		topics = append(topics, tp.Topic)
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	lctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	adm := kadm.NewClient(a.cl)
	var listed kadm.ListedOffsets
	var err error
	switch {
	case !a.cfg.Runtime.ResetLatest:
		listed, err = adm.ListStartOffsets(lctx, topics...)
	case a.eos():
		listed, err = adm.ListCommittedOffsets(lctx, topics...)
	default:
		listed, err = adm.ListEndOffsets(lctx, topics...)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("stream: listing where the inputs of new tasks start: %w", err)
	}
	out := make(map[tasks.TopicPartition]int64, len(tps))
	for _, tp := range tps {
		if o, ok := listed.Lookup(tp.Topic, tp.Partition); ok {
			out[tp] = o.Offset
		}
	}
	return out, nil
}

// startBatchTasks starts the tasks whose records a batch brings and that do not run yet, their
// starting positions the batch's first offsets. It returns nil to go on; otherwise where each
// partition of recs stops (none of them processed), with again set when the batch is to come again
// (a commit of the starting positions failed and is retried) rather than the application stopping.
// Called with a.mu held.
func (a *App) startBatchTasks(recs []consume.Records) (stops map[tasks.TopicPartition]int64, again bool) {
	var ids []tasks.ID
	var firsts map[tasks.TopicPartition]int64
	for _, r := range recs {
		t := a.tasks[r.Task]
		if t == nil || !t.active || a.mach.Running(t.id) {
			continue // processUntil refuses records of tasks not active here
		}
		if !slices.Contains(ids, t.id) {
			ids = append(ids, t.id)
		}
		if firsts == nil {
			firsts = map[tasks.TopicPartition]int64{}
		}
		firsts[r.Partition] = r.First
	}
	if len(ids) == 0 {
		return nil, false
	}
	err, again := a.startTasks(context.Background(), ids, firsts)
	switch {
	case err == nil:
		return nil, false
	case !again:
		a.fail(err)
	}
	return stopAll(recs), again
}
