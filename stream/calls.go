package stream

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// The member calls its listener (memberCalls) on a goroutine of its own; the tasks, their stores,
// the consumer's assignment and the machine are the loop's. So a call is carried out on the loop's
// goroutine, between two batches, as a Kafka Streams thread runs its rebalance callbacks inside its
// own poll: the member's goroutine hands the call over (onLoop) and waits for its result, the loop
// wakes from its poll and serves it (serveCalls). Before the loop starts serving and after it
// stopped (the member's Close revokes the tasks once the loop ended), a call runs on the member's
// goroutine: the loop's goroutine does not touch the tasks meanwhile, except when Close gave up on a
// call still running (closeBound), after which both take a.mu.

// errCallWaiting ends the loop's wait for records: a member's call waits to be served.
var errCallWaiting = errors.New("stream: a member's call waits")

// memberCall is one listener call waiting for the loop.
type memberCall struct {
	ctx  context.Context
	fn   func(context.Context) error
	done chan error // buffered: the loop never waits for the caller
}

// callQueue hands the member's calls to the loop.
type callQueue struct {
	mu      sync.Mutex
	serving bool // the loop serves calls; when false they run on the caller's goroutine
	pending []*memberCall
	// wake ends the loop's current wait for records (nil when it is not waiting).
	wake context.CancelCauseFunc
}

// onLoop runs fn on the loop's goroutine (or on this one when the loop is not serving) and returns
// its error. A call whose ctx ends before the loop took it is withdrawn and returns ctx's error; one
// the loop took runs to its end (fn sees ctx).
func (a *App) onLoop(ctx context.Context, fn func(context.Context) error) error {
	q := &a.calls
	q.mu.Lock()
	if !q.serving {
		q.mu.Unlock()
		return fn(ctx)
	}
	c := &memberCall{ctx: ctx, fn: fn, done: make(chan error, 1)}
	q.pending = append(q.pending, c)
	if q.wake != nil {
		q.wake(errCallWaiting)
	}
	q.mu.Unlock()
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.pending, c); i >= 0 {
			q.pending = slices.Delete(q.pending, i, i+1)
			q.mu.Unlock()
			return ctx.Err()
		}
		q.mu.Unlock()
		return <-c.done
	}
}

// startServing makes the loop's goroutine the one the member's calls run on, from now on: called
// before the member starts, so that no call runs anywhere else while the loop runs.
func (a *App) startServing() {
	a.calls.mu.Lock()
	a.calls.serving = true
	a.calls.mu.Unlock()
}

// stopServing serves the calls waiting, and makes later ones run on the member's goroutine. Called
// by the loop's goroutine once the loop ended.
func (a *App) stopServing() {
	a.calls.mu.Lock()
	a.calls.serving = false
	a.calls.mu.Unlock()
	a.serveCalls()
}

// serveCalls runs the member's calls waiting, in the order they came. Called on the loop's
// goroutine with no batch out and a.mu not held (the calls take it).
func (a *App) serveCalls() {
	q := &a.calls
	for {
		q.mu.Lock()
		cs := q.pending
		q.pending = nil
		q.mu.Unlock()
		if len(cs) == 0 {
			return
		}
		for _, c := range cs {
			c.done <- c.fn(c.ctx)
		}
	}
}

// pollContext is the context of one wait for records under parent: it ends when a member's call
// comes (at once if one waits already). Call the returned function once the wait is over.
func (a *App) pollContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	q := &a.calls
	q.mu.Lock()
	if len(q.pending) > 0 {
		cancel(errCallWaiting)
	} else {
		q.wake = cancel
	}
	q.mu.Unlock()
	return ctx, func() {
		q.mu.Lock()
		q.wake = nil
		q.mu.Unlock()
		cancel(nil)
	}
}
