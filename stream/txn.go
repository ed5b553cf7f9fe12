package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/tasks"
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
	case errors.Is(e.Err, errOutcomeUnknown):
		hint = "restart the application: it resumes from what the broker committed, and its stores restore the committed changelog"
	case errors.Is(e.Err, errAbortFailed) && !errors.As(e.Err, new(*kerr.Error)):
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

var (
	// errOutcomeUnknown is the cause of a *TxnError when a commit's outcome could not be told.
	errOutcomeUnknown = errors.New("the outcome of a transaction commit is unknown")
	// errAbortFailed is the cause of a *TxnError when a transaction could not be aborted.
	errAbortFailed = errors.New("aborting the transaction failed")
)

// eos reports whether the App runs exactly-once.
func (a *App) eos() bool { return a.cfg.Runtime.Guarantee == config.ExactlyOnceV2 }

// transactionalID is Kafka Streams' EOS v2 transactional.id of the member: application ID, process
// ID, and the index of the member in its process (always 1: one member per App). The process ID is
// kept in state.dir, so a restarted process fences its previous incarnation's producer.
func (a *App) transactionalID() string {
	return a.cfg.ApplicationID + "-" + a.cfg.ProcessID + "-1"
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
		if ctx.Err() != nil || classify(err) != classRetriable || !clusterUnreachable(err) || time.Now().Add(backoff).After(deadline) {
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
	if !a.eos() || a.txnOpen {
		return true
	}
	if err := a.producer().BeginTransaction(); err != nil {
		// kgo refuses to begin when its producer ID failed for good (fenced, or a transaction state
		// the coordinator no longer accepts, such as INVALID_TXN_STATE after it aborted on its
		// own): a new producer is the way on. An authorization error is the application's end.
		if producerDead(err) || errors.As(err, new(*kerr.Error)) && a.fatalTxn(err) == nil {
			a.produceErr.CompareAndSwap(nil, &ProduceError{Topic: topic, Partition: -1, Err: fmt.Errorf("%w: %w", errProducerUnusable, err)})
			return false
		}
		a.fail(&TxnError{TransactionalID: a.transactionalID(), Err: err})
		return false
	}
	a.txnOpen, a.txnRecords = true, 0
	a.txnEpoch.begin(a.txnGen.Load())
	return true
}

// producerDead reports whether err says the transaction coordinator gave this producer's epoch to
// a newer one: kgo goes on with neither, so the producer is replaced (renewProducer).
func producerDead(err error) bool { return classify(err) == classRenewProducer }

// errProducerUnusable marks the error of a producer that could not begin a transaction.
var errProducerUnusable = errors.New("the transactional producer cannot begin a transaction")

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
	moved := a.cons.Uncommitted() // every one differs from its last committed offset
	offs := maps.Clone(moved)
	for tp, o := range extra {
		offs[tp] = o
	}
	// Every task with records in the transaction must have its offsets in it. A task the member lost
	// while the transaction was open (OnAllTasksLost waits for this commit) has none any more: its
	// records must not become visible, so the transaction aborts (R4).
	for id := range a.txnTasks {
		if !a.cons.Active(id) {
			return a.abortAfter(ctx, fmt.Errorf("stream: task %s was lost while its transaction was open", id))
		}
	}
	var err error
	switch {
	case a.txnOpen && a.txnRecords > 0:
		var id int64
		var epoch int16
		// ProducerID reloads a failed producer ID, and the reload aborts what the records were
		// written in: the epoch tells (txnEpoch).
		if id, epoch, err = a.producer().ProducerID(ctx); err == nil {
			err = a.txnEpoch.check(id, epoch)
		}
		if err == nil {
			err = a.commits.CommitInTransaction(ctx, commit.Producer{TransactionalID: a.transactionalID(), ID: id, Epoch: epoch}, offs)
		}
		if err == nil {
			if err = a.producer().EndTransaction(ctx, kgo.TryCommit); err != nil && unconfirmed(err) {
				return a.resolveUnconfirmed(ctx, offs, moved, err)
			}
		}
	default:
		if a.txnOpen {
			err = a.producer().EndTransaction(ctx, kgo.TryCommit) // nothing produced: no request
		}
		if err == nil {
			err = a.commits.Commit(ctx, offs)
		}
	}
	if err != nil {
		return a.abortAfter(ctx, err)
	}
	return a.committed(offs)
}

// committed records a committed transaction: its input offsets, and its writes applied to the
// stores with their checkpoints. Called with a.mu held.
func (a *App) committed(offs commit.Offsets) error {
	a.txnOpen, a.txnRecords = false, 0
	clear(a.txnTasks)
	a.cons.MarkCommitted(offs)
	a.ptimes.markCommitted()
	for _, t := range a.tasks {
		for _, s := range t.stores {
			if err := s.commitPending(); err != nil {
				// The transaction is committed, the store lacks its writes: a *store.Error stops the
				// application, and its restart restores them from the changelog.
				return err
			}
		}
	}
	return nil
}

// unconfirmed reports whether an EndTxn commit's outcome is unknown: a transport error, or the
// broker's UNKNOWN_SERVER_ERROR (kgo's documented cases; it then only allows an abort).
func unconfirmed(err error) bool {
	var ke *kerr.Error
	return !errors.As(err, &ke) || errors.Is(err, kerr.UnknownServerError)
}

// resolveUnconfirmed handles a commit whose outcome is unknown (the broker went away during EndTxn).
// It ends the transaction (kgo's way: the abort reloads the producer ID, and the new epoch makes the
// transaction coordinator finish whatever it holds: a commit it received completes, anything else
// aborts), then reads the group's committed offsets until the broker answers. The inputs whose
// positions moved in this transaction tell the outcome, since a transaction commits all its offsets
// or none: all of them committed, and the stores apply their pending writes as after any commit;
// none, and the work is dropped and done again. Only when no offset can tell (or the broker stays
// away past the retry bound) does the application stop with a *TxnError: its restart resumes from
// the broker's state. Called with a.mu held.
func (a *App) resolveUnconfirmed(ctx context.Context, offs, moved commit.Offsets, cause error) error {
	clear(a.txnTasks)
	if err := a.endOpenTxn(ctx); err != nil {
		a.discardPending()
		return err
	}
	unknown := &TxnError{TransactionalID: a.transactionalID(), Err: fmt.Errorf("%w (%w)", errOutcomeUnknown, cause)}
	var ids []tasks.ID
	for tp := range moved {
		if id, _, ok := a.router.Task(tp.Topic, tp.Partition); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		a.discardPending()
		return unknown // no offsets to tell the outcome by
	}
	committed, err := a.committedUntil(ctx, tasks.NewSet(ids...), time.Now().Add(abortRetryBound))
	if err != nil {
		a.discardPending()
		if errors.Is(err, commit.ErrTasksLost) {
			return err // the tasks go (OnAllTasksLost); their next owner reads the broker's state
		}
		return unknown
	}
	same := 0
	for tp, o := range moved {
		if committed[tp] == o {
			same++
		}
	}
	switch same {
	case 0:
		a.log.Warn("a transaction commit whose outcome was unknown aborted; its records are processed again", "err", cause)
		a.discardPending()
		return cause
	case len(moved):
		a.log.Info("a transaction commit whose outcome was unknown committed", "err", cause)
		return a.committed(offs)
	}
	a.discardPending()
	unknown.Err = fmt.Errorf("%w (%w): some of its offsets are committed and others not", errOutcomeUnknown, cause)
	return unknown
}

// committedUntil reads the committed offsets of ids, retrying while the broker is away (a restart)
// until deadline or ctx ends. Lost tasks are not retried.
func (a *App) committedUntil(ctx context.Context, ids tasks.Set, deadline time.Time) (commit.Offsets, error) {
	for attempt := 0; ; attempt++ {
		backoff := a.backoff.Delay(attempt)
		committed, err := a.commits.CommittedOffsets(ctx, ids)
		if err == nil || errors.Is(err, commit.ErrTasksLost) || ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return committed, err
		}
		a.log.Warn("reading the committed offsets failed; retrying", "err", err, "backoff", backoff)
		if serr := sleepCtx(ctx, backoff); serr != nil {
			return nil, err
		}
	}
}

// inTxn records that task has records in the open transaction. Called with a.mu held.
func (a *App) inTxn(task tasks.ID) {
	a.txnRecords++
	if a.txnTasks == nil {
		a.txnTasks = make(map[tasks.ID]bool)
	}
	a.txnTasks[task] = true
}

// abortAfter aborts the open transaction after err and rewinds; it returns err, or a *TxnError when
// the producer cannot go on. Called with a.mu held.
func (a *App) abortAfter(ctx context.Context, err error) error {
	if producerDead(err) {
		return a.renewProducer(ctx, err)
	}
	if fatal := a.fatalTxn(err); fatal != nil {
		a.abortTxn(ctx)
		return fatal
	}
	a.log.Warn("aborting the transaction; the records since the last commit are processed again", "err", err)
	if aerr := a.abortTxn(ctx); aerr != nil {
		if producerDead(aerr) {
			return a.renewProducer(ctx, aerr)
		}
		return aerr
	}
	return err
}

// Renewals of a fenced producer: more than maxFences within fenceWindow stop the application.
const (
	maxFences   = 3
	fenceWindow = time.Minute
)

// renewProducer replaces the transactional producer after PRODUCER_FENCED, as Kafka Streams
// replaces its thread producer (a TaskMigratedException): the transaction coordinator aborted the
// open transaction and bumped the producer epoch, most often because this member was silent for
// longer than transaction.timeout.ms (a pause, a network cut); kgo cannot go on with a fenced
// producer. The work since the last commit is dropped and done again with a new producer, whose
// InitProducerId takes the newest epoch. The member keeps its tasks if the group still says they
// are its own: if they moved, its next TxnOffsetCommit is refused by member epoch and nothing of
// it becomes visible. A process fenced again and again is sharing its transactional.id with
// another (the same state.dir copied): after maxFences renewals within fenceWindow it stops with a
// *TxnError that says so. It returns cause when the work can go on. Called with a.mu held.
func (a *App) renewProducer(ctx context.Context, cause error) error {
	now := time.Now()
	kept := a.fences[:0]
	for _, t := range a.fences {
		if now.Sub(t) < fenceWindow {
			kept = append(kept, t)
		}
	}
	a.fences = append(kept, now)
	if len(a.fences) > maxFences {
		return &TxnError{TransactionalID: a.transactionalID(), Err: fmt.Errorf("fenced %d times within %v: %w", len(a.fences), fenceWindow, cause)}
	}
	a.log.Warn("the transactional producer was fenced (the transaction coordinator aborted its transaction, "+
		"e.g. after transaction.timeout.ms without this member); replacing it and processing the records since the last commit again", "err", cause)
	a.txnGen.Add(1) // the old producer's records fail as part of the abort
	a.producer().Close()
	pcl, err := kgo.NewClient(a.popts...)
	if err != nil {
		return &TxnError{TransactionalID: a.transactionalID(), Err: fmt.Errorf("replacing the fenced producer: %w", err)}
	}
	a.pcl.Store(pcl)
	a.txnOpen, a.txnRecords = false, 0
	clear(a.txnTasks)
	a.produceErr.Store(nil)
	a.discardPending()
	if err := a.initProducer(ctx); err != nil {
		return err
	}
	return cause
}

// abortTxn aborts the open transaction, drops every store's pending writes and rewinds the inputs to
// the last committed offsets. Called with a.mu held (and, in callbacks, with the consumer idle).
func (a *App) abortTxn(ctx context.Context) error {
	if !a.eos() {
		return nil
	}
	err := a.endOpenTxn(ctx)
	a.discardPending()
	return err
}

// endOpenTxn ends the open transaction, if any, with an abort; the stores keep their pending writes
// (the caller decides what becomes of them). Called with a.mu held.
func (a *App) endOpenTxn(ctx context.Context) error {
	if !a.txnOpen {
		return nil
	}
	a.txnGen.Add(1) // from here on, the open transaction's records fail as part of the abort
	deadline := time.Now().Add(abortRetryBound)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	base := context.WithoutCancel(ctx)
	bctx, cancel := context.WithTimeout(base, a.cfg.RequestTimeout)
	err := a.producer().AbortBufferedRecords(bctx)
	cancel()
	if err == nil {
		err = a.endAbort(base, deadline)
	}
	a.txnOpen, a.txnRecords = false, 0
	clear(a.txnTasks)
	a.produceErr.Store(nil) // the failed records were part of the aborted transaction
	if err != nil {
		return &TxnError{TransactionalID: a.transactionalID(), Err: fmt.Errorf("%w: %w", errAbortFailed, err)}
	}
	return nil
}

// discardPending drops every store's pending writes and rewinds the inputs to the last committed
// offsets, and their partition times with them: the work since the last commit is done again. The
// active tasks start again as Kafka Streams revives the tasks of an aborted transaction: their Init
// runs again (its punctuations scheduled anew) and their stream time is the committed one. Called
// with a.mu held.
func (a *App) discardPending() {
	for _, t := range a.tasks {
		for _, s := range t.stores {
			s.dropPending()
		}
		if t.active {
			t.initialized, t.punctuations = false, nil
		}
	}
	a.ptimes.rewind()
	a.cons.Rewind()
}

// abortRetryBound bounds (with the caller's deadline) the retries of an abort that fails for a reason the producer can go on
// from (the broker restarting, the network down): long enough for a broker restart.
const abortRetryBound = time.Minute

// endAbort ends the open transaction with an abort. An abort whose outcome kgo could not confirm
// (a transport error) is retried, as kgo documents: the retry reloads the producer ID, which bumps
// the epoch and so aborts whatever the broker still holds open. Failing the application on the
// first such error would turn a broker restart into a fatal error.
func (a *App) endAbort(ctx context.Context, deadline time.Time) error {
	for attempt := 0; ; attempt++ {
		backoff := a.backoff.Delay(attempt)
		actx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		err := a.producer().EndTransaction(actx, kgo.TryAbort)
		cancel()
		if err == nil || a.fatalTxn(err) != nil || producerDead(err) || time.Now().Add(backoff).After(deadline) {
			return err // a dead producer is not retried: its replacement's InitProducerId ends what is open
		}
		a.log.Warn("aborting the transaction failed; retrying", "err", err, "backoff", backoff)
		if sleepCtx(ctx, backoff) != nil {
			return err
		}
	}
}

// fatalTxn returns the *TxnError for an error the application cannot go on from (classFatal), or
// nil.
func (a *App) fatalTxn(err error) error {
	if classify(err) != classFatal {
		return nil
	}
	var te *TxnError
	if errors.As(err, &te) {
		return te
	}
	return &TxnError{TransactionalID: a.transactionalID(), Err: err}
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
