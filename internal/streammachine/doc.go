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
// failed write from the last commit (production.exception.handler). Tasks, input positions,
// stream time and the punctuation schedule are still the shell's; they move here next.
//
// It is internal because applications never drive it: stream.App runs it.
package streammachine
