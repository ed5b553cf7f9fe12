package membership

import (
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

// newEventQueue returns a queue whose pump is not running yet; start runs it.
func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan Event), abandon: make(chan struct{}), finished: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// start runs the pump that delivers events to the channel; call it once.
func (q *eventQueue) start() { go q.pump() }

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
