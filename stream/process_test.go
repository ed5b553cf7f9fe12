package stream

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// recs makes the records of one input partition of task id, at offsets from, from+1, …, with
// timestamps ts (ms).
func recs(id tasks.ID, topic string, from int64, ts ...int64) consume.Records {
	r := consume.Records{Task: id, Role: consume.Active, Partition: tasks.TopicPartition{Topic: topic, Partition: id.Partition}}
	for i, ms := range ts {
		r.Records = append(r.Records, &kgo.Record{Topic: topic, Partition: id.Partition, Offset: from + int64(i),
			Key: []byte(fmt.Sprint("k", from+int64(i))), Value: []byte("v"), Timestamp: time.UnixMilli(ms),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(from + int64(i)))}}})
	}
	r.First, r.Next = from, from+int64(len(ts))
	return r
}

// recorder is a processor (with Init) that records what it saw and fails where told.
type recorder struct {
	inits   []tasks.ID
	seen    []string
	initErr error
	failAt  map[int64]error // by offset
	onInit  func(c *Context) error
	// onProcess, when set, runs after every record (a slow processor moves the fake clock).
	onProcess func()
}

func (p *recorder) Init(c *Context) error {
	p.inits = append(p.inits, c.Task())
	if p.onInit != nil {
		if err := p.onInit(c); err != nil {
			return err
		}
	}
	return p.initErr
}

func (p *recorder) Process(c *Context, r *Record) error {
	if c.Timestamp() != r.Timestamp || c.StreamTime().Before(r.Timestamp) || string(c.Headers()[0].Value) != fmt.Sprint(r.Offset) {
		return fmt.Errorf("context does not match record %d: ts %v stream time %v", r.Offset, c.Timestamp(), c.StreamTime())
	}
	p.seen = append(p.seen, fmt.Sprintf("%s@%d", c.Task(), r.Offset))
	if p.onProcess != nil {
		p.onProcess()
	}
	return p.failAt[r.Offset]
}

func processingApp(t *testing.T, p *recorder, mod func(*config.Config), opts ...Option) *App {
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	a, _ := newTestApp(t, cfg, Processors{"0": p, "1": nopProc}, opts...)
	for part := range int32(3) {
		restoringTask(t, a, tid("0", part))
	}
	return a
}

func TestProcessInitsOnceBeforeTheFirstRecord(t *testing.T) {
	p := &recorder{}
	a := processingApp(t, p, nil)
	if got := a.process([]consume.Records{recs(tid("0", 0), "in", 10, 5, 3), recs(tid("0", 1), "in", 0, 7)}); got != nil {
		t.Fatalf("unprocessed %v", got)
	}
	if got := a.process([]consume.Records{recs(tid("0", 0), "in", 12, 4)}); got != nil {
		t.Fatalf("unprocessed %v", got)
	}
	if len(p.inits) != 2 || p.inits[0] != tid("0", 0) || p.inits[1] != tid("0", 1) {
		t.Errorf("inits %v, want one per task, in order", p.inits)
	}
	want := []string{"0_0@10", "0_0@11", "0_1@0", "0_0@12"}
	if fmt.Sprint(p.seen) != fmt.Sprint(want) {
		t.Errorf("seen %v, want %v", p.seen, want)
	}
	if st := a.tasks[tid("0", 0)].streamTime; st != 5 {
		t.Errorf("stream time %d, want the largest timestamp 5", st)
	}
	if st := a.tasks[tid("0", 2)].streamTime; st != -1 || running(a, a.tasks[tid("0", 2)]) {
		t.Errorf("a task without records: stream time %d running %v", st, running(a, a.tasks[tid("0", 2)]))
	}
}

func TestInitContext(t *testing.T) {
	p := &recorder{}
	var stream time.Time
	var ts time.Time
	p.onInit = func(c *Context) error {
		stream, ts = c.StreamTime(), c.Timestamp()
		if c.Headers() != nil {
			return errors.New("headers in Init")
		}
		_, err := c.Schedule(time.Millisecond, StreamTime, func(*Context, time.Time) error { return nil })
		return err
	}
	a := processingApp(t, p, nil)
	if got := a.process([]consume.Records{recs(tid("0", 0), "in", 0, 5)}); got != nil {
		t.Fatal(a.fatalErr())
	}
	if !stream.IsZero() || !ts.Equal(a.now()) {
		t.Errorf("Init's stream time %v (want zero) and timestamp %v (want now)", stream, ts)
	}
	if next := a.mach.Schedules(tid("0", 0))[0].Next; next != 6 {
		t.Errorf("a stream-time punctuation scheduled in Init starts at the first record: next %d, want 6", next)
	}
}

func TestProcessFiresStreamTimePunctuations(t *testing.T) {
	p := &recorder{}
	var at []int64
	p.onInit = func(c *Context) error {
		_, err := c.Schedule(10*time.Millisecond, StreamTime, func(_ *Context, t time.Time) error {
			at = append(at, t.UnixMilli())
			return nil
		})
		return err
	}
	a := processingApp(t, p, nil)
	if got := a.process([]consume.Records{recs(tid("0", 0), "in", 0, 100, 105, 95, 110, 131)}); got != nil {
		t.Fatal(a.fatalErr())
	}
	// As Kafka Streams: on the interval's grid from 0, so at the first record (100), then at 110 and
	// 131 (the record at 95 does not move the stream time back).
	if fmt.Sprint(at) != "[100 110 131]" {
		t.Errorf("stream-time punctuations at %v, want [100 110 131]", at)
	}
	if next := a.mach.Schedules(tid("0", 0))[0].Next; next != 140 {
		t.Errorf("next %d, want 140", next)
	}
}

// stopMap checks what process returned.
func stopMap(t *testing.T, got, want map[tasks.TopicPartition]int64) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Fatalf("unprocessed %v, want %v", got, want)
	}
}

func in(p int32) tasks.TopicPartition { return tasks.TopicPartition{Topic: "in", Partition: p} }

func TestProcessingErrorStopsAtTheRecord(t *testing.T) {
	p := &recorder{failAt: map[int64]error{21: errBoom}}
	a := processingApp(t, p, nil)
	got := a.process([]consume.Records{recs(tid("0", 0), "in", 10, 1, 2), recs(tid("0", 1), "in", 20, 1, 2, 3), recs(tid("0", 2), "in", 30, 1)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(1): 21, in(2): 30})
	if fmt.Sprint(p.seen) != "[0_0@10 0_0@11 0_1@20 0_1@21]" {
		t.Errorf("seen %v", p.seen)
	}
	var pe *ProcessingError
	if err := a.fatalErr(); !errors.As(err, &pe) || *pe != (ProcessingError{Task: tid("0", 1), Topic: "in", Partition: 1, Offset: 21, Err: errBoom}) {
		t.Fatalf("fatal %#v", err)
	}
	want := "stream: task 0_1 failed on record in[1]@21: boom; the application stopped and committed only what came before " +
		"(processing.exception.handler=LogAndFailProcessingExceptionHandler); fix the processor, or set " +
		"processing.exception.handler=LogAndContinueProcessingExceptionHandler to skip such records"
	if pe.Error() != want {
		t.Errorf("message %q", pe.Error())
	}
	if !errors.Is(pe, errBoom) {
		t.Error("Unwrap")
	}
}

func TestProcessingErrorLogAndContinue(t *testing.T) {
	p := &recorder{failAt: map[int64]error{21: errBoom, 22: &recordDecodeError{&serde.DecodeError{Serde: "x", Err: errBoom}}}}
	logs, opt := recordLogs()
	a := processingApp(t, p, func(c *config.Config) {
		c.Runtime.OnProcessingError = config.LogAndContinue
		c.Runtime.OnDeserializationError = config.LogAndContinue
	}, opt)
	got := a.process([]consume.Records{recs(tid("0", 1), "in", 20, 1, 2, 3, 4)})
	stopMap(t, got, nil)
	w := logs.warnings()
	if len(w) != 2 || w[0] != "WARN skipping a record the processor failed on (processing.exception.handler=LogAndContinue)" ||
		w[1] != "WARN skipping a record that does not decode (deserialization.exception.handler=LogAndContinue)" {
		t.Errorf("warnings %v", w)
	}
	if len(p.seen) != 4 || a.fatalErr() != nil {
		t.Errorf("seen %v fatal %v", p.seen, a.fatalErr())
	}
}

func TestDeserializationErrorPolicy(t *testing.T) {
	de := &serde.DecodeError{Serde: "int64", Len: 1, Err: errBoom}
	// LogAndContinue for processing errors does not skip a record that does not decode.
	p := &recorder{failAt: map[int64]error{1: &recordDecodeError{fmt.Errorf("value: %w", de)}}}
	a := processingApp(t, p, func(c *config.Config) { c.Runtime.OnProcessingError = config.LogAndContinue })
	got := a.process([]consume.Records{recs(tid("0", 0), "in", 0, 1, 2, 3)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 1})
	var dse *DeserializationError
	if err := a.fatalErr(); !errors.As(err, &dse) || dse.Task != tid("0", 0) || dse.Topic != "in" || dse.Partition != 0 || dse.Offset != 1 || !errors.Is(err, de) {
		t.Fatalf("fatal %#v", err)
	}
	want := "stream: task 0_0 cannot decode record in[0]@1: value: serde: 1 bytes are not a valid int64: boom; the application stopped and committed only what came before " +
		"(deserialization.exception.handler=LogAndFailExceptionHandler); set deserialization.exception.handler=LogAndContinueExceptionHandler " +
		"to skip records that do not decode"
	if dse.Error() != want {
		t.Errorf("message %q", dse.Error())
	}

	// LogAndContinue for deserialization does not skip a processing error.
	p = &recorder{failAt: map[int64]error{0: &recordDecodeError{de}, 1: errBoom}}
	a = processingApp(t, p, func(c *config.Config) { c.Runtime.OnDeserializationError = config.LogAndContinue })
	got = a.process([]consume.Records{recs(tid("0", 0), "in", 0, 1, 2, 3)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 1})
	var pe *ProcessingError
	if !errors.As(a.fatalErr(), &pe) {
		t.Fatalf("fatal %v", a.fatalErr())
	}
}

// A *serde.DecodeError the processor returns of something other than its record (a store value
// that does not decode) is the processor's error: LogAndContinue for deserialization must not skip
// a valid input record for it.
func TestADecodeErrorOfAStoreValueIsAProcessingError(t *testing.T) {
	storeValue := fmt.Errorf("stream: a value in store counts: %w", &serde.DecodeError{Serde: "int64", Len: 3, Err: errBoom})
	p := &recorder{failAt: map[int64]error{1: storeValue}}
	a := processingApp(t, p, func(c *config.Config) { c.Runtime.OnDeserializationError = config.LogAndContinue })
	got := a.process([]consume.Records{recs(tid("0", 0), "in", 0, 1, 2, 3)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 1})
	var pe *ProcessingError
	if !errors.As(a.fatalErr(), &pe) || pe.Offset != 1 || !errors.Is(a.fatalErr(), storeValue) {
		t.Fatalf("fatal %v; want a *ProcessingError at offset 1", a.fatalErr())
	}
}

// A store that failed (a full disk) is not the processor's fault: the message gives the store's
// error and no advice about the processor or its handler.
func TestProcessingErrorOfAStore(t *testing.T) {
	se := &store.Error{Op: "apply", Loc: store.Location{ApplicationID: "app", Store: "counts"}, Err: errors.New("no space left on device")}
	msg := (&ProcessingError{Task: tid("0", 0), Topic: "in", Offset: 7, Err: se}).Error()
	if !strings.Contains(msg, "no space left on device") || strings.Contains(msg, "fix the processor") || strings.Contains(msg, "LogAndContinue") {
		t.Errorf("%q", msg)
	}
}

// Typed marks only the decoding of its record as a deserialization failure.
func TestTypedMarksOnlyItsRecordsDecoding(t *testing.T) {
	inner := &serde.DecodeError{Serde: "int64", Len: 2, Err: errBoom}
	p := Typed(serde.Int64, serde.String, func(*Context, int64, string) error { return inner })
	var rde *recordDecodeError
	if err := p.Process(&Context{}, &Record{Key: []byte{1, 2}}); !errors.As(err, &rde) || !errors.As(err, new(*serde.DecodeError)) {
		t.Errorf("a key that does not decode: %v; want the record's decode error", err)
	}
	if err := p.Process(&Context{}, &Record{Key: make([]byte, 8), Value: []byte{0xff}}); !errors.As(err, &rde) {
		t.Errorf("a value that does not decode: %v; want the record's decode error", err)
	}
	if err := p.Process(&Context{}, &Record{Key: make([]byte, 8), Value: []byte("v")}); errors.As(err, &rde) || err != error(inner) {
		t.Errorf("fn's own error: %v; want it as returned, not marked as the record's", err)
	}
}

func TestInitErrorStopsTheTaskBeforeItsFirstRecord(t *testing.T) {
	p := &recorder{initErr: errBoom}
	a := processingApp(t, p, nil)
	got := a.process([]consume.Records{recs(tid("0", 0), "in", 10, 1), recs(tid("0", 1), "in", 20, 1)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 10, in(1): 20})
	var pe *ProcessingError
	if !errors.As(a.fatalErr(), &pe) || pe.Topic != "" || pe.Task != tid("0", 0) {
		t.Fatalf("fatal %v", a.fatalErr())
	}
	if len(p.seen) != 0 {
		t.Errorf("seen %v", p.seen)
	}
	want := "stream: task 0_0 failed on a punctuation or Init: boom; the application stopped and committed only what came before " +
		"(processing.exception.handler=LogAndFailProcessingExceptionHandler); fix the processor, or set " +
		"processing.exception.handler=LogAndContinueProcessingExceptionHandler to skip such records"
	if pe.Error() != want {
		t.Errorf("message %q", pe.Error())
	}

	// Under LogAndContinue a failed Init is logged, and the task processes.
	p = &recorder{initErr: errBoom}
	a = processingApp(t, p, func(c *config.Config) { c.Runtime.OnProcessingError = config.LogAndContinue })
	stopMap(t, a.process([]consume.Records{recs(tid("0", 0), "in", 10, 1)}), nil)
	if len(p.seen) != 1 || !running(a, a.tasks[tid("0", 0)]) {
		t.Errorf("seen %v", p.seen)
	}
}

func TestPunctuationErrorStopsAfterTheRecord(t *testing.T) {
	p := &recorder{}
	p.onInit = func(c *Context) error {
		_, err := c.Schedule(10*time.Millisecond, StreamTime, func(*Context, time.Time) error { return errBoom })
		return err
	}
	a := processingApp(t, p, nil)
	// The punctuation fires at the first record (stream-time punctuations start on the grid from 0,
	// as Kafka Streams'), and fails: the partition stops after that record.
	got := a.process([]consume.Records{recs(tid("0", 0), "in", 10, 100, 105, 110, 111), recs(tid("0", 1), "in", 20, 1)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 11, in(1): 20})
	if fmt.Sprint(p.seen) != "[0_0@10]" {
		t.Errorf("seen %v", p.seen)
	}
}

// TestProcessStopsAtRecordsOfATaskNotActive: the consumer hands out only active tasks' records;
// records of any other task stop the batch there (skipping them would lose them) with an internal
// error, and nothing after them is processed.
func TestProcessStopsAtRecordsOfATaskNotActive(t *testing.T) {
	p := &recorder{}
	a := processingApp(t, p, nil)
	a.tasks[tid("0", 1)].active = false
	got := a.process([]consume.Records{recs(tid("0", 2), "in", 0, 1), recs(tid("0", 1), "in", 5, 1), recs(tid("0", 9), "in", 7, 1)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(1): 5, in(9): 7})
	if fmt.Sprint(p.seen) != "[0_2@0]" {
		t.Errorf("seen %v", p.seen)
	}
	if err := a.fatalErr(); err == nil || !strings.Contains(err.Error(), "internal error: records of task 0_1") {
		t.Errorf("fatal %v", err)
	}
}

func TestStopAll(t *testing.T) {
	got := stopAll([]consume.Records{recs(tid("0", 0), "in", 4, 1, 2), recs(tid("0", 1), "in", 7, 1)})
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 4, in(1): 7})
}

func TestProduceErrorMessage(t *testing.T) {
	e := &ProduceError{Topic: "out", Partition: 2, Err: errBoom}
	want := "stream: writing to out[2] failed: boom; the application stopped without committing the records behind it " +
		"(they are processed again when it restarts); check the topic exists, the client may write it, and records fit max.message.bytes"
	if e.Error() != want || !errors.Is(e, errBoom) {
		t.Errorf("%q", e)
	}
	// The hint names the culprit the broker named.
	for _, c := range []struct {
		err  error
		hint string
	}{
		{kerr.MessageTooLarge, "larger than the topic's max.message.bytes"},
		{kerr.InvalidTimestamp, "timestamp is further from the broker's clock"},
		{kerr.TopicAuthorizationFailed, "WRITE on the topic"},
		{kerr.UnknownTopicOrPartition, "create the topic"},
	} {
		msg := (&ProduceError{Topic: "out", Err: c.err}).Error()
		if !strings.Contains(msg, c.hint) || strings.Contains(msg, "check the topic exists") {
			t.Errorf("%v: %q; want the hint %q alone", c.err, msg, c.hint)
		}
	}
}

func TestTyped(t *testing.T) {
	var gotK string
	var gotV int64
	p := Typed(serde.String, serde.Int64, func(_ *Context, k string, v int64) error {
		gotK, gotV = k, v
		return nil
	})
	v, _ := serde.Int64.Encode(42)
	mustNotErr(t, p.Process(nil, &Record{Key: []byte("k"), Value: v}))
	if gotK != "k" || gotV != 42 {
		t.Errorf("decoded %q %d", gotK, gotV)
	}
	err := p.Process(nil, &Record{Key: []byte("k"), Value: []byte("x")})
	var de *serde.DecodeError
	if !errors.As(err, &de) || err.Error()[:7] != "value: " {
		t.Errorf("bad value: %v", err)
	}
	err = Typed(serde.Int64, serde.String, func(*Context, int64, string) error { return nil }).Process(nil, &Record{Key: []byte("x")})
	if !errors.As(err, &de) || err.Error()[:5] != "key: " {
		t.Errorf("bad key: %v", err)
	}
	err = Typed(serde.String, serde.String, func(*Context, string, string) error { return errBoom }).Process(nil, &Record{})
	if err != errBoom {
		t.Errorf("fn's error: %v", err)
	}
}

func TestHandleRestoresThenProcesses(t *testing.T) {
	p := &recorder{}
	var batches []RestoreBatch
	a, _ := builtApp(t, Processors{"0": p, "1": nopProc}, WithRestoreListener(func(b RestoreBatch) { batches = append(batches, b) }))
	activeTask(t, a, tid("0", 0))
	t1 := activeTask(t, a, tid("1", 1))
	t1.active = false
	cl := tasks.TopicPartition{Topic: countsLog, Partition: 1}
	b := &consume.Batch{
		Restore: []consume.Records{
			{Task: tid("1", 1), Role: consume.Standby, Partition: cl, First: 3, Next: 5, Records: []*kgo.Record{
				{Key: []byte("a"), Value: []byte("1"), Offset: 3}, {Key: []byte("b"), Value: []byte("2"), Offset: 4}}},
			{Task: tid("1", 9), Role: consume.Standby, Partition: cl, Next: 1, Records: []*kgo.Record{{Key: []byte("x"), Offset: 0}}},
			{Task: tid("1", 1), Role: consume.Standby, Partition: tasks.TopicPartition{Topic: "nope", Partition: 1}, Next: 1, Records: []*kgo.Record{{Key: []byte("x"), Offset: 0}}},
		},
		Process: []consume.Records{recs(tid("0", 0), "in", 0, 1)},
		Errors:  []kgo.FetchError{{Topic: "in", Partition: 0, Err: errBoom}},
	}
	a.handle(b)
	if v, ok, _ := t1.stores["counts"].Get([]byte("b")); !ok || string(v) != "2" {
		t.Errorf("restored b = %q %v", v, ok)
	}
	if len(batches) != 1 || batches[0] != (RestoreBatch{Task: tid("1", 1), Store: "counts", Changelog: cl, Next: 5, Records: 2, Standby: true}) {
		t.Errorf("restore batches %+v", batches)
	}
	if fmt.Sprint(p.seen) != "[0_0@0]" || a.fatalErr() != nil {
		t.Errorf("seen %v fatal %v", p.seen, a.fatalErr())
	}

	// An active task restoring reports Standby false.
	t1.active = true
	a.handle(&consume.Batch{Restore: []consume.Records{{Task: tid("1", 1), Role: consume.Active, Partition: cl, First: 5, Next: 6, Records: []*kgo.Record{{Key: []byte("c"), Value: []byte("3"), Offset: 5}}}}})
	if len(batches) != 2 || batches[1].Standby || batches[1].Next != 6 {
		t.Errorf("restore batches %+v", batches)
	}
}

func TestHandleFailsOnARestoreError(t *testing.T) {
	p := &recorder{}
	a, _ := builtApp(t, Processors{"0": p, "1": nopProc})
	activeTask(t, a, tid("0", 0))
	t1 := activeTask(t, a, tid("1", 1))
	mustNotErr(t, t1.stores["counts"].eng.Close())
	cl := tasks.TopicPartition{Topic: countsLog, Partition: 1}
	a.handle(&consume.Batch{
		Restore: []consume.Records{{Task: tid("1", 1), Role: consume.Active, Partition: cl, Next: 1, Records: []*kgo.Record{{Key: []byte("a"), Value: []byte("1")}}}},
		Process: []consume.Records{recs(tid("0", 0), "in", 0, 1)},
	})
	var se *store.Error
	if !errors.As(a.fatalErr(), &se) || !errors.Is(se, store.ErrClosed) {
		t.Fatalf("fatal %v", a.fatalErr())
	}
	if len(p.seen) != 0 {
		t.Errorf("processed %v after a failed restore", p.seen)
	}
}

func TestHandleStopsOnAProcessingError(t *testing.T) {
	p := &recorder{failAt: map[int64]error{0: errBoom}}
	a, _ := builtApp(t, Processors{"0": p, "1": nopProc})
	activeTask(t, a, tid("0", 0))
	a.handle(&consume.Batch{Process: []consume.Records{recs(tid("0", 0), "in", 0, 1, 2)}})
	if len(p.seen) != 1 || a.fatalErr() == nil {
		t.Errorf("seen %v fatal %v", p.seen, a.fatalErr())
	}
}

func TestProcessorWithoutInit(t *testing.T) {
	var seen int
	a, _ := newTestApp(t, testConfig(), Processors{"0": ProcessorFunc(func(*Context, *Record) error { seen++; return nil }), "1": nopProc})
	tk := restoringTask(t, a, tid("0", 0))
	stopMap(t, a.process([]consume.Records{recs(tid("0", 0), "in", 0, 1, 2)}), nil)
	if seen != 2 || !running(a, tk) {
		t.Errorf("seen %d running %v", seen, running(a, tk))
	}
}

func TestContextStreamTime(t *testing.T) {
	tk := &task{streamTime: -1}
	c := &Context{task: tk}
	if !c.StreamTime().IsZero() {
		t.Errorf("before the first record: %v", c.StreamTime())
	}
	tk.streamTime = 0
	if got := c.StreamTime(); got.IsZero() || !got.Equal(time.UnixMilli(0)) {
		t.Errorf("at stream time 0: %v, want the epoch", got)
	}
	tk.streamTime = 1234
	if got := c.StreamTime(); !got.Equal(time.UnixMilli(1234)) {
		t.Errorf("%v", got)
	}
}

// default.timestamp.extractor, with Kafka Streams' built-in extractors: a negative timestamp stops
// the application (FailOnInvalidTimestamp, the default), is skipped (LogAndSkipOnInvalidTimestamp),
// or takes its partition's time (UsePartitionTimeOnInvalidTimestamp; no time yet stops);
// WallclockTimestampExtractor processes every record at the clock's time.
func TestTimestampExtractors(t *testing.T) {
	seenAt := func(p *tsRecorder) string { return fmt.Sprint(p.ts) }
	run := func(policy config.TimestampPolicy, ts ...int64) (*tsRecorder, *App, map[tasks.TopicPartition]int64) {
		p := &tsRecorder{}
		cfg := testConfig()
		cfg.Runtime.Timestamps = policy
		a, clk := newTestApp(t, cfg, Processors{"0": p, "1": nopProc})
		clk.t = time.UnixMilli(777_000)
		activeTask(t, a, tid("0", 0))
		return p, a, a.process([]consume.Records{recs(tid("0", 0), "in", 10, ts...)})
	}

	p, a, got := run(config.FailOnInvalidTimestamp, 100, -1, 300)
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 11})
	var te *TimestampError
	if !errors.As(a.fatalErr(), &te) || te.Offset != 11 || te.Timestamp != -1 || te.Topic != "in" || seenAt(p) != "[100]" {
		t.Fatalf("FailOnInvalidTimestamp: fatal %v, seen %v; want a *TimestampError at offset 11 after one record", a.fatalErr(), p.ts)
	}
	if !strings.Contains(te.Error(), "LogAndSkipOnInvalidTimestamp") {
		t.Errorf("the message names no way on: %q", te)
	}
	// The record with the invalid timestamp counts as processed, as a failed record does.
	if n := a.Metrics().Processed; n != 2 {
		t.Errorf("processed %d records; want 2 (the valid one and the invalid one)", n)
	}

	p, a, got = run(config.LogAndSkipOnInvalidTimestamp, 100, -1, 300)
	stopMap(t, got, nil)
	if a.fatalErr() != nil || seenAt(p) != "[100 300]" || a.Metrics().Dropped != 1 {
		t.Fatalf("LogAndSkipOnInvalidTimestamp: fatal %v, seen %v, dropped %d", a.fatalErr(), p.ts, a.Metrics().Dropped)
	}

	p, a, got = run(config.UsePartitionTimeOnInvalidTimestamp, 100, 250, -1, 200)
	stopMap(t, got, nil)
	if a.fatalErr() != nil || seenAt(p) != "[100 250 250 200]" {
		t.Fatalf("UsePartitionTimeOnInvalidTimestamp: fatal %v, seen %v; want the record without a time at 250", a.fatalErr(), p.ts)
	}
	_, a, got = run(config.UsePartitionTimeOnInvalidTimestamp, -1, 100)
	stopMap(t, got, map[tasks.TopicPartition]int64{in(0): 10})
	if !errors.As(a.fatalErr(), &te) {
		t.Fatalf("UsePartitionTimeOnInvalidTimestamp without a partition time: %v; want a *TimestampError", a.fatalErr())
	}

	p, a, got = run(config.WallclockTimestamp, 100, -1)
	stopMap(t, got, nil)
	if a.fatalErr() != nil || seenAt(p) != "[777000 777000]" {
		t.Fatalf("WallclockTimestampExtractor: fatal %v, seen %v; want the clock's time for both", a.fatalErr(), p.ts)
	}
}

// tsRecorder records the timestamp every record was processed with (the record's and the
// context's, which must agree).
type tsRecorder struct{ ts []int64 }

func (p *tsRecorder) Process(c *Context, r *Record) error {
	if !c.Timestamp().Equal(r.Timestamp) {
		return fmt.Errorf("the context's timestamp %v is not the record's %v", c.Timestamp(), r.Timestamp)
	}
	p.ts = append(p.ts, r.Timestamp.UnixMilli())
	return nil
}

// errors.dead.letter.queue.topic.name: a record a processor or its serdes failed on is written to
// the dead-letter queue, its raw key, value and timestamp with Kafka Streams' headers, under both
// handlers (Kafka Streams' built-in handlers send it before they continue or fail).
func TestDeadLetterQueue(t *testing.T) {
	for _, policy := range []config.ErrorPolicy{config.LogAndContinue, config.LogAndFail} {
		de := &recordDecodeError{fmt.Errorf("value: %w", &serde.DecodeError{Serde: "int64", Len: 1, Err: errBoom})}
		p := &recorder{failAt: map[int64]error{21: errBoom, 22: de}}
		a := processingApp(t, p, func(c *config.Config) {
			c.Runtime.DeadLetterQueueTopic = "dlq"
			c.Runtime.OnProcessingError, c.Runtime.OnDeserializationError = policy, policy
		})
		prod := fakeBroker(t, a)
		a.process([]consume.Records{recs(tid("0", 0), "in", 20, 100, 200, 300)})
		flush(t, a)
		var dlq []producedRecord
		for _, r := range prod.all() {
			if r.rec.Topic == "dlq" {
				dlq = append(dlq, r)
			}
		}
		want := []map[string]string{{
			"__streams.errors.exception": "*errors.errorString", "__streams.errors.message": "boom",
			"__streams.errors.stacktrace": "*errors.errorString: boom",
			"__streams.errors.topic":      "in", "__streams.errors.partition": "0", "__streams.errors.offset": "21",
			"h": "21", // the record's own header comes along
		}, {
			"__streams.errors.exception": "*serde.DecodeError", "__streams.errors.message": "value: serde: 1 bytes are not a valid int64: boom",
			"__streams.errors.stacktrace": "*fmt.wrapError: value: serde: 1 bytes are not a valid int64: boom\n" +
				"*serde.DecodeError: serde: 1 bytes are not a valid int64: boom\n*errors.errorString: boom",
			"__streams.errors.topic": "in", "__streams.errors.partition": "0", "__streams.errors.offset": "22",
			"h": "22",
		}}
		if policy == config.LogAndFail {
			want = want[:1] // it stops at the first failure
		}
		if len(dlq) != len(want) {
			t.Fatalf("%v: %d dead letters, want %d", policy, len(dlq), len(want))
		}
		for i, r := range dlq {
			got := map[string]string{}
			for _, h := range r.rec.Headers {
				got[h.Key] = string(h.Value)
			}
			if !maps.Equal(got, want[i]) {
				t.Errorf("%v: dead letter %d headers\n%v\nwant\n%v", policy, i, got, want[i])
			}
			off := int64(21 + i)
			if string(r.key) != fmt.Sprint("k", off) || string(r.value) != "v" || r.rec.Timestamp.UnixMilli() != 100*(off-19) {
				t.Errorf("%v: dead letter %d: %q=%q at %v; want the failed record's raw key, value and timestamp", policy, i, r.key, r.value, r.rec.Timestamp)
			}
		}
	}
	// Without the key, nothing goes to a dead-letter queue.
	p := &recorder{failAt: map[int64]error{21: errBoom}}
	a := processingApp(t, p, func(c *config.Config) { c.Runtime.OnProcessingError = config.LogAndContinue })
	prod := fakeBroker(t, a)
	a.process([]consume.Records{recs(tid("0", 0), "in", 20, 100, 200)})
	flush(t, a)
	if n := len(prod.all()); n != 0 {
		t.Errorf("%d records written without a dead-letter queue", n)
	}
}

// A batch whose processing outlasts commit.interval.ms pauses for the commit (every 64 records the
// clock is read), as Kafka Streams commits between iterations: each partition stops where it got
// to, the partitions not reached at their first record, and the rest is handed out again.
func TestProcessPausesWhenTheCommitIsDue(t *testing.T) {
	p := &recorder{}
	a := processingApp(t, p, func(c *config.Config) { c.Runtime.CommitInterval = time.Second })
	clk := &fakeClock{t: time.UnixMilli(1_000_000)}
	a.now = clk.now
	startClock(a, clk.t)
	p.onProcess = func() { clk.t = clk.t.Add(100 * time.Millisecond) }
	ts := make([]int64, 200)
	a.cur = &consume.Batch{}
	got, paused := a.processUntil([]consume.Records{recs(tid("0", 0), "in", 0, ts...), recs(tid("0", 1), "in", 0, 1)})
	if !paused || !maps.Equal(got, map[tasks.TopicPartition]int64{in(0): 64, in(1): 0}) || len(p.seen) != 64 {
		t.Fatalf("paused %v at %v after %d records; want a pause after the first 64 (the commit was due)", paused, got, len(p.seen))
	}
	if n := a.Metrics().Processed; n != 64 {
		t.Errorf("processed %d records before the pause; want 64", n)
	}
	// Between partitions too.
	p.seen = nil
	startClock(a, clk.t)
	got, paused = a.processUntil([]consume.Records{recs(tid("0", 0), "in", 64, make([]int64, 20)...), recs(tid("0", 1), "in", 0, 1)})
	if !paused || !maps.Equal(got, map[tasks.TopicPartition]int64{in(1): 0}) || len(p.seen) != 20 {
		t.Fatalf("paused %v at %v after %d records; want a pause before the second partition", paused, got, len(p.seen))
	}
	// Not due: the whole batch.
	p.seen, p.onProcess = nil, nil
	startClock(a, clk.t)
	if got, paused = a.processUntil([]consume.Records{recs(tid("0", 0), "in", 84, ts...)}); paused || got != nil || len(p.seen) != 200 {
		t.Fatalf("paused %v at %v after %d records; want all 200", paused, got, len(p.seen))
	}
}

// A pause comes only where records are left to hand out again: a batch whose 64th record is its
// last is processed whole even when the commit is due; a partition time of exactly 0 is a time.
func TestPauseAndPartitionTimeEdges(t *testing.T) {
	p := &recorder{}
	a := processingApp(t, p, func(c *config.Config) { c.Runtime.CommitInterval = time.Second })
	clk := &fakeClock{t: time.UnixMilli(1_000_000)}
	a.now = clk.now
	startClock(a, clk.t.Add(-time.Hour)) // due
	a.cur = &consume.Batch{}
	if got, paused := a.processUntil([]consume.Records{recs(tid("0", 0), "in", 0, make([]int64, 64)...)}); paused || got != nil || len(p.seen) != 64 {
		t.Fatalf("64 records with the commit due: paused %v at %v after %d; want the whole batch, no pause", paused, got, len(p.seen))
	}

	q := &tsRecorder{}
	cfg := testConfig()
	cfg.Runtime.Timestamps = config.UsePartitionTimeOnInvalidTimestamp
	b, _ := newTestApp(t, cfg, Processors{"0": q, "1": nopProc})
	activeTask(t, b, tid("0", 0))
	startFrom(t, b, tid("0", 0), map[tasks.TopicPartition]string{in(0): "AgAAAAAAAAAA"}) // partition time 0
	stopMap(t, b.process([]consume.Records{recs(tid("0", 0), "in", 5, -1)}), nil)
	if fmt.Sprint(q.ts) != "[0]" || b.fatalErr() != nil {
		t.Fatalf("a record without a time in a partition at time 0: %v, fatal %v; want it at 0", q.ts, b.fatalErr())
	}
}

// A dead letter carries the timestamp its record was processed with (here the wall clock's).
func TestDeadLetterTimestampIsTheProcessedOne(t *testing.T) {
	p := &recorder{failAt: map[int64]error{20: errBoom}}
	a := processingApp(t, p, func(c *config.Config) {
		c.Runtime.DeadLetterQueueTopic = "dlq"
		c.Runtime.OnProcessingError = config.LogAndContinue
		c.Runtime.Timestamps = config.WallclockTimestamp
	})
	clk := &fakeClock{t: time.UnixMilli(5_000_000)}
	a.now = clk.now
	prod := fakeBroker(t, a)
	a.process([]consume.Records{recs(tid("0", 0), "in", 20, 100)})
	flush(t, a)
	var dlq []producedRecord
	for _, r := range prod.all() {
		if r.rec.Topic == "dlq" {
			dlq = append(dlq, r)
		}
	}
	if len(dlq) != 1 || dlq[0].rec.Timestamp.UnixMilli() != 5_000_000 {
		t.Fatalf("dead letters %d; want one at the processed time 5000000", len(dlq))
	}
}

// A changelog position out of range (records deleted under it) wipes the store it feeds before the
// changelog's records come again from its first offset, as Kafka Streams wipes a corrupted task's
// stores: what the store held is gone, the records restored after it are all it holds.
func TestHandleWipesAStoreWhoseChangelogWasOutOfRange(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, _ := builtApp(t, testProcs(), WithStores(k, "counts"))
	a.stateDir = t.TempDir()
	t1 := activeTask(t, a, tid("1", 1))
	t1.active = false // a standby
	s := t1.stores["counts"]
	cl := tasks.TopicPartition{Topic: countsLog, Partition: 1}
	a.handle(&consume.Batch{Restore: []consume.Records{{Task: tid("1", 1), Role: consume.Standby, Partition: cl, Next: 8,
		Records: []*kgo.Record{{Key: []byte("old"), Value: []byte("1"), Offset: 7}}}}})
	if s.checkpointed != 8 {
		t.Fatalf("checkpointed %d after the first restore", s.checkpointed)
	}
	old := s.eng
	a.handle(&consume.Batch{
		Corrupted: []consume.Records{{Task: tid("1", 1), Role: consume.Standby, Partition: cl}},
		Restore: []consume.Records{{Task: tid("1", 1), Role: consume.Standby, Partition: cl, First: 20, Next: 21,
			Records: []*kgo.Record{{Key: []byte("new"), Value: []byte("2"), Offset: 20}}}},
	})
	if a.fatalErr() != nil {
		t.Fatal(a.fatalErr())
	}
	if len(k.destroyed) != 1 || k.destroyed[0] != s.loc || s.eng == old {
		t.Fatalf("destroyed %v; want the store wiped and opened anew", k.destroyed)
	}
	if _, ok, _ := s.Get([]byte("old")); ok {
		t.Error("the wiped store still holds what it had")
	}
	if v, ok, _ := s.Get([]byte("new")); !ok || string(v) != "2" || s.checkpointed != 21 {
		t.Errorf("after the wipe: new = %q %v, checkpointed %d; want the restored record and its position", v, ok, s.checkpointed)
	}
	// A wiped store claims no position until a restore gives it one: none checkpointed, none
	// acknowledged, none in the engine.
	a.handle(&consume.Batch{Corrupted: []consume.Records{{Task: tid("1", 1), Role: consume.Standby, Partition: cl}}})
	if _, has := s.eng.Position(); has || s.checkpointed != -1 || s.acked.Load() != -1 {
		t.Fatalf("after a wipe without a restore: engine position %v, checkpointed %d, acked %d; want none", has, s.checkpointed, s.acked.Load())
	}
	// A store that cannot be wiped stops the application; a task or changelog not held is skipped.
	k.destroyErr = errBoom
	a.handle(&consume.Batch{Corrupted: []consume.Records{{Task: tid("1", 9), Partition: cl}, {Task: tid("1", 1), Partition: tasks.TopicPartition{Topic: "nope"}}}})
	if a.fatalErr() != nil {
		t.Fatalf("a task or changelog not held: %v", a.fatalErr())
	}
	a.handle(&consume.Batch{Corrupted: []consume.Records{{Task: tid("1", 1), Role: consume.Standby, Partition: cl}}})
	var se *store.Error
	if !errors.As(a.fatalErr(), &se) || se.Op != "wipe" || !errors.Is(se, errBoom) {
		t.Fatalf("fatal %v; want the wipe's store error", a.fatalErr())
	}
}

// A record of timestamp 0 moves its partition's time to 0: a time, not the absence of one.
func TestPartitionTimeOfARecordAtZero(t *testing.T) {
	a := processingApp(t, &recorder{}, nil)
	stopMap(t, a.process([]consume.Records{recs(tid("0", 0), "in", 0, 0)}), nil)
	if got := a.mach.PartitionTime(in(0)); got != 0 {
		t.Fatalf("partition time after a record at 0: %d, want 0", got)
	}
}

// A record Topic.Send writes owns copies of its key and value (the loop's scratch they were encoded
// in is reused at the next Send), small or not, and an append to its key cannot run into its value.
func TestNewRecordCopiesKeyAndValue(t *testing.T) {
	for _, n := range []int{0, 1, 14, 15, 30, 31, smallRecordBytes - 3, smallRecordBytes - 2, 200} {
		key, value := bytes.Repeat([]byte("k"), 2), bytes.Repeat([]byte("v"), n)
		r := newRecord(key, value)
		key[0] = 'x'
		copy(value, bytes.Repeat([]byte("z"), n))
		if string(r.Key) != "kk" || string(r.Value) != strings.Repeat("v", n) {
			t.Fatalf("value of %d bytes: record %q=%q, want copies taken before the scratch changed", n, r.Key, r.Value)
		}
		_ = append(r.Key, 'q')
		if n > 0 && r.Value[0] != 'v' {
			t.Fatalf("value of %d bytes: an append to the key ran into the value", n)
		}
		if r.Key == nil || r.Value == nil {
			t.Fatalf("value of %d bytes: a nil key or value (a null key or a tombstone) where the encoding was empty", n)
		}
	}
}
