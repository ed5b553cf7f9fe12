package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// fakeGroup is a streams group a kfake cluster answers for one member: it assigns every task of
// subtopology "0" (two partitions) as active at the join, keeps the offsets the member commits (and
// their metadata), and takes its leave. Nothing else of the protocol is played: this is Run's whole
// cycle (build, join, restore, process, commit, revoke on close, close the stores) without a broker.
type fakeGroup struct {
	c *kfake.Cluster

	mu        sync.Mutex
	committed map[tasks.TopicPartition]int64
	metadata  map[tasks.TopicPartition]string
	left      bool
	commits   int
	// commitLog holds the offsets of each OffsetCommit, in order.
	commitLog  []map[tasks.TopicPartition]int64
	heartbeats int
	// epoch and parts are the member's target: the epoch, and the partitions of subtopology "0"
	// it holds as active tasks (setTarget).
	epoch int32
	parts []int32
	// fence: the next heartbeat is answered FENCED_MEMBER_EPOCH (the member loses its tasks and
	// joins again).
	fence bool
	// status is the group's status every heartbeat is answered with.
	status []kmsg.StreamsGroupHeartbeatResponseStatus
	// fenceProducer: the next TxnOffsetCommit is answered PRODUCER_FENCED.
	fenceProducer bool
	// names are the topics' names by ID.
	names map[[16]byte]string
}

// topic is the name of a topic a request names by name or by ID.
func (g *fakeGroup) topic(name string, id [16]byte) string {
	if name != "" {
		return name
	}
	return g.names[id]
}

func newFakeGroup(t *testing.T, topics ...string) *fakeGroup {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topics...))
	mustNotErr(t, err)
	t.Cleanup(c.Close)
	mustNotErr(t, kfakestreams.Advertise(context.Background(), c, 1, 1, 1))
	g := &fakeGroup{epoch: 1, parts: []int32{0, 1}, c: c, committed: map[tasks.TopicPartition]int64{}, metadata: map[tasks.TopicPartition]string{}, names: map[[16]byte]string{}}
	// Offset requests may name topics by ID (OffsetCommit and OffsetFetch v10).
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	mustNotErr(t, err)
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	cl.Close()
	mustNotErr(t, err)
	for _, mt := range meta.Topics {
		g.names[mt.TopicID] = *mt.Topic
	}
	c.ControlKey(int16(kmsg.StreamsGroupHeartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		hb := req.(*kmsg.StreamsGroupHeartbeatRequest)
		resp := hb.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		g.mu.Lock()
		defer g.mu.Unlock()
		resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis, resp.AcceptableRecoveryLag = hb.MemberID, g.epoch, 50, -1
		resp.Status = append([]kmsg.StreamsGroupHeartbeatResponseStatus{}, g.status...)
		g.heartbeats++
		switch {
		case g.fence && hb.MemberEpoch > 0:
			g.fence = false
			resp.ErrorCode = kerr.FencedMemberEpoch.Code
		case hb.MemberEpoch < 0:
			resp.MemberEpoch = hb.MemberEpoch
			g.left = true
		case hb.MemberEpoch < g.epoch:
			resp.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: g.parts}}
			resp.StandbyTasks, resp.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		oc := req.(*kmsg.OffsetCommitRequest)
		resp := oc.ResponseKind().(*kmsg.OffsetCommitResponse)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.commits++
		logged := map[tasks.TopicPartition]int64{}
		g.commitLog = append(g.commitLog, logged)
		for _, tp := range oc.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				key := tasks.TopicPartition{Topic: g.topic(tp.Topic, tp.TopicID), Partition: p.Partition}
				g.committed[key] = p.Offset
				logged[key] = p.Offset
				if p.Metadata != nil {
					g.metadata[key] = *p.Metadata
				}
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	// Transactional offsets count once their transaction commits (kfake ends the transaction).
	pending := map[string]map[tasks.TopicPartition]kmsg.TxnOffsetCommitRequestTopicPartition{}
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		tc := req.(*kmsg.TxnOffsetCommitRequest)
		resp := tc.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.fenceProducer {
			g.fenceProducer = false
			for _, tp := range tc.Topics {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
				for _, p := range tp.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, kerr.ProducerFenced.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, true
		}
		if pending[tc.TransactionalID] == nil {
			pending[tc.TransactionalID] = map[tasks.TopicPartition]kmsg.TxnOffsetCommitRequestTopicPartition{}
		}
		for _, tp := range tc.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				pending[tc.TransactionalID][tasks.TopicPartition{Topic: g.topic(tp.Topic, tp.TopicID), Partition: p.Partition}] = p
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		et := req.(*kmsg.EndTxnRequest)
		g.mu.Lock()
		defer g.mu.Unlock()
		if et.Commit {
			g.commits++
			for key, p := range pending[et.TransactionalID] {
				g.committed[key] = p.Offset
				if p.Metadata != nil {
					g.metadata[key] = *p.Metadata
				}
			}
		}
		delete(pending, et.TransactionalID)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		of := req.(*kmsg.OffsetFetchRequest)
		resp := of.ResponseKind().(*kmsg.OffsetFetchResponse)
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, rg := range of.Groups {
			g2 := kmsg.NewOffsetFetchResponseGroup()
			g2.Group = rg.Group
			for _, tp := range rg.Topics {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
				for _, p := range tp.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset = p, -1
					key := tasks.TopicPartition{Topic: g.topic(tp.Topic, tp.TopicID), Partition: p}
					if o, ok := g.committed[key]; ok {
						rp.Offset = o
						md := g.metadata[key]
						rp.Metadata = &md
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				g2.Topics = append(g2.Topics, rt)
			}
			resp.Groups = append(resp.Groups, g2)
		}
		return resp, nil, true
	})
	return g
}

// setTarget gives the member a new target: epoch, with the partitions parts of subtopology "0".
func (g *fakeGroup) setTarget(epoch int32, parts ...int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch, g.parts = epoch, parts
}

// offsets returns the committed offsets and whether the member left.
func (g *fakeGroup) offsets() (map[tasks.TopicPartition]int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[tasks.TopicPartition]int64, len(g.committed))
	for k, v := range g.committed {
		out[k] = v
	}
	return out, g.left
}

// produceInput writes n records per partition of "in", key k<i%3>, timestamp 1000+i.
func (g *fakeGroup) produceInput(t *testing.T, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	mustNotErr(t, err)
	defer cl.Close()
	for p := range int32(2) {
		for i := range n {
			r := &kgo.Record{Topic: "in", Partition: p, Key: []byte(fmt.Sprint("k", i%3)), Value: []byte("v"), Timestamp: time.UnixMilli(int64(1000 + i))}
			mustNotErr(t, cl.ProduceSync(context.Background(), r).FirstErr())
		}
	}
}

// guaranteeOf is a config change to exactly_once_v2 when eos, none otherwise.
func guaranteeOf(eos bool) func(*config.Config) {
	return func(c *config.Config) {
		if eos {
			c.Runtime.Guarantee = config.ExactlyOnceV2
		}
	}
}

// countApp counts the records of "in" per key in the store "counts" and sends each new count to
// "out", on the fake group's cluster.
func countApp(t *testing.T, g *fakeGroup, mod func(*config.Config), opts ...Option) *App {
	return countAppInit(t, g, mod, nil, opts...)
}

// countProcessor counts records per key in the store "counts" and sends each new count to "out";
// after is called once the record's writes are done, and its error is the record's.
func countProcessor(after func(*Context) error) Processor {
	counts := KeyValue("counts", serde.String, serde.Int64)
	out := Output("out", serde.String, serde.Int64)
	return Typed(serde.String, serde.Bytes, func(c *Context, k string, _ []byte) error {
		n, _, err := counts.Get(c, k)
		if err == nil {
			err = counts.Put(c, k, n+1)
		}
		if err == nil {
			err = out.Send(c, k, n+1)
		}
		if err == nil && after != nil {
			err = after(c)
		}
		return err
	})
}

// withInit is a Processor with an Init that calls init.
type withInit struct {
	Processor
	init func(*Context)
}

func (w withInit) Init(c *Context) error {
	w.init(c)
	return nil
}

// countAppInit is countApp whose processor's Init calls onInit (when not nil).
func countAppInit(t *testing.T, g *fakeGroup, mod func(*config.Config), onInit func(*Context), opts ...Option) *App {
	return countAppFailing(t, g, mod, onInit, -1, opts...)
}

// countAppFailing is countAppInit whose processor fails, after its writes, on the record of "in"[1]
// at offset failAt (-1: never).
func countAppFailing(t *testing.T, g *fakeGroup, mod func(*config.Config), onInit func(*Context), failAt int64, opts ...Option) *App {
	t.Helper()
	proc := countProcessor(func(c *Context) error {
		if r := c.rec; r.Partition == 1 && r.Offset == failAt {
			return errBoom
		}
		return nil
	})
	cfg := testConfig()
	cfg.BootstrapServers = g.c.ListenAddrs()
	cfg.StateDir = t.TempDir()
	cfg.Runtime.CommitInterval = 50 * time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"},
		StateChangelogTopics: []topology.TopicInfo{names.KeyValueChangelog("counts")}})
	var p Processor = proc
	if onInit != nil {
		p = withInit{proc, onInit}
	}
	a, err := New(cfg, topo, Processors{"0": p}, append([]Option{quiet()}, opts...)...)
	mustNotErr(t, err)
	return a
}

// readAll reads every record of topic on g's cluster.
func readAll(t *testing.T, g *fakeGroup, topic string) []*kgo.Record {
	t.Helper()
	// Up to the end offsets as they are now (what was written before the call), with read_committed
	// and the transaction markers kept, since under exactly-once a partition's last offset is one:
	// reading stops when every partition reached its end, not after some time.
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.c.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	mustNotErr(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	mustNotErr(t, err)
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	var out []*kgo.Record
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (left %v)", topic, ctx.Err(), remaining)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

// checkCounts checks the counts in "out": each key's values are 1..n once per task (two tasks, each
// with every key), in whatever order the tasks' records interleave.
func checkCounts(t *testing.T, g *fakeGroup, n int) {
	t.Helper()
	seen := map[string][]uint64{}
	outs := readAll(t, g, "out")
	for _, r := range outs {
		seen[string(r.Key)] = append(seen[string(r.Key)], binary.BigEndian.Uint64(r.Value))
	}
	if len(outs) != 2*3*n || len(seen) != 3 {
		t.Fatalf("%d output records over %d keys; want %d over 3", len(outs), len(seen), 2*3*n)
	}
	for k, vs := range seen {
		slices.Sort(vs)
		for i, v := range vs {
			if v != uint64(i/2+1) {
				t.Fatalf("the counts of %s are %v; want 1..%d twice (once per task)", k, vs, n)
			}
		}
	}
}

// Run's whole cycle against a fake streams group: the member joins and gets both tasks, processes
// every input record, commits the positions periodically with Kafka Streams' partition-time
// metadata, and on a clean stop revokes (committing the final positions), leaves, and returns nil
// in NOT_RUNNING; the output holds one count per input record.
func TestRunProcessesCommitsAndStops(t *testing.T) {
	g := newFakeGroup(t, "in", "out", countsLog)
	g.produceInput(t, 30)
	var states []State
	a := countApp(t, g, nil, WithStateListener(func(_, to State) { states = append(states, to) }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	defer cancel()
	go func() { done <- a.Run(ctx) }()
	waitCommitted(t, g, a, map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after a clean stop: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	if _, left := g.offsets(); !left {
		t.Error("the member did not leave")
	}
	if a.State() != NotRunning || fmt.Sprint(states[len(states)-2:]) != "[PENDING_SHUTDOWN NOT_RUNNING]" {
		t.Errorf("state %v, changes %v", a.State(), states)
	}
	g.mu.Lock()
	md := g.metadata[tasks.TopicPartition{Topic: "in", Partition: 1}]
	g.mu.Unlock()
	if md != "AgAAAAAAAAQF" { // partition time 1029, the largest timestamp processed from in[1]
		t.Errorf("in[1]'s commit metadata %q; want Kafka Streams' partition time 1029 (AgAAAAAAAAQF)", md)
	}
	// 30 records per partition over 3 keys: each key's count reaches 10 in each task.
	checkCounts(t, g, 10)
}

// A clean stop whose persistent store fails to close is not a clean stop: Run returns the store's
// error, in ERROR, so that nobody takes it for one.
func TestRunReturnsAStoreThatFailedToClose(t *testing.T) {
	g := newFakeGroup(t, "in", "out", countsLog)
	g.produceInput(t, 3)
	k := &closeFailingKind{fakeKind: fakeKind{persistent: true}}
	a := countApp(t, g, nil, WithStores(k))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	defer cancel()
	go func() { done <- a.Run(ctx) }()
	waitCommitted(t, g, a, map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 3, {Topic: "in", Partition: 1}: 3})
	cancel()
	err := <-done
	if !errors.Is(err, errBoom) || a.State() != Error {
		t.Fatalf("Run: %v, state %v; want the store's close error, in ERROR", err, a.State())
	}
	if want := "stream: the application stopped, but a store failed to close (its next start restores it from the changelog): "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q", err.Error())
	}
}

// closeFailingKind is a fakeKind whose engines fail to close.
type closeFailingKind struct{ fakeKind }

func (k *closeFailingKind) Open(loc store.Location) (store.Engine, error) {
	eng, err := k.fakeKind.Open(loc)
	if err != nil {
		return nil, err
	}
	return closeFailing{eng}, nil
}

type closeFailing struct{ store.Engine }

func (closeFailing) Close() error { return errBoom }

// runUntil runs a until g holds want as the committed offsets of "in", then stops it cleanly and
// returns Run's result.
func runUntil(t *testing.T, g *fakeGroup, a *App, want map[tasks.TopicPartition]int64) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitCommitted(t, g, a, want)
	cancel()
	return <-done
}

// A second run of the application goes on where the first stopped: its in-memory store restored
// from the changelog, its inputs from the committed offsets, its stream time from their metadata
// (Init sees the first run's 1029), as Kafka Streams' next owner of a task does.
func TestRunGoesOnFromTheLastRun(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("eos=%v", eos), func(t *testing.T) {
			g := newFakeGroup(t, "in", "out", countsLog)
			mod := guaranteeOf(eos)
			g.produceInput(t, 30)
			first := countApp(t, g, mod)
			want := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30}
			mustNotErr(t, runUntil(t, g, first, want))

			g.produceInput(t, 30) // offsets 30..59, timestamps 1000..1029 again
			var inits []int64
			var mu sync.Mutex
			second := countAppInit(t, g, func(c *config.Config) {
				mod(c)
				c.StateDir = first.cfg.StateDir
			}, func(c *Context) {
				mu.Lock()
				inits = append(inits, c.StreamTime().UnixMilli())
				mu.Unlock()
			})
			want = map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 60, {Topic: "in", Partition: 1}: 60}
			mustNotErr(t, runUntil(t, g, second, want))
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(inits) != "[1029 1029]" {
				t.Errorf("stream time at Init %v; want the committed partition time 1029 for both tasks", inits)
			}
			checkCounts(t, g, 20) // 10 of each run
		})
	}
}

// Under at-least-once a task without a committed input offset commits where its inputs start
// before it processes a record, so that a member stopped before its first periodic commit leaves
// no state behind that its successor would take for an upgrade gone wrong: the first commit naming
// each input partition holds offset 0, where the first run starts.
func TestRunCommitsWhereNewTasksStartFirst(t *testing.T) {
	g := newFakeGroup(t, "in", "out", countsLog)
	g.produceInput(t, 30)
	a := countApp(t, g, nil)
	want := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30}
	mustNotErr(t, runUntil(t, g, a, want))
	g.mu.Lock()
	defer g.mu.Unlock()
	first := map[tasks.TopicPartition]int64{}
	for _, c := range g.commitLog {
		for tp, o := range c {
			if _, ok := first[tp]; !ok {
				first[tp] = o
			}
		}
	}
	if fmt.Sprint(first) != "map[in[0]:0 in[1]:0]" {
		t.Fatalf("first commit of each input %v (commits %v); want offset 0 of both, before any record", first, g.commitLog)
	}
}

// A task whose Init writes to its store while its input is empty (no record ever processed) is not
// taken for orphaned state at its next start: before its Init ran it committed where its inputs
// start, so its state has committed offsets beside it. Under either guarantee.
func TestRunInitWritesOnAnEmptyInputAreNotRefused(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("eos=%v", eos), func(t *testing.T) {
			g := newFakeGroup(t, "in", "out", countsLog)
			mod := guaranteeOf(eos)
			counts := KeyValue("counts", serde.String, serde.Int64)
			init := func(c *Context) {
				if err := counts.Put(c, "started", 1); err != nil {
					t.Errorf("Init's write: %v", err)
				}
			}
			starts := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 0, {Topic: "in", Partition: 1}: 0}
			mustNotErr(t, runUntil(t, g, countAppInit(t, g, mod, init), starts))
			g.mu.Lock()
			g.left = false
			g.epoch++
			g.mu.Unlock()
			// Restored, and not refused: it processes the next records.
			g.produceInput(t, 1)
			mustNotErr(t, runUntil(t, g, countAppInit(t, g, mod, init), map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 1, {Topic: "in", Partition: 1}: 1}))
		})
	}
}

// The group's offsets gone (deleted with the group) while its changelog stays: the next run
// restores the counts, refuses to process the input again on top of them with an
// *OrphanedStateError naming the group, the task and the store, writes nothing and commits
// nothing; under either guarantee.
func TestRunRefusesStateWithoutCommittedOffsets(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("eos=%v", eos), func(t *testing.T) {
			g := newFakeGroup(t, "in", "out", countsLog)
			mod := guaranteeOf(eos)
			g.produceInput(t, 30)
			want := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30}
			mustNotErr(t, runUntil(t, g, countApp(t, g, mod), want))
			outputs := len(readAll(t, g, "out"))

			g.mu.Lock()
			g.committed, g.metadata, g.left = map[tasks.TopicPartition]int64{}, map[tasks.TopicPartition]string{}, false
			g.epoch++
			g.mu.Unlock()
			second := countApp(t, g, mod)
			err := second.Run(context.Background())
			var oe *OrphanedStateError
			if !errors.As(err, &oe) || oe.Group != testApp || oe.Task.Subtopology != "0" || len(oe.Stores) != 1 ||
				oe.Stores[0].Store != "counts" || oe.Stores[0].Changelog != (tasks.TopicPartition{Topic: countsLog, Partition: oe.Task.Partition}) ||
				oe.Stores[0].Keys != 3 {
				t.Fatalf("Run: %v (%#v); want an *OrphanedStateError for a task of 0 and its store counts with 3 keys", err, oe)
			}
			if n := len(readAll(t, g, "out")); n != outputs {
				t.Errorf("%d records in out after the refusal; want the first run's %d", n, outputs)
			}
			if offs, _ := g.offsets(); len(offs) != 0 {
				t.Errorf("committed %v after the refusal; want nothing", offs)
			}
		})
	}
}

// Finding 1 of the runtime's review: under exactly-once a processor that fails after its writes
// (LogAndFail) stops the application with nothing of the failed record committed: the open
// transaction is aborted (Kafka Streams closes its tasks dirty), so after a restart every count is
// exact, read_committed.
func TestRunExactlyOnceProcessorFailingAfterItsWrites(t *testing.T) {
	g := newFakeGroup(t, "in", "out", countsLog)
	g.produceInput(t, 30)
	eos := func(c *config.Config) { c.Runtime.Guarantee = config.ExactlyOnceV2 }
	first := countAppFailing(t, g, eos, nil, 17)
	err := first.Run(context.Background())
	var pe *ProcessingError
	if !errors.As(err, &pe) || pe.Partition != 1 || pe.Offset != 17 || first.State() != Error {
		t.Fatalf("Run: %v, state %v; want the processing error at in[1]@17, in ERROR", err, first.State())
	}
	if offs, _ := g.offsets(); offs[tasks.TopicPartition{Topic: "in", Partition: 1}] > 17 {
		t.Fatalf("committed %v: past the failed record", offs)
	}
	second := countApp(t, g, func(c *config.Config) {
		eos(c)
		c.StateDir = first.cfg.StateDir
	})
	want := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30}
	mustNotErr(t, runUntil(t, g, second, want))
	checkCounts(t, g, 10)
}

// orderApp is an App on g's cluster whose subtopology "0" reads "left" and "right", copartitioned,
// committing every 50 ms; seenSoFar lists the records task 0_0 processed, as topic@timestamp.
func orderApp(t *testing.T, g *fakeGroup, eos bool) (a *App, seenSoFar func() string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	proc := ProcessorFunc(func(c *Context, r *Record) error {
		if c.Task().Partition == 0 {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s@%d", r.Topic, r.Timestamp.UnixMilli()))
			mu.Unlock()
		}
		return nil
	})
	cfg := testConfig()
	cfg.BootstrapServers = g.c.ListenAddrs()
	cfg.StateDir = t.TempDir()
	cfg.Runtime.CommitInterval = 50 * time.Millisecond
	if eos { // the inputs' ends are their last stable offsets
		cfg.Runtime.Guarantee = config.ExactlyOnceV2
	}
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"left", "right"},
		CopartitionGroups: [][]string{{"left", "right"}}})
	a, err := New(cfg, topo, Processors{"0": proc}, quiet())
	mustNotErr(t, err)
	return a, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(seen)
	}
}

// produceTimed writes records of timestamps ts to partition 0 of topic, in that order.
func (g *fakeGroup) produceTimed(t *testing.T, topic string, ts ...int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	mustNotErr(t, err)
	defer cl.Close()
	for _, ms := range ts {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(ms)}
		mustNotErr(t, cl.ProduceSync(context.Background(), r).FirstErr())
	}
}

// A task with two inputs processes their records in timestamp order in the running loop (records
// fetched from both, queued, and chosen by the machine; an input found empty is listed to learn
// its end), as Kafka Streams' PartitionGroup does; then the other input's new records go on without
// waiting for the empty one (max.task.idle.ms 0).
func TestRunOrdersTwoInputsByTimestamp(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("eos=%v", eos), func(t *testing.T) { runOrdersTwoInputs(t, eos) })
	}
}

func runOrdersTwoInputs(t *testing.T, eos bool) {
	g := newFakeGroup(t, "left", "right")
	g.produceTimed(t, "left", 10, 30, 50, 70)
	g.produceTimed(t, "right", 20, 40, 60)
	a, seenSoFar := orderApp(t, g, eos)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		mustNotErr(t, <-done)
	}()
	waitSeen := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := seenSoFar()
			if got == want {
				return
			}
			if time.Now().After(deadline) || len(got) > len(want) {
				t.Fatalf("processed %s, want %s (Run: %v)", got, want, a.fatalErr())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitSeen("[left@10 right@20 left@30 right@40 left@50 right@60 left@70]")
	g.produceTimed(t, "left", 80, 90)
	waitSeen("[left@10 right@20 left@30 right@40 left@50 right@60 left@70 left@80 left@90]")
	// The queued records' positions are committed as they are processed; task 0_1, which had no
	// record, committed where its inputs start (0) before its Init ran.
	waitCommitted(t, g, a, map[tasks.TopicPartition]int64{{Topic: "left", Partition: 0}: 6, {Topic: "right", Partition: 0}: 3,
		{Topic: "left", Partition: 1}: 0, {Topic: "right", Partition: 1}: 0})
}

// An input that never had a record is in no fetch answer: the task learns from a listing of its
// ends that it is empty (a listing that fails is asked again), and processes the other input; the
// empty one commits where it starts (0), as every input of a task without committed offsets does
// before the task's Init, and nothing more.
func TestRunTwoInputsOneEmptyDoesNotStall(t *testing.T) {
	g := newFakeGroup(t, "left", "right")
	g.produceTimed(t, "left", 5, 6, 7)
	var listings int
	g.c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		g.c.KeepControl()
		g.mu.Lock()
		defer g.mu.Unlock()
		listings++
		if listings == 1 {
			return nil, errors.New("the first listing fails"), true
		}
		return nil, nil, false
	})
	a, seenSoFar := orderApp(t, g, false)
	want := map[tasks.TopicPartition]int64{{Topic: "left", Partition: 0}: 3, {Topic: "right", Partition: 0}: 0,
		{Topic: "left", Partition: 1}: 0, {Topic: "right", Partition: 1}: 0}
	mustNotErr(t, runUntil(t, g, a, want))
	if got := seenSoFar(); got != "[left@5 left@6 left@7]" {
		t.Errorf("processed %s", got)
	}
}

// Under exactly-once Run starts the transactional producer before the member joins: a producer the
// cluster refuses stops Run with a TxnError naming its transactional.id, in ERROR, and the member
// never joined; stopped while the cluster cannot be reached, Run returns nil, as a clean stop.
func TestRunExactlyOnceProducerStart(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		t.Run(fmt.Sprintf("refused=%v", refuse), func(t *testing.T) {
			g := newFakeGroup(t, "in", "out", countsLog)
			tried := make(chan struct{}, 1)
			g.c.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
				g.c.KeepControl()
				select {
				case tried <- struct{}{}:
				default:
				}
				if !refuse {
					return nil, errors.New("unreachable"), true // kfake drops the connection
				}
				resp := req.(*kmsg.InitProducerIDRequest).ResponseKind().(*kmsg.InitProducerIDResponse)
				resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				return resp, nil, true
			})
			var states []State
			a := countApp(t, g, func(c *config.Config) { c.Runtime.Guarantee = config.ExactlyOnceV2 },
				WithStateListener(func(_, to State) { states = append(states, to) }))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			if !refuse {
				<-tried
				cancel()
			}
			err := <-done
			var te *TxnError
			switch {
			case refuse && (!errors.As(err, &te) || te.TransactionalID != a.transactionalID() || !errors.Is(err, kerr.TransactionalIDAuthorizationFailed)):
				t.Fatalf("Run: %v; want the refusal as a TxnError", err)
			case refuse && fmt.Sprint(states) != "[REBALANCING PENDING_ERROR ERROR]":
				t.Errorf("states %v", states)
			case !refuse && (err != nil || fmt.Sprint(states) != "[REBALANCING PENDING_SHUTDOWN NOT_RUNNING]"):
				t.Fatalf("Run %v, states %v; want a clean stop", err, states)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.heartbeats != 0 || g.commits != 0 {
				t.Errorf("the member went on without its producer: %d heartbeats, %d commits", g.heartbeats, g.commits)
			}
		})
	}
}

// waitCommitted waits until g holds exactly want as the committed offsets.
func waitCommitted(t *testing.T, g *fakeGroup, a *App, want map[tasks.TopicPartition]int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		offs, _ := g.offsets()
		if fmt.Sprint(offs) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed %v, want %v (Run: %v)", offs, want, a.fatalErr())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A task revoked while the application runs commits its final position in the revocation (R2),
// stops, and when it comes back it goes on from there with its kept store: every count is exact
// after the hand-over, under both guarantees.
func TestRunRevokesAndGetsATaskBack(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("eos=%v", eos), func(t *testing.T) {
			g := newFakeGroup(t, "in", "out", countsLog)
			g.produceInput(t, 30)
			a := countApp(t, g, func(c *config.Config) {
				if eos {
					c.Runtime.Guarantee = config.ExactlyOnceV2
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			in0, in1 := tasks.TopicPartition{Topic: "in", Partition: 0}, tasks.TopicPartition{Topic: "in", Partition: 1}
			waitCommitted(t, g, a, map[tasks.TopicPartition]int64{in0: 30, in1: 30})
			g.setTarget(2, 0) // 0_1 is revoked
			deadline := time.Now().Add(30 * time.Second)
			for !a.heldSuspended(tid("0", 1)) {
				if time.Now().After(deadline) {
					t.Fatalf("task 0_1 was not revoked (Run: %v)", a.fatalErr())
				}
				time.Sleep(10 * time.Millisecond)
			}
			g.produceInput(t, 30)
			waitCommitted(t, g, a, map[tasks.TopicPartition]int64{in0: 60, in1: 30})
			g.setTarget(3, 0, 1) // and comes back
			waitCommitted(t, g, a, map[tasks.TopicPartition]int64{in0: 60, in1: 60})
			cancel()
			mustNotErr(t, <-done)
			checkCounts(t, g, 20)
		})
	}
}

// heldSuspended reports whether the machine holds task id suspended (with the loop's lock).
func (a *App) heldSuspended(id tasks.ID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, _ := a.mach.Task(id)
	return st == sm.TaskSuspended
}

// A member fenced while it runs loses every task (nothing of its open work is committed) and joins
// again; its tasks go on from their last commit: every count is exact under exactly-once.
func TestRunLosesItsTasksAndJoinsAgain(t *testing.T) {
	g := newFakeGroup(t, "in", "out", countsLog)
	g.produceInput(t, 30)
	a := countApp(t, g, func(c *config.Config) { c.Runtime.Guarantee = config.ExactlyOnceV2 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	in0, in1 := tasks.TopicPartition{Topic: "in", Partition: 0}, tasks.TopicPartition{Topic: "in", Partition: 1}
	waitCommitted(t, g, a, map[tasks.TopicPartition]int64{in0: 30, in1: 30})
	g.mu.Lock()
	g.fence, g.epoch = true, 2
	before := a.Stats()
	g.mu.Unlock()
	g.produceInput(t, 30)
	waitCommitted(t, g, a, map[tasks.TopicPartition]int64{in0: 60, in1: 60})
	cancel()
	mustNotErr(t, <-done)
	if after := a.Stats(); after.Fencings <= before.Fencings || after.Lost.Calls <= before.Lost.Calls {
		t.Errorf("the member was not fenced, or lost no tasks: %+v", after)
	}
	checkCounts(t, g, 20)
}

// The group's statuses that stop Kafka Streams stop Run too, with an error that says what to fix:
// incorrectly partitioned topics at once, source topics missing for two heartbeat intervals, and
// a request to shut the application down.
func TestRunStopsOnTheGroupsStatus(t *testing.T) {
	for _, c := range []struct {
		code   heartbeat.StatusCode
		detail string
		want   string
	}{
		{heartbeat.IncorrectlyPartitionedTopics, "Following topics are not copartitioned: [in]", "are partitioned incorrectly"},
		{heartbeat.MissingSourceTopics, "Source topics in are missing.", "are missing: create them"},
		{heartbeat.ShutdownApplication, "shut down", ErrShutdownRequested.Error()},
	} {
		t.Run(c.detail, func(t *testing.T) {
			g := newFakeGroup(t, "in", "out", countsLog)
			st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
			st.StatusCode, st.StatusDetail = int8(c.code), c.detail
			g.status = []kmsg.StreamsGroupHeartbeatResponseStatus{st}
			a := countApp(t, g, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := a.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), c.want) || a.State() != Error {
				t.Fatalf("Run: %v, state %v; want an error saying %q, in ERROR", err, a.State(), c.want)
			}
			var se *StatusError
			if c.code != heartbeat.ShutdownApplication && (!errors.As(err, &se) || se.Kind.String() == "") {
				t.Errorf("not a *StatusError: %#v", err)
			}
		})
	}
}

// A transactional producer the coordinator fenced is replaced and the work since the last commit
// done again with the new one: every count is exact.
func TestRunReplacesAFencedProducer(t *testing.T) {
	g := newFakeGroup(t, "in", "out", countsLog)
	g.produceInput(t, 30)
	g.fenceProducer = true
	inits := 0
	g.c.ControlKey(int16(kmsg.InitProducerID), func(kmsg.Request) (kmsg.Response, error, bool) {
		g.c.KeepControl()
		g.mu.Lock()
		inits++
		g.mu.Unlock()
		return nil, nil, false
	})
	a := countApp(t, g, func(c *config.Config) { c.Runtime.Guarantee = config.ExactlyOnceV2 })
	want := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30}
	mustNotErr(t, runUntil(t, g, a, want))
	g.mu.Lock()
	defer g.mu.Unlock()
	if inits < 2 {
		t.Errorf("%d InitProducerId requests; want the first producer's and its replacement's", inits)
	}
	checkCounts(t, g, 10)
}

// A write the brokers refuse with INVALID_PRODUCER_EPOCH (the coordinator bumped the producer's
// epoch) fails the transaction: it is aborted, the producer replaced, and the work redone; every
// count is exact.
func TestRunRedoesATransactionWhoseWriteWasFenced(t *testing.T) {
	g := newFakeGroup(t, "in", "out", countsLog)
	g.produceInput(t, 30)
	var once sync.Once
	g.c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		if pr.TransactionID == nil {
			return nil, nil, false
		}
		var resp *kmsg.ProduceResponse
		once.Do(func() { resp = produceRefused(pr, kerr.InvalidProducerEpoch) })
		if resp == nil {
			return nil, nil, false
		}
		return resp, nil, true
	})
	a := countApp(t, g, func(c *config.Config) { c.Runtime.Guarantee = config.ExactlyOnceV2 })
	want := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 30, {Topic: "in", Partition: 1}: 30}
	mustNotErr(t, runUntil(t, g, a, want))
	checkCounts(t, g, 10)
}

// Run leaves nothing running once it returned: its clients (the transactional producer under
// exactly-once among them) are closed, whether it ran or could not start.
func TestRunLeavesNoGoroutines(t *testing.T) {
	for _, started := range []bool{true, false} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			g := newFakeGroup(t, "in", "out", countsLog)
			g.produceInput(t, 3)
			var opts []Option
			if !started {
				// The consumer refuses a client of a consumer group: the build fails once both
				// clients exist.
				opts = append(opts, WithClientOptions(kgo.ConsumerGroup("not-this")))
			}
			a := countApp(t, g, func(c *config.Config) { c.Runtime.Guarantee = config.ExactlyOnceV2 }, opts...)
			if started {
				want := map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 3, {Topic: "in", Partition: 1}: 3}
				mustNotErr(t, runUntil(t, g, a, want))
			} else if err := a.Run(context.Background()); !errors.Is(err, consume.ErrGroupClient) {
				t.Fatalf("Run: %v; want the consumer's refusal", err)
			}
			g.c.Close()
			// goleak retries for about a second; a loaded machine may take longer to end the
			// clients' goroutines once closed.
			err := goleak.Find(before)
			for deadline := time.Now().Add(10 * time.Second); err != nil && time.Now().Before(deadline); err = goleak.Find(before) {
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// StatusError says what the group reported and the broker's detail, when there is one.
func TestStatusErrorMessages(t *testing.T) {
	missing := &StatusError{Kind: membership.EventMissingSourceTopicsTimeout, Topics: []string{"in"}}
	if got := missing.Error(); got != "stream: source topics [in] are missing: create them (with the partition counts the topology needs), then start the application again" {
		t.Errorf("without a detail: %q", got)
	}
	missing.Err = errors.New("Source topics in are missing.")
	if got := missing.Error(); !strings.HasSuffix(got, "start the application again (Source topics in are missing.)") || !errors.Is(missing, missing.Err) {
		t.Errorf("with a detail: %q", got)
	}
	other := &StatusError{Kind: membership.EventStaleTopology}
	if got := other.Error(); got != "stream: the group reported "+membership.EventStaleTopology.String() {
		t.Errorf("another status: %q", got)
	}
	for _, c := range []struct {
		ev   membership.Event
		want string
	}{
		{membership.Event{}, "<nil>"},
		{membership.Event{Status: &heartbeat.Status{}}, "<nil>"},
		{membership.Event{Status: &heartbeat.Status{Detail: "the broker's words"}}, "the broker's words"},
		{membership.Event{Err: errBoom, Status: &heartbeat.Status{Detail: "the broker's words"}}, "boom"},
	} {
		if got := fmt.Sprint(statusErr(c.ev)); got != c.want {
			t.Errorf("statusErr(%+v) = %s, want %s", c.ev, got, c.want)
		}
	}
}

// produceRefused answers every partition of pr with the error e.
func produceRefused(pr *kmsg.ProduceRequest, e *kerr.Error) *kmsg.ProduceResponse {
	resp := pr.ResponseKind().(*kmsg.ProduceResponse)
	for _, tp := range pr.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
		for _, p := range tp.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, e.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
