package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
)

// Exactly-once (processing.guarantee=exactly_once_v2), as Kafka Streams' EOS v2: one transactional
// producer per member; every record produced (output, repartition, changelog) and the processed
// input offsets go into one transaction, committed every commit.interval.ms and before a revocation
// returns. Stores keep the transaction's writes apart (overlay) and apply them, with their
// checkpoints, only after the transaction committed. An abort (the transaction coordinator asked
// for it, the member was fenced) drops the writes and rewinds the inputs to the committed offsets,
// so the work is done again, once. Everything is read with read_committed.

// transactionTimeout is Kafka Streams' transaction.timeout.ms under exactly-once: how long the
// broker waits for a member that died mid-transaction before it aborts the transaction (and so
// before the task's next owner can read past it).
const transactionTimeout = 10 * time.Second

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
	case errors.Is(e.Err, kerr.ProducerFenced), errors.Is(e.Err, kerr.InvalidProducerEpoch):
		hint = "another process uses the same transactional.id (the same application.id and process ID): give each process its own state.dir"
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
// ID, and the index of the member in its process (always 1: one member per App). The process ID is
// kept in state.dir, so a restarted process fences its previous incarnation's producer.
func (a *App) transactionalID() string {
	return a.cfg.ApplicationID + "-" + a.cfg.ProcessID + "-1"
}

// initProducer loads the producer ID at start, so a missing transaction coordinator is a clear
// error now (not a hang at the first record), and so the previous incarnation's open transaction is
// aborted before this member restores anything behind it.
func (a *App) initProducer(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(a.cfg.RequestTimeout, transactionTimeout))
	defer cancel()
	if _, _, err := a.cl.ProducerID(ctx); err != nil {
		return &TxnError{TransactionalID: a.transactionalID(), Err: err}
	}
	return nil
}

// ensureTxn begins a transaction before the first record of one is produced. Called with a.mu held.
func (a *App) ensureTxn() {
	if !a.eos() || a.txnOpen {
		return
	}
	if err := a.cl.BeginTransaction(); err != nil {
		a.fail(&TxnError{TransactionalID: a.transactionalID(), Err: err})
		return
	}
	a.txnOpen, a.txnRecords = true, 0
}

// commitEOS commits the open transaction with the processed input offsets (those of the running
// tasks, plus extra: the revoked tasks' final positions). A transaction without records commits
// the offsets with a plain OffsetCommit (kgo ends no transaction it produced nothing into). On
// success the stores apply their pending writes with their checkpoints. An error that leaves the
// member able to go on aborts: the work since the last commit is dropped and done again. Called
// with a.mu held.
func (a *App) commitEOS(ctx context.Context, extra commit.Offsets) error {
	if err := a.flush(ctx); err != nil {
		return a.abortAfter(ctx, err)
	}
	offs := a.cons.Uncommitted()
	for tp, o := range extra {
		offs[tp] = o
	}
	var err error
	switch {
	case a.txnOpen && a.txnRecords > 0:
		var id int64
		var epoch int16
		if id, epoch, err = a.cl.ProducerID(ctx); err == nil {
			err = a.commits.CommitInTransaction(ctx, commit.Producer{TransactionalID: a.transactionalID(), ID: id, Epoch: epoch}, offs)
		}
		if err == nil {
			err = a.cl.EndTransaction(ctx, kgo.TryCommit)
		}
	default:
		if a.txnOpen {
			err = a.cl.EndTransaction(ctx, kgo.TryCommit) // nothing produced: no request
		}
		if err == nil {
			err = a.commits.Commit(ctx, offs)
		}
	}
	if err != nil {
		return a.abortAfter(ctx, err)
	}
	a.txnOpen, a.txnRecords = false, 0
	a.cons.MarkCommitted(offs)
	for _, t := range a.tasks {
		for _, s := range t.stores {
			if err := s.commitPending(); err != nil {
				return err // the transaction is committed; the store restores what it missed
			}
		}
	}
	return nil
}

// abortAfter aborts the open transaction after err and rewinds; it returns err, or a *TxnError when
// the producer cannot go on. Called with a.mu held.
func (a *App) abortAfter(ctx context.Context, err error) error {
	if fatal := a.fatalTxn(err); fatal != nil {
		a.abortTxn(ctx)
		return fatal
	}
	a.log.Warn("aborting the transaction; the records since the last commit are processed again", "err", err)
	if aerr := a.abortTxn(ctx); aerr != nil {
		return aerr
	}
	return err
}

// abortTxn aborts the open transaction, drops every store's pending writes and rewinds the inputs to
// the last committed offsets. Called with a.mu held (and, in callbacks, with the consumer idle).
func (a *App) abortTxn(ctx context.Context) error {
	if !a.eos() {
		return nil
	}
	var err error
	if a.txnOpen {
		// Retried with backoff while the brokers cannot be reached (a broker restarting): the
		// abort must happen before this member produces again, and giving up would stop it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(a.cfg.RequestTimeout, 2*transactionTimeout))
		defer cancel()
		for backoff := a.cfg.RetryBackoff; ; backoff = min(2*backoff, a.cfg.RetryBackoffMax) {
			if err = a.cl.AbortBufferedRecords(ctx); err == nil {
				err = a.cl.EndTransaction(ctx, kgo.TryAbort)
			}
			if err == nil || a.fatalTxn(err) != nil || !a.abortable(err) || ctx.Err() != nil {
				break
			}
			a.log.Warn("aborting the transaction failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(max(backoff, time.Millisecond)):
			}
		}
		a.txnOpen, a.txnRecords = false, 0
		a.produceErr.Store(nil) // the failed records were part of the aborted transaction
		if err != nil {
			err = &TxnError{TransactionalID: a.transactionalID(), Err: fmt.Errorf("aborting: %w", err)}
		}
	}
	for _, t := range a.tasks {
		for _, s := range t.stores {
			s.dropPending()
		}
	}
	a.cons.Rewind()
	return err
}

// fatalTxn returns the *TxnError for an error the producer cannot go on from, or nil.
func (a *App) fatalTxn(err error) error {
	var te *TxnError
	if errors.As(err, &te) {
		return te
	}
	for _, f := range []error{kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.TransactionalIDAuthorizationFailed,
		kerr.ClusterAuthorizationFailed, kerr.InvalidProducerIDMapping, kerr.UnsupportedForMessageFormat} {
		if errors.Is(err, f) {
			return &TxnError{TransactionalID: a.transactionalID(), Err: err}
		}
	}
	return nil
}
