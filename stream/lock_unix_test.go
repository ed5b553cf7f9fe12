//go:build unix

package stream

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// The lock is the record lock Java's FileChannel.tryLock takes (F_SETLK on the whole file, owned by
// the process): the test binary, run as a child process with STREAMSGROUP_TEST_LOCK_FILE set, takes
// or tries it as a Kafka Streams instance would (holdLockAsJava) instead of running the tests.
func TestMain(m *testing.M) {
	if path := os.Getenv("STREAMSGROUP_TEST_LOCK_FILE"); path != "" {
		os.Exit(holdLockAsJava(path))
	}
	os.Exit(m.Run())
}

// holdLockAsJava takes path's lock as Java does, says "held" and holds it until stdin closes, or
// says "refused".
func holdLockAsJava(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 3
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		os.Stdout.WriteString("refused\n")
		return 0
	}
	os.Stdout.WriteString("held\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// lockChild runs holdLockAsJava in a child process on dir's lock file and returns its first line; the child
// holds a lock it took until stop is called.
func lockChild(t *testing.T, dir string) (line string, stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "STREAMSGROUP_TEST_LOCK_FILE="+filepath.Join(dir, lockFile))
	stdin, err := cmd.StdinPipe()
	mustNotErr(t, err)
	stdout, err := cmd.StdoutPipe()
	mustNotErr(t, err)
	mustNotErr(t, cmd.Start())
	line, err = bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the lock holder said nothing: %v", err)
	}
	return line, func() {
		stdin.Close()
		mustNotErr(t, cmd.Wait())
	}
}

func TestLockExcludesAJavaStyleLockOfAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	line, stop := lockChild(t, dir)
	if line != "held\n" {
		t.Fatalf("the other process could not take the lock of a free directory: %q", line)
	}
	// The holder's PID, as a Go holder writes it into the file: the error names it.
	mustNotErr(t, os.WriteFile(filepath.Join(dir, lockFile), []byte("4242\n"), 0o644))
	_, err := lockDir(dir)
	var le *LockError
	if !errors.As(err, &le) || !errors.Is(err, errLocked) || le.Dir != dir {
		t.Fatalf("a directory another process locked as Kafka Streams does: %v; want a *LockError", err)
	}
	if le.PID != 4242 {
		t.Errorf("the error names PID %d; want the holder's 4242", le.PID)
	}
	stop()
	l, err := lockDir(dir)
	mustNotErr(t, err)
	defer l.release()
	if line, stop := lockChild(t, dir); line != "refused\n" {
		stop()
		t.Fatalf("another process took the lock this one holds: %q", line)
	} else {
		stop()
	}
	// Reading the lock file elsewhere in this process does not release the lock (it is the open
	// file's, not the process's, on Linux; and the process's registry keeps Apps apart anyway).
	if _, err := os.ReadFile(filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	if line, stop := lockChild(t, dir); line != "refused\n" {
		stop()
		t.Fatalf("after a read of the lock file in this process, another process took the lock: %q", line)
	} else {
		stop()
	}
}
