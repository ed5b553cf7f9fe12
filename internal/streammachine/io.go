package streammachine

import (
	"log/slog"
	"time"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Input is what the shell feeds the machine: a request (Started, Commit, AbortOpen) or the result
// of the action it carried out last.
type Input interface{ isInput() }

// Started says the loop starts: the first periodic commit is due one commit.interval.ms later.
type Started struct{}

// Reason is why a commit runs.
type Reason int

const (
	// Periodic: commit.interval.ms passed since the last commit (the loop asks when CommitDue).
	Periodic Reason = iota
	// Revocation: the member revokes tasks; their final positions must be committed before the
	// revocation returns (R2).
	Revocation
)

// Commit starts a commit. Revoked are the tasks being revoked (Revocation), already stopped. Dirty
// says the application stops on a fatal error after which its open work must not be committed
// (R7): under exactly-once the open transaction is aborted instead.
type Commit struct {
	Reason  Reason
	Revoked tasks.Set
	Dirty   bool
}

// AbortOpen aborts the open transaction, if any, and drops what it held (exactly-once; the tasks
// were lost, or the application stops with the transaction still open). Nothing under
// at-least-once.
type AbortOpen struct{}

// Flushed is Flush's result: Err is the first failed write when Write is set (then Err is the
// shell's error value for it), or why the flush itself did not finish.
type Flushed struct {
	Err   error
	Write bool
}

// Checkpointed is Checkpoint's result.
type Checkpointed struct{ Err error }

// ProducerLoaded is LoadProducer's result: the transactional producer's ID and epoch, or why they
// cannot commit this transaction (the epoch moved under its records, say).
type ProducerLoaded struct {
	Producer commit.Producer
	Err      error
}

// OffsetsCommitted is CommitOffsets' result.
type OffsetsCommitted struct{ Err error }

// TxnEnded is EndTxn's result.
type TxnEnded struct{ Err error }

// AbortStarted is StartAbort's result: Err is set when the buffered records could not be aborted.
type AbortStarted struct{ Err error }

// CommittedRead is ReadCommitted's result.
type CommittedRead struct {
	Offsets commit.Offsets
	Err     error
}

// Applied is Apply's result.
type Applied struct{ Err error }

// ProducerRenewed is RenewProducer's result: Err is the shell's fatal error when the new producer
// could not be initialized.
type ProducerRenewed struct{ Err error }

// RetryWrite says a write failed with Err, an error production.exception.handler retries, while no
// commit runs (the loop found it between batches): the tasks go back to their last commit (→
// RetryFromLastCommit).
type RetryWrite struct{ Err error }

func (RetryWrite) isInput() {}

// Waited is Wait's result: Err is set when the wait was cut short (the application stops).
type Waited struct{ Err error }

func (Started) isInput()          {}
func (Commit) isInput()           {}
func (AbortOpen) isInput()        {}
func (Flushed) isInput()          {}
func (Checkpointed) isInput()     {}
func (ProducerLoaded) isInput()   {}
func (OffsetsCommitted) isInput() {}
func (TxnEnded) isInput()         {}
func (AbortStarted) isInput()     {}
func (CommittedRead) isInput()    {}
func (Applied) isInput()          {}
func (ProducerRenewed) isInput()  {}
func (Waited) isInput()           {}

// Action is what the machine asks the shell to do. Actions with a result are answered by the
// Input named beside them; the others are carried out in order and answer nothing. Every run ends
// with Done.
type Action interface{ isAction() }

// Flush waits for every record produced so far (→ Flushed).
type Flush struct{}

// Checkpoint checkpoints the persistent stores of the tasks Only, or of every active task when
// AllActive (→ Checkpointed).
type Checkpoint struct {
	Only      tasks.Set
	AllActive bool
}

// LoadProducer reads the transactional producer's ID and epoch and checks that the open
// transaction's records were all acknowledged at them (→ ProducerLoaded).
type LoadProducer struct{}

// CommitOffsets commits Offsets: in the open transaction with Producer (TxnOffsetCommit) when
// Producer is set, else with a plain OffsetCommit (→ OffsetsCommitted).
type CommitOffsets struct {
	Offsets  commit.Offsets
	Producer *commit.Producer
}

// EndTxn ends the open transaction: a commit, or an abort (→ TxnEnded). An abort's request is
// bounded by the request timeout and not cut short by the application stopping.
type EndTxn struct{ Commit bool }

// StartAbort begins an abort: from here on a failure of the open transaction's records is part of
// the abort, and the records still buffered are failed (→ AbortStarted).
type StartAbort struct{}

// ForgetTxn says no transaction is open any more: the shell forgets its failed writes.
type ForgetTxn struct{}

// DropPending drops the stores' pending writes and takes the active tasks back to their last
// commit: the inputs fetched again from To (an input absent from it was never committed: from
// where its consumption started), Init again. The machine's positions and partition times went
// back with them. The work since the last commit is done again.
type DropPending struct{ To commit.Offsets }

// Apply makes the stores apply the committed transaction's pending writes with their checkpoints
// (exactly-once; → Applied).
type Apply struct{}

// ReadCommitted reads the group's committed offsets of the tasks of Moved's partitions (→
// CommittedRead).
type ReadCommitted struct{ Moved commit.Offsets }

// RenewProducer replaces the transactional producer with a new one and initializes it (→
// ProducerRenewed); the old one's records fail as part of the abort the fence was.
type RenewProducer struct{}

// RetryFromLastCommit takes the active tasks back to their last commit after a write failed with
// an error production.exception.handler retries (Err, the shell's error value for it): the inputs
// fetched again from To, as DropPending's.
type RetryFromLastCommit struct {
	Err error
	To  commit.Offsets
}

// Wait waits D (→ Waited). Abort says the wait is part of an abort: the application stopping does
// not cut it short (the abort's deadline bounds it).
type Wait struct {
	D     time.Duration
	Abort bool
}

// Log logs Msg at Level with Err and Attrs.
type Log struct {
	Level slog.Level
	Msg   string
	Err   error
	Attrs []any
}

// Done ends the run. Err is nil when the commit succeeded (or, for a revocation, when there is
// nothing left to commit); Fatal says the application cannot go on from Err; RetryIn, after a
// failed periodic commit, is when the next one is due. An Err that is a *TxnFailure is an
// exactly-once failure the shell reports with its transactional.id.
type Done struct {
	Err     error
	Fatal   bool
	RetryIn time.Duration
}

func (Flush) isAction()               {}
func (Checkpoint) isAction()          {}
func (LoadProducer) isAction()        {}
func (CommitOffsets) isAction()       {}
func (EndTxn) isAction()              {}
func (StartAbort) isAction()          {}
func (ForgetTxn) isAction()           {}
func (DropPending) isAction()         {}
func (Apply) isAction()               {}
func (ReadCommitted) isAction()       {}
func (RenewProducer) isAction()       {}
func (RetryFromLastCommit) isAction() {}
func (Wait) isAction()                {}
func (Log) isAction()                 {}
func (Done) isAction()                {}
