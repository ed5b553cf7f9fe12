package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// These tests run the stream runtime (package stream) in-process against the real broker: the
// counting app of runtime_helpers_test.go, whose every count goes to the output topic, so that
// checkCountedOnce can prove no input was lost or counted twice.

// TestRuntimeRestoresThenProcesses: app a counts the input alone and stops cleanly (Run returns
// nil); app b of the same group starts, restores every task's store from the whole changelog (the
// restore listener reports exactly the changelog's records of each task, as an active task), and
// then counts more input on top of the restored counts: for every key the output holds 1…n once.
func TestRuntimeRestoresThenProcesses(t *testing.T) {
	s := newRTSetup(t, 2)
	want := produceKeyed(t, s.b, s.input, 200, 8, 0)
	a := s.start(t, "a", rtOpts{})
	a.runningWith(t, s.all)
	s.waitCaughtUp(t)
	a.stopClean(t)
	for id := range s.all.All() {
		if n, _ := a.restoredRecords(id, false); n != 0 {
			t.Fatalf("a restored %d records of %s from a changelog that was empty when it started", n, id)
		}
	}

	ends := endOffsets(t, s.b, s.changelog)
	b := s.start(t, "b", rtOpts{})
	b.runningWith(t, s.all)
	addCounts(want, produceKeyed(t, s.b, s.input, 100, 8, 200))
	s.waitCaughtUp(t)
	for id := range s.all.All() {
		n, next := b.restoredRecords(id, false)
		end := ends[id.Partition]
		if end == 0 {
			t.Fatalf("the changelog of %s is empty after a counted 200 records", id)
		}
		if int64(n) != end || next != end {
			t.Fatalf("b restored %d records of %s up to offset %d; the changelog held %d records (0…%d)", n, id, next, end, end-1)
		}
		if sb, _ := b.restoredRecords(id, true); sb != 0 {
			t.Fatalf("b applied %d records of %s as a standby; it never had a standby", sb, id)
		}
	}
	b.stopClean(t)
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}

// TestRuntimeStandbyPromotionRestoresOnlyTheRest: with one standby replica per task, apps a and b
// each process one task and keep a standby of the other's. Once b's standby of a's task x has
// applied x's whole changelog, a stops cleanly: x moves to b, which keeps its standby's store and
// restores nothing as an active task (the changelog has no record the standby lacked), and the
// counts go on exactly.
func TestRuntimeStandbyPromotionRestoresOnlyTheRest(t *testing.T) {
	s := newRTSetup(t, 2)
	brRequireGroupConfig(t, s.b, s.group, "streams.num.standby.replicas", "1")
	want := produceKeyed(t, s.b, s.input, 200, 8, 0)
	a := s.start(t, "a", rtOpts{})
	a.runningWith(t, s.all)
	s.waitCaughtUp(t)
	b := s.start(t, "b", rtOpts{})
	var x tasks.ID // a's task, of which b keeps a standby
	Eventually(t, settle, func() (bool, string) {
		aa, ba := a.assignment(), b.assignment()
		ok := aa.Active.Len() == 1 && ba.Active.Len() == 1 && aa.Active.Union(ba.Active).Equal(s.all) &&
			ba.Standby.Equal(aa.Active) && aa.Standby.Equal(ba.Active) &&
			a.app.State() == stream.Running && b.app.State() == stream.Running
		if ok {
			x = aa.Active.IDs()[0]
		}
		return ok, fmt.Sprintf("%v %v", a, b)
	})
	addCounts(want, produceKeyed(t, s.b, s.input, 200, 8, 200))
	s.waitCaughtUp(t)
	end := endOffsets(t, s.b, s.changelog)[x.Partition]
	Eventually(t, settle, func() (bool, string) {
		_, next := b.restoredRecords(x, true)
		return next == end, fmt.Sprintf("b's standby of %s applied up to %d of %d", x, next, end)
	})
	standby, _ := b.restoredRecords(x, true)

	a.stopClean(t)
	b.runningWith(t, s.all)
	addCounts(want, produceKeyed(t, s.b, s.input, 100, 8, 400))
	s.waitCaughtUp(t)
	if got := endOffsets(t, s.b, s.changelog)[x.Partition]; got <= end {
		t.Fatalf("the changelog of %s did not grow after the promotion (%d, was %d): b did not count its records", x, got, end)
	}
	restored, _ := b.restoredRecords(x, false)
	t.Logf("task %s: changelog of %d records; b applied %d as a standby and restored %d after its promotion", x, end, standby, restored)
	if restored != 0 && b.droppedBetween(x) {
		// Kafka 4.2 and 4.3 brokers promote a standby in two steps: an assignment without the task,
		// then one with it active. OnTasksAssigned (stream/callbacks.go, the loop that closes every
		// task not in the assignment) closes the in-memory store in between, so the promotion
		// restores the whole changelog. Kafka 4.4 brokers promote in one step.
		t.Fatalf("RUNTIME BUG: the broker took %s's standby from b before making it active, and the runtime dropped the standby's "+
			"store then (stream/callbacks.go OnTasksAssigned closes every task not in the assignment): the promotion restored "+
			"%d of the changelog's %d records, which the standby had applied (%d); keep a standby's store for a while after "+
			"it is unassigned so that a promotion in two steps restores only the rest", x, restored, end, standby)
	}
	if restored != 0 {
		t.Fatalf("the promoted standby of %s restored %d of the changelog's %d records; it had applied them all (%d) as a standby, so want 0",
			x, restored, end, standby)
	}
	b.stopClean(t)
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}

// TestRuntimeFailedWriteCommitsNothing: the processor sends, for one input record, a value larger
// than the max.message.bytes of a second output topic. The broker refuses it; Run returns a
// *stream.ProduceError naming that topic; and the group's committed offset of the input never
// passes the record whose write failed (the commit interval is 200 ms, the input goes on past that
// record, and a clean close commits what was processed: only the check of every write's result
// keeps those commits from happening).
func TestRuntimeFailedWriteCommitsNothing(t *testing.T) {
	s := newRTSetup(t, 1)
	limited := Name(t, "limited")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	maxBytes := "200"
	resp, err := s.b.Admin(t).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &maxBytes}, limited)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", limited, err)
	}
	deleteTopicsAtEnd(t, s.b, limited)

	// Random bytes, so that the compressed batch is larger than max.message.bytes too.
	incompressible := make([]byte, 4096)
	_, _ = rand.Read(incompressible)
	count := countTo(s.output)
	proc := stream.Typed(serde.String, serde.String, func(c *stream.Context, key, value string) error {
		if value == "too-large" {
			if err := c.Send(limited, []byte(key), incompressible); err != nil {
				return err
			}
		}
		return count(c, key, value)
	})
	a := s.start(t, "a", rtOpts{proc: proc})
	a.runningWith(t, s.all)
	produceValues(t, s.b, s.input, keyed(50, 4, 0, nil)...)
	s.waitCaughtUp(t) // commits work: 50 committed

	more := keyed(50, 4, 50, nil)
	more[10][1] = "too-large"
	offs := produceValues(t, s.b, s.input, more...)
	bad := offs[10]
	err = a.wait(t, settle)
	pe := errorAs[*stream.ProduceError](t, err)
	if pe.Topic != limited {
		t.Fatalf("the ProduceError names topic %s; want %s (%v)", pe.Topic, limited, pe)
	}
	if st := a.app.State(); st != stream.Error {
		t.Fatalf("state %s after a fatal error; want ERROR", st)
	}
	at := committedAt(t, s.b, s.group, s.input, 0)
	t.Logf("the write for offset %d failed (%v); committed offset %d", bad, pe.Err, at)
	if at > bad {
		t.Fatalf("committed offset %d passes the record at %d whose write failed", at, bad)
	}
	if at < 50 {
		t.Fatalf("committed offset %d; the 50 records before were committed already", at)
	}
}

var errBoom = errors.New("test: the processor cannot handle this record")

// TestRuntimeProcessingErrorPolicy: a processor's error follows processing.exception.handler and a
// record that does not decode follows deserialization.exception.handler.
func TestRuntimeProcessingErrorPolicy(t *testing.T) {
	// LogAndFail (the default): Run returns a *stream.ProcessingError naming the task and the record;
	// exactly the records before it are committed; an app restarted with a fixed processor counts
	// the failed record and the rest, once each.
	t.Run("LogAndFail", func(t *testing.T) {
		s := newRTSetup(t, 1)
		count := countTo(s.output)
		broken := stream.Typed(serde.String, serde.String, func(c *stream.Context, key, value string) error {
			if value == "boom" {
				return errBoom
			}
			return count(c, key, value)
		})
		want := map[string]int64{}
		in := keyed(100, 4, 0, want)
		in[60][1] = "boom"
		offs := produceValues(t, s.b, s.input, in...)
		bad := offs[60]
		a := s.start(t, "a", rtOpts{proc: broken})
		err := a.wait(t, settle)
		pe := errorAs[*stream.ProcessingError](t, err)
		if !errors.Is(err, errBoom) || pe.Task != (tasks.ID{Subtopology: "0", Partition: 0}) || pe.Topic != s.input ||
			pe.Partition != 0 || pe.Offset != bad {
			t.Fatalf("got %#v; want the processor's error at task 0_0, %s[0]@%d", pe, s.input, bad)
		}
		if at := committedAt(t, s.b, s.group, s.input, 0); at != bad {
			t.Fatalf("committed offset %d after the failure at %d; want exactly the records before it committed", at, bad)
		}
		b := s.start(t, "b", rtOpts{})
		b.runningWith(t, s.all)
		s.waitCaughtUp(t)
		b.stopClean(t)
		checkCountedOnce(t, readCounts(t, s.b, s.output), want)
	})

	// LogAndContinue: the failed records are skipped, every other one is counted, the input is
	// committed to its end, and the app keeps running.
	t.Run("LogAndContinue", func(t *testing.T) {
		s := newRTSetup(t, 1)
		count := countTo(s.output)
		proc := stream.Typed(serde.String, serde.String, func(c *stream.Context, key, value string) error {
			if value == "boom" {
				return errBoom
			}
			return count(c, key, value)
		})
		want := map[string]int64{}
		in := keyed(100, 4, 0, nil)
		for _, i := range []int{10, 60, 61} {
			in[i][1] = "boom"
		}
		for _, kv := range in {
			if kv[1] != "boom" {
				want[kv[0]]++
			}
		}
		produceValues(t, s.b, s.input, in...)
		a := s.start(t, "a", rtOpts{proc: proc, cfg: func(c *config.Config) {
			c.Runtime.OnProcessingError = config.LogAndContinue
		}})
		s.waitCaughtUp(t)
		if done, err := a.returned(); done || a.app.State() != stream.Running {
			t.Fatalf("the app stopped (%v, %v) or is not running (%s) after skipping records", done, err, a.app.State())
		}
		a.stopClean(t)
		checkCountedOnce(t, readCounts(t, s.b, s.output), want)
	})

	// errors.dead.letter.queue.topic.name: the skipped records are in the dead-letter queue, their
	// raw key and value with Kafka Streams' headers, and the app goes on.
	t.Run("DeadLetterQueue", func(t *testing.T) {
		s := newRTSetup(t, 1)
		dlq := Name(t, "dlq")
		s.b.CreateTopic(t, dlq, 1)
		count := countTo(s.output)
		proc := stream.Typed(serde.String, serde.String, func(c *stream.Context, key, value string) error {
			if value == "boom" {
				return errBoom
			}
			return count(c, key, value)
		})
		in := keyed(50, 4, 0, nil)
		in[10][1], in[30][1] = "boom", "boom"
		offs := produceValues(t, s.b, s.input, in...)
		a := s.start(t, "a", rtOpts{proc: proc, cfg: func(c *config.Config) {
			c.Runtime.OnProcessingError = config.LogAndContinue
			c.Runtime.DeadLetterQueueTopic = dlq
		}})
		s.waitCaughtUp(t)
		a.stopClean(t)
		cl := s.b.Client(t, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []*kgo.Record
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for len(got) < 2 && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r) })
		}
		if len(got) != 2 {
			t.Fatalf("%d dead letters, want the 2 failed records", len(got))
		}
		for i, r := range got {
			idx := []int{10, 30}[i]
			h := map[string]string{}
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
			if string(r.Key) != in[idx][0] || string(r.Value) != "boom" || h["__streams.errors.topic"] != s.input ||
				h["__streams.errors.partition"] != "0" || h["__streams.errors.offset"] != fmt.Sprint(offs[idx]) ||
				h["__streams.errors.message"] != errBoom.Error() || h["__streams.errors.exception"] == "" {
				t.Errorf("dead letter %d: %q=%q headers %v; want record %d's raw key and value with its topic, partition, offset and error", i, r.Key, r.Value, h, idx)
			}
		}
	})

	// The key processing.exception.handler is read with Kafka's class names.
	t.Run("ConfigKey", func(t *testing.T) {
		cfg, err := config.FromMap(map[string]string{"application.id": "x",
			"processing.exception.handler": "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler"})
		if err != nil || cfg.Runtime.OnProcessingError != config.LogAndContinue {
			t.Fatalf("processing.exception.handler=LogAndContinueProcessingExceptionHandler read as %v (%v)", cfg.Runtime.OnProcessingError, err)
		}
	})

	// A value that is not UTF-8 under the default deserialization.exception.handler (LogAndFail):
	// Run returns a *stream.DeserializationError wrapping the *serde.DecodeError, at that record,
	// with exactly the records before it committed.
	t.Run("DeserializationLogAndFail", func(t *testing.T) {
		s := newRTSetup(t, 1)
		in := keyed(40, 4, 0, nil)
		in[25][1] = "\xff\xfe not UTF-8"
		offs := produceValues(t, s.b, s.input, in...)
		bad := offs[25]
		a := s.start(t, "a", rtOpts{})
		err := a.wait(t, settle)
		de := errorAs[*stream.DeserializationError](t, err)
		errorAs[*serde.DecodeError](t, err)
		if de.Topic != s.input || de.Partition != 0 || de.Offset != bad || de.Task != (tasks.ID{Subtopology: "0", Partition: 0}) {
			t.Fatalf("got %#v; want task 0_0, %s[0]@%d", de, s.input, bad)
		}
		if at := committedAt(t, s.b, s.group, s.input, 0); at != bad {
			t.Fatalf("committed offset %d after the failure at %d; want exactly the records before it committed", at, bad)
		}
	})

	// deserialization.exception.handler=LogAndContinueExceptionHandler skips the record.
	t.Run("DeserializationLogAndContinue", func(t *testing.T) {
		s := newRTSetup(t, 1)
		want := map[string]int64{}
		in := keyed(40, 4, 0, nil)
		in[25][1] = "\xff\xfe not UTF-8"
		for i, kv := range in {
			if i != 25 {
				want[kv[0]]++
			}
		}
		produceValues(t, s.b, s.input, in...)
		a := s.start(t, "a", rtOpts{cfg: func(c *config.Config) { c.Runtime.OnDeserializationError = config.LogAndContinue }})
		s.waitCaughtUp(t)
		if done, err := a.returned(); done {
			t.Fatalf("the app stopped (%v) on a record it should skip", err)
		}
		a.stopClean(t)
		checkCountedOnce(t, readCounts(t, s.b, s.output), want)
	})
}

// TestRuntimeStateDirLock: state.dir/<application.id> belongs to one App at a time. A second App on
// the same directory and application.id fails at once with a *stream.LockError naming this process,
// without joining the group; once the first App stopped, a third runs. The lock is the one Kafka
// Streams takes on the same file, so a Java instance and a Go App exclude each other (subtest).
func TestRuntimeStateDirLock(t *testing.T) {
	s := newRTSetup(t, 2)
	dir := t.TempDir()
	withDir := func(c *config.Config) { c.StateDir = dir }
	a := s.start(t, "a", rtOpts{cfg: withDir})
	a.runningWith(t, s.all)

	second := s.start(t, "second", rtOpts{cfg: withDir})
	err := second.wait(t, settle)
	le := errorAs[*stream.LockError](t, err)
	if want := filepath.Join(dir, s.group); le.Dir != want || le.PID != os.Getpid() {
		t.Fatalf("LockError names %s (pid %d); want %s held by this process (pid %d)", le.Dir, le.PID, want, os.Getpid())
	}
	if st := second.app.Stats(); st.HeartbeatsSent != 0 {
		t.Fatalf("the refused App sent %d heartbeats", st.HeartbeatsSent)
	}
	if d := s.b.DescribeGroup(t, s.group); len(d.Members) != 1 {
		t.Fatalf("the group has %d members; the refused App must not have joined", len(d.Members))
	}
	a.stopClean(t)

	third := s.start(t, "third", rtOpts{cfg: withDir})
	third.runningWith(t, s.all)
	third.stopClean(t)

	// A Kafka Streams instance holding the directory (Java's FileChannel.tryLock on the same .lock
	// file, as its StateDirectory takes it) keeps the App out; and a running App keeps Kafka
	// Streams out.
	t.Run("KafkaStreamsLock", func(t *testing.T) {
		lock := filepath.Join(dir, s.group, ".lock")
		line, release := javaLock(t, lock)
		if line != "held" {
			t.Fatalf("Java could not lock the free state directory: %q", line)
		}
		other := s.start(t, "other", rtOpts{cfg: withDir})
		le := errorAs[*stream.LockError](t, other.wait(t, settle))
		if le.Dir != filepath.Join(dir, s.group) {
			t.Fatalf("LockError names %s; want %s", le.Dir, filepath.Join(dir, s.group))
		}
		release()
		g := s.start(t, "go", rtOpts{cfg: withDir})
		g.runningWith(t, s.all)
		line, release = javaLock(t, lock)
		release()
		if line != "refused" {
			t.Fatalf("Java locked the state directory of a running App: %q", line)
		}
		g.stopClean(t)
	})
}

// javaLock runs integration/testdata/javalock/LockHolder.java on the lock file: its first line
// ("held" or "refused"), and a function that makes it release the lock and exit.
func javaLock(t *testing.T, lock string) (string, func()) {
	t.Helper()
	cmd := exec.Command("java", filepath.Join("testdata", "javalock", "LockHolder.java"), lock)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	done := false
	release := func() {
		if done {
			return
		}
		done = true
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("LockHolder.java: %v", err)
		}
	}
	t.Cleanup(release)
	if err != nil {
		t.Fatalf("LockHolder.java said nothing: %v", err)
	}
	return strings.TrimSpace(line), release
}

// TestRuntimeSharesAGroupWithKafkaStreams: a Go runtime app and a Kafka Streams 4.4 application (the
// Java peer, the same topology, store, changelog and serdes) count in one group with graceful
// hand-overs both ways: Go alone; Java joins; Go stops and Java takes everything (restoring Go's
// changelog); Go starts again and takes tasks back (restoring Java's); Java stops and Go takes
// everything. Input arrives at every step; at the end every key's output is 1…n once.
func TestRuntimeSharesAGroupWithKafkaStreams(t *testing.T) {
	s := newRTSetup(t, 4)
	want := produceKeyed(t, s.b, s.input, 400, 16, 0)
	g := s.start(t, "go-1", rtOpts{})
	g.runningWith(t, s.all)
	s.waitCaughtUp(t)

	p := startJavaPeer(t, s.b, s.group, s.input, s.output, rtCounts.Name(), javaDefault)
	split := func(g *rtApp) {
		t.Helper()
		Eventually(t, javaStart, func() (bool, string) {
			x, j := g.active(), p.activeTasks()
			ok := !x.IsEmpty() && !j.IsEmpty() && x.Union(j).Equal(s.all) && x.Intersect(j).IsEmpty() &&
				g.app.State() == stream.Running && p.currentState() == "RUNNING"
			return ok, fmt.Sprintf("%v %v", g, p)
		})
	}
	split(g)
	addCounts(want, produceKeyed(t, s.b, s.input, 400, 16, 400))
	s.waitCaughtUp(t)

	g.stopClean(t)
	Eventually(t, settle, func() (bool, string) {
		return p.activeTasks().Equal(s.all) && p.currentState() == "RUNNING", p.String()
	})
	addCounts(want, produceKeyed(t, s.b, s.input, 400, 16, 800))
	s.waitCaughtUp(t)

	g2 := s.start(t, "go-2", rtOpts{})
	split(g2)
	fromJava := g2.active()
	addCounts(want, produceKeyed(t, s.b, s.input, 400, 16, 1200))
	s.waitCaughtUp(t)
	for id := range fromJava.All() {
		if n, _ := g2.restoredRecords(id, false); n == 0 {
			t.Fatalf("task %s came to go-2 from the Java member without restoring its changelog", id)
		}
	}

	p.stop(t)
	g2.runningWith(t, s.all)
	addCounts(want, produceKeyed(t, s.b, s.input, 400, 16, 1600))
	s.waitCaughtUp(t)
	if errs := p.errorLines(); len(errs) > 0 {
		t.Fatalf("the Java peer failed: %v", errs)
	}
	g2.stopClean(t)
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}

// TestRuntimeQueries: two apps with application.server set share four tasks. Each one's
// App.Store("counts") holds exactly the keys of its active tasks with their counts (Get, Range in
// key order, ApproximateCount; KeyValueStore.Query typed); together they hold every key once; and
// App.KeyMetadata, asked on either app, names as the key's active endpoint the app whose store has
// it, and the partition the key was produced to.
func TestRuntimeQueries(t *testing.T) {
	s := newRTSetup(t, 4)
	want := produceKeyed(t, s.b, s.input, 320, 16, 0)
	eps := map[string]heartbeat.Endpoint{"a": {Host: "127.0.0.1", Port: 7001}, "b": {Host: "127.0.0.1", Port: 7002}}
	apps := map[string]*rtApp{}
	for _, name := range []string{"a", "b"} {
		ep := eps[name]
		apps[name] = s.start(t, name, rtOpts{cfg: func(c *config.Config) { c.ApplicationServer = ep.String() }})
	}
	Eventually(t, settle, func() (bool, string) {
		x, y := apps["a"].active(), apps["b"].active()
		ok := x.Len() == 2 && y.Len() == 2 && x.Union(y).Equal(s.all) &&
			apps["a"].app.State() == stream.Running && apps["b"].app.State() == stream.Running
		return ok, fmt.Sprintf("%v %v", apps["a"], apps["b"])
	})
	s.waitCaughtUp(t)

	if _, err := apps["a"].app.Store("nope"); !errors.Is(err, stream.ErrUnknownStore) {
		t.Fatalf("Store(\"nope\") returned %v; want ErrUnknownStore", err)
	}
	// Where each key is, from each app's local store.
	holder := map[string]string{}
	for _, name := range []string{"a", "b"} {
		app := apps[name]
		st, err := app.app.Store(rtCounts.Name())
		if err != nil {
			t.Fatal(err)
		}
		it, err := st.Range(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for it.Next() {
			k := string(it.Key())
			v, err := serde.Int64.Decode(it.Value())
			if err != nil {
				t.Fatal(err)
			}
			if v != want[k] {
				t.Fatalf("%s's store: %s=%d; want %d", name, k, v, want[k])
			}
			if h, ok := holder[k]; ok {
				t.Fatalf("key %s is in the stores of both %s and %s", k, h, name)
			}
			holder[k] = name
			keys = append(keys, k)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if !sort.StringsAreSorted(keys) || len(keys) == 0 {
			t.Fatalf("%s's Range gave %v; want its keys in order", name, keys)
		}
		if n, err := st.ApproximateCount(); err != nil || n != int64(len(keys)) {
			t.Fatalf("%s's ApproximateCount is %d (%v); its Range gave %d keys", name, n, err, len(keys))
		}
	}
	if len(holder) != len(want) {
		t.Fatalf("the two apps hold %d keys; %d were produced", len(holder), len(want))
	}

	partition := keyPartitions(t, s)
	for k, n := range want {
		for _, name := range []string{"a", "b"} {
			app := apps[name]
			v, ok, err := rtCounts.Query(app.app, k)
			if err != nil {
				t.Fatal(err)
			}
			if mine := holder[k] == name; ok != mine || (ok && v != n) {
				t.Fatalf("Query(%s) on %s = %d, %v; want %v (held by %s, count %d)", k, name, v, ok, mine, holder[k], n)
			}
			raw, ok, err := mustStore(t, app).Get([]byte(k))
			if err != nil || ok != (holder[k] == name) || (ok && len(raw) != 8) {
				t.Fatalf("Store.Get(%s) on %s = %x, %v, %v", k, name, raw, ok, err)
			}
			var md stream.KeyMetadata
			Eventually(t, settle, func() (bool, string) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var found bool
				md, found, err = app.app.KeyMetadata(ctx, rtCounts.Name(), []byte(k))
				if err != nil {
					t.Fatalf("KeyMetadata(%s) on %s: %v", k, name, err)
				}
				return found && md.Active == eps[holder[k]], fmt.Sprintf("KeyMetadata(%s) on %s: %+v found %v; want active %v", k, name, md, found, eps[holder[k]])
			})
			if md.Partition != partition[k] || md.Task != (tasks.ID{Subtopology: "0", Partition: partition[k]}) {
				t.Fatalf("KeyMetadata(%s) says partition %d (task %s); the key was produced to %d", k, md.Partition, md.Task, partition[k])
			}
		}
	}
	for _, name := range []string{"a", "b"} {
		apps[name].stopClean(t)
	}
}

func mustStore(t *testing.T, r *rtApp) interface {
	Get([]byte) ([]byte, bool, error)
} {
	t.Helper()
	st, err := r.app.Store(rtCounts.Name())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// keyPartitions reads the input topic and returns the partition each key was written to.
func keyPartitions(t *testing.T, s *rtSetup) map[string]int32 {
	t.Helper()
	ends := endOffsets(t, s.b, s.input)
	cl := s.b.Client(t, kgo.ConsumeTopics(s.input), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left := map[int32]int64{}
	for p, e := range ends {
		if e > 0 {
			left[p] = e
		}
	}
	out := map[string]int32{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", s.input, ctx.Err())
		}
		for _, r := range fs.Records() {
			if p, ok := out[string(r.Key)]; ok && p != r.Partition {
				t.Fatalf("key %s is in partitions %d and %d", r.Key, p, r.Partition)
			}
			out[string(r.Key)] = r.Partition
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		}
	}
	return out
}

// TestRuntimeOutOfRangeInputFollowsAutoOffsetReset: an input whose committed position was deleted
// (retention, or DeleteRecords as here) resumes where auto.offset.reset says, as Kafka Streams
// resumes it, not where the client's own reset would put it. App a commits 20 records; 20 more are
// written and those before offset 30 deleted; app b (auto.offset.reset=latest) must process none
// of 30…39 (the client's default reset, the log start, would process them) and every record
// written after it started.
func TestRuntimeOutOfRangeInputFollowsAutoOffsetReset(t *testing.T) {
	s := newRTSetup(t, 1)
	a := s.start(t, "a", rtOpts{})
	a.runningWith(t, s.all)
	produceValues(t, s.b, s.input, keyed(20, 4, 0, nil)...)
	s.waitCaughtUp(t)
	a.stopClean(t)

	produceValues(t, s.b, s.input, keyed(20, 4, 20, nil)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := make(kadm.Offsets)
	del.Add(kadm.Offset{Topic: s.input, Partition: 0, At: 30})
	resp, err := s.b.Admin(t).DeleteRecords(ctx, del)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("deleting the records before offset 30: %v", err)
	}

	var mu sync.Mutex
	var seen []int64
	proc := stream.ProcessorFunc(func(_ *stream.Context, r *stream.Record) error {
		mu.Lock()
		seen = append(seen, r.Offset)
		mu.Unlock()
		return nil
	})
	b := s.start(t, "b", rtOpts{proc: proc, cfg: func(c *config.Config) { c.Runtime.ResetLatest = true }})
	b.runningWith(t, s.all)
	// b goes to the end when it finds its position out of range, at a moment the test cannot see:
	// records are written one at a time until b processes one.
	next := 40
	Eventually(t, settle, func() (bool, string) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 0 {
			produceValues(t, s.b, s.input, keyed(1, 4, next, nil)...)
			next++
		}
		return n > 0, fmt.Sprintf("%d records written after b started, none processed", next-40)
	})
	b.stopClean(t)
	mu.Lock()
	defer mu.Unlock()
	if seen[0] < 40 {
		t.Fatalf("processed offsets %v: b went on from %d, before the end (40) where auto.offset.reset=latest puts it", seen, seen[0])
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] != seen[i-1]+1 {
			t.Fatalf("processed offsets %v: not one after the other", seen)
		}
	}
}
