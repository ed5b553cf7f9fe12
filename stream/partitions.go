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
// the first time and kept for five minutes (the producer's metadata.max.age.ms); a topic the cluster
// does not know is an error, as there ("This can happen when the topic does not exist"), unless the
// client creates topics as it writes them (kgo.AllowAutoTopicCreation), when asking creates it.
func (c *Context) PartitionCount(topic string) (int, error) {
	a := c.app
	now := time.Now()
	if pc, ok := a.partitionCounts[topic]; ok && now.Sub(pc.at) < partitionCountAge {
		return pc.n, nil
	}
	ctx, cancel := context.WithTimeout(a.runCtx, a.cfg.RequestTimeout)
	defer cancel()
	n, err := askPartitionCount(ctx, a.cl, topic)
	if err != nil {
		return 0, fmt.Errorf("stream: the partitions of %s for task %s: %w", topic, c.task.id, err)
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
			return 0, fmt.Errorf("the topic may not exist: %w", err)
		}
		if len(t.Partitions) == 0 {
			return 0, fmt.Errorf("the cluster knows no partition of it")
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("the cluster did not answer for it")
}
