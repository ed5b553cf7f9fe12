//go:build unix

package stream

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
)

// fOFDSetlk is Linux's F_OFD_SETLK: a record lock owned by the open file, not the process (so
// reading the file elsewhere in the process cannot release it), that conflicts with the
// process-owned F_SETLK locks Java's FileChannel.tryLock takes.
const fOFDSetlk = 37

// openLockFile opens path and takes a write lock on the whole file without waiting.
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	cmd := syscall.F_SETLK
	if runtime.GOOS == "linux" {
		cmd = fOFDSetlk
	}
	err = syscall.FcntlFlock(f.Fd(), cmd, &lk)
	if errors.Is(err, syscall.EINVAL) && cmd != syscall.F_SETLK { // a kernel before 3.15
		err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("%w: %w", errLocked, err)
		}
		return nil, err
	}
	return f, nil
}
