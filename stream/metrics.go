package stream

import (
	"sync/atomic"
	"time"
)

// Metrics count what the App's processing loop did since Run started: Kafka Streams' thread-level
// processing metrics (poll, process, punctuate and commit, each as a count and the time spent, from
// which a monitoring system derives the rates and average latencies Kafka Streams reports), its
// dropped records and the records restored into stores. They are totals that only grow, read
// without stopping the loop; Stats has the member's metrics (heartbeats, rebalances, callbacks).
type Metrics struct {
	// Polls is Kafka Streams' poll-total: the loop's polls of the consumer, those that ended
	// without records included. PollTime is the time spent in them.
	Polls    uint64
	PollTime time.Duration
	// Processed is process-total: input records handed to a processor, the dropped ones included.
	// ProcessTime is the time spent processing them (process-latency-avg is ProcessTime/Processed);
	// the stream-time punctuations they fire count in PunctuateTime, not here.
	Processed   uint64
	ProcessTime time.Duration
	// Dropped is dropped-records-total: records skipped by a LogAndContinue handler
	// (processing.exception.handler, deserialization.exception.handler or
	// production.exception.handler), by default.timestamp.extractor, or by a processor that says
	// so (Context.Dropped: the DSL's windowed aggregations for a record without a key or too late
	// for its window).
	Dropped uint64
	// Restored is the changelog records applied to stores: active tasks restoring and standby or
	// warm-up tasks keeping up (Kafka Streams' restore-total and update-total together).
	Restored uint64
	// Punctuations is punctuate-total: punctuators called (wall-clock and stream-time).
	// PunctuateTime is the time spent in them.
	Punctuations  uint64
	PunctuateTime time.Duration
	// Commits is commit-total: the loop's commits (every commit.interval.ms) that succeeded, and
	// FailedCommits those that failed (retried after a backoff, or fatal). CommitTime is the time
	// spent committing, the failed commits included. The commits of revoked tasks, made in the member's revocation call,
	// are not counted.
	Commits       uint64
	CommitTime    time.Duration
	FailedCommits uint64
	// ProductionRetries counts the times a write failed with a retriable error under at-least-once
	// and the tasks went back to their last commit (production.exception.handler's RETRY; Kafka
	// Streams counts these as task-corrupted revivals).
	ProductionRetries uint64
	// MissingChangelogs is a gauge: how many changelog topics of the tasks assigned to the
	// application it waits for now because they do not exist (yet), 0 when it waits for none
	// (see MissingChangelogWarning).
	MissingChangelogs uint64
}

// loopMetrics are the App's counters, written by the loop and read by Metrics at any time.
type loopMetrics struct {
	polls, processed, dropped, restored, punctuations, commits, failedCommits, productionRetries atomic.Uint64
	missingChangelogs                                                                            atomic.Uint64 // a gauge
	pollTime, processTime, punctuateTime, commitTime                                             atomic.Int64  // ns
}

// Metrics returns the processing loop's counts so far, summed over the stream threads; the zero
// value before Run.
func (a *App) Metrics() Metrics {
	var out Metrics
	for _, t := range a.proc.all() {
		m := &t.metrics
		out.Polls += m.polls.Load()
		out.PollTime += time.Duration(m.pollTime.Load())
		out.Processed += m.processed.Load()
		out.ProcessTime += time.Duration(m.processTime.Load())
		out.Dropped += m.dropped.Load()
		out.Restored += m.restored.Load()
		out.Punctuations += m.punctuations.Load()
		out.PunctuateTime += time.Duration(m.punctuateTime.Load())
		out.Commits += m.commits.Load()
		out.CommitTime += time.Duration(m.commitTime.Load())
		out.FailedCommits += m.failedCommits.Load()
		out.ProductionRetries += m.productionRetries.Load()
		out.MissingChangelogs = max(out.MissingChangelogs, m.missingChangelogs.Load()) // each thread waits for the same topics
	}
	return out
}

// since is the time from start to now on the App's clock (never negative).
func (a *App) since(start time.Time) int64 { return max(int64(a.now().Sub(start)), 0) }
