package integration

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Invariant R7: under exactly-once, a record whose processing failed contributes nothing. A
// processor (or a punctuation, or Init) that writes to its store and to the output and then fails,
// under processing.exception.handler=LogAndFail (the default), stops the application, and the open
// transaction is aborted, never committed with part of that record's effects: Kafka Streams closes
// such a task dirty (StreamThread.run → completeShutdown(false) → closeDirty → abortTransaction).
// A second app then processes everything once: read_committed, the output holds every key's counts
// 1…n once each, nothing a failed step wrote, and the stores exactly n.

// failingCounter counts like countTo, and fails once where fail says, after its writes.
type failingCounter struct {
	count  func(c *stream.Context, key, value string) error
	output string
	// failAt is the input offset whose record fails after it was counted (-1: none).
	failAt int64
	// punctuateAfter makes a wall-clock punctuation fail once after that many records (0: none);
	// it sends a record of key "punctuation" to the output first.
	punctuateAfter int64
	// initFails makes Init send a record of key "init" to the output, then fail.
	initFails bool

	seen   atomic.Int64
	failed atomic.Bool
}

var errFailedAfterWriting = errors.New("test: failing after the writes")

func (f *failingCounter) Init(c *stream.Context) error {
	if f.initFails && f.failed.CompareAndSwap(false, true) {
		if err := stream.Output(f.output, serde.String, serde.Int64).Send(c, "init", 1); err != nil {
			return err
		}
		return errFailedAfterWriting
	}
	if f.punctuateAfter == 0 {
		return nil
	}
	_, err := c.Schedule(time.Millisecond, stream.WallClock, func(c *stream.Context, _ time.Time) error {
		if f.seen.Load() < f.punctuateAfter || !f.failed.CompareAndSwap(false, true) {
			return nil
		}
		if err := stream.Output(f.output, serde.String, serde.Int64).Send(c, "punctuation", 1); err != nil {
			return err
		}
		return errFailedAfterWriting
	})
	return err
}

func (f *failingCounter) Process(c *stream.Context, r *stream.Record) error {
	k, err := serde.String.Decode(r.Key)
	if err != nil {
		return err
	}
	if err := f.count(c, k, string(r.Value)); err != nil {
		return err
	}
	f.seen.Add(1)
	if r.Offset == f.failAt && f.failed.CompareAndSwap(false, true) {
		return errFailedAfterWriting
	}
	return nil
}

func TestEOSFailedRecordCommitsNothing(t *testing.T) {
	cases := []struct {
		name string
		make func(s *rtSetup, offs []int64) *failingCounter
	}{
		{"Processor", func(s *rtSetup, offs []int64) *failingCounter {
			return &failingCounter{failAt: offs[57]}
		}},
		{"Punctuation", func(s *rtSetup, offs []int64) *failingCounter {
			return &failingCounter{failAt: -1, punctuateAfter: 57}
		}},
		{"Init", func(s *rtSetup, offs []int64) *failingCounter {
			return &failingCounter{failAt: -1, initFails: true}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newEOSSetup(t, 1)
			want := map[string]int64{}
			offs := produceValues(t, s.b, s.input, keyed(200, 10, 0, want)...)
			f := tc.make(s, offs)
			f.count, f.output = countTo(s.output), s.output
			a := s.start(t, "a", rtOpts{proc: f, cfg: eosCfg(t.TempDir())})
			err := a.wait(t, settle)
			pe := errorAs[*stream.ProcessingError](t, err)
			if !errors.Is(err, errFailedAfterWriting) || pe.Task != (tasks.ID{Subtopology: "0", Partition: 0}) {
				t.Fatalf("Run returned %v; want the failed step's *stream.ProcessingError of task 0_0", err)
			}
			if tc.name == "Processor" && (pe.Topic != s.input || pe.Offset != offs[57]) {
				t.Fatalf("the error names %s@%d; want %s@%d", pe.Topic, pe.Offset, s.input, offs[57])
			}
			if at := committedAt(t, s.b, s.group, s.input, 0); at > offs[57] {
				t.Fatalf("committed offset %d after a failure at or before %d: the failed step's transaction was committed", at, offs[57])
			}
			b := s.start(t, "b", rtOpts{cfg: eosCfg(t.TempDir())})
			b.runningWith(t, s.all)
			s.waitCaughtUp(t)
			s.finish(t, want, b)
		})
	}
}

// TestEOSSlowProcessorCommitsWithinTheTransactionTimeout: a processor slow enough that one fetch of
// records takes longer than transaction.timeout.ms to process (3,000 records at 5 ms each, a
// 2-second transaction timeout, which the coordinator enforces every 10 s at most) commits between
// records when commit.interval.ms has passed, as Kafka Streams commits between iterations: its
// transactions are never aborted by the coordinator, the input is committed to its end, and every
// count is exact. Before, the whole fetch was one transaction, aborted by the coordinator at every
// try.
func TestEOSSlowProcessorCommitsWithinTheTransactionTimeout(t *testing.T) {
	if Get(t).StreamsHeartbeatMaxVersion(t) < 1 {
		t.Skip("runs on the Kafka 4.4 line only, for make test's time: it checks the runtime's commit pacing, which does not depend on the broker's version")
	}
	s := newEOSSetup(t, 1)
	want := map[string]int64{}
	produceValues(t, s.b, s.input, keyed(3000, 10, 0, want)...)
	count := countTo(s.output)
	slow := stream.Typed(serde.String, serde.String, func(c *stream.Context, k, v string) error {
		time.Sleep(5 * time.Millisecond) // the workload: a slow processor, not an assertion
		return count(c, k, v)
	})
	a := s.start(t, "a", rtOpts{proc: slow, cfg: eosCfg(t.TempDir(), func(c *config.Config) {
		c.Runtime.TransactionTimeout = 2 * time.Second
	})})
	Eventually(t, 2*time.Minute, func() (bool, string) {
		if done, err := a.returned(); done {
			t.Fatalf("a returned %v", err)
		}
		return caughtUp(t, s.b.Admin(t), s.group, s.input)
	})
	s.finish(t, want, a)
}
