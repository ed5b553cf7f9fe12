package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// holding counts the records of each task and holds the count back until Flush, which sends it to
// "out" (key: the task); Discard drops it. It fails, after counting, on in[1]@failAt (-1: never).
type holding struct {
	mu        sync.Mutex
	held      map[tasks.ID]uint64
	discarded int
	failAt    int64
}

func (h *holding) Process(c *Context, r *Record) error {
	h.mu.Lock()
	h.held[c.Task()]++
	h.mu.Unlock()
	if r.Partition == 1 && r.Offset == h.failAt {
		return errBoom
	}
	return nil
}

func (h *holding) Flush(c *Context) error {
	h.mu.Lock()
	n := h.held[c.Task()]
	delete(h.held, c.Task())
	h.mu.Unlock()
	if n == 0 {
		return nil
	}
	return c.Send("out", []byte(c.Task().String()), binary.BigEndian.AppendUint64(nil, n))
}

func (h *holding) Discard(c *Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, c.Task())
	h.discarded++
}

// A processor that holds work back (Flusher) writes it at each commit, in it: the sums it sent per
// task are every record counted once, under at-least-once through a clean stop, and under
// exactly-once through a processor failure, whose aborted work is discarded (not flushed) and done
// again by the next run.
func TestRunFlushesHeldWorkAtCommits(t *testing.T) {
	for _, g := range []config.Guarantee{config.AtLeastOnce, config.ExactlyOnceV2} {
		t.Run(string(g), func(t *testing.T) {
			fg := newFakeGroup(t, "in", "out")
			fg.produceInput(t, 30)
			topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}})
			app := func(h *holding, dir string) *App {
				cfg := testConfig()
				cfg.BootstrapServers = fg.c.ListenAddrs()
				cfg.StateDir = dir
				cfg.Runtime.CommitInterval = 50 * time.Millisecond
				cfg.Runtime.Guarantee = g
				a, err := New(cfg, topo, Processors{"0": Connect(h)}, quiet())
				mustNotErr(t, err)
				return a
			}
			dir := t.TempDir()
			all := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30}
			if g == config.ExactlyOnceV2 {
				h := &holding{held: map[tasks.ID]uint64{}, failAt: 17}
				var pe *ProcessingError
				if err := app(h, dir).Run(context.Background()); !errors.As(err, &pe) {
					t.Fatalf("the first run: %v, want the processing error", err)
				}
				if h.discarded == 0 {
					t.Fatal("the failed run's held work was not discarded")
				}
			}
			h := &holding{held: map[tasks.ID]uint64{}, failAt: -1}
			mustNotErr(t, runUntil(t, fg, app(h, dir), all))
			sums := map[string]uint64{}
			for _, r := range readAll(t, fg, "out") {
				sums[string(r.Key)] += binary.BigEndian.Uint64(r.Value)
			}
			if sums["0_0"] != 30 || sums["0_1"] != 30 || len(sums) != 2 {
				t.Fatalf("the flushed sums per task: %v, want 30 each", sums)
			}
		})
	}
}

var _ Flusher = (*holding)(nil)

// A connected Flusher stays one for code that wraps it again; a connected processor that holds
// nothing back flushes nothing.
func TestConnectedKeepsTheFlusher(t *testing.T) {
	h := &holding{held: map[tasks.ID]uint64{}}
	f, ok := Connect(h, StoreName("s")).(Flusher)
	if !ok || flusherOf(Connect(h)) != Flusher(h) {
		t.Fatal("a connected Flusher is not one")
	}
	if flusherOf(Connect(ProcessorFunc(func(*Context, *Record) error { return nil }))) != nil {
		t.Fatal("a connected processor without a cache is taken for a Flusher")
	}
	ctx := &Context{task: &task{id: tasks.ID{Subtopology: "0"}}}
	h.held[ctx.task.id] = 3
	f.Discard(ctx)
	if len(h.held) != 0 || h.discarded != 1 {
		t.Fatalf("Discard did not reach the processor: %v", h.held)
	}
}
