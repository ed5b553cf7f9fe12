package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// globalOnly starts the global stores of an App on a fake cluster (its topics seeded, then prep
// run) without the rest of Run: what the global part does before any member joins. The keeper
// records what it saw; stop ends it.
type globalRun struct {
	a      *App
	g      *globalState
	cancel context.CancelFunc
	mu     sync.Mutex
	seen   []string // key=value, restoring or not, context alive
	cl     *kgo.Client
}

// globalSetup starts a fake cluster with the topics seed, and returns a client writing to
// "users-in", and the configuration and topology of an application whose global store "users"
// (subtopology 0) is kept from "users-in" and whose subtopology 1 reads "in".
func globalSetup(t *testing.T, seed []string) (*kgo.Client, config.Config, *topology.Topology) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, seed...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("users-in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	cfg := config.Default("global")
	cfg.BootstrapServers = c.ListenAddrs()
	topo, err := topology.MustNew(topology.Subtopology{ID: "1", SourceTopics: []string{"in"}}).
		WithGlobalStores(topology.GlobalStore{Subtopology: "0", Name: "users", Topic: "users-in"})
	if err != nil {
		t.Fatal(err)
	}
	return cl, cfg, topo
}

func startGlobalOnly(t *testing.T, seed []string, prep func(cl *kgo.Client, adm *kadm.Client)) (*globalRun, error) {
	t.Helper()
	cl, cfg, topo := globalSetup(t, seed)
	prep(cl, kadm.NewClient(cl))
	r := &globalRun{cl: cl}
	keep := ProcessorFunc(func(c *Context, rec *Record) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen = append(r.seen, string(rec.Key)+"="+string(rec.Value)+map[bool]string{true: " restoring", false: ""}[streamhook.Restoring(c)]+
			map[bool]string{true: "", false: " (no context)"}[c.Context() != nil && c.Context().Err() == nil])
		return c.Store("users").Put(rec.Key, rec.Value)
	})
	nop := ProcessorFunc(func(*Context, *Record) error { return nil })
	var err error
	if r.a, err = New(cfg, topo, Processors{"0": keep, "1": nop}, WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatal(err)
	}
	r.g = r.a.proc.global
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not an assertion
	r.cancel = cancel
	t.Cleanup(r.stop)
	return r, r.g.start(ctx)
}

func (r *globalRun) stop() {
	r.cancel()
	r.g.stop()
}

func (r *globalRun) seenNow() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func produceGlobal(t *testing.T, cl *kgo.Client, kvs ...string) {
	t.Helper()
	for i := 0; i+1 < len(kvs); i += 2 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(kvs[i]), Value: []byte(kvs[i+1])}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// What the topic holds before the start is applied while restoring, what comes later after it, each
// with a live context; the restore ends at the topic's end.
func TestGlobalRestoreThenFollow(t *testing.T) {
	r, err := startGlobalOnly(t, []string{"in", "users-in"}, func(cl *kgo.Client, _ *kadm.Client) {
		produceGlobal(t, cl, "a", "1", "b", "2")
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.seenNow(), ","); got != "a=1 restoring,b=2 restoring" {
		t.Fatalf("restored %q", got)
	}
	produceGlobal(t, r.cl, "c", "3")
	deadline := time.Now().Add(30 * time.Second)
	for len(r.seenNow()) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := strings.Join(r.seenNow(), ","); got != "a=1 restoring,b=2 restoring,c=3" {
		t.Fatalf("seen %q", got)
	}
	if v, ok, err := (globalReader{r.g.stores["users"]}).Get([]byte("c")); err != nil || !ok || string(v) != "3" {
		t.Fatalf("c = %q %v %v", v, ok, err)
	}
}

// A partition whose records were all deleted (its start and end both 3) has nothing to restore: the
// restore ends at once, as Kafka Streams' global consumer takes its position from the log start.
func TestGlobalRestoreOfAPartitionWhoseRecordsWereDeleted(t *testing.T) {
	r, err := startGlobalOnly(t, []string{"in", "users-in"}, func(cl *kgo.Client, adm *kadm.Client) {
		produceGlobal(t, cl, "a", "1", "b", "2", "c", "3")
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: "users-in", Partition: 0, At: 3})
		if res, err := adm.DeleteRecords(context.Background(), o); err != nil || res.Error() != nil {
			t.Fatal(err, res.Error())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.seenNow(); len(got) != 0 {
		t.Fatalf("restored %q from an emptied partition", got)
	}
	if pos := r.g.Positions(); len(pos) != 1 || pos[(tasks.TopicPartition{Topic: "users-in"})] != 3 {
		t.Fatalf("positions %v, want users-in[0] at 3", pos)
	}
}

// A global store whose topic does not exist stops the start with an error naming it, as Kafka
// Streams' global thread fails; what the start built is released (its client closed).
func TestGlobalTopicMissing(t *testing.T) {
	r, err := startGlobalOnly(t, []string{"in"}, func(*kgo.Client, *kadm.Client) {})
	if err == nil || !strings.Contains(err.Error(), `topics ["users-in"] do not exist`) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("start: %v, want the missing topic named", err)
	}
	if r.g.cl != nil || r.g.stores["users"].open.Load() {
		t.Fatal("a failed start left its client or its store open")
	}
}

// A global store's processor whose Init fails stops the start with its error.
func TestGlobalProcessorInitFails(t *testing.T) {
	_, cfg, topo := globalSetup(t, []string{"in", "users-in"})
	errInit := errors.New("no")
	nop := ProcessorFunc(func(*Context, *Record) error { return nil })
	a, err := New(cfg, topo, Processors{"0": initFails{nop, errInit}, "1": nop}, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.proc.global.start(ctx); !errors.Is(err, errInit) || !strings.Contains(err.Error(), `global subtopology "0" failed to start`) {
		t.Fatalf("start: %v, want the Init's error", err)
	}
}

// A global store's processor is started twice, as Kafka Streams starts one processor to restore the
// store and another to keep it current: before the restore (the store empty) and after it (the store
// restored, Restoring false). A failure of either start stops the start with its error.
func TestGlobalProcessorStartsBeforeAndAfterTheRestore(t *testing.T) {
	cl, cfg, topo := globalSetup(t, []string{"in", "users-in"})
	produceGlobal(t, cl, "a", "1")
	for _, failAt := range []int{0, 1, 2} {
		p := &initSees{failAt: failAt}
		p.Processor = ProcessorFunc(func(c *Context, r *Record) error { return c.Store("users").Put(r.Key, r.Value) })
		nop := ProcessorFunc(func(*Context, *Record) error { return nil })
		a, err := New(cfg, topo, Processors{"0": p, "1": nop}, WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not an assertion
		err = a.proc.global.start(ctx)
		switch {
		case failAt == 0 && err != nil:
			t.Fatalf("start: %v", err)
		case failAt > 0 && (!errors.Is(err, errInitSees) || !strings.Contains(err.Error(), `global subtopology "0" failed to start`)):
			t.Fatalf("start with the start %d failing: %v, want its error", failAt, err)
		}
		cancel() // the keeping goroutine ends with the context
		if err == nil {
			a.proc.global.stop()
		}
		want := []string{"store a absent, restoring false", "store a=1, restoring false"}
		if failAt == 1 {
			want = want[:1]
		}
		if !slices.Equal(p.seen, want) {
			t.Errorf("with the start %d failing, the starts saw %q, want %q", failAt, p.seen, want)
		}
	}
}

var errInitSees = errors.New("init fails")

// initSees records what each of its Inits sees of the store "users"; the Init numbered failAt
// (from 1) fails.
type initSees struct {
	Processor
	failAt int
	seen   []string
}

func (p *initSees) Init(c *Context) error {
	v, ok, err := c.Store("users").Get([]byte("a"))
	if err != nil {
		return err
	}
	what := "store a absent"
	if ok {
		what = "store a=" + string(v)
	}
	p.seen = append(p.seen, fmt.Sprintf("%s, restoring %v", what, streamhook.Restoring(c)))
	if len(p.seen) == p.failAt {
		return errInitSees
	}
	return nil
}

type initFails struct {
	Processor
	err error
}

func (p initFails) Init(*Context) error { return p.err }
