//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/integration/chaos"
	"github.com/streamsgroup/streamsgroup/internal/stableoffsets"
	"github.com/streamsgroup/streamsgroup/serde"
)

// The exactly-once mode (APP=eos): the members run the counting application (cmd/chaosmember
// -eos); the driver produces rounds of input during the schedule, one record per key per round,
// straight to the broker (not through a member's proxy, so no member's fault hits it), and after the
// schedule waits until the group has processed and committed everything, then reads the input and
// output topics back into eos.json for S4.

// eosSettle bounds the wait, after the last fault, for the group to commit every input record.
const eosSettle = 3 * time.Minute

// eosKey names key i of the input.
func eosKey(i int) string { return fmt.Sprintf("k%03d", i) }

// inputProducer produces the rounds and counts, per key, the records acknowledged.
type inputProducer struct {
	cl     *kgo.Client
	keys   int
	every  time.Duration
	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  map[string]int64
	failed int
}

func (d *driver) startInput() error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.broker.addrs...), kgo.ClientID("chaos-input"), kgo.DefaultProduceTopic("chaos-input"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &inputProducer{cl: cl, keys: d.cfg.Keys, every: d.eosEvery, stop: cancel, done: make(chan struct{}), acked: map[string]int64{}}
	d.input = p
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.every)
		defer t.Stop()
		for round := 1; ctx.Err() == nil; round++ {
			for i := range p.keys {
				k := eosKey(i)
				cl.Produce(context.Background(), &kgo.Record{Key: []byte(k), Value: []byte(strconv.Itoa(round))}, func(_ *kgo.Record, err error) {
					p.mu.Lock()
					defer p.mu.Unlock()
					if err != nil {
						p.failed++
						return
					}
					p.acked[k]++
				})
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}()
	return nil
}

// finishEOS stops the input, waits until the group committed all of it (and converged), and reads
// both topics into eos.json. It is the last step of the schedule; the members still run.
func (d *driver) finishEOS(ctx context.Context, lastFaultEnd time.Time) {
	e := chaos.EOSData{}
	defer func() {
		b, _ := json.Marshal(e)
		_ = os.WriteFile(filepath.Join(d.dir, "eos.json"), b, 0o644)
	}()
	if d.input == nil {
		e.Err = "the input producer never started"
		return
	}
	d.input.stop()
	<-d.input.done
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := d.input.cl.Flush(fctx)
	cancel()
	d.input.cl.Close()
	d.input.mu.Lock()
	e.Acked = d.input.acked
	failed := d.input.failed
	d.input.mu.Unlock()
	e.ProduceFailed = failed
	if err != nil {
		e.Err = fmt.Sprintf("producing the input: %v", err)
	} else if failed > 0 {
		// Not an error of the run: the checker goes by what the input topic holds.
		fmt.Printf("chaos: %d input records failed to be written (their rounds are expected only if the input topic holds them)\n", failed)
	}
	fmt.Printf("chaos: input produced (%d keys); waiting for the group to commit all of it…\n", d.cfg.Keys)

	deadline := time.Now().Add(eosSettle)
	for ctx.Err() == nil {
		if d.settled(ctx) {
			e.Settled = true
			break
		}
		alive := false
		for _, p := range d.procs {
			alive = alive || p.alive()
		}
		if !alive || time.Now().After(deadline) {
			break // nobody left to process the input
		}
		sleep(ctx, 250*time.Millisecond)
	}
	e.SettleMs = float64(time.Since(lastFaultEnd)) / float64(time.Millisecond)
	fmt.Printf("chaos: settled=%v %.1f s after the last fault; reading the topics back\n", e.Settled, e.SettleMs/1000)

	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	in, err := d.readTopic(rctx, "chaos-input")
	if err != nil {
		e.Err = errors.Join(errors.New(e.Err), err).Error()
	}
	e.Input = map[string]int64{}
	e.InputRounds = map[string][]int64{}
	e.InputWindows = map[string]int64{}
	for _, r := range in {
		e.Input[string(r.Key)]++
		e.InputWindows[chaos.WindowKey(string(r.Key), chaos.WindowOf(r.Timestamp.UnixMilli()))]++
		round, perr := strconv.ParseInt(string(r.Value), 10, 64)
		if perr != nil {
			e.Err = fmt.Sprintf("input %d@%d: the value %q is not a round number", r.Partition, r.Offset, r.Value)
			continue
		}
		e.InputRounds[string(r.Key)] = append(e.InputRounds[string(r.Key)], round)
	}
	out, err := d.readTopic(rctx, chaos.EOSOutput)
	if err != nil {
		e.Err = errors.Join(errors.New(e.Err), err).Error()
	}
	for _, r := range out {
		n, derr := serde.Int64.Decode(r.Value)
		if derr != nil {
			e.Err = fmt.Sprintf("output %d@%d: %v", r.Partition, r.Offset, derr)
			continue
		}
		o := chaos.OutputRecord{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Count: n, Time: r.Timestamp.UnixMilli()}
		for _, h := range r.Headers {
			if h.Key == chaos.EOSRoundHeader {
				o.Round, _ = strconv.ParseInt(string(h.Value), 10, 64)
			}
		}
		e.Output = append(e.Output, o)
	}
	wout, err := d.readTopic(rctx, chaos.EOSWindowOutput)
	if err != nil {
		e.Err = errors.Join(errors.New(e.Err), err).Error()
	}
	for _, r := range wout {
		n, derr := serde.Int64.Decode(r.Value)
		if derr != nil {
			e.Err = fmt.Sprintf("windowed output %d@%d: %v", r.Partition, r.Offset, derr)
			continue
		}
		e.WindowOutput = append(e.WindowOutput, chaos.OutputRecord{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Count: n,
			Time: r.Timestamp.UnixMilli()})
	}
}

// settled: the group is converged and its committed offsets on the input reached the input's end
// (under exactly-once the offsets commit with the output, so everything is visible).
func (d *driver) settled(ctx context.Context) bool {
	d.snapMu.Lock()
	s := d.snap
	d.snapMu.Unlock()
	var live []chaos.LiveMember
	for _, p := range d.procs {
		if p.alive() {
			live = append(live, p.live()...)
		}
	}
	if ok, _ := chaos.Converged(s, live, d.cfg.Partitions); !ok {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := d.broker.adm.ListEndOffsets(cctx, "chaos-input")
	if err != nil {
		return false
	}
	committed, err := stableoffsets.Fetch(cctx, d.broker.adm, d.cfg.Group)
	if err != nil {
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ok = false
			return
		}
		c, found := committed.Lookup("chaos-input", o.Partition)
		if o.Offset > 0 && (!found || c.Err != nil || c.At < o.Offset) {
			ok = false
		}
	})
	return ok
}

// readTopic reads every partition of topic from its start to its end offset with read_committed,
// keeping control records so that a partition whose last offset is a transaction marker is seen to
// be read to its end; it returns the data records.
func (d *driver) readTopic(ctx context.Context, topic string) ([]*kgo.Record, error) {
	ends, err := d.broker.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.broker.addrs...), kgo.ClientID("chaos-reader"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	next := map[int32]int64{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("reading %s: %d partitions not read to their end (%v)", topic, len(want), ctx.Err())
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.Canceled) {
				return out, fmt.Errorf("reading %s: %w", topic, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
		for p, end := range want {
			if next[p] >= end {
				delete(want, p)
			}
		}
	}
	return out, nil
}

// applyEOSBounds sets S3's bounds and S2's allowance for the exactly-once app, which is heavier
// than a bare member: the runtime's consumer and transactional producer, and a Pebble database per
// task with its background goroutines and memtables (see README.md for the calibration).
func applyEOSBounds(cfg *chaos.Config) {
	// Calibrated on the short schedule (seed 7): a process peaked at 35 goroutines and 4.4 MiB of
	// Go heap in use with 3–4 tasks (Pebble keeps its memtables and block cache outside the Go
	// heap). A process may hold up to every task, plus the stores of tasks that left it in the last
	// 30 s, so the bounds leave about three times that.
	cfg.GoroutinesBase, cfg.GoroutinesPerMember = 100, 0
	cfg.HeapBaseMiB, cfg.HeapPerMemberMiB = 64, 0
	// A task whose last owner died (kill -9) or lost it mid-transaction reaches its new owner only
	// once the broker aborted that transaction: its committed offsets are not stable before, and
	// the new owner's assignment waits for them. The broker aborts after transaction.timeout.ms
	// (the runtime's 10 s) unless the same process restarts first and fences its producer.
	cfg.ExtraDeadlineMs = 10_000
}
