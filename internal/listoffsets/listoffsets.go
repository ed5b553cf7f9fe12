// Package listoffsets lists the start and end offsets of topics' partitions through kadm, keyed by
// tasks.TopicPartition: the one place consume (restores) and taskoffsets (changelog ends) list them.
package listoffsets

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// Lister lists offsets through a kadm client.
type Lister struct{ Admin *kadm.Client }

// Starts lists the start (log start) offsets of every partition of topics. offsets holds every
// partition listed without an error; partErr is the first partition that failed, if any (the others
// are still usable); err is a failure of the whole listing.
func (l Lister) Starts(ctx context.Context, topics []string) (offsets map[tasks.TopicPartition]int64, partErr, err error) {
	return read(l.Admin.ListStartOffsets(ctx, topics...))
}

// Ends lists the end offsets (high watermarks) of every partition of topics, as Starts does.
func (l Lister) Ends(ctx context.Context, topics []string) (offsets map[tasks.TopicPartition]int64, partErr, err error) {
	return read(l.Admin.ListEndOffsets(ctx, topics...))
}

// Bounds lists the start and the end offsets of every partition of topics; a partition that failed
// in either listing is the error, as a failure of the whole listing is.
func (l Lister) Bounds(ctx context.Context, topics []string) (start, end map[tasks.TopicPartition]int64, err error) {
	var partErr error
	if start, partErr, err = l.Starts(ctx, topics); err == nil {
		err = partErr
	}
	if err != nil {
		return nil, nil, err
	}
	if end, partErr, err = l.Ends(ctx, topics); err == nil {
		err = partErr
	}
	if err != nil {
		return nil, nil, err
	}
	return start, end, nil
}

func read(listed kadm.ListedOffsets, err error) (map[tasks.TopicPartition]int64, error, error) {
	if err != nil {
		return nil, nil, err
	}
	out := make(map[tasks.TopicPartition]int64)
	var first error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			if first == nil {
				first = &PartitionError{Topic: o.Topic, Partition: o.Partition, Err: o.Err}
			}
			return
		}
		out[tasks.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	})
	return out, first, nil
}

// PartitionError is a partition the listing failed for (Partition -1: the whole topic, e.g.
// UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist).
type PartitionError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *PartitionError) Error() string {
	return fmt.Sprintf("%s[%d]: %v", e.Topic, e.Partition, e.Err)
}

// Unwrap returns the partition's error.
func (e *PartitionError) Unwrap() error { return e.Err }
