//go:build unix

package stream

import (
	"context"
	"os"
	"syscall"
	"testing"
)

func TestSignalContext(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	if ctx.Err() != nil {
		t.Fatal("ended before a signal")
	}
	mustNotErr(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	<-ctx.Done()
}
