package stream

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext returns a context that ends on SIGINT or SIGTERM, the way Go services stop: pass it
// to Run, and the application commits, leaves its group and returns nil. A second signal after the
// first is left to the default handling (the process ends at once). Call stop to release the
// signals earlier.
func SignalContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // after the first signal, the next one ends the process
	return ctx, stop
}
