package stream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the lock of state.dir/<application.id>, as Kafka Streams keeps one.
const lockFile = ".lock"

// LockError says state.dir/<application.id> is in use by another process: two processes on one
// directory would share a process ID and each other's stores.
type LockError struct {
	Dir string
	// PID is the process that holds it, when it wrote its ID (0 when unknown).
	PID int
	Err error
}

func (e *LockError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = fmt.Sprintf("another process (pid %d)", e.PID)
	}
	return fmt.Sprintf("stream: state directory %s is in use by %s: give each process of the application its own state.dir", e.Dir, who)
}

// Unwrap returns the cause.
func (e *LockError) Unwrap() error { return e.Err }

// dirLock is a held lock; the zero of *dirLock (nil) is no lock.
type dirLock struct{ f *os.File }

// lockDir takes dir's lock file with flock, which the kernel releases when the process dies, so a
// crashed process never leaves a stale lock behind.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, &LockError{Dir: dir, Err: err}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := 0
		if b, rerr := os.ReadFile(path); rerr == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockError{Dir: dir, PID: pid, Err: err}
		}
		return nil, &LockError{Dir: dir, Err: err}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// release gives the lock up.
func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
