package stream

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// The stream threads of one process (num.stream.threads), as Kafka Streams runs them under streams
// groups: each thread is one member of the group (its own member ID, consumer positions, tasks,
// commit step and, under exactly-once, transactional producer whose transactional.id ends in the
// thread's index), and all of them share the process ID, state.dir and its lock, the state of the
// whole App and its first fatal error. The broker's assignor spreads tasks over the members and
// keeps a task's active and standby copies on different processes.
//
// A thread is an *App value: the one New returns is thread 1 and also the face of the process
// (Run, State, queries, metrics); Run builds the others beside it (App.sibling).

// handOverBound bounds the wait of a thread for a task's store directory that another thread of
// the process still holds (Kafka Streams' task.timeout.ms default): the broker hands a task to a
// thread only after the thread that had it released it, and that thread closes a task leaving it
// before it acknowledges, so a wait is rare and short.
const handOverBound = 5 * time.Minute

// process is what an App's stream threads share.
type process struct {
	// threads are the process's threads, thread 1 first, for Run and the threads; list is the same
	// once Run built them all, for any goroutine (queries, metrics).
	threads []*App
	list    atomic.Pointer[[]*App]
	// clientID and instanceID are the application's client.id (application.id when unset) and
	// group.instance.id, which its threads' are named after.
	clientID, instanceID string
	// global is the process's global stores (nil when the topology has none), which every thread
	// reads.
	global *globalState

	// cancel ends every thread's run (a thread's fatal error stops the others cleanly, as Kafka
	// Streams' default SHUTDOWN_CLIENT does).
	cancel context.CancelCauseFunc
	// first is the first fatal error of any thread: what Run returns.
	first atomic.Pointer[error]

	// state is the App's State, derived from the threads' (stateMu orders the changes and the
	// listeners' calls).
	stateMu sync.Mutex
	state   atomic.Int32

	// mu guards cleanups, held and freed.
	mu sync.Mutex
	// cleanups are persistent task directories to delete once their time comes
	// (state.cleanup.delay.ms).
	cleanups map[tasks.ID]time.Time
	// held maps a task whose persistent stores are open to the thread holding them: a store
	// directory is open in one thread at a time.
	held map[tasks.ID]*App
	// freed is closed (and replaced) whenever a thread gives a task's directory up.
	freed chan struct{}
}

func newProcess() *process {
	return &process{cleanups: map[tasks.ID]time.Time{}, held: map[tasks.ID]*App{}, freed: make(chan struct{})}
}

// claim registers thread t as the holder of task id's store directory, waiting (up to
// handOverBound, or until ctx or t's failure ends) while another thread of the process holds it.
func (p *process) claim(ctx context.Context, id tasks.ID, t *App) error {
	timer := time.NewTimer(handOverBound)
	defer timer.Stop()
	for {
		p.mu.Lock()
		if h := p.held[id]; h == nil || h == t {
			p.held[id] = t
			// The thread that had it may have scheduled its deletion after this one's assignment
			// cancelled it: the holder cancels it again.
			delete(p.cleanups, id)
			p.mu.Unlock()
			return nil
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return fmt.Errorf("stream: opening task %s: another stream thread of this process still holds its stores: %w", id, context.Cause(ctx))
		case <-t.failCtx.Done():
			return fmt.Errorf("stream: opening task %s: %w", id, context.Cause(t.failCtx))
		case <-timer.C:
			return fmt.Errorf("stream: opening task %s: another stream thread of this process held its stores for %v after the group "+
				"moved the task here", id, handOverBound)
		}
	}
}

// release gives task id's store directory up, if thread t holds it, and schedules its deletion at
// due (state.cleanup.delay.ms: the group may hand the task back to this process meanwhile).
func (p *process) release(id tasks.ID, t *App, due time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[id] != t {
		return
	}
	delete(p.held, id)
	p.cleanups[id] = due
	close(p.freed)
	p.freed = make(chan struct{})
}

// publish makes the threads built so far visible to all (New, with thread 1; Run, before it starts
// the others): a copy, so that readers never see the slice Run appends to.
func (p *process) publish() {
	l := slices.Clone(p.threads)
	p.list.Store(&l)
}

// all returns the process's threads (on any goroutine, without a lock: queries and metrics never
// wait for the cleaner or a hand-over).
func (p *process) all() []*App { return *p.list.Load() }

// keep cancels the deletion of task id's directory: a thread holds the task again.
func (p *process) keep(id tasks.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.cleanups, id)
}

// fail records err as the process's fatal error if it is the first, and stops every thread.
func (p *process) fail(err error) {
	p.first.CompareAndSwap(nil, &err)
	if p.cancel != nil {
		p.cancel(err)
	}
}

// firstErr is the first fatal error of any thread (nil when none).
func (p *process) firstErr() error {
	if e := p.first.Load(); e != nil {
		return *e
	}
	return nil
}

// stateRank orders the states of threads for the App's: the App is in the state of its least
// advanced thread (Rebalancing while any thread rebalances, Running only when all run), and a
// stopping thread (an error first) shows at once. (Created is taken as Rebalancing; see refresh.)
func stateRank(s State) int {
	switch s {
	case PendingError, Error:
		return 0
	case PendingShutdown, NotRunning:
		return 1
	case Rebalancing:
		return 2
	case Restoring:
		return 4
	}
	return 5 // Running
}

// refresh derives the App's state from its threads' and tells the listeners of a change. After a
// fatal error of any thread the App is stopping on it: PendingError.
func (p *process) refresh(log *slog.Logger, listeners []func(from, to State)) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	// Called once some thread left Created: a thread not started yet holds the App back as a
	// rebalancing one does.
	to := State(-1)
	for _, t := range p.threads {
		s := State(t.state.Load())
		if s == Created {
			s = Rebalancing
		}
		if to < 0 || stateRank(s) < stateRank(to) {
			to = s
		}
	}
	if p.firstErr() != nil && stateRank(to) > stateRank(PendingError) {
		to = PendingError
	}
	p.set(log, listeners, to)
}

// set moves the App to state to (p.stateMu held).
func (p *process) set(log *slog.Logger, listeners []func(from, to State), to State) {
	from := State(p.state.Swap(int32(to)))
	if from == to {
		return
	}
	log.Info("state changed", "from", from.String(), "to", to.String())
	for _, fn := range listeners {
		fn(from, to)
	}
}
