package stream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// lockFile is the lock of state.dir/<application.id>, the file Kafka Streams locks there too.
const lockFile = ".lock"

// LockError says state.dir/<application.id> is in use by another process: two processes on one
// directory would share a process ID and each other's stores.
type LockError struct {
	Dir string
	// PID is the process that holds it, when it wrote its ID (0 when unknown: a Kafka Streams
	// instance writes none).
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

// errLocked is the cause of a *LockError when the lock is held (by another process, a Kafka Streams
// instance, or another App of this process).
var errLocked = errors.New("the state directory's lock is held")

// dirLock is a held lock; the zero of *dirLock (nil) is no lock.
type dirLock struct {
	f   *os.File
	key string // its path in heldHere
}

// heldHere are the lock files this process holds: the operating system's record locks belong to a
// process (on some systems) or to an open file (Linux), so two Apps of one process are kept apart
// here, whatever the system.
var (
	heldMu   sync.Mutex
	heldHere = map[string]bool{}
)

// lockDir takes dir's lock file: the same lock Kafka Streams takes there (a record lock on the whole
// file, as Java's FileChannel.tryLock; lockFileRange per system), which the kernel releases when the
// process dies, so a crashed process never leaves a stale lock behind, and a Go and a Java instance
// on one directory exclude each other.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	key := path
	if abs, err := filepath.Abs(path); err == nil {
		key = abs
	}
	heldMu.Lock()
	if heldHere[key] {
		heldMu.Unlock()
		return nil, &LockError{Dir: dir, PID: os.Getpid(), Err: errLocked}
	}
	heldHere[key] = true
	heldMu.Unlock()
	unregister := func() {
		heldMu.Lock()
		delete(heldHere, key)
		heldMu.Unlock()
	}
	f, err := openLockFile(path)
	if err != nil {
		unregister()
		if errors.Is(err, errLocked) {
			return nil, &LockError{Dir: dir, PID: readPID(path), Err: err}
		}
		return nil, &LockError{Dir: dir, Err: err}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f, key: key}, nil
}

// readPID reads the holder's PID from the lock file (0 when it wrote none). It is called only when
// this process does not hold the lock: on systems whose record locks belong to the process, closing
// any descriptor of the file would release a lock the process held.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// release gives the lock up (closing the file releases the record lock).
func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Close()
	l.f = nil
	heldMu.Lock()
	delete(heldHere, l.key)
	heldMu.Unlock()
}
