package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/stableoffsets"
	"github.com/streamsgroup/streamsgroup/internal/transport"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/taskoffsets"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// counter is a Go member built only from the library's processing pieces (commit, consume,
// taskoffsets) running the Java peer's topology: it counts the records of its input by key in a
// store per task, writes every new count to the store's changelog (partition = the task's) and to
// the output topic, as Kafka Streams' LongSerializer does (8 bytes, big-endian). Every record the
// Consumer hands out is logged with a global sequence number, as are fetched batches and the returns
// of OnTasksRevoked, so tests can order them.
type counter struct {
	t         *testing.T
	name      string
	topo      *topology.Topology
	changelog string
	output    string
	seq       *atomic.Int64

	cl      *kgo.Client
	mgr     *membership.Manager
	commits *commit.Committer
	cons    *consume.Consumer
	offsets *taskoffsets.Tracker

	stop     context.CancelFunc
	loopDone chan struct{}
	closed   bool

	mu        sync.Mutex
	stores    map[tasks.ID]map[string]int64
	applied   map[tasks.TopicPartition]int64 // where each replica store stands in its changelog
	handouts  []handout
	fetched   []fetchedBatch
	revokedAt map[tasks.ID]int64 // sequence number when OnTasksRevoked returned, per revoked task
	assigned  tasks.Assignment   // latest assignment the application was given
	errs      []string
	gate      chan struct{} // non-nil: the processing loop waits before its next Poll until it is closed
	atGate    bool          // the processing loop is waiting at the gate (holding no batch)
	events    []membership.Event
}

// handout is one record the Consumer handed out.
type handout struct {
	seq     int64
	task    tasks.ID
	role    consume.Role
	restore bool
	tp      tasks.TopicPartition
	offset  int64
}

type fetchedBatch struct {
	seq int64
	tp  tasks.TopicPartition
}

type counterOpts struct {
	cfg       func(*config.Config)
	transport func(membership.Transport) membership.Transport
	gated     bool
	memberID  string
}

func (c *counter) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, partition int32, _ kgo.FetchBatchMetrics) {
	c.mu.Lock()
	c.fetched = append(c.fetched, fetchedBatch{seq: c.seq.Add(1), tp: tasks.TopicPartition{Topic: topic, Partition: partition}})
	c.mu.Unlock()
}

// startCounter starts a counter member of group over input (read by topo's subtopology "0") writing
// output; seq orders the logs of several counters of one test.
func startCounter(t *testing.T, b *Broker, group, name string, topo *topology.Topology, output string, seq *atomic.Int64, o counterOpts) *counter {
	t.Helper()
	sub, _ := topo.Subtopology("0")
	c := &counter{
		t: t, name: name, topo: topo, output: output, seq: seq,
		stores: map[tasks.ID]map[string]int64{}, applied: map[tasks.TopicPartition]int64{}, revokedAt: map[tasks.ID]int64{},
		loopDone: make(chan struct{}),
	}
	if len(sub.StateChangelogTopics) > 0 {
		c.changelog = sub.StateChangelogTopics[0].Name
	}
	if o.gated {
		c.gate = make(chan struct{})
	}
	router, err := tasks.NewRouter(topo)
	if err != nil {
		t.Fatal(err)
	}
	c.cl = b.Client(t, kgo.ClientID(name), kgo.RecordPartitioner(router.Partitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond), kgo.WithHooks(c))

	cfg := config.Default(group)
	cfg.RetryBackoff = 50 * time.Millisecond
	cfg.RetryBackoffMax = 500 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.MaxPollInterval = 30 * time.Second
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	if c.commits, err = commit.New(c.cl, cfg, topo); err != nil {
		t.Fatal(err)
	}
	app := commit.OnRevoke(c.commits, func(ctx context.Context, revoked tasks.Set) (commit.Offsets, error) {
		if err := c.cl.Flush(ctx); err != nil {
			return nil, err
		}
		return c.cons.Processed(revoked), nil
	}, (*counterApp)(c))
	log := testLogger.With("test_member", name)
	if c.cons, err = consume.New(c.cl, topo, c.commits, consume.WithListener(app),
		consume.WithChangelogStart(c.storedAt), consume.WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	if c.offsets, err = taskoffsets.New(c.cl, topo, c.cons); err != nil {
		t.Fatal(err)
	}
	opts := []membership.Option{membership.WithListener((*stampRevoked)(c)), membership.WithTaskOffsets(c.offsets),
		membership.WithLogger(log)}
	if o.memberID != "" {
		opts = append(opts, membership.WithMemberID(o.memberID))
	}
	if o.transport != nil {
		opts = append(opts, membership.WithTransport(o.transport(defaultTestTransport(c.cl, cfg))))
	}
	if c.mgr, err = membership.New(c.cl, cfg, topo, opts...); err != nil {
		t.Fatal(err)
	}
	c.commits.Bind(c.mgr)
	events := c.mgr.Events()
	go func() {
		for e := range events {
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
		}
	}()
	if err := c.mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go c.loop(ctx)
	t.Cleanup(func() { c.close(t) })
	return c
}

// loop polls, applies changelog records, counts input records, and commits every 200 ms.
func (c *counter) loop(ctx context.Context) {
	defer close(c.loopDone)
	lastCommit := time.Now()
	for ctx.Err() == nil {
		c.mu.Lock()
		gate := c.gate
		c.mu.Unlock()
		if gate != nil {
			c.mu.Lock()
			c.atGate = true
			c.mu.Unlock()
			select {
			case <-gate:
			case <-ctx.Done():
				return
			}
			c.mu.Lock()
			c.atGate = false
			c.mu.Unlock()
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		b, err := c.cons.Poll(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
		case err != nil:
			c.fail("poll: %v", err)
			return
		default:
			c.apply(b)
		}
		if time.Since(lastCommit) > 200*time.Millisecond {
			lastCommit = time.Now()
			if err := c.cl.Flush(ctx); err == nil {
				if err := c.cons.CommitProcessed(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, commit.ErrTasksLost) {
					c.fail("periodic commit: %v", err)
				}
			}
		}
	}
}

func (c *counter) apply(b *consume.Batch) {
	seq := c.seq.Add(1)
	c.mu.Lock()
	for _, r := range b.Restore {
		st := c.store(r.Task)
		for _, rec := range r.Records {
			if rec.Value == nil {
				delete(st, string(rec.Key))
			} else if len(rec.Value) == 8 {
				st[string(rec.Key)] = int64(binary.BigEndian.Uint64(rec.Value))
			} else {
				c.errs = append(c.errs, fmt.Sprintf("changelog %v@%d: value of %d bytes", r.Partition, rec.Offset, len(rec.Value)))
			}
			c.handouts = append(c.handouts, handout{seq: seq, task: r.Task, role: r.Role, restore: true, tp: r.Partition, offset: rec.Offset})
			c.applied[r.Partition] = rec.Offset + 1
		}
	}
	var out []*kgo.Record
	for _, r := range b.Process {
		st := c.store(r.Task)
		for _, cl := range c.changelogsOf(r.Task) {
			delete(c.applied, cl) // the task writes its changelog now: the store is ahead of what was applied
		}
		for _, rec := range r.Records {
			c.handouts = append(c.handouts, handout{seq: seq, task: r.Task, role: r.Role, tp: r.Partition, offset: rec.Offset})
			if rec.Key == nil {
				continue
			}
			st[string(rec.Key)]++
			val := binary.BigEndian.AppendUint64(nil, uint64(st[string(rec.Key)]))
			if c.changelog != "" {
				out = append(out, &kgo.Record{Topic: c.changelog, Partition: r.Task.Partition, Key: rec.Key, Value: val})
			}
			out = append(out, &kgo.Record{Topic: c.output, Key: rec.Key, Value: val})
		}
	}
	c.mu.Unlock()
	for _, r := range out {
		c.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err != nil {
				c.fail("produce to %s: %v", r.Topic, err)
			}
		})
	}
	for _, fe := range b.Errors {
		c.fail("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
	}
	b.Done()
}

func (c *counter) changelogsOf(id tasks.ID) []tasks.TopicPartition {
	if c.changelog == "" {
		return nil
	}
	return []tasks.TopicPartition{{Topic: c.changelog, Partition: id.Partition}}
}

// storedAt tells the Consumer where a kept store stands (consume.WithChangelogStart): the counter
// keeps the store of a standby that is no longer assigned, as Kafka Streams keeps its state
// directory, so that a task that comes back (Kafka 4.2 and 4.3 brokers take a standby away before
// they make it active) restores only the rest.
func (c *counter) storedAt(id tasks.ID, tp tasks.TopicPartition) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stores[id] == nil {
		return 0, false
	}
	next, ok := c.applied[tp]
	return next, ok
}

func (c *counter) store(id tasks.ID) map[string]int64 {
	st := c.stores[id]
	if st == nil {
		st = map[string]int64{}
		c.stores[id] = st
	}
	return st
}

func (c *counter) fail(format string, args ...any) {
	c.mu.Lock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// counterApp is the application's listener behind commit.OnRevoke: it keeps a store per owned task.
type counterApp counter

func (a *counterApp) OnTasksAssigned(_ context.Context, as tasks.Assignment, _ bool) error {
	c := (*counter)(a)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assigned = as
	for id := range c.stores {
		if !as.All().Contains(id) && !c.kept(id) {
			delete(c.stores, id)
		}
	}
	return nil
}

// kept reports whether the store of a task no longer held is kept: one whose changelog position is
// known (a standby's).
func (c *counter) kept(id tasks.ID) bool {
	for _, tp := range c.changelogsOf(id) {
		if _, ok := c.applied[tp]; !ok {
			return false
		}
	}
	return c.changelog != ""
}

func (a *counterApp) OnTasksRevoked(_ context.Context, revoked tasks.Set) error {
	c := (*counter)(a)
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range revoked.All() {
		delete(c.stores, id)
		for _, tp := range c.changelogsOf(id) {
			delete(c.applied, tp)
		}
	}
	return nil
}

func (a *counterApp) OnAllTasksLost(context.Context, tasks.Assignment) error {
	c := (*counter)(a)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stores = map[tasks.ID]map[string]int64{}
	c.applied = map[tasks.TopicPartition]int64{}
	return nil
}

// stampRevoked is the member's listener: the Consumer, with the moment OnTasksRevoked returned logged.
type stampRevoked counter

func (s *stampRevoked) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	c := (*counter)(s)
	err := c.cons.OnTasksRevoked(ctx, revoked)
	if err == nil {
		seq := c.seq.Add(1)
		c.mu.Lock()
		for id := range revoked.All() {
			c.revokedAt[id] = seq
		}
		c.mu.Unlock()
	}
	return err
}

func (s *stampRevoked) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	return (*counter)(s).cons.OnTasksAssigned(ctx, a, ready)
}

func (s *stampRevoked) OnAllTasksLost(ctx context.Context, lost tasks.Assignment) error {
	return (*counter)(s).cons.OnAllTasksLost(ctx, lost)
}

// openGate lets a gated counter poll again.
func (c *counter) openGate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gate != nil {
		close(c.gate)
		c.gate = nil
	}
}

// closeGate makes the counter stop before its next Poll (it holds no batch while it waits).
func (c *counter) closeGate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gate == nil {
		c.gate = make(chan struct{})
	}
}

// waitAtGate waits until a counter whose gate was closed stopped before its next Poll.
func (c *counter) waitAtGate(t *testing.T) {
	t.Helper()
	Eventually(t, settle, func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.atGate, c.name + " has not reached its gate"
	})
}

// close closes the member gracefully (revoke, commit, leave), then stops the processing loop.
func (c *counter) close(t *testing.T) {
	if c.closed {
		return
	}
	c.closed = true
	c.openGate()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.mgr.Close(ctx); err != nil {
		t.Errorf("%s: close: %v", c.name, err)
	}
	c.stop()
	<-c.loopDone
	c.offsets.Close()
	if errs := c.errors(); len(errs) > 0 {
		t.Errorf("%s: %s", c.name, strings.Join(errs, "; "))
	}
}

func (c *counter) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

func (c *counter) log() []handout {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]handout(nil), c.handouts...)
}

func (c *counter) active() tasks.Set {
	a, _ := c.mgr.Assignment()
	return a.Active
}

func (c *counter) String() string {
	a, _ := c.mgr.Assignment()
	return fmt.Sprintf("%s(%s epoch %d %v)", c.name, c.mgr.State(), c.mgr.Snapshot().Epoch, a)
}

// produceKeyed writes n records to topic with keys k0…k<keys-1> in turn (partitioned by key), and
// returns how many records each key got.
func produceKeyed(t *testing.T, b *Broker, topic string, n, keys, from int) map[string]int64 {
	t.Helper()
	cl := b.Client(t, kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	counts := map[string]int64{}
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		k := fmt.Sprintf("k%d", i%keys)
		counts[k]++
		recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
	return counts
}

// caughtUp reports whether group has committed every input partition at its end offset.
func caughtUp(t *testing.T, adm *kadm.Client, group, input string) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, input)
	if err != nil {
		return false, err.Error()
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, err.Error()
	}
	var behind []string
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(input, o.Partition)
		if !ok || c.At < o.Offset {
			at := int64(-1)
			if ok {
				at = c.At
			}
			behind = append(behind, fmt.Sprintf("%s[%d] committed %d of %d", input, o.Partition, at, o.Offset))
		}
	})
	sort.Strings(behind)
	return len(behind) == 0, strings.Join(behind, "; ")
}

// readCounts reads every record of the output topic: per key, the counts in the order written.
func readCounts(t *testing.T, b *Broker, topic string) map[string][]int64 {
	t.Helper()
	adm := b.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	out := map[string][]int64{}
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (left %v)", topic, ctx.Err(), remaining)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 8 {
				t.Errorf("output %s[%d]@%d: value of %d bytes", topic, r.Partition, r.Offset, len(r.Value))
				return
			}
			out[string(r.Key)] = append(out[string(r.Key)], int64(binary.BigEndian.Uint64(r.Value)))
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
	}
	return out
}

// checkCountedOnce fails the test unless, for every key, the output holds exactly the counts 1…n in
// order, n being how many records of that key were produced: none lost, none counted twice.
func checkCountedOnce(t *testing.T, got map[string][]int64, want map[string]int64) {
	t.Helper()
	var bad []string
	for k, n := range want {
		seq := got[k]
		ok := int64(len(seq)) == n
		for i := 0; ok && i < len(seq); i++ {
			ok = seq[i] == int64(i+1)
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: produced %d, counts %v", k, n, seq))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("%s: counted but never produced", k))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("output is not every input record counted once:\n%s", strings.Join(bad, "\n"))
	}
}

func addCounts(into map[string]int64, more map[string]int64) {
	for k, n := range more {
		into[k] += n
	}
}

// defaultTestTransport is the transport a Manager builds for itself, for tests that wrap it.
func defaultTestTransport(cl *kgo.Client, cfg config.Config) membership.Transport {
	return transport.New(cl, cfg.ApplicationID, cfg.RequestTimeout,
		heartbeat.Backoff{Min: cfg.RetryBackoff, Max: cfg.RetryBackoffMax, Rand: rand.Float64})
}

// blackhole is a transport whose heartbeats can be cut off, as a network partition between the
// member and its coordinator would: while down, every heartbeat fails without reaching the broker.
type blackhole struct {
	membership.Transport
	down atomic.Bool
	// noConfigs answers the group's configs as a broker does to a client without DESCRIBE_CONFIGS
	// on the group: the member's session guard stays off.
	noConfigs bool
}

// GroupConfigs is the wrapped transport's, or a GROUP_AUTHORIZATION_FAILED answer with noConfigs.
func (b *blackhole) GroupConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error) {
	if !b.noConfigs {
		return b.Transport.GroupConfigs(ctx, names...)
	}
	resp := kmsg.NewPtrDescribeConfigsResponse()
	r := kmsg.NewDescribeConfigsResponseResource()
	r.ResourceType, r.ErrorCode = kmsg.ConfigResourceTypeGroupConfig, kerr.GroupAuthorizationFailed.Code
	resp.Resources = append(resp.Resources, r)
	return resp, nil
}

var errBlackholed = errors.New("test: heartbeats are cut off")

func (b *blackhole) Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	if b.down.Load() {
		return nil, errBlackholed
	}
	return b.Transport.Heartbeat(ctx, req)
}

// committedInputs is what group has committed on topic: offset by partition (none for a group that
// does not exist).
func committedInputs(t *testing.T, b *Broker, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetched, err := stableoffsets.Fetch(ctx, b.Admin(t), group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("fetching %s's offsets: %v", group, err)
	}
	out := map[int32]int64{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}
