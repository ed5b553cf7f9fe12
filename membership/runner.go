package membership

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// eventQueue delivers events in order to a channel through an unbounded buffer, so a slow reader
// loses nothing and never blocks the heartbeat loop. Events are kept only once someone subscribed
// (called Manager.Events); before that they are only logged.
type eventQueue struct {
	out        chan Event
	subscribed atomic.Bool
	abandon    chan struct{} // closed when undelivered events may be dropped
	abandoned  sync.Once
	finished   chan struct{} // closed when the pump has exited

	mu     sync.Mutex
	cond   *sync.Cond
	buf    []Event
	closed bool
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan Event), abandon: make(chan struct{}), finished: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.pump()
	return q
}

// drop lets the pump exit without delivering what is left.
func (q *eventQueue) drop() { q.abandoned.Do(func() { close(q.abandon) }) }

func (q *eventQueue) push(e Event) {
	if !q.subscribed.Load() {
		return
	}
	q.mu.Lock()
	if !q.closed {
		q.buf = append(q.buf, e)
		q.cond.Signal()
	}
	q.mu.Unlock()
}

// close stops accepting events; the channel closes once the buffered ones were read. It does not
// wait for the reader: an application that never reads Events must not block Close.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Signal()
	q.mu.Unlock()
}

func (q *eventQueue) pump() {
	defer close(q.finished)
	defer close(q.out)
	for {
		q.mu.Lock()
		for len(q.buf) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.buf) == 0 {
			q.mu.Unlock()
			return
		}
		e := q.buf[0]
		q.buf = q.buf[1:]
		q.mu.Unlock()
		select {
		case q.out <- e:
		case <-q.abandon:
			return
		}
	}
}

// callbackRunner runs listener callbacks one at a time, in order, on its own goroutine, and reports
// each result. Arguments are values (immutable task sets), so every callback has its own copy.
type callbackRunner struct {
	ctx      context.Context
	l        Listener
	jobs     chan Invoke
	results  chan callbackResult
	wg       sync.WaitGroup
	stopOnce sync.Once
	quit     chan struct{}
}

type callbackResult struct {
	seq uint64
	err error
}

func newCallbackRunner(ctx context.Context, l Listener) *callbackRunner {
	r := &callbackRunner{ctx: ctx, l: l, jobs: make(chan Invoke, 16), results: make(chan callbackResult, 16), quit: make(chan struct{})}
	r.wg.Add(1)
	go r.run()
	return r
}

// submit queues a callback. The machine has at most one outstanding, so the buffer never fills.
func (r *callbackRunner) submit(inv Invoke) {
	select {
	case r.jobs <- inv:
	case <-r.quit:
	}
}

func (r *callbackRunner) run() {
	defer r.wg.Done()
	for {
		select {
		case <-r.quit:
			return
		case inv := <-r.jobs:
			err := r.call(inv)
			select {
			case r.results <- callbackResult{seq: inv.Seq, err: err}:
			case <-r.quit:
				return
			}
		}
	}
}

func (r *callbackRunner) call(inv Invoke) (err error) {
	if r.l == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in %s: %v", inv.Kind, p)
		}
	}()
	switch inv.Kind {
	case CallbackRevoked:
		return r.l.OnTasksRevoked(r.ctx, inv.Tasks)
	case CallbackAssigned:
		return r.l.OnTasksAssigned(r.ctx, inv.Assignment, inv.Ready)
	case CallbackLost:
		return r.l.OnAllTasksLost(r.ctx, inv.Assignment)
	}
	return nil
}

// stop ends the runner after the callback in progress, if any, returns.
func (r *callbackRunner) stop() {
	if r == nil {
		return
	}
	r.stopOnce.Do(func() { close(r.quit) })
	r.wg.Wait()
}
