package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/internal/stableoffsets"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// TestRuntimePartitionTimeIsKafkaStreams: the partition time travels with the committed offsets
// between Kafka Streams and Go members, in Kafka Streams' metadata format. A Java member (Kafka
// Streams 4.4) counts records with out-of-order timestamps and stops; the metadata it committed
// holds the largest timestamp it processed. A Go member takes the task: its stream time at Init is
// that time, a later record with an older timestamp does not move it back, and the metadata Go
// commits is byte for byte what Kafka Streams committed for the same partition time.
func TestRuntimePartitionTimeIsKafkaStreams(t *testing.T) {
	s := newRTSetup(t, 1)
	base := time.UnixMilli(1_700_000_000_000)
	latest := base.Add(30 * time.Second)
	var recs []*kgo.Record
	for i := range 20 {
		ts := base.Add(time.Duration(i) * time.Second)
		if i == 10 {
			ts = latest // the largest timestamp, in the middle
		}
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", i%4)), Value: []byte("v"), Timestamp: ts})
	}
	produceAt(t, s, recs...)

	j := startJavaPeer(t, s.b, s.group, s.input, s.output, rtCounts.Name(), javaDefault)
	Eventually(t, javaStart, func() (bool, string) {
		return j.activeTasks().Equal(s.all) && j.currentState() == "RUNNING", j.String()
	})
	s.waitCaughtUp(t)
	j.stop(t)
	javaMeta := committedMetadata(t, s, 0)
	if got := commit.DecodePartitionTime(javaMeta); got != latest.UnixMilli() {
		t.Fatalf("Kafka Streams committed metadata %q (partition time %d); want the largest timestamp it processed, %d",
			javaMeta, got, latest.UnixMilli())
	}

	var atInit atomic.Int64
	count := countTo(s.output)
	proc := &initProbe{
		init: func(c *stream.Context) { atInit.Store(c.StreamTime().UnixMilli()) },
		Processor: stream.Typed(serde.String, serde.String, func(c *stream.Context, k, v string) error {
			return count(c, k, v)
		}),
	}
	g := s.start(t, "go", rtOpts{proc: proc})
	g.runningWith(t, s.all)
	produceAt(t, s, &kgo.Record{Key: []byte("k0"), Value: []byte("v"), Timestamp: base})
	s.waitCaughtUp(t)
	g.stopClean(t)
	if got := atInit.Load(); got != latest.UnixMilli() {
		t.Errorf("the Go member's stream time at Init is %d; want the partition time Kafka Streams committed, %d", got, latest.UnixMilli())
	}
	if goMeta := committedMetadata(t, s, 0); goMeta != javaMeta {
		t.Errorf("Go committed metadata %q for the partition time for which Kafka Streams committed %q", goMeta, javaMeta)
	}
}

// initProbe is a processor whose Init calls init.
type initProbe struct {
	stream.Processor
	init func(c *stream.Context)
}

func (p *initProbe) Init(c *stream.Context) error {
	p.init(c)
	return nil
}

// produceAt writes recs to the setup's input, partition 0, with their own timestamps.
func produceAt(t *testing.T, s *rtSetup, recs ...*kgo.Record) {
	t.Helper()
	produceRecords(t, s.b, s.input, recs...)
}

// produceRecords writes recs to partition 0 of topic, in order.
func produceRecords(t *testing.T, b *Broker, topic string, recs ...*kgo.Record) {
	t.Helper()
	cl := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

// committedMetadata is the metadata committed with the group's offset of input partition p.
func committedMetadata(t *testing.T, s *rtSetup, p int32) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := stableoffsets.Fetch(ctx, s.b.Admin(t), s.group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(s.input, p)
	if !ok {
		t.Fatalf("no committed offset of %s[%d]", s.input, p)
	}
	return o.Metadata
}
