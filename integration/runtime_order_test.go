package integration

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// A task with two inputs (as a join reads them) processes their records in timestamp order across
// the two, as Kafka Streams documents for max.task.idle.ms (default 0: it waits only for records
// the brokers are known to hold), and does not stall on an input with no records at all.

// orderApp runs an app whose one subtopology reads left and right (one partition each) and notes
// "topic@timestamp" of every record it processes.
type orderApp struct {
	mu   sync.Mutex
	seen []string
}

func (o *orderApp) saw() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

func startOrderApp(t *testing.T, b *Broker, group, left, right string) *orderApp {
	t.Helper()
	o := &orderApp{}
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{left, right},
		CopartitionGroups: [][]string{{left, right}}})
	label := map[string]string{left: "left", right: "right"}
	proc := stream.ProcessorFunc(func(_ *stream.Context, r *stream.Record) error {
		o.mu.Lock()
		o.seen = append(o.seen, fmt.Sprintf("%s@%d", label[r.Topic], r.Timestamp.UnixMilli()))
		o.mu.Unlock()
		return nil
	})
	app, err := stream.New(baseConfig(b, group), topo, stream.Processors{"0": proc}, stream.WithLogger(slog.New(newLogRing(200))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return o
}

// produceTimed writes one record per timestamp (unix ms) to partition 0 of topic.
func produceTimed(t *testing.T, b *Broker, topic string, ts ...int64) {
	t.Helper()
	var recs []*kgo.Record
	for _, ms := range ts {
		recs = append(recs, &kgo.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(ms)})
	}
	produceRecords(t, b, topic, recs...)
}

func waitSeen(t *testing.T, o *orderApp, want []string) {
	t.Helper()
	Eventually(t, settle, func() (bool, string) {
		got := o.saw()
		return len(got) >= len(want), fmt.Sprintf("processed %v, want %v", got, want)
	})
	if got := o.saw(); !slices.Equal(got, want) {
		t.Fatalf("processed %v, want %v (timestamp order across the inputs)", got, want)
	}
}

func TestRuntimeOrdersTwoInputsByTimestamp(t *testing.T) {
	b := Get(t)
	group, left, right := Name(t, "app"), Name(t, "left"), Name(t, "right")
	b.CreateTopic(t, left, 1)
	b.CreateTopic(t, right, 1)
	b.DeleteGroupAtEnd(t, group)
	// Written one topic after the other: each input's records in offset order, their timestamps
	// interleaved.
	produceTimed(t, b, left, 10, 30, 50, 70)
	produceTimed(t, b, right, 20, 40, 60)
	o := startOrderApp(t, b, group, left, right)
	waitSeen(t, o, []string{"left@10", "right@20", "left@30", "right@40", "left@50", "right@60", "left@70"})

	// right has nothing more: left's new records go on without it (max.task.idle.ms=0).
	produceTimed(t, b, left, 80, 90)
	waitSeen(t, o, []string{"left@10", "right@20", "left@30", "right@40", "left@50", "right@60", "left@70", "left@80", "left@90"})
}

// An input that never had a record is in no fetch answer: the task learns from the brokers that
// it is empty, and processes the other input.
func TestRuntimeTwoInputsOneEmptyDoesNotStall(t *testing.T) {
	b := Get(t)
	group, left, right := Name(t, "app"), Name(t, "left"), Name(t, "right")
	b.CreateTopic(t, left, 1)
	b.CreateTopic(t, right, 1)
	b.DeleteGroupAtEnd(t, group)
	produceTimed(t, b, left, 5, 6, 7)
	o := startOrderApp(t, b, group, left, right)
	waitSeen(t, o, []string{"left@5", "left@6", "left@7"})
}
