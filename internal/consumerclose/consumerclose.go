// Package consumerclose closes a franz-go client that consumes partitions directly
// (AddConsumePartitions, ConsumePartitions) without a fetch starting under the close.
//
// kgo's Close unassigns a direct consumer's partitions and then ends each broker's fetch session,
// but keeps the partitions it was told to consume: a metadata update that lands in between
// assigns them again and starts a fetch loop, which reads the fetch session while Close ends it
// (a data race in kgo v1.22.3, seen by the race detector in this project's tests). Purging the
// topics first, in the client's metadata loop, leaves a later update nothing to assign.
package consumerclose

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// PurgeWait bounds the wait for the purge: the metadata loop runs it between metadata requests,
// and a request to a broker that does not answer can take long. Past it the client is closed all
// the same (the purge then ends with the client).
const PurgeWait = time.Second

// Close stops cl consuming every topic it consumes, then closes it.
func Close(cl *kgo.Client) {
	if topics := cl.GetConsumeTopics(); len(topics) > 0 {
		purged := make(chan struct{})
		go func() {
			defer close(purged)
			cl.PurgeTopicsFromConsuming(topics...)
		}()
		t := time.NewTimer(PurgeWait)
		select {
		case <-purged:
		case <-t.C:
		}
		t.Stop()
	}
	cl.Close()
}
