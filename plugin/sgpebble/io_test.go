package sgpebble

import (
	"errors"
	"log/slog"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/streamsgroup/streamsgroup/store"
)

// quietNew is New with Pebble's messages discarded (the damage tests make many).
func quietNew(opts ...Option) store.Kind {
	return New(append([]Option{Logger(slog.New(slog.DiscardHandler))}, opts...)...)
}

// withFS makes the Kind's databases use fs (to inject I/O errors).
func withFS(fs vfs.FS) Option { return func(c *config) { c.fs = fs } }

// failWrites injects errno on every write and sync once toggled on.
func failWrites(errno syscall.Errno) *errorfs.Toggle {
	return &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpCreate:
			return errno
		}
		return nil
	})}
}

// TestDiskFull fills the disk under an open store: a checkpoint Apply (synced) fails with an error
// that is a *store.Error and errors.Is syscall.ENOSPC, later writes fail too (Pebble's commit
// pipeline is unusable after a failed WAL write), and Close returns.
func TestDiskFull(t *testing.T) {
	toggle := failWrites(syscall.ENOSPC)
	k := quietNew(withFS(errorfs.Wrap(vfs.Default, toggle)))
	loc := newLoc(t)
	e, err := k.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, e, 1, "a", "1")
	toggle.On()
	var b store.Batch
	b.Put([]byte("b"), []byte("2"))
	err = e.Apply(&b, 2)
	wantStoreErr(t, err, syscall.ENOSPC, "apply")
	if p, _ := e.Position(); p != 1 {
		t.Fatalf("Position after a failed checkpoint = %d, want 1", p)
	}
	wantStoreErr(t, e.Apply(&b, 3), syscall.ENOSPC, "apply")
	toggle.Off()
	_ = e.Close() // its error, if any, is the same full disk; it must return
	// The data up to the last good checkpoint is there after the disk has room again.
	e = open(t, quietNew(), loc)
	if p, ok := e.Position(); !ok || p != 1 {
		t.Fatalf("Position after reopen = %d %v, want 1", p, ok)
	}
	if v, _ := get(t, e, "a"); v != "1" {
		t.Fatalf("a = %q", v)
	}
}

// TestOpenIOErrors: a full disk or a refused permission while creating a store is that error,
// not ErrCorrupt.
func TestOpenIOErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EACCES} {
		toggle := failWrites(errno)
		toggle.On()
		_, err := quietNew(withFS(errorfs.Wrap(vfs.Default, toggle))).Open(newLoc(t))
		wantStoreErr(t, err, errno, "open")
		if errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("%v reads as damage: %v", errno, err)
		}
	}
}
