package stream

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A topic's partition count is asked of the cluster once and kept for the producer's
// metadata.max.age.ms (five minutes), then asked again; a topic the cluster does not know is asked
// about again until request.timeout.ms, then an error that says it may not exist.
func TestPartitionCountIsAskedAndKept(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var asked atomic.Int32
	c.ControlKey(int16(kmsg.Metadata), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range r.(*kmsg.MetadataRequest).Topics {
			if rt.Topic != nil && *rt.Topic == "out" {
				asked.Add(1)
			}
		}
		return nil, nil, false
	})
	cfg := testConfig()
	cfg.RequestTimeout = 300 * time.Millisecond // how long an unknown topic is asked about
	a, _ := newTestApp(t, cfg, testProcs())
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	a.cl, a.runCtx = cl, context.Background()
	ctx := &Context{app: a, task: &task{id: tid("0", 1)}}

	for i := range 2 {
		n, err := ctx.PartitionCount("out")
		if err != nil || n != 3 {
			t.Fatalf("count %d: %d, %v; want 3", i, n, err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("asked %d times for two counts within five minutes, want once", n)
	}
	pc := a.partitionCounts["out"]
	pc.at = pc.at.Add(-partitionCountAge)
	a.partitionCounts["out"] = pc
	if n, err := ctx.PartitionCount("out"); err != nil || n != 3 {
		t.Fatalf("after five minutes: %d, %v; want 3", n, err)
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("asked %d times, want again after five minutes", n)
	}
	if time.Since(a.partitionCounts["out"].at) > time.Minute {
		t.Fatal("the count asked again is not kept from now")
	}

	var askedNope atomic.Int32
	c.ControlKey(int16(kmsg.Metadata), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range r.(*kmsg.MetadataRequest).Topics {
			if rt.Topic != nil && *rt.Topic == "nope" {
				askedNope.Add(1)
			}
		}
		return nil, nil, false
	})
	_, err = ctx.PartitionCount("nope")
	if n := askedNope.Load(); n < 2 {
		t.Fatalf("an unknown topic was asked about %d times, want again after a backoff", n)
	}
	if err == nil || !strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "may not exist") || !strings.Contains(err.Error(), "0_1") {
		t.Fatalf("an unknown topic: %v, want an error naming it, the task, and that it may not exist", err)
	}
}
