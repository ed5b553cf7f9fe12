// Package streammachine is the stream runtime's deterministic core: a plain value that takes
// Inputs and returns Actions, with no goroutines, no clock (the time is an argument) and no I/O,
// as internal/machine is the member's. The runtime (package stream) is its shell: it carries out
// each Action (flush the producer, commit offsets, end a transaction, apply or drop the stores'
// pending writes, wait) and feeds the result back as the next Input.
//
// What it decides today is the commit step, for both processing guarantees as two strategies of
// one step: when the periodic commit is due (commit.interval.ms, plus a backoff after failures);
// the order of a commit (flush, checkpoint, offsets, transaction end, stores); what every error met
// on the way means (Classify: retry, abort and redo, replace the producer, tasks lost, stop); the
// abort and its retries; replacing a fenced producer and the bound on how often; resolving a
// transaction commit whose outcome the broker did not confirm; and at-least-once's retry of a
// failed write from the last commit (production.exception.handler).
//
// It also holds the open transaction (whether one is open, its records, the tasks that wrote), the
// task lifecycle (which tasks this member holds and where each is: opened, restoring, running once
// restored and its Init ran, standby, suspended, closed, and what stops a running task; see tasks.go), the input positions and partition times of the active tasks (what a commit commits,
// with which metadata, and where an abort goes back to; positions.go), the punctuation schedule
// (punctuate.go), and the choice of the next record of a task with several inputs with the idle
// waits it keeps (order.go). The consumer keeps only its fetch positions, and the changelog
// positions of the stores it feeds.
//
// The runtime's invariants it holds (numbered as in docs/runtime.md), each pinned by its tests:
//
//   - R1: offsets are committed only after every write is acknowledged (Flush first; a failed
//     write commits nothing past it) and, under at-least-once, after the stores' checkpoints.
//   - R2: a revocation commits the revoked tasks' final positions before it returns; under
//     exactly-once they go into the one transaction with every other task's work.
//   - R4: under exactly-once nothing of an aborted transaction is applied to the stores (they apply
//     pending writes only after EndTxn committed, DropPending otherwise); a task lost while its
//     transaction was open aborts it; a fenced producer is replaced and the work redone, never
//     committed with the old epoch.
//   - R7: a commit started Dirty (after a fatal error) aborts the open transaction and commits
//     nothing.
//
// It is internal because applications never drive it: stream.App runs it.
package streammachine
