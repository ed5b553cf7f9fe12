package sgpebble

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// quietNew is New with Pebble's messages discarded (the damage tests make many).
func quietNew(opts ...Option) store.Kind {
	return New(append([]Option{Logger(slog.New(slog.DiscardHandler))}, opts...)...)
}

// withFS makes the Kind's databases use fs (to inject I/O errors).
func withFS(fs vfs.FS) Option { return func(c *config) { c.fs = fs } }

// withFreeSpace makes the Kind read the free space from free (to fill the disk).
func withFreeSpace(free func(string) (uint64, error)) Option {
	return func(c *config) { c.freeSpace = free }
}

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

// TestDiskFull fills the disk under an open store as the reserve guard sees it (the file system's
// free space falls below the reserve): the next write that looks fails with a *SpaceError that is a
// *store.Error and errors.Is syscall.ENOSPC, nothing of it is written, Close returns, and once there
// is room again the store opens with what it held. A store is not opened below the reserve.
func TestDiskFull(t *testing.T) {
	free := uint64(1 << 40)
	k := quietNew(withFreeSpace(func(string) (uint64, error) { return free, nil }))
	loc := newLoc(t)
	e, err := k.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, e, 1, "a", "1")
	free = 1 << 20 // less than the reserve of 1 MiB memtables (14 MiB)
	var b store.Batch
	b.Put([]byte("b"), []byte("2"))
	err = e.Apply(&b, 2) // a checkpoint always looks
	wantStoreErr(t, err, syscall.ENOSPC, "apply")
	var se *SpaceError
	if !errors.As(err, &se) || se.Free != 1<<20 || se.Reserve != 14<<20 || !strings.Contains(err.Error(), "free space under state.dir") {
		t.Fatalf("err = %v; want a *SpaceError naming the free space, the reserve and what to do", err)
	}
	if p, _ := e.Position(); p != 1 {
		t.Fatalf("Position after a refused checkpoint = %d, want 1", p)
	}
	if _, ok := get(t, e, "b"); ok {
		t.Fatal("the refused write was applied")
	}
	// Writes without a checkpoint look every 256 KiB.
	var big store.Batch
	big.Put([]byte("c"), make([]byte, spaceCheckEvery))
	wantStoreErr(t, e.Apply(&big, -1), syscall.ENOSPC, "apply")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Open(loc); !errors.As(err, &se) {
		t.Fatalf("Open below the reserve: %v; want a *SpaceError", err)
	}
	free = 1 << 40
	e = open(t, k, loc)
	if p, ok := e.Position(); !ok || p != 1 {
		t.Fatalf("Position after reopen = %d %v, want 1", p, ok)
	}
	if v, _ := get(t, e, "a"); v != "1" {
		t.Fatalf("a = %q", v)
	}
}

// A write error Pebble cannot survive (here the WAL on a disk that refuses every write with
// ENOSPC, which the reserve guard cannot see) ends the process with a sentence that says what
// happens next: no panic, no hang. It runs in a child process (diskFullChild); the store then
// opens with the data of its last good checkpoint.
func TestDiskFullPebbleCannotSurvive(t *testing.T) {
	if os.Getenv("SGPEBBLE_DISKFULL_DIR") != "" {
		// The child: it may exit without its test's cleanup, so it makes no directory of its own.
		diskFullChild(t, os.Getenv("SGPEBBLE_DISKFULL_DIR"))
		return
	}
	loc := newLoc(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFullPebbleCannotSurvive$")
	cmd.Env = append(os.Environ(), "SGPEBBLE_DISKFULL_DIR="+loc.Dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		// Pebble returned the error instead: the child checked it is a *store.Error and ENOSPC.
		t.Log("Pebble returned the full disk as an error")
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		t.Log("Pebble could not go on: the process exited")
		if !strings.Contains(stderr.String(), "pebble cannot go on") || !strings.Contains(stderr.String(), "free space under state.dir") ||
			strings.Contains(stderr.String(), "panic") {
			t.Fatalf("the process exited without saying why and what next:\n%s", stderr.String())
		}
	default:
		t.Fatalf("the child: %v\n%s", err, stderr.String())
	}
	e := open(t, quietNew(), loc)
	if p, ok := e.Position(); !ok || p != 1 {
		t.Fatalf("Position after reopen = %d %v, want 1", p, ok)
	}
	if v, _ := get(t, e, "a"); v != "1" {
		t.Fatalf("a = %q", v)
	}
}

// diskFullChild checkpoints a=1, then applies a checkpoint on a disk that refuses every write.
func diskFullChild(t *testing.T, dir string) {
	toggle := failWrites(syscall.ENOSPC)
	k := New(withFS(errorfs.Wrap(vfs.Default, toggle)), Logger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	loc := store.Location{ApplicationID: "app", Task: tasks.ID{Subtopology: "0", Partition: 1}, Store: "counts", Dir: dir}
	e, err := k.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, e, 1, "a", "1")
	toggle.On()
	var b store.Batch
	b.Put([]byte("b"), []byte("2"))
	wantStoreErr(t, e.Apply(&b, 2), syscall.ENOSPC, "apply")
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
