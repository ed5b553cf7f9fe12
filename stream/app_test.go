package stream

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/topology"
)

func TestNewRefusesMissingAndUnknownProcessors(t *testing.T) {
	_, err := New(testConfig(), testTopo(), Processors{"0": nopProc}, quiet())
	want := `stream: subtopology "1" has no processor (stream.Processors maps every subtopology ID to its processor)`
	if err == nil || err.Error() != want {
		t.Fatalf("missing processor: got %v, want %s", err, want)
	}
	_, err = New(testConfig(), testTopo(), Processors{"0": nopProc, "1": nil}, quiet())
	if err == nil || err.Error() != want {
		t.Fatalf("nil processor: got %v, want %s", err, want)
	}
	_, err = New(testConfig(), testTopo(), Processors{"0": nopProc, "1": nopProc, "9": nopProc}, quiet())
	want = `stream: a processor is given for subtopology "9", which the topology does not have (stream.Processors maps every subtopology ID to its processor)`
	if err == nil || err.Error() != want {
		t.Fatalf("unknown subtopology: got %v, want %s", err, want)
	}
	// Both problems, sorted, in one error.
	_, err = New(testConfig(), testTopo(), Processors{"0": nopProc, "9": nopProc}, quiet())
	want = `stream: a processor is given for subtopology "9", which the topology does not have; subtopology "1" has no processor (stream.Processors maps every subtopology ID to its processor)`
	if err == nil || err.Error() != want {
		t.Fatalf("two problems: got %v, want %s", err, want)
	}
}

func TestNewRefusesChangelogsNotNamedAfterTheirStore(t *testing.T) {
	for _, name := range []string{"app-counts", "app--changelog", "app-changelog"} {
		topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"},
			StateChangelogTopics: []topology.TopicInfo{{Name: name}}})
		_, err := New(testConfig(), topo, Processors{"0": nopProc}, quiet())
		want := `stream: changelog topic "` + name + `" of subtopology 0 is not named <application.id>-<store>-changelog (application.id "app"): name it with topology.Names{AppID: …}.KeyValueChangelog(store)`
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", name, err, want)
		}
	}
}

// A changelog of another application's name must be refused too: it would make the runtime write
// to (and restore from) a topic that is not this application's.
func TestNewRefusesChangelogOfAnotherApplication(t *testing.T) {
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"},
		StateChangelogTopics: []topology.TopicInfo{{Name: "other-counts-changelog"}}})
	a, err := New(testConfig(), topo, Processors{"0": nopProc}, quiet())
	if err == nil {
		t.Fatalf("BUG (stream/app.go mapStores): the changelog %q of application.id %q was taken as the store %q: "+
			"the ok of strings.CutPrefix is overwritten by that of strings.CutSuffix, so a missing <application.id>- prefix "+
			"is never noticed", "other-counts-changelog", testApp, firstStore(a))
	}
}

func firstStore(a *App) string {
	for name := range a.storesOf["0"] {
		return name
	}
	return ""
}

func TestNewMapsStoresFromChangelogs(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	if len(a.storesOf["0"]) != 0 {
		t.Errorf("stores of 0: %v", a.storesOf["0"])
	}
	got := a.storesOf["1"]
	if len(got) != 2 || got["counts"] != countsLog || got["sums"] != sumsLog {
		t.Errorf("stores of 1: %v", got)
	}
	if !a.changelogs[countsLog] || !a.changelogs[sumsLog] || len(a.changelogs) != 2 {
		t.Errorf("changelogs: %v", a.changelogs)
	}
	if a.persistent() {
		t.Error("memory stores are not persistent")
	}
}

func TestNewRefusesWithStoresOfUnknownStore(t *testing.T) {
	_, err := New(testConfig(), testTopo(), testProcs(), quiet(), WithStores(&fakeKind{}, "counts", "nope"))
	want := `stream: WithStores names store "nope", which no subtopology has (a changelog topic app-nope-changelog)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestWithStoresChoosesKinds(t *testing.T) {
	all, one := &fakeKind{}, &fakeKind{persistent: true}
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(all), WithStores(one, "sums"))
	if a.kindOf("sums") != one || a.kindOf("counts") != all {
		t.Errorf("kinds: sums %v counts %v", a.kindOf("sums"), a.kindOf("counts"))
	}
	if !a.persistent() {
		t.Error("a persistent store makes the App persistent")
	}
	b, _ := newTestApp(t, testConfig(), testProcs())
	if b.kindOf("counts") != store.Memory {
		t.Errorf("default kind: %v", b.kindOf("counts"))
	}
	c, _ := newTestApp(t, testConfig(), testProcs(), WithStores(one, "counts"))
	if c.kindOf("sums") != store.Memory || c.kindOf("counts") != one {
		t.Error("a named kind applies to its store only")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	cfg := testConfig()
	cfg.BootstrapServers = nil
	_, err := New(cfg, testTopo(), testProcs(), quiet())
	if want := "stream: bootstrap.servers is required: the App builds its own client"; err == nil || err.Error() != want {
		t.Errorf("no bootstrap: got %v, want %s", err, want)
	}

	cfg = testConfig()
	cfg.ApplicationID = ""
	_, err = New(cfg, testTopo(), testProcs(), quiet())
	var ce *config.Error
	if !errors.As(err, &ce) || !ce.Has(config.KeyApplicationID) {
		t.Errorf("no application.id: got %v", err)
	}

	cfg = testConfig()
	cfg.Runtime.Guarantee = "exactly_once"
	_, err = New(cfg, testTopo(), testProcs(), quiet())
	if !errors.As(err, &ce) || !ce.Has(config.KeyProcessingGuarantee) {
		t.Errorf("exactly_once (removed in Kafka Streams 4.0): got %v", err)
	}

	_, err = New(testConfig(), nil, testProcs(), quiet())
	if want := "stream: the topology is required"; err == nil || err.Error() != want {
		t.Errorf("nil topology: got %v", err)
	}
}

func TestStateNames(t *testing.T) {
	want := map[State]string{Created: "CREATED", Rebalancing: "REBALANCING", Restoring: "RESTORING", Running: "RUNNING",
		PendingShutdown: "PENDING_SHUTDOWN", NotRunning: "NOT_RUNNING", PendingError: "PENDING_ERROR", Error: "ERROR", State(42): "State(42)"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("%d: %q, want %q", int(s), s.String(), w)
		}
	}
}

func TestSetStateCallsListenersOnChangeOnly(t *testing.T) {
	type change struct{ from, to State }
	var got, got2 []change
	a, _ := newTestApp(t, testConfig(), testProcs(),
		WithStateListener(func(from, to State) { got = append(got, change{from, to}) }),
		WithStateListener(func(from, to State) { got2 = append(got2, change{from, to}) }))
	if a.State() != Created {
		t.Fatalf("initial state %v", a.State())
	}
	a.setState(Rebalancing)
	a.setState(Rebalancing)
	a.setState(Running)
	want := []change{{Created, Rebalancing}, {Rebalancing, Running}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] || len(got2) != 2 {
		t.Fatalf("changes %v %v, want %v", got, got2, want)
	}
	if a.State() != Running {
		t.Errorf("state %v", a.State())
	}
}

func TestRunningStates(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	for s := Created; s <= Error; s++ {
		a.setState(s)
		want := s == Rebalancing || s == Restoring || s == Running
		if a.running() != want {
			t.Errorf("running() in %v = %v", s, a.running())
		}
	}
}

func TestFailKeepsTheFirstErrorAndCancelsRun(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	if a.fatalErr() != nil {
		t.Fatal("no fatal error yet")
	}
	a.fail(errBoom) // no run context yet: no panic
	ctx, cancel := context.WithCancelCause(context.Background())
	a.cancelRun = cancel
	second := errors.New("second")
	a.fail(second)
	if a.fatalErr() != errBoom {
		t.Errorf("fatal %v, want the first", a.fatalErr())
	}
	if context.Cause(ctx) != second {
		t.Errorf("run cancelled with %v", context.Cause(ctx))
	}
}

func TestRunOnlyOnce(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	a.ran.Store(true)
	err := a.Run(context.Background())
	if err == nil || err.Error() != "stream: Run was already called" {
		t.Fatalf("got %v", err)
	}
	if a.State() != Created {
		t.Errorf("state %v: a second Run must not touch the first one's state", a.State())
	}
	if !reflect.DeepEqual(a.Stats(), membership.Stats{}) {
		t.Error("Stats before the member exists is the zero value")
	}
}

func TestOpenStateDirNothingPersisted(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	mustNotErr(t, a.openStateDir())
	if a.stateDir != "" || a.lock != nil {
		t.Errorf("state dir %q lock %v without state.dir or persistent stores", a.stateDir, a.lock)
	}
}

func TestOpenStateDirLocksAndScans(t *testing.T) {
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	old := filepath.Join(cfg.StateDir, testApp, "1_3")
	mustNotErr(t, os.MkdirAll(old, 0o755))
	a, _ := newTestApp(t, cfg, testProcs())
	mustNotErr(t, a.openStateDir())
	defer a.lock.release()
	if a.stateDir != filepath.Join(cfg.StateDir, testApp) || a.lock == nil {
		t.Fatalf("state dir %q lock %v", a.stateDir, a.lock)
	}
	if _, ok := a.proc.cleanups[tid("1", 3)]; !ok || len(a.proc.cleanups) != 1 {
		t.Errorf("cleanups %v: the old task directory is scheduled", a.proc.cleanups)
	}
	b, _ := newTestApp(t, cfg, testProcs())
	var le *LockError
	if err := b.openStateDir(); !errors.As(err, &le) {
		t.Fatalf("a second App on the directory: %v", err)
	}
}

func TestOpenStateDirPersistentDefaultsToTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(&fakeKind{persistent: true}))
	mustNotErr(t, a.openStateDir())
	defer a.lock.release()
	if want := filepath.Join(tmp, "kafka-streams", testApp); a.stateDir != want {
		t.Errorf("state dir %q, want %q", a.stateDir, want)
	}
	if _, err := os.Stat(filepath.Join(a.stateDir, lockFile)); err != nil {
		t.Errorf("lock file: %v", err)
	}
}

func TestOpenStateDirThatCannotBeCreated(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	mustNotErr(t, os.WriteFile(file, nil, 0o644))
	cfg := testConfig()
	cfg.StateDir = file
	a, _ := newTestApp(t, cfg, testProcs())
	err := a.openStateDir()
	var ce *config.Error
	if !errors.As(err, &ce) || !ce.Has(config.KeyStateDir) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "state.dir must be a directory this process can write") {
		t.Errorf("message %q", err)
	}
}

func TestLockDirTwiceNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := lockDir(dir)
	mustNotErr(t, err)
	if b, _ := os.ReadFile(filepath.Join(dir, lockFile)); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("lock file holds %q, want the holder's PID", b)
	}
	_, err = lockDir(dir)
	var le *LockError
	if !errors.As(err, &le) || le.PID != os.Getpid() || le.Dir != dir || !errors.Is(err, errLocked) {
		t.Fatalf("second lock: %#v", err)
	}
	want := "stream: state directory " + dir + " is in use by another process (pid " + strconv.Itoa(os.Getpid()) +
		"): give each process of the application its own state.dir"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	l.release()
	l.release() // twice is harmless
	var none *dirLock
	none.release()
	l2, err := lockDir(dir)
	mustNotErr(t, err)
	l2.release()
}

func TestLockErrorWithoutPID(t *testing.T) {
	e := &LockError{Dir: "/d", Err: errBoom}
	if e.Error() != "stream: state directory /d is in use by another process: give each process of the application its own state.dir" {
		t.Errorf("%q", e)
	}
	if !errors.Is(e, errBoom) {
		t.Error("Unwrap")
	}
}

func TestLockDirUnwritable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := lockDir(missing)
	var le *LockError
	if !errors.As(err, &le) || le.Dir != missing || le.PID != 0 || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %#v", err)
	}
}

// Connect ties stores to a processor where New can check them: a misspelled store, or one whose
// changelog the topology lacks, is refused at New with the stores the subtopology has; a connected
// processor reaches only its stores; Connect keeps the processor's Init.
func TestConnectChecksTheStoresAtNew(t *testing.T) {
	counts := KeyValue("counts", serde.String, serde.Int64)
	_, err := New(testConfig(), testTopo(), Processors{"0": nopProc, "1": Connect(nopProc, counts, StoreName("smus"))}, quiet())
	if err == nil || !strings.Contains(err.Error(), `uses store "smus", which the subtopology does not have (its stores: ["counts" "sums"]`) {
		t.Fatalf("a misspelled store: %v", err)
	}
	_, err = New(testConfig(), testTopo(), Processors{"0": Connect(nopProc, counts), "1": nopProc}, quiet())
	if err == nil || !strings.Contains(err.Error(), `subtopology "0" uses store "counts"`) {
		t.Fatalf("a store of another subtopology (its changelog missing from this one): %v", err)
	}

	p := &recorder{}
	a, _ := newTestApp(t, testConfig(), Processors{"0": nopProc, "1": Connect(p, counts)})
	in, ok := a.procs["1"].(Initializer)
	if !ok {
		t.Fatal("Connect lost the processor's Init")
	}
	tk := activeTask(t, a, tid("1", 0))
	c := &Context{app: a, task: tk}
	mustNotErr(t, in.Init(c))
	if len(p.inits) != 1 {
		t.Fatal("the connected processor's Init did not run")
	}
	if _, _, err := c.Store("counts").Get([]byte("k")); err != nil {
		t.Fatalf("a connected store: %v", err)
	}
	if _, _, err := c.Store("sums").Get([]byte("k")); !errors.Is(err, ErrUnknownStore) || !strings.Contains(err.Error(), `connected to the stores ["counts"] only`) {
		t.Fatalf("a store of the subtopology the processor was not connected to: %v", err)
	}
	// Not connected: every store of the subtopology.
	b, _ := newTestApp(t, testConfig(), testProcs())
	bt := activeTask(t, b, tid("1", 0))
	if _, _, err := (&Context{app: b, task: bt}).Store("sums").Get([]byte("k")); err != nil {
		t.Fatalf("a processor without connections: %v", err)
	}
}

// compression.type picks kgo's codec; unset is Kafka's default, none (kgo's own would be snappy).
func TestCompressionCodec(t *testing.T) {
	for c, want := range map[config.Compression]kgo.CompressionCodec{
		"": kgo.NoCompression(), config.CompressionNone: kgo.NoCompression(), config.CompressionGzip: kgo.GzipCompression(),
		config.CompressionSnappy: kgo.SnappyCompression(), config.CompressionLz4: kgo.Lz4Compression(), config.CompressionZstd: kgo.ZstdCompression(),
	} {
		if got := compressionCodec(c); got != want {
			t.Errorf("%q: %v, want %v", c, got, want)
		}
	}
}
