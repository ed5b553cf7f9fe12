package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionCountAge is how long a topic's partition count is trusted before it is asked for again:
// the age after which Kafka's producer refreshes its metadata (metadata.max.age.ms' default), so a
// topic given more partitions is seen as soon as Kafka Streams sees it.
const partitionCountAge = 5 * time.Minute

// partitionCount is a topic's partition count and when it was learned.
type partitionCount struct {
	n  int
	at time.Time
}

// PartitionCount is the number of partitions of topic, as Kafka Streams' record collector asks the
// producer for it before a StreamPartitioner chooses among them. The count is asked of the cluster
// the first time and kept for five minutes (the producer's metadata.max.age.ms). An answer that
// may change (the topic not known yet, its leader moving) is asked again, with the member's
// backoff, for up to request.timeout.ms, as the producer waits for metadata; then, or on any other
// error, PartitionCount fails (Kafka Streams: "This can happen if the topic does not exist").
// Asking creates the topic if the client creates topics as it writes them
// (kgo.AllowAutoTopicCreation).
func (c *Context) PartitionCount(topic string) (int, error) {
	a := c.app
	now := time.Now()
	pc, known := a.partitionCounts[topic]
	if known && now.Sub(pc.at) < partitionCountAge {
		return pc.n, nil
	}
	ctx, cancel := context.WithTimeout(a.runCtx, a.cfg.RequestTimeout)
	defer cancel()
	var n int
	for attempt := 0; ; attempt++ {
		var err error
		if n, err = askPartitionCount(ctx, a.cl, topic); err == nil {
			break
		}
		if !kerr.IsRetriable(err) {
			return 0, fmt.Errorf("stream: the partitions of %s for task %s: %w", topic, c.task.id, err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("stream: the partitions of %s for task %s, not known within request.timeout.ms (%v); the topic may not exist: %w",
				topic, c.task.id, a.cfg.RequestTimeout, err)
		case <-time.After(a.backoff.Delay(attempt)):
		}
	}
	if known && n > pc.n {
		// The topic grew: the producer's view of it may be older than this answer, and would
		// refuse a record placed on a new partition until it refreshes.
		a.cl.ForceMetadataRefresh()
	}
	if a.partitionCounts == nil {
		a.partitionCounts = map[string]partitionCount{}
	}
	a.partitionCounts[topic] = partitionCount{n, now}
	return n, nil
}

// askPartitionCount asks the cluster for topic's partition count, creating the topic if cl creates
// topics as it writes them.
func askPartitionCount(ctx context.Context, cl *kgo.Client, topic string) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	req.AllowAutoTopicCreation, _ = cl.OptValue(kgo.AllowAutoTopicCreation).(bool)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return 0, err
		}
		if len(t.Partitions) == 0 {
			return 0, kerr.UnknownTopicOrPartition // a topic being created: asked again
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("the cluster did not answer for it")
}
