package sgpebble

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamsgroup/streamsgroup/store"
)

// makeStore leaves a closed store at loc with data in a table file and in the WAL.
func makeStore(t testing.TB, loc store.Location) {
	t.Helper()
	e, err := quietNew().Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	b.Put([]byte("a"), []byte("1"))
	if err := e.Apply(&b, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.(*engine).db.Flush(); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Put([]byte("b"), []byte("2"))
	if err := e.Apply(&b, 2); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// files returns the names in dir starting with prefix.
func files(t testing.TB, dir, prefix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no file %s* in %s", prefix, dir)
	}
	return out
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeFile(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t testing.TB, name string, frac float64) {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, int64(float64(fi.Size())*frac)); err != nil {
		t.Fatal(err)
	}
}

// rawSet writes a key straight into the store's database, bypassing the engine.
func rawSet(t testing.TB, dir string, key, value []byte) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{ErrorIfNotExists: true, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(key, value, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

type quiet struct{}

func (quiet) Infof(string, ...any)      {}
func (quiet) Errorf(string, ...any)     {}
func (quiet) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// TestDamagedDirectories damages a store's files in the ways a disk, a crash or a person does, and
// checks that Open says ErrCorrupt (never panics, never opens something wrong), and that the
// runtime's remedy, Destroy then Open, gives a fresh store.
func TestDamagedDirectories(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"MANIFEST of random bytes", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "MANIFEST-") {
				writeFile(t, f, randomBytes(1, 4096))
			}
		}},
		{"MANIFEST empty", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "MANIFEST-") {
				truncate(t, f, 0)
			}
		}},
		{"MANIFEST cut inside its first record", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "MANIFEST-") {
				truncate(t, f, 0.3)
			}
		}},
		{"MANIFEST missing (the marker points nowhere)", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "MANIFEST-") {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"marker naming a MANIFEST that does not exist", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "marker.manifest.") {
				if err := os.Rename(f, filepath.Join(dir, "marker.manifest.000009.MANIFEST-000777")); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"marker of an unknown format version", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "marker.format-version.") {
				if err := os.Rename(f, filepath.Join(dir, "marker.format-version.000009.garbage")); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"OPTIONS of random bytes", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "OPTIONS-") {
				writeFile(t, f, randomBytes(2, 3000))
			}
		}},
		{"OPTIONS of another comparer", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "OPTIONS-") {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, f, []byte(strings.Replace(string(b), "comparer=leveldb.BytewiseComparator", "comparer=other.Comparer", 1)))
			}
		}},
		{"identity record that does not decode", func(t *testing.T, dir string) {
			rawSet(t, dir, identityKey, []byte("garbage"))
		}},
		{"identity record cut short", func(t *testing.T, dir string) {
			rawSet(t, dir, identityKey, encodeIdentity(identity{version: formatVersion, applicationID: "app"})[:12])
		}},
		{"position record that does not decode", func(t *testing.T, dir string) {
			rawSet(t, dir, positionKey, []byte{formatVersion, 1, 2})
		}},
		{"every file random bytes", func(t *testing.T, dir string) {
			for i, f := range files(t, dir, "") {
				writeFile(t, f, randomBytes(uint64(i), 1000))
			}
		}},
		{"every file empty", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "") {
				truncate(t, f, 0)
			}
		}},
		{"only a LOCK file", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "") {
				if !strings.HasSuffix(f, "LOCK") {
					_ = os.Remove(f)
				}
			}
		}},
		{"files of something else", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "notes.txt"), []byte("hello"))
		}},
		{"a CURRENT naming a MANIFEST that does not exist", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "CURRENT"), []byte("MANIFEST-000042\n"))
		}},
		{"a CURRENT of random bytes", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "CURRENT"), randomBytes(3, 100))
			for _, f := range files(t, dir, "marker.manifest.") {
				_ = os.Remove(f)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := newLoc(t)
			makeStore(t, loc)
			tc.damage(t, loc.Dir)
			k := quietNew()
			e, err := k.Open(loc)
			if err == nil {
				_ = e.Close()
				t.Fatal("a damaged store opens")
			}
			wantStoreErr(t, err, store.ErrCorrupt, "open")
			if !strings.Contains(err.Error(), "delete the store's directory") {
				t.Fatalf("the error does not say what to do: %v", err)
			}
			if err := k.Destroy(loc); err != nil {
				t.Fatal(err)
			}
			e = open(t, k, loc)
			if _, ok := e.Position(); ok {
				t.Fatal("the fresh store has a position")
			}
		})
	}
}

// TestTornManifest cuts the MANIFEST's last record, as a crash during its write does: Pebble
// recovers from the WAL, and the store holds the data its position claims.
func TestTornManifest(t *testing.T) {
	loc := newLoc(t)
	makeStore(t, loc)
	for _, f := range files(t, loc.Dir, "MANIFEST-") {
		truncate(t, f, 0.9)
	}
	e := open(t, quietNew(), loc)
	if p, ok := e.Position(); !ok || p != 2 {
		t.Fatalf("Position = %d %v, want 2", p, ok)
	}
	if got := scan(t, e, nil, nil); !slices.Equal(got, []string{"a=1", "b=2"}) {
		t.Fatalf("data = %q, want a=1 b=2", got)
	}
}

// TestDamagedTable damages a table file that holds only data (the metadata in another one). A
// file of the wrong size is found at Open; one of the right size but wrong bytes only when read
// (Pebble opens tables lazily), by a read or a background compaction: from then on the engine
// says ErrCorrupt, and nothing panics.
func TestDamagedTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		damage   func(t *testing.T, f string)
		openFail bool
	}{
		{"cut", func(t *testing.T, f string) { truncate(t, f, 0.5) }, true},
		{"same size, random bytes", func(t *testing.T, f string) {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, f, randomBytes(4, int(fi.Size())))
		}, false},
		{"same size, first block flipped", func(t *testing.T, f string) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				b[i] ^= 0x5a
			}
			writeFile(t, f, b)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := newLoc(t)
			makeStore(t, loc) // a table with the metadata and a, and b in the WAL
			before := files(t, loc.Dir, "")
			e := open(t, quietNew(), loc) // Open flushes the WAL: b alone in a new table
			_ = e.Close()
			var damaged string
			for _, f := range files(t, loc.Dir, "") {
				if strings.HasSuffix(f, ".sst") && !slices.Contains(before, f) {
					damaged = f
				}
			}
			if damaged == "" {
				t.Fatal("no table of b alone")
			}
			tc.damage(t, damaged)
			e, err := quietNew().Open(loc)
			if tc.openFail {
				wantStoreErr(t, err, store.ErrCorrupt, "open")
				return
			}
			if err != nil {
				// Pebble may find it already (opening the tables to compact or to read).
				wantStoreErr(t, err, store.ErrCorrupt, "open")
				return
			}
			defer e.Close()
			_, _, err = e.Get([]byte("b"))
			wantStoreErr(t, err, store.ErrCorrupt, "get")
			_, err = e.Iterate(nil, nil)
			wantStoreErr(t, err, store.ErrCorrupt, "iterate")
			wantStoreErr(t, e.Apply(&store.Batch{}, 9), store.ErrCorrupt, "apply")
		})
	}
}

// TestDamageFoundInBackground is Pebble's DataCorruption event on an open engine (a compaction
// meeting a damaged table): every method says ErrCorrupt from then on, and Close works.
func TestDamageFoundInBackground(t *testing.T) {
	e := open(t, quietNew(), newLoc(t))
	apply(t, e, 1, "a", "1")
	e.(*engine).corrupted(pebble.DataCorruptionInfo{Path: "000007.sst", Details: errors.New("checksum mismatch")})
	_, _, err := e.Get([]byte("a"))
	wantStoreErr(t, err, store.ErrCorrupt, "get")
	_, err = e.Iterate(nil, nil)
	wantStoreErr(t, err, store.ErrCorrupt, "iterate")
	_, err = e.ApproximateCount()
	wantStoreErr(t, err, store.ErrCorrupt, "count")
	wantStoreErr(t, e.Apply(&store.Batch{}, 2), store.ErrCorrupt, "apply")
	if !strings.Contains(err.Error(), "000007.sst") {
		t.Fatalf("the error does not name the file: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// FuzzOpenDamaged overwrites part of one file of a store with the fuzzer's bytes: Open must not
// panic, and fail only with a *store.Error; a store that opens must read without panicking.
func FuzzOpenDamaged(f *testing.F) {
	f.Add(uint8(0), uint16(0), []byte("garbage"), false)
	f.Add(uint8(1), uint16(10), []byte{0xff, 0, 0xff}, true)
	f.Add(uint8(3), uint16(40), []byte{}, true)
	f.Add(uint8(4), uint16(0), randomBytes(5, 64), false)
	f.Fuzz(func(t *testing.T, file uint8, off uint16, data []byte, cut bool) {
		loc := newLoc(t)
		makeStore(t, loc)
		all := files(t, loc.Dir, "")
		name := all[int(file)%len(all)]
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		at := min(int(off), len(b))
		b = append(b[:at], append(data, b[min(at+len(data), len(b)):]...)...)
		if cut {
			b = b[:at+len(data)]
		}
		writeFile(t, name, b)
		e, err := quietNew().Open(loc)
		if err != nil {
			var se *store.Error
			if !errors.As(err, &se) {
				t.Fatalf("Open: %v (%T)", err, err)
			}
			return
		}
		defer e.Close()
		_, _, _ = e.Get([]byte("a"))
		if it, err := e.Iterate(nil, nil); err == nil {
			for it.Next() {
			}
			_ = it.Close()
		}
		_, _ = e.ApproximateCount()
	})
}
