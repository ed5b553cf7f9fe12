package consumerclose

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func consuming(t *testing.T) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"in": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "in", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if fs := cl.PollFetches(ctx); fs.NumRecords() != 1 {
		t.Fatalf("fetched %d records, want the one written (%v)", fs.NumRecords(), fs.Errors())
	}
	return c, cl
}

// closed waits for Close(cl) to return (a bound of a minute, not a measure) and checks the client
// is closed.
func closed(t *testing.T, cl *kgo.Client) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Close(cl)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return")
	}
	if fs := cl.PollFetches(context.Background()); !errors.Is(fs.Err0(), kgo.ErrClientClosed) {
		t.Errorf("after Close, a poll answers %v, want kgo.ErrClientClosed", fs.Err0())
	}
}

// A client consuming partitions closes, its topics purged first: nothing is consumed any more.
func TestCloseConsumingClient(t *testing.T) {
	_, cl := consuming(t)
	closed(t, cl)
	if topics := cl.GetConsumeTopics(); len(topics) != 0 {
		t.Errorf("after Close the client still consumes %v", topics)
	}
}

// With the cluster gone, the purge waits on the metadata loop (its requests unanswered); Close
// closes the client all the same after PurgeWait.
func TestCloseWithTheClusterGone(t *testing.T) {
	c, cl := consuming(t)
	c.Close()
	cl.ForceMetadataRefresh() // the loop now asks a cluster that is gone
	closed(t, cl)
}

// A client that consumes nothing is closed as it is.
func TestCloseProducingClient(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	closed(t, cl)
}
