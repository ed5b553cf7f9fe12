package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The shell of the runtime's machine: internal/streammachine decides (when to commit, in what
// order, what each error means, how an abort is retried, when a producer is replaced; which tasks
// open, change role, are suspended and close); drive carries out its actions one by one and feeds
// each result back, until the machine says Done.

// machineConfig is what the machine decides with, from the App's config.
func (a *App) machineConfig() sm.Config {
	g := sm.AtLeastOnce
	if a.eos() {
		g = sm.ExactlyOnce
	}
	return sm.Config{Guarantee: g, CommitInterval: a.cfg.Runtime.CommitInterval, Backoff: a.backoff,
		RetryProduction: a.retriesProductionErrors(), MaxTaskIdle: a.cfg.Runtime.MaxTaskIdle,
		CloseLeaving: a.cfg.Runtime.Threads() > 1, Inputs: a.inputsOf}
}

// drive runs one request (a commit, an abort) through the machine and returns how it ended, with
// an exactly-once failure as a *TxnError. Called with a.mu held.
func (a *App) drive(ctx context.Context, in sm.Input) sm.Done { return a.driveAt(ctx, a.now(), in) }

// driveAt is drive with the request taken at now (the loop's time for this round).
func (a *App) driveAt(ctx context.Context, now time.Time, in sm.Input) sm.Done {
	queue := a.mach.Step(now, in)
	for len(queue) > 0 {
		act := queue[0]
		queue = queue[1:]
		if d, ok := act.(sm.Done); ok {
			var tf *sm.TxnFailure
			if errors.As(d.Err, &tf) {
				d.Err = &TxnError{TransactionalID: a.transactionalID(), Err: tf.Err}
			}
			return d
		}
		if res := a.execute(ctx, act); res != nil {
			queue = append(queue, a.mach.Step(a.now(), res)...)
		}
	}
	return sm.Done{Err: errors.New("stream: internal error: the commit step ended without an outcome"), Fatal: true}
}

// flushTasks runs the Flush of the processors that hold results back (Flusher) for the running
// active tasks (only those of only, when given), in task order, so that the commit under way
// includes what they held. A failure is fatal, as Kafka Streams fails a thread whose commit cannot
// flush: the application stops, and under exactly-once the transaction is aborted. Called with
// a.mu held.
func (a *App) flushTasks(only *tasks.Set) error {
	var ids []tasks.ID
	for id, t := range a.tasks {
		if t.active && flusherOf(a.procs[id.Subtopology]) != nil && a.mach.Running(id) && (only == nil || only.Contains(id)) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, tasks.ID.Compare)
	for _, id := range ids {
		t := a.tasks[id]
		t.ctx = Context{app: a, task: t, ts: a.now()}
		if err := flusherOf(a.procs[id.Subtopology]).Flush(&t.ctx); err != nil {
			err = &ProcessingError{Task: id, Flush: true, Err: err}
			a.fail(err)
			return err
		}
	}
	return nil
}

// execute carries out one action of the machine and returns its result (nil for those without).
func (a *App) execute(ctx context.Context, act sm.Action) sm.Input {
	switch act := act.(type) {
	case sm.Flush:
		if err := a.flushTasks(nil); err != nil {
			return sm.Flushed{Err: err}
		}
		if err := a.producer().Flush(ctx); err != nil {
			return sm.Flushed{Err: fmt.Errorf("stream: waiting for the records produced: %w", err)}
		}
		if pe := a.produceErr.Load(); pe != nil {
			return sm.Flushed{Err: pe, Write: true}
		}
		return sm.Flushed{}
	case sm.Checkpoint:
		for id, t := range a.tasks {
			if act.AllActive && t.active || act.Only.Contains(id) {
				if err := a.checkpoint(t); err != nil {
					return sm.Checkpointed{Err: err}
				}
			}
		}
		return sm.Checkpointed{}
	case sm.LoadProducer:
		// ProducerID reloads a failed producer ID, and the reload aborts what the records were
		// written in: the epoch tells (txnEpoch).
		id, epoch, err := a.producer().ProducerID(ctx)
		if err == nil {
			err = a.txnEpoch.check(id, epoch)
		}
		return sm.ProducerLoaded{Producer: commit.Producer{TransactionalID: a.transactionalID(), ID: id, Epoch: epoch}, Err: err}
	case sm.CommitOffsets:
		if err := ctx.Err(); err != nil {
			return sm.OffsetsCommitted{Err: err} // a fatal error ended the commit: nothing more is committed
		}
		if act.Producer != nil {
			return sm.OffsetsCommitted{Err: a.commits.CommitInTransaction(ctx, *act.Producer, act.Offsets)}
		}
		return sm.OffsetsCommitted{Err: a.commits.Commit(ctx, act.Offsets)}
	case sm.EndTxn:
		if act.Commit {
			return sm.TxnEnded{Err: a.producer().EndTransaction(ctx, kgo.TryCommit)}
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.RequestTimeout)
		defer cancel()
		return sm.TxnEnded{Err: a.producer().EndTransaction(actx, kgo.TryAbort)}
	case sm.StartAbort:
		a.txnGen.Add(1) // from here on, the open transaction's records fail as part of the abort
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.RequestTimeout)
		defer cancel()
		return sm.AbortStarted{Err: a.producer().AbortBufferedRecords(bctx)}
	case sm.ForgetTxn:
		a.produceErr.Store(nil) // the failed records were part of the ended transaction
	case sm.DropPending:
		a.discardPending(act.To)
	case sm.Apply:
		for _, t := range a.tasks {
			for _, s := range t.stores {
				if err := s.commitPending(); err != nil {
					// The transaction is committed, the store lacks its writes: the application
					// stops, and its restart restores them from the changelog.
					return sm.Applied{Err: err}
				}
			}
		}
		return sm.Applied{}
	case sm.ReadCommitted:
		var ids []tasks.ID
		for tp := range act.Moved {
			if id, _, ok := a.router.Task(tp.Topic, tp.Partition); ok {
				ids = append(ids, id)
			}
		}
		offs, err := a.commits.CommittedOffsets(ctx, tasks.NewSet(ids...))
		return sm.CommittedRead{Offsets: offs, Err: err}
	case sm.RenewProducer:
		return sm.ProducerRenewed{Err: a.renewProducer(ctx)}
	case sm.RetryFromLastCommit:
		if pe, ok := act.Err.(*ProduceError); ok {
			a.retryAfterProduceError(pe, act.To)
		}
	case sm.Wait:
		wctx := ctx
		if act.Abort {
			wctx = context.WithoutCancel(ctx) // the abort's deadline bounds it
		}
		return sm.Waited{Err: sleepCtx(wctx, act.D)}
	case sm.OpenTask:
		t, err := a.openTask(ctx, act.ID)
		if err == nil {
			a.tasks[act.ID] = t // its directory's cleanup was cancelled when it was assigned (OnTasksAssigned)
		}
		return sm.TaskOpened{ID: act.ID, Err: err}
	case sm.SetRole:
		if t := a.tasks[act.ID]; t != nil {
			if act.Stop {
				a.stopTask(t)
			}
			t.active = act.Active
		}
	case sm.InitTask:
		if t := a.tasks[act.ID]; t != nil {
			return sm.TaskInitialized{ID: act.ID, Err: a.initTask(t)}
		}
		return sm.TaskInitialized{ID: act.ID, Err: fmt.Errorf("stream: internal error: starting task %s, which is not open", act.ID)}
	case sm.SuspendTask:
		if t := a.tasks[act.ID]; t != nil {
			t.active = false
			a.stopTask(t)
		}
	case sm.CloseTask:
		if t := a.tasks[act.ID]; t != nil {
			a.closeTask(t, false) // a failure is logged; the next start restores the store
		}
	case sm.Log:
		args := act.Attrs
		if act.Err != nil {
			args = append([]any{"err", act.Err}, args...)
		}
		a.log.Log(ctx, act.Level, act.Msg, args...)
	default:
		panic(fmt.Sprintf("stream: internal error: the commit step asked for %T", act))
	}
	return nil
}

// inputsOf is the topology's input partitions of task id (the machine's Config.Inputs).
func (a *App) inputsOf(id tasks.ID) []tasks.TopicPartition {
	in, _ := a.router.Inputs(id) // a task of no subtopology has none: the member refuses it first
	return in
}

// renewProducer replaces the fenced transactional producer with a new one built from popts and
// initializes it (its InitProducerId takes the newest epoch). The old producer's records fail as
// part of the abort the fence was.
func (a *App) renewProducer(ctx context.Context) error {
	a.txnGen.Add(1)
	a.producer().Close()
	pcl, err := kgo.NewClient(a.popts...)
	if err != nil {
		return &TxnError{TransactionalID: a.transactionalID(), Err: fmt.Errorf("replacing the fenced producer: %w", err)}
	}
	a.pcl.Store(pcl)
	return a.initProducer(ctx)
}

// commit runs a periodic commit now and returns its error (nil when it committed). Called with
// a.mu held.
func (a *App) commit(ctx context.Context) error {
	return a.drive(ctx, sm.Commit{Reason: sm.Periodic}).Err
}

// abortOpen aborts the open transaction, if any, and drops what it held (exactly-once). Called
// with a.mu held.
func (a *App) abortOpen(ctx context.Context) error {
	return a.drive(ctx, sm.AbortOpen{}).Err
}
