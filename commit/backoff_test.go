package commit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// countingRand is a Backoff's Rand that always returns 0 (the shortest jitter, 0.8 of the
// exponential value) and counts how often a delay was drawn.
type countingRand struct {
	mu sync.Mutex
	n  int
}

func (r *countingRand) rand() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return 0
}

func (r *countingRand) draws() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// The group is application.id and the backoff is the member's: retry.backoff.ms and
// retry.backoff.max.ms from the configuration, with jitter.
func TestNewTakesTheGroupAndBackoffFromTheConfig(t *testing.T) {
	cfg := testConfig()
	cfg.ApplicationID = "orders"
	cfg.RetryBackoff, cfg.RetryBackoffMax = 300*time.Millisecond, 7*time.Second
	cl := &fakeCluster{}
	c := newCommitterOf(t, cfg, cl, member("m-1", 4, "0_0"))
	if c.backoff.Min != 300*time.Millisecond || c.backoff.Max != 7*time.Second || c.backoff.Rand == nil {
		t.Fatalf("backoff %+v; want retry.backoff.ms 300 ms to retry.backoff.max.ms 7 s, jittered", c.backoff)
	}
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommittedOffsets(context.Background(), set("0_0")); err != nil {
		t.Fatal(err)
	}
	if g, fg := cl.commits[0].Group, cl.fetches[0].Groups[0].Group; g != "orders" || fg != "orders" {
		t.Fatalf("committed for group %q, fetched for %q; want application.id %q", g, fg, "orders")
	}
	if d, err := New(&fakeCluster{}, cfg, testTopology()); err != nil || d.staleWait != staleEpochWait {
		t.Fatalf("New without options: %v, stale-epoch wait %v; want %v", err, d.staleWait, staleEpochWait)
	}
}

// Retries of coordinator moves wait the configured backoff, one jittered draw per retry: with
// retry.backoff.ms 100 and retry.backoff.max.ms 300 and the shortest jitter, 80 + 160 + 240 + 240 ms
// (fake time, exact).
func TestCommitRetriesWaitTheConfiguredBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.RetryBackoff, cfg.RetryBackoffMax = 100*time.Millisecond, 300*time.Millisecond
		codes := []int16{kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.RequestTimedOut.Code, kerr.NotCoordinator.Code, 0}
		cl := &fakeCluster{commitCode: func(n int) int16 { return codes[n] }}
		c := newCommitterOf(t, cfg, cl, member("m-1", 4, "0_0"))
		r := &countingRand{}
		c.backoff.Rand = r.rand
		start := time.Now()
		if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err != nil {
			t.Fatal(err)
		}
		if took, want := time.Since(start), 720*time.Millisecond; took != want || r.draws() != 4 {
			t.Fatalf("4 retries took %v with %d jitter draws; want %v with 4", took, r.draws(), want)
		}

		// CommittedOffsets retries the same way.
		fetchCodes := []int16{kerr.CoordinatorNotAvailable.Code, kerr.UnstableOffsetCommit.Code, 0}
		cl = &fakeCluster{fetch: func(n int) (int16, map[tasks.TopicPartition]int64) { return fetchCodes[n], nil }}
		c = newCommitterOf(t, cfg, cl, member("m-1", 4, "0_0"))
		r = &countingRand{}
		c.backoff.Rand = r.rand
		start = time.Now()
		if _, err := c.CommittedOffsets(context.Background(), set("0_0")); err != nil {
			t.Fatal(err)
		}
		if took, want := time.Since(start), 240*time.Millisecond; took != want || r.draws() != 2 {
			t.Fatalf("2 fetch retries took %v with %d jitter draws; want %v with 2", took, r.draws(), want)
		}
	})
}

// retry.backoff.ms=0 (which Kafka accepts) retries at once; the attempts stay bounded.
func TestCommitWithoutBackoffRetriesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.RetryBackoff, cfg.RetryBackoffMax = 0, 0
		cl := &fakeCluster{commitCode: func(int) int16 { return kerr.NotCoordinator.Code }}
		c := newCommitterOf(t, cfg, cl, member("m-1", 4, "0_0"))
		start := time.Now()
		if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err == nil {
			t.Fatal("a coordinator that never settles: no error")
		}
		if _, commits, _ := cl.counts(); commits != maxAttempts || time.Since(start) != 0 {
			t.Fatalf("%d commits in %v; want %d at once", commits, time.Since(start), maxAttempts)
		}
	})
}

// AddOffsetsToTxn's retries (CONCURRENT_TRANSACTIONS while the previous transaction ends) wait the
// configured backoff too: 80 + 160 + 240 ms with the shortest jitter.
func TestAddOffsetsToTxnWaitsTheConfiguredBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.RetryBackoff, cfg.RetryBackoffMax = 100*time.Millisecond, 300*time.Millisecond
		cl := &txnCluster{addCode: func(n int) int16 {
			if n < 3 {
				return kerr.ConcurrentTransactions.Code
			}
			return 0
		}}
		c := newCommitterOf(t, cfg, cl, member("m1", 7, "0_1"))
		r := &countingRand{}
		c.backoff.Rand = r.rand
		start := time.Now()
		if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10}); err != nil {
			t.Fatal(err)
		}
		if took, want := time.Since(start), 480*time.Millisecond; took != want || r.draws() != 3 || len(cl.adds) != 4 {
			t.Fatalf("%d AddOffsetsToTxn took %v with %d jitter draws; want 4 in %v with 3", len(cl.adds), took, r.draws(), want)
		}
	})
}
