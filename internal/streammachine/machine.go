package streammachine

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Guarantee is processing.guarantee: the two strategies of the commit step.
type Guarantee int

const (
	// AtLeastOnce: every write acknowledged (flush), the stores checkpointed, then the offsets.
	AtLeastOnce Guarantee = iota
	// ExactlyOnce (exactly_once_v2): the writes and the offsets in one transaction; the stores apply
	// the transaction's writes once it committed.
	ExactlyOnce
)

// Config is what the machine decides with.
type Config struct {
	Guarantee Guarantee
	// CommitInterval is commit.interval.ms.
	CommitInterval time.Duration
	// Backoff paces retries (retry.backoff.ms, retry.backoff.max.ms): of failed commits, of an
	// abort, of reading the committed offsets.
	Backoff heartbeat.Backoff
	// RetryProduction says production.exception.handler answers RETRY to a write that failed with a
	// retriable error (Kafka Streams' DefaultProductionExceptionHandler): the tasks go back to their
	// last commit (at-least-once).
	RetryProduction bool
	// MaxTaskIdle is max.task.idle.ms (NeverIdle: never wait; other negative values as 0); see
	// NextInput.
	MaxTaskIdle time.Duration
	// CloseLeaving closes a task as soon as it leaves the assignment instead of keeping it
	// suspended for KeepSuspended: with several stream threads in one process, the next thread
	// handed the task must be able to open its stores (a store directory is open in one thread at
	// a time).
	CloseLeaving bool
	// Inputs are the input partitions of a task (the topology's): the positions a task that
	// becomes active keeps.
	Inputs func(tasks.ID) []tasks.TopicPartition
}

// Limits of the machine's retries.
const (
	// AbortRetryBound bounds the retries of an abort that fails for a reason the producer can go on
	// from (the broker restarting, the network down), and of reading the committed offsets after a
	// commit whose outcome is unknown: long enough for a broker restart.
	AbortRetryBound = time.Minute
	// MaxFences renewals of a fenced producer within FenceWindow stop the application: a process
	// fenced again and again shares its transactional.id with another.
	MaxFences   = 3
	FenceWindow = time.Minute
)

// TxnFailure is an exactly-once failure the application cannot go on from; the shell reports it
// with its transactional.id (stream.TxnError).
type TxnFailure struct{ Err error }

func (f *TxnFailure) Error() string { return f.Err.Error() }

// Unwrap returns the cause.
func (f *TxnFailure) Unwrap() error { return f.Err }

var (
	// ErrOutcomeUnknown is the cause of a *TxnFailure when a commit's outcome could not be told.
	ErrOutcomeUnknown = errors.New("the outcome of a transaction commit is unknown")
	// ErrAbortFailed is the cause of a *TxnFailure when a transaction could not be aborted.
	ErrAbortFailed = errors.New("aborting the transaction failed")
)

// Machine is the runtime's commit step (see the package doc). The zero value is not usable: make
// one with New.
type Machine struct {
	cfg        Config
	lastCommit time.Time
	// delay is added to the interval after failures failed periodic commits in a row.
	delay    time.Duration
	failures int
	// fences are the times of the last producer renewals.
	fences []time.Time
	run    *run

	// The open transaction (exactly-once): whether one is open, how many records went into it, and
	// the tasks that wrote them.
	txnOpen    bool
	txnRecords int
	txnTasks   map[tasks.ID]bool

	// held are the tasks this member holds (tasks.go); assigning is an assignment being carried out.
	held      map[tasks.ID]*heldTask
	assigning *assigning
	// starting are the tasks of a Ready whose Init is still to run, in order.
	starting []tasks.ID

	// schedules are the tasks' punctuations (punctuate.go); lastPunctuation the last ID given.
	schedules       map[tasks.ID][]*Punctuation
	lastPunctuation uint64

	// idle are the idle waits of tasks' empty input partitions (order.go): since when each was
	// found empty with nothing known on the brokers, by the partition's index.
	idle map[tasks.ID]map[int]time.Time

	// positions are the active tasks' input positions and partition times (positions.go), by
	// partition; inputsOf the partitions of each active task.
	positions map[tasks.TopicPartition]*position
	inputsOf  map[tasks.ID][]tasks.TopicPartition
	// meta is each active task's processor metadata (positions.go).
	meta map[tasks.ID]*processorMeta
}

// The transaction's bookkeeping is fed by methods rather than Step, since it moves with every
// record written (an Input value per record would cost an allocation each).

// TxnOpen reports whether a transaction is open (exactly-once): a record written now goes into it;
// when none is, one is begun first (Begun).
func (m *Machine) TxnOpen() bool { return m.txnOpen }

// Begun records that the shell began a transaction.
func (m *Machine) Begun() { m.txnOpen, m.txnRecords = true, 0 }

// Produced records that task wrote a record into the open transaction.
func (m *Machine) Produced(task tasks.ID) {
	m.txnRecords++
	if m.txnTasks == nil {
		m.txnTasks = make(map[tasks.ID]bool)
	}
	m.txnTasks[task] = true
}

// forget records that no transaction is open any more, and tells the shell.
func (m *Machine) forget() Action {
	m.txnOpen, m.txnRecords = false, 0
	clear(m.txnTasks)
	return ForgetTxn{}
}

// txnTaskSet is the tasks with records in the open transaction.
func (m *Machine) txnTaskSet() tasks.Set {
	ids := make([]tasks.ID, 0, len(m.txnTasks))
	for id := range m.txnTasks {
		ids = append(ids, id)
	}
	return tasks.NewSet(ids...)
}

// New returns a machine for cfg.
func New(cfg Config) *Machine {
	return &Machine{cfg: cfg, held: map[tasks.ID]*heldTask{}, positions: map[tasks.TopicPartition]*position{},
		inputsOf: map[tasks.ID][]tasks.TopicPartition{}, meta: map[tasks.ID]*processorMeta{}}
}

// phase is where a run is: which result it waits for.
type phase int

const (
	phFlush phase = iota
	phCheckpoint
	phLoadProducer
	phTxnOffsets   // TxnOffsetCommit in the transaction
	phPlainOffsets // a plain OffsetCommit
	phEndEmpty     // ending a transaction nothing was produced into
	phEndCommit
	phStartAbort
	phEndAbort
	phAbortWait
	phRead
	phReadWait
	phApply
	phRenew
)

// after is what a run does once its abort ended.
type after int

const (
	// afterCause: finish with the error the abort was for (the work is redone).
	afterCause after = iota
	// afterFatal: finish with the cause as a fatal exactly-once failure.
	afterFatal
	// afterResolve: read the committed offsets to tell a commit's unknown outcome.
	afterResolve
	// afterDirty: a dirty close or AbortOpen: nothing more.
	afterDirty
)

// run is one commit (or abort) under way.
type run struct {
	reason    Reason
	revoked   tasks.Set
	phase     phase
	abortOnly bool

	offsets, moved  commit.Offsets
	notOwnedRetried bool

	// cause is the error an abort or a renewal is for; then says what follows the abort.
	cause error
	then  after
	// attempts and deadline pace the retries of the current step (abort, read).
	attempts int
	deadline time.Time
	lastErr  error
	// writeFailed: the run failed on a write (at-least-once: that stops the application);
	// retried: the write is retried from the last commit (no backoff).
	writeFailed, retried bool
}

// CommitDue reports whether the periodic commit is due at now.
func (m *Machine) CommitDue(now time.Time) bool {
	return now.Sub(m.lastCommit) >= m.cfg.CommitInterval+m.delay
}

// Busy reports whether a run is under way (its Done not yet returned).
func (m *Machine) Busy() bool { return m.run != nil }

func (m *Machine) eos() bool { return m.cfg.Guarantee == ExactlyOnce }

// Step takes one input at now and returns the actions to carry out, in order.
func (m *Machine) Step(now time.Time, in Input) []Action {
	switch in := in.(type) {
	case Started:
		m.lastCommit = now
		return nil
	case Commit:
		return m.start(now, in)
	case Assigned:
		return m.assigned(now, in.Assignment, in.Committed)
	case TaskOpened:
		return m.opened(in)
	case Ready:
		return m.ready(in)
	case TaskInitialized:
		return m.initialized(in)
	case RetryWrite:
		if m.run != nil {
			return []Action{Done{Err: errors.New("streammachine: a write was retried during a commit"), Fatal: true}}
		}
		return []Action{m.retryFromLastCommit(in.Err), Done{}}
	case CloseExpired:
		return m.closeExpired(now)
	case AllLost:
		return m.allLost()
	case AbortOpen:
		if !m.eos() || !m.txnOpen || m.run != nil {
			return []Action{Done{}}
		}
		m.run = &run{abortOnly: true, then: afterDirty}
		return m.startAbort(now)
	}
	r := m.run
	if r == nil {
		return []Action{Done{Err: fmt.Errorf("streammachine: %T with no commit under way", in), Fatal: true}}
	}
	switch in := in.(type) {
	case Flushed:
		if r.phase == phFlush {
			return m.flushed(now, in)
		}
	case Checkpointed:
		if r.phase == phCheckpoint {
			if in.Err != nil {
				return m.finish(now, in.Err, false)
			}
			return m.collect(now)
		}
	case ProducerLoaded:
		if r.phase == phLoadProducer {
			if in.Err != nil {
				return m.abortFor(now, in.Err)
			}
			p := in.Producer
			r.phase = phTxnOffsets
			return []Action{CommitOffsets{Offsets: r.offsets, Producer: &p}}
		}
	case OffsetsCommitted:
		if r.phase == phTxnOffsets || r.phase == phPlainOffsets {
			return m.offsetsCommitted(now, in)
		}
	case TxnEnded:
		switch r.phase {
		case phEndEmpty:
			if in.Err != nil {
				return m.abortFor(now, in.Err)
			}
			r.phase = phPlainOffsets
			return []Action{CommitOffsets{Offsets: r.offsets}}
		case phEndCommit:
			return m.commitEnded(now, in.Err)
		case phEndAbort:
			return m.abortEnded(now, in.Err)
		}
	case AbortStarted:
		if r.phase == phStartAbort {
			if in.Err != nil {
				return m.aborted(now, in.Err)
			}
			r.phase, r.attempts, r.deadline = phEndAbort, 0, now.Add(AbortRetryBound)
			return []Action{EndTxn{}}
		}
	case Waited:
		switch r.phase {
		case phAbortWait:
			if in.Err != nil {
				return m.aborted(now, r.lastErr)
			}
			r.phase = phEndAbort
			return []Action{EndTxn{}}
		case phReadWait:
			if in.Err != nil {
				return m.outcomeUnknown(now, "")
			}
			r.phase = phRead
			return []Action{ReadCommitted{Moved: r.moved}}
		}
	case CommittedRead:
		if r.phase == phRead {
			return m.read(now, in)
		}
	case Applied:
		if r.phase == phApply {
			return m.finish(now, in.Err, false)
		}
	case ProducerRenewed:
		if r.phase == phRenew {
			acts := []Action{m.forget(), m.dropPending()}
			if in.Err != nil {
				return append(acts, m.finish(now, in.Err, true)...)
			}
			return append(acts, m.finish(now, r.cause, false)...)
		}
	}
	return m.finish(now, fmt.Errorf("streammachine: %T out of turn (phase %d)", in, r.phase), true)
}

// start begins a commit.
func (m *Machine) start(now time.Time, c Commit) []Action {
	if m.run != nil {
		return []Action{Done{Err: errors.New("streammachine: a commit was started while another is under way"), Fatal: true}}
	}
	if c.Reason == Periodic {
		m.lastCommit = now
	}
	m.run = &run{reason: c.Reason, revoked: c.Revoked}
	if c.Dirty && m.eos() {
		// R7: the open transaction may hold part of a failed record's effects: it is aborted and
		// nothing is committed, as Kafka Streams closes its tasks dirty after a fatal error.
		m.run.then = afterDirty
		return m.startAbort(now)
	}
	return []Action{Flush{}}
}

func (m *Machine) flushed(now time.Time, in Flushed) []Action {
	r := m.run
	if m.eos() {
		if in.Err != nil {
			return m.abortFor(now, in.Err)
		}
		return m.collect(now)
	}
	if in.Err != nil {
		if in.Write && m.cfg.RetryProduction && Classify(in.Err) == ClassRetriable {
			// Kafka Streams' DefaultProductionExceptionHandler answers RETRY: the tasks go back to
			// their last commit. A revocation then commits nothing more of the revoked tasks (their
			// records since the last commit may not all be written): their next owner starts there.
			r.retried = true
			acts := []Action{m.retryFromLastCommit(in.Err)}
			if r.reason == Revocation {
				return append(acts, m.finish(now, nil, false)...)
			}
			return append(acts, m.finish(now, in.Err, false)...)
		}
		r.writeFailed = in.Write
		return m.finish(now, in.Err, false)
	}
	r.phase = phCheckpoint
	if r.reason == Revocation {
		return []Action{Checkpoint{Only: r.revoked}}
	}
	return []Action{Checkpoint{AllActive: true}}
}

// collect takes the positions to commit (positions.go) and goes on with the commit: under
// exactly-once in the open transaction, if one is open.
func (m *Machine) collect(now time.Time) []Action {
	r := m.run
	r.offsets, r.moved = m.collectOffsets(r.revoked, !m.eos() && r.reason == Revocation)
	if !m.eos() {
		r.phase = phPlainOffsets
		return []Action{CommitOffsets{Offsets: r.offsets}}
	}
	lost := m.lostTxnTask()
	switch {
	case lost != nil:
		// Every task with records in the transaction must have its offsets in it; a task lost
		// meanwhile has none, and its records must not become visible (R4).
		return m.abortFor(now, lost)
	case m.txnOpen && m.txnRecords > 0:
		r.phase = phLoadProducer
		return []Action{LoadProducer{}}
	case m.txnOpen:
		// Nothing produced: kgo ends such a transaction without a request.
		r.phase = phEndEmpty
		return []Action{EndTxn{Commit: true}}
	}
	r.phase = phPlainOffsets
	return []Action{CommitOffsets{Offsets: r.offsets}}
}

func (m *Machine) offsetsCommitted(now time.Time, in OffsetsCommitted) []Action {
	r := m.run
	inTxn := r.phase == phTxnOffsets
	if in.Err != nil {
		if m.eos() {
			return m.abortFor(now, in.Err)
		}
		// Partitions of tasks the member does not own at the moment of the commit (a revocation or
		// an assignment in progress) are left for the next time; the rest is committed.
		var no *commit.NotOwnedError
		if errors.As(in.Err, &no) && !r.notOwnedRetried {
			r.notOwnedRetried = true
			offs := maps.Clone(r.offsets) // the collected offsets are the shell's
			for _, tp := range no.Partitions {
				delete(offs, tp)
			}
			r.offsets = offs
			if len(offs) > 0 {
				return []Action{CommitOffsets{Offsets: offs}}
			}
			return m.apply(now)
		}
		return m.finish(now, in.Err, false)
	}
	if inTxn {
		r.phase = phEndCommit
		return []Action{EndTxn{Commit: true}}
	}
	return m.apply(now)
}

// apply records a successful commit: the positions committed; under exactly-once, the transaction
// is over and the stores apply its writes.
func (m *Machine) apply(now time.Time) []Action {
	m.markCommitted(m.run.offsets)
	if m.eos() {
		m.run.phase = phApply
		return []Action{m.forget(), Apply{}}
	}
	return m.finish(now, nil, false)
}

// dropPending is DropPending, with the positions taken back to the last commit and the running
// tasks stopped.
func (m *Machine) dropPending() Action {
	m.stopAll()
	return DropPending{To: m.rewind()}
}

// retryFromLastCommit is RetryFromLastCommit after a write failed with err, with the positions
// taken back to the last commit and the running tasks stopped.
func (m *Machine) retryFromLastCommit(err error) Action {
	m.stopAll()
	return RetryFromLastCommit{Err: err, To: m.rewind()}
}

// lostTxnTask is an error naming a task with records in the open transaction that is no longer
// active here (lost, or suspended, while the transaction was open), nil when there is none.
func (m *Machine) lostTxnTask() error {
	for id := range m.txnTaskSet().All() {
		if t := m.held[id]; t == nil || !t.state.Active() {
			return fmt.Errorf("stream: task %s was lost while its transaction was open", id)
		}
	}
	return nil
}

// Unconfirmed reports whether an EndTxn commit's outcome is unknown: a transport error, or the
// broker's UNKNOWN_SERVER_ERROR (kgo's documented cases; it then only allows an abort).
func Unconfirmed(err error) bool {
	var ke *kerr.Error
	return !errors.As(err, &ke) || errors.Is(err, kerr.UnknownServerError)
}

func (m *Machine) commitEnded(now time.Time, err error) []Action {
	r := m.run
	switch {
	case err == nil:
		return m.apply(now)
	case Unconfirmed(err):
		// The broker went away during EndTxn. The abort (kgo's way: it reloads the producer ID,
		// and the new epoch makes the coordinator finish whatever it holds: a commit it received
		// completes, anything else aborts) ends the transaction; the committed offsets then tell
		// the outcome, since a transaction commits all its offsets or none.
		r.cause, r.then = err, afterResolve
		return m.startAbort(now)
	}
	return m.abortFor(now, err)
}

// abortFor aborts the open transaction after err: the work since the last commit is redone. A
// fenced producer is replaced instead; a fatal error aborts and stops.
func (m *Machine) abortFor(now time.Time, err error) []Action {
	r := m.run
	r.cause = err
	switch Classify(err) {
	case ClassRenewProducer:
		return m.renew(now, err)
	case ClassFatal:
		r.then = afterFatal
		return m.startAbort(now)
	}
	r.then = afterCause
	return append([]Action{Log{Level: slog.LevelWarn, Msg: "aborting the transaction; the records since the last commit are processed again", Err: err}},
		m.startAbort(now)...)
}

func (m *Machine) startAbort(now time.Time) []Action {
	if !m.txnOpen {
		return m.aborted(now, nil) // nothing to end; what is pending is still dropped
	}
	m.run.phase = phStartAbort
	return []Action{StartAbort{}}
}

// abortEnded handles EndTxn(abort)'s result: an abort whose outcome kgo could not confirm (a
// transport error) is retried, as kgo documents (the retry reloads the producer ID, which bumps the
// epoch and so aborts whatever the broker still holds open); failing on the first such error would
// turn a broker restart into a fatal error. A dead producer is not retried: its replacement's
// InitProducerId ends what is open.
func (m *Machine) abortEnded(now time.Time, err error) []Action {
	r := m.run
	if err == nil {
		return m.aborted(now, nil)
	}
	backoff := m.cfg.Backoff.Delay(r.attempts)
	if c := Classify(err); c == ClassFatal || c == ClassRenewProducer || now.Add(backoff).After(r.deadline) {
		return m.aborted(now, err)
	}
	r.attempts++
	r.lastErr = err
	r.phase = phAbortWait
	return []Action{Log{Level: slog.LevelWarn, Msg: "aborting the transaction failed; retrying", Err: err, Attrs: []any{"backoff", backoff}},
		Wait{D: backoff, Abort: true}}
}

// aborted goes on after the abort ended (err: how it failed).
func (m *Machine) aborted(now time.Time, err error) []Action {
	r := m.run
	acts := []Action{m.forget()}
	switch r.then {
	case afterResolve:
		if err != nil {
			return append(acts, append([]Action{m.dropPending()}, m.finish(now, &TxnFailure{Err: fmt.Errorf("%w: %w", ErrAbortFailed, err)}, true)...)...)
		}
		if len(r.moved) == 0 {
			return append(acts, m.outcomeUnknown(now, "")...) // no offsets to tell the outcome by
		}
		r.phase, r.attempts, r.deadline = phRead, 0, now.Add(AbortRetryBound)
		return append(acts, ReadCommitted{Moved: r.moved})
	case afterDirty:
		acts = append(acts, m.dropPending())
		if err != nil && !r.abortOnly {
			// A dirty close commits nothing either way: a failed abort does not fail it (the
			// coordinator aborts after transaction.timeout.ms). AbortOpen's callers say so themselves.
			acts = append(acts, Log{Level: slog.LevelWarn, Msg: "aborting the open transaction after a fatal error failed; " +
				"the broker aborts it after transaction.timeout.ms", Err: err})
			err = nil
		}
		return append(acts, m.finish(now, err, false)...)
	}
	acts = append(acts, m.dropPending())
	if err != nil {
		if Classify(err) == ClassRenewProducer {
			return append(acts, m.renew(now, err)...)
		}
		return append(acts, m.finish(now, &TxnFailure{Err: fmt.Errorf("%w: %w", ErrAbortFailed, err)}, true)...)
	}
	if r.then == afterFatal {
		return append(acts, m.finish(now, &TxnFailure{Err: r.cause}, true)...)
	}
	return append(acts, m.finish(now, r.cause, false)...)
}

// read tells a commit's unknown outcome from the committed offsets of the inputs whose positions
// moved in the transaction: all of them committed, and the stores apply its writes as after any
// commit; none, and the work is dropped and done again; some, and only a restart can resume from
// the broker's state.
func (m *Machine) read(now time.Time, in CommittedRead) []Action {
	r := m.run
	if in.Err != nil {
		if Classify(in.Err) == ClassLost {
			// The tasks go (OnAllTasksLost); their next owner reads the broker's state.
			return append([]Action{m.dropPending()}, m.finish(now, in.Err, false)...)
		}
		backoff := m.cfg.Backoff.Delay(r.attempts)
		if now.Add(backoff).After(r.deadline) {
			return m.outcomeUnknown(now, "")
		}
		r.attempts++
		r.phase = phReadWait
		return []Action{Log{Level: slog.LevelWarn, Msg: "reading the committed offsets failed; retrying", Err: in.Err, Attrs: []any{"backoff", backoff}},
			Wait{D: backoff}}
	}
	same := 0
	for tp, o := range r.moved {
		if c, ok := in.Offsets[tp]; ok && c == o {
			same++
		}
	}
	switch same {
	case 0:
		return append([]Action{Log{Level: slog.LevelWarn, Msg: "a transaction commit whose outcome was unknown aborted; its records are processed again", Err: r.cause},
			m.dropPending()}, m.finish(now, r.cause, false)...)
	case len(r.moved):
		return append([]Action{Log{Level: slog.LevelInfo, Msg: "a transaction commit whose outcome was unknown committed", Err: r.cause}}, m.apply(now)...)
	}
	return m.outcomeUnknown(now, ": some of its offsets are committed and others not")
}

func (m *Machine) outcomeUnknown(now time.Time, detail string) []Action {
	err := &TxnFailure{Err: fmt.Errorf("%w (%w)%s", ErrOutcomeUnknown, m.run.cause, detail)}
	return append([]Action{m.dropPending()}, m.finish(now, err, true)...)
}

// renew replaces a fenced producer, as Kafka Streams replaces its thread producer (a
// TaskMigratedException): the transaction coordinator aborted the open transaction and bumped the
// producer epoch, most often because this member was silent for longer than
// transaction.timeout.ms. The work since the last commit is dropped and done again with a new
// producer. More than MaxFences renewals within FenceWindow stop the application.
func (m *Machine) renew(now time.Time, cause error) []Action {
	r := m.run
	r.cause = cause
	kept := m.fences[:0]
	for _, t := range m.fences {
		if now.Sub(t) < FenceWindow {
			kept = append(kept, t)
		}
	}
	m.fences = append(kept, now)
	if len(m.fences) > MaxFences {
		err := &TxnFailure{Err: fmt.Errorf("fenced %d times within %v: %w", len(m.fences), FenceWindow, cause)}
		return append([]Action{m.forget(), m.dropPending()}, m.finish(now, err, true)...)
	}
	r.phase = phRenew
	return []Action{Log{Level: slog.LevelWarn, Msg: "the transactional producer was fenced (the transaction coordinator aborted its transaction, " +
		"e.g. after transaction.timeout.ms without this member); replacing it and processing the records since the last commit again", Err: cause},
		RenewProducer{}}
}

// finish ends the run with err (fatal: the machine decided the application cannot go on).
func (m *Machine) finish(now time.Time, err error, fatal bool) []Action {
	r := m.run
	m.run = nil
	if err == nil {
		if r.reason == Periodic && !r.abortOnly {
			m.delay, m.failures = 0, 0
		}
		if r.reason == Revocation {
			m.stopRevoked(r.revoked)
		}
		return []Action{Done{}}
	}
	var se *store.Error
	switch {
	case fatal, errors.As(err, new(*TxnFailure)):
		fatal = true
	case r.writeFailed && !m.eos():
		fatal = true // a write production.exception.handler does not retry
	case errors.As(err, &se) && (m.eos() || errors.Is(err, syscall.ENOSPC)):
		// Under exactly-once the transaction committed and a store lacks its writes; a store that
		// cannot record its checkpoint for want of space does not recover by itself.
		fatal = true
	}
	d := Done{Err: err, Fatal: fatal}
	if !fatal && r.reason == Periodic && !r.abortOnly && !r.retried {
		// Failed commits back off (retry.backoff.ms doubling up to retry.backoff.max.ms, jittered)
		// on top of the interval, so a cluster in trouble is not asked again every 100 ms.
		m.delay = m.cfg.Backoff.Delay(m.failures)
		m.failures++
		d.RetryIn = m.cfg.CommitInterval + m.delay
	}
	return []Action{d}
}
