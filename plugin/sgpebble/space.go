package sgpebble

import (
	"fmt"
	"path/filepath"
	"syscall"
)

// A full disk is the one I/O failure Pebble cannot be relied on to survive: writing a new WAL or
// MANIFEST that fails ends in Logger.Fatalf, deep inside Pebble with its locks held. So a store
// keeps a reserve of free space on its file system and refuses writes (and opening) below it, with
// an error that says so, before Pebble ever runs out: the memtables that may be queued for a flush
// (MemTableStopWritesThreshold of them), their WAL files, the flush and compaction outputs, and a
// margin for the MANIFEST and the options file.

// SpaceError is a store whose file system has less free space than the store keeps in reserve. It
// is a syscall.ENOSPC (errors.Is), found before Pebble runs out: nothing written before it is lost,
// and once space is freed a restart goes on (the store restores what its changelog holds past its
// checkpoint).
type SpaceError struct {
	Dir           string
	Free, Reserve uint64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("sgpebble: the file system of %s has %d bytes free, less than the %d a store keeps in reserve so that "+
		"Pebble never runs out of space in the middle of a write (no space left on device): free space under state.dir "+
		"(or give it a larger disk), then start again; the store restores what it misses from its changelog", e.Dir, e.Free, e.Reserve)
}

// Unwrap makes a SpaceError a syscall.ENOSPC.
func (e *SpaceError) Unwrap() error { return syscall.ENOSPC }

// spaceCheckEvery is how many bytes a store writes between two looks at the free space (a look is
// one statfs; a checkpoint always looks).
const spaceCheckEvery = 256 << 10

// reserve is the free space a store of this Kind keeps: six memtables' worth (four queued for a
// flush, their WAL, the flush's output) and 8 MiB for the MANIFEST, the options and a compaction.
func (k *kind) reserve() uint64 { return uint64(6*k.cfg.memTableSize) + 8<<20 }

// checkSpace says whether dir's file system has the reserve free (nil where the free space cannot
// be read: the guard is then off). A directory not created yet is looked at through its parents.
func (k *kind) checkSpace(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		free, err := k.cfg.freeSpace(d)
		if err == nil {
			if r := k.reserve(); free < r {
				return &SpaceError{Dir: dir, Free: free, Reserve: r}
			}
			return nil
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// roomFor looks at the free space when the engine wrote spaceCheckEvery bytes since its last look,
// or when sync (a checkpoint) asks.
func (e *engine) roomFor(bytes int64, sync bool) error {
	if e.unchecked.Add(bytes) < spaceCheckEvery && !sync {
		return nil
	}
	e.unchecked.Store(0)
	return e.kind.checkSpace(e.dir)
}
