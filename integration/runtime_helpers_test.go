package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The runtime tests (runtime_test.go) run in-process stream.Apps with the counting application
// below against the real broker. Its topology is the Java peer's (javaCompatibleTopology): one
// subtopology "0" reading the input, a store "counts" with the changelog <app>-counts-changelog,
// and every new count sent to the output topic, keys as strings and counts as Kafka's LongSerializer
// writes them (serde.Int64: 8 bytes, big-endian), so readCounts and checkCountedOnce read its output
// as they read the Java peer's.

// rtCounts is the counting app's store.
var rtCounts = stream.KeyValue("counts", serde.String, serde.Int64)

// rtSetup is an input topic, an output topic and a group for runtime tests.
type rtSetup struct {
	b                    *Broker
	group, input, output string
	changelog            string
	topo                 *topology.Topology
	all                  tasks.Set
}

func newRTSetup(t *testing.T, partitions int32) *rtSetup {
	t.Helper()
	b := Get(t)
	s := &rtSetup{b: b, group: Name(t, "app"), input: Name(t, "in"), output: Name(t, "out"), all: taskRange("0", int(partitions))}
	s.topo = javaCompatibleTopology(s.group, s.input, rtCounts.Name())
	s.changelog = topology.Names{AppID: s.group}.ChangelogTopic(rtCounts.Name())
	b.CreateTopic(t, s.input, partitions)
	b.CreateTopic(t, s.output, 2)
	b.DeleteGroupAtEnd(t, s.group)
	deleteTopicsAtEnd(t, b, s.changelog)
	return s
}

// countTo is the counting step: add one to the record's key in the store, send the new count to
// output. Records without a key are not counted (as the Java peer's Counter).
func countTo(output string) func(c *stream.Context, key, value string) error {
	out := stream.Output(output, serde.String, serde.Int64)
	return func(c *stream.Context, key, _ string) error {
		if key == "" {
			return nil
		}
		n, _, err := rtCounts.Get(c, key)
		if err != nil {
			return err
		}
		if err := rtCounts.Put(c, key, n+1); err != nil {
			return err
		}
		return out.Send(c, key, n+1)
	}
}

// rtOpts varies a runtime app of a test.
type rtOpts struct {
	cfg  func(*config.Config)
	proc stream.Processor // the processor of subtopology "0"; default: counting to the output
	opts []stream.Option
}

// rtApp is a stream.App run on its own goroutine, with what its listeners reported.
type rtApp struct {
	name   string
	app    *stream.App
	cancel context.CancelFunc
	done   chan struct{}
	err    error    // Run's result, once done is closed
	log    *logRing // the last lines it logged (info and above)

	mu       sync.Mutex
	restores []stream.RestoreBatch
	owned    tasks.Assignment
	history  []tasks.Assignment // every assignment, in order
}

// OnAssignmentChanged is the membership hook that tells the test what the app holds.
func (r *rtApp) OnAssignmentChanged(owned tasks.Assignment) {
	r.mu.Lock()
	r.owned = owned
	r.history = append(r.history, owned)
	r.mu.Unlock()
}

// baseConfig is a runtime config for group on the test broker: quick retries, commits every 200 ms.
func baseConfig(b *Broker, group string) config.Config {
	cfg := config.Default(group)
	cfg.BootstrapServers = strings.Split(b.Bootstrap, ",")
	cfg.RetryBackoff = 50 * time.Millisecond
	cfg.RetryBackoffMax = 500 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.MaxPollInterval = 30 * time.Second
	cfg.Runtime.CommitInterval = 200 * time.Millisecond
	return cfg
}

// newApp builds (but does not run) a runtime app of the setup's group.
func (s *rtSetup) newApp(t *testing.T, name string, o rtOpts) *rtApp {
	t.Helper()
	cfg := baseConfig(s.b, s.group)
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	proc := o.proc
	if proc == nil {
		proc = stream.Typed(serde.String, serde.String, countTo(s.output))
	}
	ring, kring := newLogRing(400), newLogRing(200)
	r := &rtApp{name: name, done: make(chan struct{}), log: ring}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last things %s logged (info and above):\n%s\nand its kgo client:\n%s", name, ring.String(), kring.String())
		}
	})
	opts := []stream.Option{
		stream.WithLogger(slog.New(ring).With("test_member", name)),
		stream.WithClientOptions(kgo.ClientID(name), kgo.WithLogger(kgoLog{slog.New(kring).With("test_member", name)})),
		stream.WithHooks(r),
		stream.WithRestoreListener(func(b stream.RestoreBatch) {
			r.mu.Lock()
			r.restores = append(r.restores, b)
			r.mu.Unlock()
		}),
	}
	app, err := stream.New(cfg, s.topo, stream.Processors{"0": proc}, append(opts, o.opts...)...)
	if err != nil {
		t.Fatalf("%s: stream.New: %v", name, err)
	}
	r.app = app
	return r
}

// start builds and runs a runtime app; it is stopped when the test ends (if it still runs).
func (s *rtSetup) start(t *testing.T, name string, o rtOpts) *rtApp {
	t.Helper()
	r := s.newApp(t, name, o)
	r.run(t)
	return r
}

// run runs the app on its own goroutine until stop (or a fatal error).
func (r *rtApp) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.err = r.app.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Errorf("%s: Run did not return within a minute of its context ending", r.name)
		}
	})
}

// stop ends Run's context and returns Run's result.
func (r *rtApp) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t, time.Minute)
}

// stopClean stops the app and fails the test unless Run returned nil.
func (r *rtApp) stopClean(t *testing.T) {
	t.Helper()
	if err := r.stop(t); err != nil {
		t.Fatalf("%s: Run returned %v after a clean stop; want nil", r.name, err)
	}
	if st := r.app.State(); st != stream.NotRunning {
		t.Fatalf("%s: state %s after a clean stop; want NOT_RUNNING", r.name, st)
	}
}

// wait waits for Run to return (on its own or after stop) and returns its result.
func (r *rtApp) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(timeout):
		t.Fatalf("%s: Run did not return within %v", r.name, timeout)
		return nil
	}
}

// returned reports whether Run returned, and with what.
func (r *rtApp) returned() (bool, error) {
	select {
	case <-r.done:
		return true, r.err
	default:
		return false, nil
	}
}

// assignment is what the app holds now (after its last callback).
func (r *rtApp) assignment() tasks.Assignment {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owned
}

func (r *rtApp) active() tasks.Set { return r.assignment().Active }

// droppedBetween reports whether, after it held id as a standby, the app held neither a standby nor
// an active id for one assignment at least before it held id as active: the broker took the standby
// away before promoting it (Kafka 4.2 and 4.3 brokers do).
func (r *rtApp) droppedBetween(id tasks.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	standby, gone := false, false
	for _, a := range r.history {
		switch {
		case a.Standby.Contains(id):
			standby, gone = true, false
		case a.Active.Contains(id):
			return standby && gone
		case standby:
			gone = true
		}
	}
	return false
}

// restoredRecords is how many changelog records of task id the app applied, as an active task
// restoring (standby false) or as a standby (standby true), and the offset after the last one (-1
// when none).
func (r *rtApp) restoredRecords(id tasks.ID, standby bool) (n int, next int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next = -1
	for _, b := range r.restores {
		if b.Task == id && b.Standby == standby {
			n += b.Records
			next = max(next, b.Next)
		}
	}
	return n, next
}

func (r *rtApp) String() string {
	done, err := r.returned()
	return fmt.Sprintf("%s(state %s, holds %v, returned %v %v)", r.name, r.app.State(), r.assignment(), done, err)
}

// running waits until the app is RUNNING with exactly the active tasks want.
func (r *rtApp) runningWith(t *testing.T, want tasks.Set) {
	t.Helper()
	Eventually(t, settle, func() (bool, string) {
		if done, err := r.returned(); done {
			t.Fatalf("%s: Run returned %v while the test waited for it to run %v", r.name, err, want)
		}
		return r.app.State() == stream.Running && r.active().Equal(want), r.String()
	})
}

// waitCaughtUp waits until the group committed every input partition at its end.
func (s *rtSetup) waitCaughtUp(t *testing.T) {
	t.Helper()
	adm := s.b.Admin(t)
	Eventually(t, settle, func() (bool, string) { return caughtUp(t, adm, s.group, s.input) })
}

// endOffsets returns the end offset of every partition of topic.
func endOffsets(t *testing.T, b *Broker, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := b.Admin(t).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// produceValues writes records with the given keys and values, in order, to partition 0 of topic
// (a topic of one partition, so offsets follow the order), and returns the offset of each.
func produceValues(t *testing.T, b *Broker, topic string, kvs ...[2]string) []int64 {
	t.Helper()
	cl := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for _, kv := range kvs {
		recs = append(recs, &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
	offs := make([]int64, len(res))
	for i, r := range res {
		offs[i] = r.Record.Offset
	}
	return offs
}

// keyed returns n key/value pairs with keys k0…k<keys-1> in turn, values from…from+n-1, and adds
// how many each key got to counts (when not nil).
func keyed(n, keys, from int, counts map[string]int64) [][2]string {
	out := make([][2]string, 0, n)
	for i := from; i < from+n; i++ {
		k := fmt.Sprintf("k%d", i%keys)
		if counts != nil {
			counts[k]++
		}
		out = append(out, [2]string{k, fmt.Sprint(i)})
	}
	return out
}

// errorAs fails the test unless err is (wraps) a *E, and returns it.
func errorAs[E error](t *testing.T, err error) E {
	t.Helper()
	var target E
	if !errors.As(err, &target) {
		t.Fatalf("got %v (%T); want a %T", err, err, target)
	}
	return target
}
