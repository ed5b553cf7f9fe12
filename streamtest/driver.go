package streamtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/consumerclose"
	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Wait bounds how long reading an output waits for the application to process what was piped.
const Wait = 30 * time.Second

// Driver runs one application (a topology and its processors, as stream.New takes them) until
// Close.
type Driver struct {
	c       *kfake.Cluster
	g       *coordinator
	cl      *kgo.Client
	adm     *kadm.Client
	app     *stream.App
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // Run's result, once done is closed
	dir     string
	inputs  []string         // the topics the application reads (sources and repartition topics)
	globals []string         // the topics of its global stores
	eos     bool             // the application runs exactly_once_v2
	read    map[string]int64 // per output topic, the next offset to read
	// ahead is how far the application's wall clock is ahead of the real one (AdvanceWallClock).
	ahead atomic.Int64
}

// New starts the application cfg, topo and procs describe (cfg needs only application.id; the
// driver sets bootstrap.servers, and state.dir to a directory of its own unless set). It returns once
// the application runs with every task; Close stops it.
func New(cfg config.Config, topo *topology.Topology, procs stream.Processors, opts ...stream.Option) (*Driver, error) {
	if topo == nil {
		return nil, errors.New("streamtest: the topology is required")
	}
	var seed, subs []string
	for _, s := range topo.Subtopologies() {
		subs = append(subs, s.ID)
		seed = append(seed, s.SourceTopics...)
		for _, ti := range slices.Concat(s.RepartitionSourceTopics, s.StateChangelogTopics) {
			seed = append(seed, ti.Name)
		}
	}
	for _, g := range topo.GlobalStores() {
		seed = append(seed, g.Topic)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1), kfake.SeedTopics(1, seed...))
	if err != nil {
		return nil, fmt.Errorf("streamtest: starting the fake cluster: %w", err)
	}
	d := &Driver{c: c, done: make(chan struct{}), read: map[string]int64{}}
	ok := false
	defer func() {
		if !ok {
			d.closeCluster()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	if err := kfakestreams.Advertise(ctx, c, 1, 1, 1); err != nil {
		return nil, fmt.Errorf("streamtest: %w", err)
	}
	// Metadata is not cached for long: an output topic looked up before the application created it
	// must be found once it did.
	if d.cl, err = kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(10*time.Millisecond)); err != nil {
		return nil, err
	}
	d.adm = kadm.NewClient(d.cl)
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, d.cl)
	if err != nil {
		return nil, fmt.Errorf("streamtest: %w", err)
	}
	names := map[[16]byte]string{}
	for _, t := range meta.Topics {
		names[t.TopicID] = *t.Topic
	}
	d.g = newCoordinator(c, subs, names)
	for _, g := range topo.GlobalStores() {
		d.globals = append(d.globals, g.Topic)
	}
	for _, s := range topo.Subtopologies() {
		d.inputs = append(d.inputs, s.SourceTopics...)
		for _, ti := range s.RepartitionSourceTopics {
			d.inputs = append(d.inputs, ti.Name)
		}
	}

	cfg = cfg.Clone()
	d.eos = cfg.Runtime.Guarantee == config.ExactlyOnceV2
	cfg.BootstrapServers = c.ListenAddrs()
	if cfg.StateDir == "" {
		if d.dir, err = os.MkdirTemp("", "streamtest-"); err != nil {
			return nil, err
		}
		cfg.StateDir = d.dir
	}
	if cfg.Runtime.CommitInterval == config.Default(cfg.ApplicationID).Runtime.CommitInterval {
		cfg.Runtime.CommitInterval = 10 * time.Millisecond
	}
	if cfg.Runtime.OuterJoinEmitInterval == 0 {
		// TopologyTestDriver has stream-stream left and outer joins look for records not joined at
		// every record, not once a second of wall-clock time.
		cfg.Runtime.OuterJoinEmitInterval = -1
	}
	if cfg.Runtime.WindowedEmitInterval == 0 {
		// And windowed aggregations that emit final results look for closed windows at every record.
		cfg.Runtime.WindowedEmitInterval = -1
	}
	if cfg.Runtime.StateStoreCacheMaxBytes == 0 {
		// With the record cache, what a table writes depends on when commits happen; without it,
		// every update is written, as Kafka Streams' TopologyTestDriver writes them for records piped
		// one at a time. A test of the cache sets its size.
		cfg.Runtime.StateStoreCacheMaxBytes = -1
	}
	// Sink topics are created as the application first writes them (Kafka's brokers do not create
	// them; TopologyTestDriver needs none). The runtime logs nowhere unless the test's options say.
	base := []stream.Option{stream.WithLogger(slog.New(slog.DiscardHandler)), stream.WithClientOptions(kgo.AllowAutoTopicCreation())}
	if d.app, err = stream.New(cfg, topo, procs, append(base, opts...)...); err != nil {
		return nil, err
	}
	streamhook.SetClock(d.app, func() time.Time { return time.Now().Add(time.Duration(d.ahead.Load())) })
	runCtx, stop := context.WithCancel(context.Background())
	d.cancel = stop
	go func() {
		defer close(d.done)
		d.err = d.app.Run(runCtx)
	}()
	if err := d.until(func() bool { return d.app.State() == stream.Running }); err != nil {
		d.Close()
		return nil, fmt.Errorf("streamtest: the application did not start: %w", err)
	}
	ok = true
	return d, nil
}

// until waits for cond, or the application's end (its error), or Wait.
func (d *Driver) until(cond func() bool) error {
	deadline := time.Now().Add(Wait)
	for !cond() {
		select {
		case <-d.done:
			if d.err != nil {
				return d.err
			}
			return errors.New("streamtest: the application stopped")
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("streamtest: not within %v", Wait)
		}
	}
	return nil
}

// Pipe writes a record to topic (partition 0) with timestamp ts and headers; a nil key or value is
// null.
func (d *Driver) Pipe(topic string, key, value []byte, ts time.Time, headers ...kgo.RecordHeader) error {
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	return d.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: key, Value: value, Timestamp: ts, Headers: headers}).FirstErr()
}

// Settle waits until the application processed every record of its inputs (source and repartition
// topics) and committed it, and its global stores hold every record of their topics, or until it
// failed (its error).
func (d *Driver) Settle() error {
	var behind []string
	err := d.until(func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), Wait)
		defer cancel()
		// The last stable offsets: a transaction's marker is not a record the application commits.
		ends, err := d.adm.ListCommittedOffsets(ctx, d.inputs...)
		if err != nil {
			behind = []string{err.Error()}
			return false
		}
		behind = behind[:0]
		ends.Each(func(o kadm.ListedOffset) {
			tp := tasks.TopicPartition{Topic: o.Topic, Partition: o.Partition}
			if c := d.g.committedOffset(tp); o.Err == nil && o.Offset > 0 && c < o.Offset {
				behind = append(behind, fmt.Sprintf("%s committed %d of %d", tp, c, o.Offset))
			}
		})
		if len(d.globals) > 0 {
			list := d.adm.ListEndOffsets
			if d.eos {
				list = d.adm.ListCommittedOffsets // what read_committed reaches
			}
			ends, err := list(ctx, d.globals...)
			if err != nil {
				behind = append(behind, err.Error())
				return false
			}
			applied := streamhook.GlobalApplied(d.app)
			ends.Each(func(o kadm.ListedOffset) {
				if at := applied[fmt.Sprintf("%s/%d", o.Topic, o.Partition)]; o.Err == nil && at < o.Offset {
					behind = append(behind, fmt.Sprintf("global topic %s[%d] applied to %d of %d", o.Topic, o.Partition, at, o.Offset))
				}
			})
		}
		return len(behind) == 0
	})
	if err != nil && len(behind) > 0 {
		return fmt.Errorf("%w: the application's inputs: %s", err, strings.Join(behind, ", "))
	}
	return err
}

// Raw is one record read from an output topic.
type Raw struct {
	Key, Value []byte // nil: null
	Timestamp  time.Time
	Headers    []kgo.RecordHeader
}

// ReadRaw settles the application and returns the records written to topic since the last read.
func (d *Driver) ReadRaw(topic string) ([]Raw, error) {
	if err := d.Settle(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	end, ok, err := d.endOf(ctx, topic)
	if err != nil {
		return nil, err
	}
	from := d.read[topic]
	if !ok || end.Err != nil || end.Offset <= from {
		return nil, nil
	}
	// read_committed with the transaction markers kept: under exactly-once the last offset is a
	// marker, which says the read reached the end.
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.c.ListenAddrs()...), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
	if err != nil {
		return nil, err
	}
	defer consumerclose.Close(cl)
	var out []Raw
	for from < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("streamtest: reading %s: %w", topic, err)
		}
		if err := fs.Err(); err != nil {
			return nil, fmt.Errorf("streamtest: reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			from = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			out = append(out, Raw{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers})
		})
	}
	d.read[topic] = from
	return out, nil
}

// endOf is the end offset of partition 0 of topic; ok is false when the topic does not exist. The
// broker is asked whether it exists first (a metadata request of its own): the client's cached
// metadata may not know yet of an output topic the application created since the last read, and
// its end would then be missed.
func (d *Driver) endOf(ctx context.Context, topic string) (end kadm.ListedOffset, ok bool, err error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	meta, err := req.RequestWith(ctx, d.cl)
	if err != nil {
		return end, false, err
	}
	if len(meta.Topics) != 1 || meta.Topics[0].ErrorCode != 0 || len(meta.Topics[0].Partitions) == 0 {
		return end, false, nil // no such topic: nothing was written to it
	}
	for {
		ends, err := d.adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return end, false, err
		}
		if end, ok = ends.Lookup(topic, 0); ok && end.Err == nil {
			return end, true, nil
		}
		// The broker has the topic; the client learns of it at its next metadata refresh.
		select {
		case <-ctx.Done():
			return end, false, fmt.Errorf("streamtest: the end of %s: %w", topic, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Store returns the application's store name (its committed state), after settling the
// application.
func (d *Driver) Store(name string) (store.ReadOnly, error) {
	if err := d.Settle(); err != nil {
		return nil, err
	}
	return d.app.Store(name)
}

// App is the application, for what the driver does not wrap (its state, its metrics).
func (d *Driver) App() *stream.App { return d.app }

// AdvanceWallClock moves the application's wall clock by by (Kafka Streams' TopologyTestDriver
// advanceWallClockTime): its wall-clock punctuations due by then fire, and what they write is
// committed, before it returns. The clock also goes on with real time.
func (d *Driver) AdvanceWallClock(by time.Duration) error {
	if by < 0 {
		return fmt.Errorf("streamtest: the wall clock does not go back (%v)", by)
	}
	d.ahead.Add(int64(by))
	// Two commits after the move (the runtime's own count: a commit with no input offsets sends no
	// request): the second began after a loop round that saw the new time, so the punctuations it
	// fired and their writes are in it.
	n := d.app.Metrics().Commits
	return d.until(func() bool { return d.app.Metrics().Commits >= n+2 })
}

// Stop stops the application as its clean close does (what it processed is committed, its tasks
// revoked, the group left), and keeps the fake cluster, so that its outputs can still be read; Close
// then closes the cluster. It returns the application's error, if it failed.
func (d *Driver) Stop() error {
	if d.cancel != nil {
		d.cancel()
		<-d.done
	}
	return d.err
}

// Close stops the application (it commits and leaves the group) and the fake cluster, and returns
// the application's error, if it failed.
func (d *Driver) Close() error {
	if d.cancel != nil {
		d.cancel()
		<-d.done
	}
	d.closeCluster()
	return d.err
}

func (d *Driver) closeCluster() {
	if d.cl != nil {
		d.cl.Close()
	}
	d.c.Close()
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

// Record is a typed record read from an output topic.
type Record[K, V any] struct {
	Key       K
	Value     V
	Timestamp time.Time
	// NullKey and NullValue say the key or value was null (their fields are then zero).
	NullKey, NullValue bool
}

// InputTopic pipes typed records into a topic (Kafka Streams' TestInputTopic).
type InputTopic[K, V any] struct {
	d     *Driver
	topic string
	ks    serde.Serde[K]
	vs    serde.Serde[V]
}

// Input is topic of d with its serdes.
func Input[K, V any](d *Driver, topic string, ks serde.Serde[K], vs serde.Serde[V]) *InputTopic[K, V] {
	return &InputTopic[K, V]{d: d, topic: topic, ks: ks, vs: vs}
}

// Pipe writes one record with timestamp ts.
func (in *InputTopic[K, V]) Pipe(key K, value V, ts time.Time) error {
	kb, err := in.ks.Encode(key)
	if err != nil {
		return err
	}
	vb, err := in.vs.Encode(value)
	if err != nil {
		return err
	}
	if kb == nil {
		kb = []byte{}
	}
	if vb == nil {
		vb = []byte{}
	}
	return in.d.Pipe(in.topic, kb, vb, ts)
}

// OutputTopic reads typed records from a topic (Kafka Streams' TestOutputTopic).
type OutputTopic[K, V any] struct {
	d     *Driver
	topic string
	ks    serde.Serde[K]
	vs    serde.Serde[V]
}

// Output is topic of d with its serdes.
func Output[K, V any](d *Driver, topic string, ks serde.Serde[K], vs serde.Serde[V]) *OutputTopic[K, V] {
	return &OutputTopic[K, V]{d: d, topic: topic, ks: ks, vs: vs}
}

// Read settles the application and returns the records written since the last read, in order.
func (out *OutputTopic[K, V]) Read() ([]Record[K, V], error) {
	raws, err := out.d.ReadRaw(out.topic)
	if err != nil {
		return nil, err
	}
	recs := make([]Record[K, V], 0, len(raws))
	for _, r := range raws {
		rec := Record[K, V]{Timestamp: r.Timestamp, NullKey: r.Key == nil, NullValue: r.Value == nil}
		if !rec.NullKey {
			if rec.Key, err = out.ks.Decode(r.Key); err != nil {
				return nil, fmt.Errorf("streamtest: a key of %s: %w", out.topic, err)
			}
		}
		if !rec.NullValue {
			if rec.Value, err = out.vs.Decode(r.Value); err != nil {
				return nil, fmt.Errorf("streamtest: a value of %s: %w", out.topic, err)
			}
		}
		recs = append(recs, rec)
	}
	return recs, nil
}
