package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The test application: subtopology "0" reads "in" and writes the repartition topic app-r-repartition;
// subtopology "1" reads it and keeps the stores "counts" and "sums".
const testApp = "app"

var (
	names      = topology.Names{AppID: testApp}
	countsLog  = names.ChangelogTopic("counts")
	sumsLog    = names.ChangelogTopic("sums")
	repartTopc = names.RepartitionTopic("r")
)

func testTopo() *topology.Topology {
	return topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{repartTopc}},
		topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{names.Repartition("r", 2)},
			StateChangelogTopics: []topology.TopicInfo{names.KeyValueChangelog("counts"), names.KeyValueChangelog("sums")}})
}

func testConfig() config.Config {
	c := config.Default(testApp)
	c.BootstrapServers = []string{"127.0.0.1:1"}
	return c
}

var nopProc = ProcessorFunc(func(*Context, *Record) error { return nil })

func testProcs() Processors { return Processors{"0": nopProc, "1": nopProc} }

// quiet is a logger that writes nothing.
func quiet() Option { return WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))) }

// newTestApp builds the test App with a fake clock at clock.
func newTestApp(t *testing.T, cfg config.Config, procs Processors, opts ...Option) (*App, *fakeClock) {
	t.Helper()
	a, err := New(cfg, testTopo(), procs, append([]Option{quiet()}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	clk := &fakeClock{t: time.UnixMilli(1_000_000)}
	a.now = clk.now
	return a, clk
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func tid(sub string, p int32) tasks.ID { return tasks.ID{Subtopology: sub, Partition: p} }

// activeTask opens the stores of id as an active task in a.tasks, and makes it active and running in
// the machine (its positions start with nothing committed; its Init is taken as run).
func activeTask(t *testing.T, a *App, id tasks.ID) *task {
	t.Helper()
	tk := restoringTask(t, a, id)
	startRunning(t, a, id)
	return tk
}

// restoringTask is activeTask for a task the machine has not started: its Init runs before it
// processes.
func restoringTask(t *testing.T, a *App, id tasks.ID) *task {
	t.Helper()
	tk, err := a.openTask(context.Background(), id)
	if err != nil {
		t.Fatalf("openTask(%s): %v", id, err)
	}
	tk.active = true
	a.tasks[id] = tk
	startFrom(t, a, id, nil)
	return tk
}

// startRunning has the machine start active task id as if its Init ran (the processor's is not
// called).
func startRunning(t *testing.T, a *App, id tasks.ID) {
	t.Helper()
	for _, act := range a.mach.Step(a.now(), sm.Ready{Tasks: tasks.NewSet(id)}) {
		if init, ok := act.(sm.InitTask); ok {
			a.mach.Step(a.now(), sm.TaskInitialized{ID: init.ID})
		}
	}
	if !a.mach.Running(id) {
		t.Fatalf("the machine did not start task %s", id)
	}
}

// running reports whether the machine runs tk (restored, its Init ran).
func running(a *App, tk *task) bool { return a.mach.Running(tk.id) }

// startFrom makes id active in the machine, every other task it holds keeping its role, its inputs
// starting from committed: for each partition, the metadata committed with its offset (0). Only the
// machine changes (the test set a.tasks up itself).
func startFrom(t *testing.T, a *App, id tasks.ID, committed map[tasks.TopicPartition]string) {
	t.Helper()
	active, standby := []tasks.ID{id}, []tasks.ID{}
	for _, h := range a.mach.Held() {
		switch st, _ := a.mach.Task(h); {
		case h == id:
		case st.Active():
			active = append(active, h)
		case st == sm.TaskStandby:
			standby = append(standby, h)
		}
	}
	c := sm.CommittedInputs{Tasks: tasks.NewSet(id), Offsets: commit.Offsets{}, Metadata: committed}
	for tp := range committed {
		c.Offsets[tp] = 0
	}
	queue := a.mach.Step(a.now(), sm.Assigned{Assignment: tasks.Assignment{Active: tasks.NewSet(active...), Standby: tasks.NewSet(standby...)}, Committed: c})
	for len(queue) > 0 {
		switch act := queue[0].(type) {
		case sm.OpenTask:
			queue = append(queue, a.mach.Step(a.now(), sm.TaskOpened{ID: act.ID})...)
		case sm.Done:
			if act.Err != nil {
				t.Fatalf("the machine refused task %s: %v", id, act.Err)
			}
		}
		queue = queue[1:]
	}
}

// fakeBroker gives a a client on a one-broker kfake cluster holding the test's topics (two
// partitions each), and returns the records the client buffered for producing.
func fakeBroker(t *testing.T, a *App) *produced {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in", repartTopc, countsLog, sumsLog, "out", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p := &produced{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.WithHooks(p), kgo.UnknownTopicRetries(0),
		kgo.RecordPartitioner(a.router.Partitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	a.cl = cl
	return p
}

// produced records every record given to the client, with copies of its key and value taken then.
type produced struct {
	mu   sync.Mutex
	recs []producedRecord
}

type producedRecord struct {
	rec        *kgo.Record
	key, value []byte
	nilValue   bool
}

func (p *produced) OnProduceRecordBuffered(r *kgo.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recs = append(p.recs, producedRecord{rec: r, key: append([]byte(nil), r.Key...), value: append([]byte(nil), r.Value...), nilValue: r.Value == nil})
}

func (p *produced) all() []producedRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]producedRecord(nil), p.recs...)
}

// fakeKind is a store.Kind over store.Memory that can claim to be persistent, fail opens and
// destroys, and counts what it was asked.
type fakeKind struct {
	persistent bool
	// openErrs are returned by the first Opens, one each (nil entries succeed).
	openErrs   []error
	destroyErr error
	// position, when set, is the position every opened engine starts at.
	position *int64

	mu        sync.Mutex
	opened    []store.Location
	destroyed []store.Location
	engines   []*countingEngine
}

func (k *fakeKind) Name() string     { return "fake" }
func (k *fakeKind) Persistent() bool { return k.persistent }

func (k *fakeKind) Open(loc store.Location) (store.Engine, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.opened = append(k.opened, loc)
	if len(k.openErrs) > 0 {
		err := k.openErrs[0]
		k.openErrs = k.openErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	eng, _ := store.Memory.Open(loc)
	if k.position != nil {
		var b store.Batch
		if err := eng.Apply(&b, *k.position); err != nil {
			return nil, err
		}
	}
	ce := &countingEngine{Engine: eng}
	k.engines = append(k.engines, ce)
	return ce, nil
}

func (k *fakeKind) Destroy(loc store.Location) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.destroyed = append(k.destroyed, loc)
	return k.destroyErr
}

// countingEngine counts Applies and Closes, and fails what err says.
type countingEngine struct {
	store.Engine
	applies, closes int
	positions       []int64
	err             error
	onApply         func() // when set, called first by every Apply
}

func (e *countingEngine) Apply(b *store.Batch, pos int64) error {
	if e.onApply != nil {
		e.onApply()
	}
	if e.err != nil {
		return e.err
	}
	e.applies++
	e.positions = append(e.positions, pos)
	return e.Engine.Apply(b, pos)
}

func (e *countingEngine) Close() error {
	e.closes++
	return e.Engine.Close()
}

func (e *countingEngine) Get(k []byte) ([]byte, bool, error) {
	if e.err != nil {
		return nil, false, e.err
	}
	return e.Engine.Get(k)
}

func (e *countingEngine) Iterate(lo, hi []byte) (store.Iterator, error) {
	if e.err != nil {
		return nil, e.err
	}
	return e.Engine.Iterate(lo, hi)
}

func (e *countingEngine) ApproximateCount() (int64, error) {
	if e.err != nil {
		return 0, e.err
	}
	return e.Engine.ApproximateCount()
}

var errBoom = errors.New("boom")

// mustNotErr fails the test on err.
func mustNotErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logRecorder is a slog.Handler that keeps the messages at or above Info, as "LEVEL message".
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// take returns the messages logged so far and forgets them.
func (l *logRecorder) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msgs
	l.msgs = nil
	return m
}

// warnings returns the WARN and ERROR messages logged so far and forgets all.
func (l *logRecorder) warnings() []string {
	var out []string
	for _, m := range l.take() {
		if !strings.HasPrefix(m, "INFO ") {
			out = append(out, m)
		}
	}
	return out
}

func recordLogs() (*logRecorder, Option) {
	l := &logRecorder{}
	return l, WithLogger(slog.New(l))
}

// startClock starts the commit step's clock at at, as Run does: the first periodic commit is due
// one commit.interval.ms later.
func startClock(a *App, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mach.Step(at, sm.Started{})
}

// flushErr carries out the commit step's Flush: every record produced so far waited for; the first
// failed write is its error.
func flushErr(a *App, ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.execute(ctx, sm.Flush{}).(sm.Flushed).Err
}

// revoke revokes ids as the member does (the consumer stopped them already).
func revoke(a *App, ids tasks.Set) error {
	return (*taskCalls)(a).OnTasksRevoked(context.Background(), ids)
}

// commitAttempts is how many periodic commits ran, successful or not.
func commitAttempts(a *App) uint64 {
	m := a.Metrics()
	return m.Commits + m.FailedCommits
}

// remachine gives the App a new commit step made from its config as it is now (a test changed it).
func remachine(a *App) {
	a.mach = sm.New(a.machineConfig())
	startClock(a, a.now())
}

// taskState is the machine's state of task id (0 when the member does not hold it).
func taskState(a *App, id tasks.ID) sm.TaskState {
	st, _ := a.mach.Task(id)
	return st
}

// schedule gives tk a wall-clock punctuation (which does nothing), as its Init would.
func schedule(a *App, tk *task) {
	id := a.mach.Schedule(tk.id, false, time.Second, 0)
	if tk.punctuators == nil {
		tk.punctuators = map[uint64]Punctuator{}
	}
	tk.punctuators[id] = func(*Context, time.Time) error { return nil }
}

// scheduled is how many punctuations tk has that are not cancelled (the machine's schedule, and
// the task's functions, which must agree).
func scheduled(a *App, tk *task) int {
	n := 0
	for _, p := range a.mach.Schedules(tk.id) {
		if !p.Cancelled {
			n++
		}
	}
	if n != len(tk.punctuators) {
		panic(fmt.Sprintf("task %s: %d punctuations scheduled, %d functions", tk.id, n, len(tk.punctuators)))
	}
	return n
}

// taskCalls drives the App's part of the member's calls (what memberCalls runs on the loop after
// the consumer's part) without a consumer or a committer: the tasks an assignment starts have
// nothing committed.
type taskCalls App

func (c *taskCalls) OnTasksAssigned(ctx context.Context, as tasks.Assignment, _ bool) error {
	_, err := (*App)(c).assignTasks(ctx, as, sm.CommittedInputs{})
	return err
}

func (c *taskCalls) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	return (*App)(c).revokeTasks(ctx, revoked)
}

func (c *taskCalls) OnAllTasksLost(ctx context.Context, _ tasks.Assignment) error {
	(*App)(c).loseTasks(ctx)
	return nil
}
