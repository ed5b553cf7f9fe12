package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
)

// Exactly-once (processing.guarantee=exactly_once_v2), as Kafka Streams' EOS v2: one transactional
// producer per member; every record produced (output, repartition, changelog) and the processed
// input offsets go into one transaction, committed every commit.interval.ms and before a revocation
// returns. Stores keep the transaction's writes apart (overlay) and apply them, with their
// checkpoints, only after the transaction committed. An abort (the transaction coordinator asked
// for it, the member was fenced) drops the writes and rewinds the inputs to the committed offsets,
// so the work is done again, once. Everything is read with read_committed.

// TxnError is an exactly-once failure the application cannot go on from: the producer was fenced
// (another process runs with this process's transactional.id, e.g. the same state.dir copied), the
// client may not use its transactional.id, or the cluster cannot run transactions.
type TxnError struct {
	TransactionalID string
	Err             error
}

func (e *TxnError) Error() string {
	hint := "check the cluster supports transactions (the __transaction_state topic can be created: enough brokers for " +
		"transaction.state.log.replication.factor and transaction.state.log.min.isr)"
	switch {
	case errors.Is(e.Err, sm.ErrOutcomeUnknown):
		hint = "restart the application: it resumes from what the broker committed, and its stores restore the committed changelog"
	case errors.Is(e.Err, sm.ErrAbortFailed) && !errors.As(e.Err, new(*kerr.Error)):
		hint = "the transaction coordinator could not be reached to abort the transaction; it aborts it itself after transaction.timeout.ms, and a restart resumes from what the broker committed"
	case errors.Is(e.Err, kerr.ProducerFenced), errors.Is(e.Err, kerr.InvalidProducerEpoch):
		hint = "another process uses the same transactional.id (the same application.id and process ID): give each process its own state.dir; " +
			"or this process keeps its transactions open longer than transaction.timeout.ms (a processor, punctuation or Init that blocks that long)"
	case errors.Is(e.Err, kerr.TransactionalIDAuthorizationFailed):
		hint = "allow the client WRITE and DESCRIBE on the transactional ID (an ACL on TRANSACTIONAL_ID with the prefix <application.id>-)"
	case errors.Is(e.Err, kerr.ClusterAuthorizationFailed):
		hint = "allow the client IDEMPOTENT_WRITE on the cluster"
	}
	return fmt.Sprintf("stream: exactly-once with transactional.id %s: %v; %s", e.TransactionalID, e.Err, hint)
}

// Unwrap returns the cause.
func (e *TxnError) Unwrap() error { return e.Err }

// eos reports whether the App runs exactly-once.
func (a *App) eos() bool { return a.cfg.Runtime.Guarantee == config.ExactlyOnceV2 }

// transactionalID is Kafka Streams' EOS v2 transactional.id of the member: application ID, process
// ID, and the index of the stream thread in its process (1 to num.stream.threads). The process ID is
// kept in state.dir, so a restarted process fences its previous incarnation's producer.
func (a *App) transactionalID() string {
	return a.cfg.ApplicationID + "-" + a.cfg.ProcessID + "-" + strconv.Itoa(a.index)
}

// initProducer loads the producer ID at start, so a cluster that cannot run transactions is a clear
// error now (not a hang at the first record), and so the previous incarnation's open transaction is
// aborted before this member restores anything behind it. A cluster that cannot be reached yet is
// retried with the backoff (retry.backoff.ms up to retry.backoff.max.ms) for up to initBound, as
// Kafka Streams retries initTransactions until its task.timeout.ms; ctx ending stops the wait (Run
// then returns nil: nothing was started).
func (a *App) initProducer(ctx context.Context) error {
	deadline := time.Now().Add(a.initBound)
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, max(a.cfg.RequestTimeout, a.cfg.Runtime.TxnTimeout()))
		_, _, err := a.producer().ProducerID(actx)
		cancel()
		if err == nil {
			if attempt > 0 {
				a.log.Info("the transaction coordinator answered; starting")
			}
			return nil
		}
		backoff := a.backoff.Delay(attempt)
		// Only a cluster that cannot be reached is waited for; one that answers but has no
		// transaction coordinator within the bound of one attempt (transactions not possible:
		// too few brokers for transaction.state.log.replication.factor) is the error now.
		if ctx.Err() != nil || classify(err) != classRetriable || !sm.ClusterUnreachable(err) || time.Now().Add(backoff).After(deadline) {
			return &TxnError{TransactionalID: a.transactionalID(), Err: err}
		}
		if attempt == 0 {
			a.log.Warn("cannot reach the transaction coordinator yet; retrying", "err", err, "for", a.initBound)
		}
		if sleepCtx(ctx, backoff) != nil {
			return &TxnError{TransactionalID: a.transactionalID(), Err: err}
		}
	}
}

// taskTimeout is Kafka Streams' task.timeout.ms default: how long it retries a task's
// initialization (its producer's initTransactions among it) while the cluster does not answer.
const taskTimeout = 5 * time.Minute

// ensureTxn begins a transaction before the first record of one is produced (to topic) and reports
// whether the record may go. A producer the coordinator fenced cannot begin one: that failure is
// kept as the record's (the next commit aborts and replaces the producer, between batches, where
// the inputs can be rewound). Called with a.mu held.
func (a *App) ensureTxn(topic string) bool {
	if !a.eos() || a.mach.TxnOpen() {
		return true
	}
	if err := a.producer().BeginTransaction(); err != nil {
		if renewsProducer(err) {
			a.produceErr.CompareAndSwap(nil, &ProduceError{Topic: topic, Partition: -1, Err: fmt.Errorf("%w: %w", sm.ErrProducerUnusable, err)})
			return false
		}
		a.fail(&TxnError{TransactionalID: a.transactionalID(), Err: err})
		return false
	}
	a.mach.Begun()
	a.txnEpoch.begin(a.txnGen.Load())
	return true
}

// renewsProducer says whether a producer that cannot begin a transaction is replaced (the record is
// refused, and the next commit aborts and renews the producer) rather than the application failed.
// kgo refuses to begin when its producer ID failed for good in its eyes: fenced, a transaction state
// the coordinator no longer accepts (INVALID_TXN_STATE after it aborted on its own), or a load of the
// producer ID that failed on a connection kgo does not retry — one a stopping broker closed as it
// was opened (*kgo.ErrFirstReadEOF, which kgo takes for a TLS or SASL mismatch), as in every rolling
// restart, or another broken connection. A new producer is the way on from each: its own
// InitProducerId is bounded (task.timeout.ms), so a cluster that keeps refusing (a real TLS
// mismatch) still ends the application then. An authorization error, a closed client or an error
// of no known kind ends it at once.
func renewsProducer(err error) bool {
	c := classify(err)
	if c == classFatal {
		return false
	}
	return c == classRenewProducer || errors.As(err, new(*kerr.Error)) || errors.As(err, new(*kgo.ErrFirstReadEOF)) ||
		sm.ClusterUnreachable(err)
}

// discardPending drops every store's pending writes and fetches the inputs again from to, the last
// committed offsets (the machine took the positions and partition times back already): the work
// since the last commit is done again. The active tasks start again as Kafka Streams revives the
// tasks of an aborted transaction: their Init runs again (its punctuations scheduled anew) and their
// stream time is the committed one. Called with a.mu held.
func (a *App) discardPending(to commit.Offsets) {
	for _, t := range a.tasks {
		for _, s := range t.stores {
			s.dropPending()
		}
		if t.active {
			a.stopTask(t)
		}
	}
	a.cons.RewindTo(to)
}

// sleepCtx waits d or until ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// producer is the client records are produced with (pcl; cl until build set it).
func (a *App) producer() *kgo.Client {
	if p := a.pcl.Load(); p != nil {
		return p
	}
	return a.cl
}
