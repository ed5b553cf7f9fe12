// Package sgpebble is a persistent state store engine for streamsgroup on Pebble
// (github.com/cockroachdb/pebble/v2): pass New() where the runtime asks for a store.Kind.
//
// It is a module of its own so that the core module does not depend on Pebble.
//
// Each store of each task is one Pebble database in its own directory (the runtime gives
// state.dir/<application.id>/<task>/<store>). The store's keys live under a one-byte data prefix
// and the metadata (the store's identity and its changelog position) under another, in the same
// database, so that Apply writes a batch and the position it reaches in one atomic Pebble batch:
// a recorded position never claims more than the data beside it holds.
//
// Memory stays bounded by design: all stores of one Kind share one block cache (CacheSize, 16 MiB
// by default) and one table cache, and each store's memtables are small (MemTableSize, 1 MiB by
// default, starting at 256 KiB and growing only under writes). See README.md for figures.
package sgpebble

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/streamsgroup/streamsgroup/store"
)

// Defaults of the options.
const (
	// DefaultCacheSize is the cache all stores of a Kind share. Pebble reserves the memtables of
	// its databases inside it and caches table blocks in what is left, so it is the memory budget
	// of reads beyond the memtables: small, because a stream task mostly reads what it has just
	// written (still in a memtable) and the operating system's page cache holds recently read
	// files. With many busy stores the memtables take it all and reads go to the page cache.
	DefaultCacheSize = 16 << 20
	// DefaultMemTableSize is the most one memtable of one store grows to. A store holds at most
	// two (one being written, one being flushed), so 100 busy stores stay under 200 MiB and idle
	// ones cost 256 KiB each (Pebble starts a memtable at 256 KiB and doubles it as it fills).
	// The memtables were the largest part of a Pebble count's memory: with four busy stores the
	// peak RSS fell from 114 MiB at 4 MiB to 74 MiB at 1 MiB (docs/reports/fetch-size-rss.txt); a
	// stream task's writes are small, and flushing them a megabyte at a time costs little.
	// Kafka Streams' RocksDB default is three 16 MiB memtables per store.
	DefaultMemTableSize = 1 << 20
	// defaultOpenFiles is the number of table files all stores of a Kind keep open together.
	defaultOpenFiles = 256
)

// Option changes a setting of New.
type Option func(*config)

type config struct {
	cacheSize    int64
	memTableSize int64
	logger       *slog.Logger
	// fs is the file system Pebble uses; tests wrap it to inject errors.
	fs vfs.FS
	// freeSpace reads the free space of a directory's file system (diskFree; tests fake it).
	freeSpace func(dir string) (uint64, error)
}

// CacheSize sets the size in bytes of the cache that all stores opened by the Kind share
// (DefaultCacheSize when n <= 0). It holds uncompressed blocks of the stores' table files, in what
// the stores' memtables, which Pebble reserves in it, leave free. It does not bound the memtables:
// MemTableSize does.
func CacheSize(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.cacheSize = n
		}
	}
}

// MemTableSize sets the size in bytes a store's memtable grows to before it is written to a table
// file (DefaultMemTableSize when n <= 0; at least 256 KiB, at most 1 GiB). Each open store can
// hold two of them at once.
func MemTableSize(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.memTableSize = min(max(n, 256<<10), 1<<30)
		}
	}
}

// Logger sets where Pebble's messages go (slog.Default() when nil): its informational messages at
// Debug level, its errors (a failed background flush or compaction) at Error level.
func Logger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// New returns the Pebble store.Kind. Stores opened by one Kind share its block cache and table
// cache; a process normally makes one Kind and passes it wherever the runtime asks for a
// store.Kind.
func New(opts ...Option) store.Kind {
	k := &kind{cfg: config{cacheSize: DefaultCacheSize, memTableSize: DefaultMemTableSize, freeSpace: diskFree}}
	for _, o := range opts {
		o(&k.cfg)
	}
	k.cfg.logger = cmp.Or(k.cfg.logger, slog.Default())
	if k.cfg.fs == nil {
		k.cfg.fs = vfs.Default
	}
	return k
}

// kind is the store.Kind of New.
type kind struct {
	cfg config

	// mu guards the shared caches and the number of open stores using them. The caches exist
	// while at least one store is open, so that a process that closed all its stores holds none.
	mu    sync.Mutex
	cache *pebble.Cache
	files *pebble.FileCache
	users int
}

// Name is "pebble".
func (k *kind) Name() string { return "pebble" }

// Persistent is true: data outlives the process.
func (k *kind) Persistent() bool { return true }

// errOpenTwice says a store is opened a second time while open.
var errOpenTwice = errors.New("sgpebble: the store is already open in this process")

// openDirs are the directories of the stores open in this process, by any Kind: a second Open
// of one fails plainly instead of reaching Pebble's lock (whose in-process refusal is an untyped
// error that would read as damage).
var openDirs = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// acquire registers dir as open and returns the shared caches, creating them for the Kind's first
// open store.
func (k *kind) acquire(dir string) (*pebble.Cache, *pebble.FileCache, error) {
	openDirs.Lock()
	defer openDirs.Unlock()
	if openDirs.m[dir] {
		return nil, nil, errOpenTwice
	}
	openDirs.m[dir] = true
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.users == 0 {
		k.cache = pebble.NewCache(k.cfg.cacheSize)
		k.files = pebble.NewFileCache(2, defaultOpenFiles)
	}
	k.users++
	return k.cache, k.files, nil
}

// release unregisters dir; the Kind's last store releases the Kind's references to the caches
// (each database holds its own while open, so the caches go when the last database closes).
func (k *kind) release(dir string) {
	openDirs.Lock()
	defer openDirs.Unlock()
	if !openDirs.m[dir] {
		return
	}
	delete(openDirs.m, dir)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.users--; k.users == 0 {
		k.cache.Unref()
		k.files.Unref()
		k.cache, k.files = nil, nil
	}
}

func isOpen(dir string) bool {
	openDirs.Lock()
	defer openDirs.Unlock()
	return openDirs.m[dir]
}

// Open opens the store at loc.Dir, creating it when the directory is absent or empty.
func (k *kind) Open(loc store.Location) (store.Engine, error) {
	fail := func(err error) error { return &store.Error{Op: "open", Loc: loc, Err: err} }
	if loc.Dir == "" {
		return nil, fail(errors.New("sgpebble: a persistent store needs a directory (Location.Dir is empty)"))
	}
	dir, err := filepath.Abs(loc.Dir)
	if err != nil {
		return nil, fail(err)
	}
	exists, err := k.inspect(dir)
	if err != nil {
		return nil, fail(err)
	}
	if err := k.checkSpace(dir); err != nil {
		return nil, fail(err)
	}
	cache, files, err := k.acquire(dir)
	if err != nil {
		return nil, fail(err)
	}
	e := &engine{kind: k, loc: loc, dir: dir, iters: map[*iterator]struct{}{}}
	e.pos.Store(-1)
	opts := &pebble.Options{
		Cache:            cache,
		FileCache:        files,
		MemTableSize:     uint64(k.cfg.memTableSize),
		ErrorIfNotExists: exists,
		FS:               k.cfg.fs,
		Logger:           pebbleLogger{k.cfg.logger.With("store", loc.String())},
		EventListener:    &pebble.EventListener{FlushEnd: e.flushed, DataCorruption: e.corrupted},
		// Small memtables flush often: under a restore's burst of writes Pebble's defaults (writes
		// stop at 2 queued memtables and at 12 table files in level 0) stalled a 1 M-record restore
		// to half Kafka Streams' speed. Four queued memtables and a deeper level 0 let the flushes
		// and compactions catch up in the background (the restore ran at its speed with 4 MiB
		// memtables again); the queued memtables are bounded by 4 × MemTableSize per store.
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       8,
		L0StopWritesThreshold:       48,
	}
	// Bloom filters (10 bits a key, about 1% false positives) spare a point read the tables that
	// do not hold its key; Kafka Streams sets one on its RocksDB stores too. Levels below 0
	// inherit it.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	db, err := openDB(dir, opts)
	if err != nil {
		k.release(dir)
		return nil, fail(classifyOpen(err))
	}
	e.db = db
	if err := e.load(exists); err != nil {
		_ = closeDB(db)
		k.release(dir)
		return nil, fail(classifyOpen(err))
	}
	return e, nil
}

// inspect tells whether dir holds a Pebble database (true), nothing (false: absent or empty), or
// something else (an error). It only reads, so that a directory of something else is left as it
// is.
func (k *kind) inspect(dir string) (exists bool, err error) {
	fi, err := k.cfg.fs.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, fmt.Errorf("%w: %s is not a directory", store.ErrForeign, dir)
	}
	names, err := k.cfg.fs.List(dir)
	if err != nil {
		return false, err
	}
	if len(names) == 0 {
		return false, nil
	}
	desc, err := peek(dir, k.cfg.fs)
	if err != nil {
		return false, classifyOpen(err)
	}
	if !desc.Exists {
		return false, fmt.Errorf("%w: %s is not empty and holds no Pebble database", store.ErrCorrupt, dir)
	}
	return true, nil
}

func peek(dir string, fs vfs.FS) (desc *pebble.DBDesc, err error) {
	defer recoverTo(&err)
	return pebble.Peek(dir, fs)
}

func openDB(dir string, opts *pebble.Options) (db *pebble.DB, err error) {
	defer recoverTo(&err)
	return pebble.Open(dir, opts)
}

func closeDB(db *pebble.DB) (err error) {
	defer recoverTo(&err)
	return db.Close()
}

// Destroy removes the store's directory and everything in it. The runtime closes a store's Engine
// before destroying it; destroying a store still open in this process is refused, since its database
// would go on writing files into a removed directory.
func (k *kind) Destroy(loc store.Location) error {
	fail := func(err error) error { return &store.Error{Op: "destroy", Loc: loc, Err: err} }
	if loc.Dir == "" {
		return fail(errors.New("sgpebble: a persistent store needs a directory (Location.Dir is empty)"))
	}
	dir, err := filepath.Abs(loc.Dir)
	if err != nil {
		return fail(err)
	}
	if isOpen(dir) {
		return fail(errors.New("sgpebble: the store is open; close it before destroying it"))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fail(err)
	}
	return nil
}

// classifyOpen says what a failure to open an existing database means: an operating system error
// other than a missing file (no permission, a full disk, a lock held by another process) is
// itself and stays wrapped, so that errors.Is(err, syscall.ENOSPC) works; anything else (a missing
// or garbled MANIFEST, OPTIONS or marker, a damaged WAL, a panic of Pebble on bad bytes) means
// the files are damaged.
func classifyOpen(err error) error {
	if errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrForeign) {
		return err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != syscall.ENOENT && errno != syscall.ENOTDIR {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
}

// classify says what a failure of a read or write of an open database means: Pebble's corruption
// is ErrCorrupt, anything else (an I/O error) stays as it is.
func classify(err error) error {
	if errors.Is(err, pebble.ErrCorruption) || errors.Is(err, errDecode) || errors.Is(err, errPanic) {
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	return err
}

// errPanic marks a panic of Pebble turned into an error.
var errPanic = errors.New("sgpebble: pebble panicked")

// recoverTo turns a panic of Pebble (reading damaged files) into *err, as errPanic.
func recoverTo(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(error); ok {
		*err = fmt.Errorf("%w: %w", errPanic, e)
		return
	}
	*err = fmt.Errorf("%w: %v", errPanic, r)
}

// pebbleLogger sends Pebble's messages to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf ends the process, as Pebble intends (its own logger does the same): Pebble calls it with
// its locks held, so neither a return nor a recovered panic is safe (a recovered one left a
// mutex locked: the next write hung, or the runtime died unlocking it). The message says why and
// what happens next; the free-space reserve (SpaceError) keeps a full disk from getting here.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error("pebble cannot go on: "+fmt.Sprintf(format, args...)+"; the process exits, and at the next start every store "+
		"restores what its changelog holds past its checkpoint (if the disk is full, free space under state.dir first)",
		"component", "pebble", "fatal", true)
	exitProcess(1)
}

// exitProcess is os.Exit (a test watches it).
var exitProcess = os.Exit
