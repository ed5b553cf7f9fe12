package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamsgroup/streamsgroup/config"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Every exactly-once failure names its transactional.id and says what to do for its cause.
func TestTxnErrorSaysWhatToDo(t *testing.T) {
	dial := errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
	for _, c := range []struct {
		cause error
		hint  string
	}{
		{fmt.Errorf("%w (%w)", sm.ErrOutcomeUnknown, dial), "restart the application: it resumes from what the broker committed"},
		{fmt.Errorf("%w: %w", sm.ErrAbortFailed, dial), "could not be reached to abort the transaction"},
		{fmt.Errorf("%w: %w", sm.ErrAbortFailed, kerr.ProducerFenced), "another process uses the same transactional.id"},
		{kerr.ProducerFenced, "give each process its own state.dir"},
		{kerr.InvalidProducerEpoch, "give each process its own state.dir"},
		{kerr.TransactionalIDAuthorizationFailed, "ACL on TRANSACTIONAL_ID"},
		{kerr.ClusterAuthorizationFailed, "IDEMPOTENT_WRITE"},
		{kerr.CoordinatorNotAvailable, "transaction.state.log.replication.factor"},
	} {
		err := &TxnError{TransactionalID: "app-p-1", Err: c.cause}
		msg := err.Error()
		if !strings.HasPrefix(msg, "stream: exactly-once with transactional.id app-p-1: "+c.cause.Error()+"; ") || !strings.Contains(msg, c.hint) {
			t.Errorf("%v: %q; want the transactional.id, the cause and %q", c.cause, msg, c.hint)
		}
		if !errors.Is(err, c.cause) {
			t.Errorf("%v: errors.Is does not reach the cause", c.cause)
		}
	}
}

// eosApp is builtApp under exactly-once.
func eosApp(t *testing.T, procs Processors, opts ...Option) *App {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in", repartTopc, countsLog, sumsLog))
	mustNotErr(t, err)
	t.Cleanup(c.Close)
	cfg := testConfig()
	cfg.BootstrapServers = c.ListenAddrs()
	cfg.Runtime.Guarantee, cfg.Runtime.CommitInterval = config.ExactlyOnceV2, config.DefaultCommitIntervalEOS
	a, _ := newTestApp(t, cfg, procs, opts...)
	mustNotErr(t, a.build())
	t.Cleanup(func() {
		a.offsets.Close()
		a.producer().Close()
		a.cl.Close()
	})
	a.runCtx = context.Background()
	return a
}

// R7: after a fatal processing error the revocation commits nothing under exactly-once: the
// transaction's writes are dropped and no offset is returned to commit.
func TestRevokedOffsetsAfterAFatalErrorCommitNothingUnderEOS(t *testing.T) {
	a := eosApp(t, testProcs())
	tk := activeTask(t, a, tid("1", 0))
	s := tk.stores["counts"]
	s.pend.put([]byte("k"), []byte("half a record"), false)
	a.fail(&ProcessingError{Task: tk.id, Err: errBoom})
	err := revoke(a, tasks.NewSet(tk.id))
	if err != nil {
		t.Fatalf("revocation after a fatal error: err %v; want nothing committed and no error", err)
	}
	if !s.pend.empty() {
		t.Error("the failed transaction's store writes were kept")
	}
	if _, ok, _ := s.Get([]byte("k")); ok {
		t.Error("the failed transaction's write is visible in the store")
	}
	if tk.active || running(a, tk) {
		t.Errorf("the revoked task goes on: active %v running %v", tk.active, running(a, tk))
	}
}

// Every fatal error closes dirty except a group-wide shutdown request, which stops every member
// cleanly.
func TestClosingDirty(t *testing.T) {
	for _, c := range []struct {
		err   error
		dirty bool
	}{
		{nil, false},
		{ErrShutdownRequested, false},
		{&ProcessingError{Err: errBoom}, true},
		{&DeserializationError{Err: errBoom}, true},
		{&ProduceError{Err: errBoom}, true},
		{&TxnError{Err: kerr.ProducerFenced}, true},
	} {
		a, _ := newTestApp(t, testConfig(), testProcs())
		if c.err != nil {
			a.fail(c.err)
		}
		if got := a.closingDirty(); got != c.dirty {
			t.Errorf("after %v: closingDirty %v, want %v", c.err, got, c.dirty)
		}
	}
}

// signalingHandler is a slog.Handler that sends each message on msgs (dropping it when nobody
// listens).
type signalingHandler struct{ msgs chan string }

func (h signalingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalingHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.msgs <- r.Message:
	default:
	}
	return nil
}
func (h signalingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalingHandler) WithGroup(string) slog.Handler      { return h }

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	mustNotErr(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	mustNotErr(t, l.Close())
	return port
}

// unstartedEOSApp is an exactly-once App built against 127.0.0.1:port, where nothing listens yet,
// with opts besides.
func unstartedEOSApp(t *testing.T, port int, msgs chan string, opts ...Option) *App {
	t.Helper()
	cfg := testConfig()
	cfg.BootstrapServers = []string{fmt.Sprintf("127.0.0.1:%d", port)}
	cfg.Runtime.Guarantee, cfg.Runtime.CommitInterval = config.ExactlyOnceV2, config.DefaultCommitIntervalEOS
	cfg.RetryBackoff, cfg.RetryBackoffMax, cfg.RequestTimeout = 10*time.Millisecond, 50*time.Millisecond, time.Second
	a, _ := newTestApp(t, cfg, testProcs(), append(opts, WithLogger(slog.New(signalingHandler{msgs})))...)
	mustNotErr(t, a.build())
	t.Cleanup(func() {
		a.offsets.Close()
		a.producer().Close()
		a.cl.Close()
	})
	return a
}

// Exactly-once waits for a cluster that cannot be reached yet, as at-least-once does (and as
// Kafka Streams retries initTransactions), and starts once it answers.
func TestInitProducerWaitsForTheCluster(t *testing.T) {
	port := freePort(t)
	msgs := make(chan string, 1)
	a := unstartedEOSApp(t, port, msgs)
	done := make(chan error, 1)
	go func() { done <- a.initProducer(context.Background()) }()
	for m := range msgs {
		if m == "cannot reach the transaction coordinator yet; retrying" {
			break
		}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port))
	mustNotErr(t, err)
	defer c.Close()
	if err := <-done; err != nil {
		t.Fatalf("initProducer once the cluster answers: %v", err)
	}
}

// The wait is bounded (Kafka Streams' task.timeout.ms), and ends when the run's context ends.
func TestInitProducerGivesUp(t *testing.T) {
	a := unstartedEOSApp(t, freePort(t), make(chan string, 1))
	a.initBound = 200 * time.Millisecond
	var te *TxnError
	if err := a.initProducer(context.Background()); !errors.As(err, &te) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("after the bound: %v; want a *TxnError with the connection's error", err)
	}
	msgs := make(chan string, 1)
	b := unstartedEOSApp(t, freePort(t), msgs)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.initProducer(ctx) }()
	<-msgs
	stop()
	if err := <-done; !errors.As(err, &te) {
		t.Fatalf("after the context ended: %v", err)
	}
}

// Under exactly-once a task reads its own transaction's writes: Get and Range see the pending
// writes over the committed state (a deletion hides a committed key), and queries (committedRange)
// see only what was committed.
func TestEOSStoreReadsSeeTheOpenTransaction(t *testing.T) {
	a := eosApp(t, testProcs())
	tk := activeTask(t, a, tid("1", 0))
	s := tk.stores["counts"]
	var b store.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte("2"))
	mustNotErr(t, s.eng.Apply(&b, -1))
	s.pend.put([]byte("b"), nil, true)
	s.pend.put([]byte("c"), []byte("3"), false)
	keys := func(it store.Iterator, err error) string {
		t.Helper()
		mustNotErr(t, err)
		defer it.Close()
		var out []string
		for it.Next() {
			out = append(out, string(it.Key())+"="+string(it.Value()))
		}
		return strings.Join(out, ",")
	}
	if got := keys(s.Range(nil, nil)); got != "a=1,c=3" {
		t.Errorf("Range in the transaction: %s; want a=1,c=3", got)
	}
	if got := keys(s.committedRange(nil, nil)); got != "a=1,b=2" {
		t.Errorf("committed range: %s; want a=1,b=2", got)
	}
	if _, ok, _ := s.Get([]byte("b")); ok {
		t.Error("a key deleted in the transaction is still read")
	}
}

// The commit step's LoadProducer hands the machine the producer's ID and epoch and checks the open
// transaction's records were acknowledged at them: a transaction whose records were acknowledged
// at another epoch cannot commit (its records were aborted under it).
func TestLoadProducerChecksTheEpoch(t *testing.T) {
	a := eosApp(t, testProcs())
	id, epoch, err := a.producer().ProducerID(context.Background())
	mustNotErr(t, err)
	a.txnEpoch.begin(a.txnGen.Load())
	a.txnEpoch.ack(a.txnGen.Load(), id, epoch)
	got := a.execute(context.Background(), sm.LoadProducer{}).(sm.ProducerLoaded)
	if got.Err != nil || got.Producer.ID != id || got.Producer.Epoch != epoch || got.Producer.TransactionalID != a.transactionalID() {
		t.Fatalf("loaded %+v", got)
	}
	a.txnEpoch.begin(a.txnGen.Load())
	a.txnEpoch.ack(a.txnGen.Load(), id, epoch-1) // acknowledged before the epoch moved
	if got := a.execute(context.Background(), sm.LoadProducer{}).(sm.ProducerLoaded); !errors.Is(got.Err, errEpochMoved) {
		t.Fatalf("records of another epoch: %v", got.Err)
	}
}

// Apply makes every store of every task apply the committed transaction's writes.
func TestApplyCommitsEveryStore(t *testing.T) {
	a := eosApp(t, testProcs())
	tk := activeTask(t, a, tid("1", 0))
	tk2 := activeTask(t, a, tid("1", 1))
	for _, tk := range []*task{tk, tk2} {
		for _, s := range tk.stores {
			s.pend.put([]byte("k"), []byte(s.name), false)
		}
	}
	if got := a.execute(context.Background(), sm.Apply{}).(sm.Applied); got.Err != nil {
		t.Fatal(got.Err)
	}
	for _, tk := range []*task{tk, tk2} {
		for _, s := range tk.stores {
			if v, ok, _ := s.committedGet([]byte("k")); !ok || string(v) != s.name || !s.pend.empty() {
				t.Errorf("task %s store %s: %q %v after Apply", tk.id, s.name, v, ok)
			}
		}
	}
}

// The machine's Log goes to the App's logger at its level, with its error first when it has one.
func TestExecuteLogs(t *testing.T) {
	var h attrRecorder
	a, _ := newTestApp(t, testConfig(), testProcs(), WithLogger(slog.New(&h)))
	a.execute(context.Background(), sm.Log{Level: slog.LevelWarn, Msg: "with", Err: errBoom, Attrs: []any{"k", 1}})
	a.execute(context.Background(), sm.Log{Level: slog.LevelInfo, Msg: "without", Attrs: []any{"k", 2}})
	if got := strings.Join(h.lines, "; "); got != "WARN with err=boom k=1; INFO without k=2" {
		t.Errorf("logged %q", got)
	}
}

// attrRecorder is a slog.Handler that keeps each record as "LEVEL message key=value …".
type attrRecorder struct{ lines []string }

func (h *attrRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *attrRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(at slog.Attr) bool {
		line += " " + at.Key + "=" + at.Value.String()
		return true
	})
	h.lines = append(h.lines, line)
	return nil
}
func (h *attrRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *attrRecorder) WithGroup(string) slog.Handler      { return h }
