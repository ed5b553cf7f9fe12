package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Edges of the ordering of a task with several inputs (order.go): which positions reach the
// commit, when fetching pauses (buffered.records.per.partition), and how often unknown ends are
// listed.

// offsetsToCommit runs a periodic at-least-once commit through the machine, every step of it
// succeeding, and returns the offsets it committed: where each input partition's processing stands
// as the runtime reported it (the offset after the last record processed, Kafka's committed
// offset). Called without a.mu.
func offsetsToCommit(t *testing.T, a *App) commit.Offsets {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	var got commit.Offsets
	queue := a.mach.Step(a.now(), sm.Commit{Reason: sm.Periodic})
	for len(queue) > 0 {
		act := queue[0]
		queue = queue[1:]
		var res sm.Input
		switch act := act.(type) {
		case sm.Flush:
			res = sm.Flushed{}
		case sm.Checkpoint:
			res = sm.Checkpointed{}
		case sm.CommitOffsets:
			got = act.Offsets
			res = sm.OffsetsCommitted{}
		case sm.Done:
			if act.Err != nil {
				t.Fatalf("the commit failed: %v", act.Err)
			}
			return got
		}
		if res != nil {
			queue = append(queue, a.mach.Step(a.now(), res)...)
		}
	}
	t.Fatal("the commit ended without Done")
	return nil
}

// A queued partition's position reaches the commit as soon as records were processed from it, its
// first one included: a partition with a single record processed commits offset 1, the offset after
// it, as Kafka commits the next record to consume. (Its queue starts with nothing reported; offset
// 1 is a position like any other.)
func TestAQueuedPartitionCommitsItsFirstPosition(t *testing.T) {
	p := &seenOrder{}
	a, _, _ := joinApp(t, p, nil)
	runQueued(t, a, side("left", 0, 2, 1, 5), side("right", 0, 1, 3))
	if want := "[left@0 right@0 left@1]"; fmt.Sprint(p.seen) != want {
		t.Fatalf("processed %v, want %v", p.seen, want)
	}
	got := offsetsToCommit(t, a)
	want := commit.Offsets{{Topic: "left"}: 2, {Topic: "right"}: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want %v (after each partition's last processed record)", got, want)
	}
}

// A partition whose queued records wait (none processed yet) stands at its first queued record,
// offset 0 included: that is where its processing resumes, so the commit records 0 rather than
// leaving the partition to auto.offset.reset again.
func TestAWaitingQueueStandsAtItsFirstRecord(t *testing.T) {
	p := &seenOrder{}
	a, _, tk := joinApp(t, p, nil)
	// left has two more records on the brokers (end 4): once its two queued ones are processed,
	// right's record at 0 (timestamp 100) waits for them.
	runQueued(t, a, side("left", 0, 4, 1, 5), side("right", 0, 1, 100))
	if got := positions(tk); got != "left[0]=2 right[0]=0" {
		t.Fatalf("positions %s", got)
	}
	got := offsetsToCommit(t, a)
	want := commit.Offsets{{Topic: "left"}: 2, {Topic: "right"}: 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want %v (right waits at its first record, 0)", got, want)
	}
	// Nothing moved since: the next commit has nothing to commit.
	if got := offsetsToCommit(t, a); len(got) != 0 {
		t.Fatalf("committed %v again with nothing processed", got)
	}
}

// consumingJoinApp is joinApp with a consumer that holds task 0_0 as active (nothing committed;
// its client's broker cannot be reached, so nothing is fetched), so that the runtime tells it
// where the queued partitions stand and pauses and resumes fetching them. paused lists the
// partitions its client does not fetch.
func consumingJoinApp(t *testing.T, p Processor, mod func(*config.Config)) (a *App, tk *task, paused func() string) {
	t.Helper()
	a, _, tk = joinApp(t, p, mod)
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	mustNotErr(t, err)
	t.Cleanup(cl.Close)
	cons, err := consume.New(cl, a.topo, nothingCommitted{}, consume.WithLogger(a.log))
	mustNotErr(t, err)
	mustNotErr(t, cons.OnTasksAssigned(context.Background(), tasks.Assignment{Active: tasks.NewSet(tid("0", 0))}, true))
	a.cons = cons
	return a, tk, func() string { return fmt.Sprint(cl.PauseFetchPartitions(nil)) }
}

// nothingCommitted is a consume.OffsetCommitter of a group that committed nothing.
type nothingCommitted struct{}

func (nothingCommitted) CommittedOffsets(context.Context, tasks.Set) (commit.Offsets, error) {
	return commit.Offsets{}, nil
}

func (nothingCommitted) Commit(context.Context, commit.Offsets) error { return nil }

// buffered.records.per.partition: Kafka Streams pauses fetching a partition when its queue holds
// more records than the limit, not when it holds exactly the limit, and resumes it when the queue
// is down to the limit again; a task that stops drops its queues and resumes what it paused (its
// records are fetched again from its position).
func TestFetchingPausesAboveTheBufferedLimit(t *testing.T) {
	a, tk, paused := consumingJoinApp(t, &seenOrder{}, func(c *config.Config) { c.Runtime.BufferedRecordsPerPartition = 2 })
	// right is not fetched yet (its end unknown): left's records wait in its queue.
	runQueued(t, a, side("left", 0, 10, 1, 2))
	if q := tk.order.qs[0]; q.held() != 2 || q.paused || paused() != "map[]" {
		t.Fatalf("left holds %d, paused %v (client: %s); want 2 held (the limit) and fetching on", q.held(), q.paused, paused())
	}
	runQueued(t, a, side("left", 2, 10, 3))
	if q := tk.order.qs[0]; q.held() != 3 || !q.paused || paused() != "map[left:[0]]" {
		t.Fatalf("left holds %d, paused %v (client: %s); want 3 held (above the limit 2) and fetching paused", q.held(), q.paused, paused())
	}
	// right turns out empty: left's records go, and its fetching resumes.
	a.mu.Lock()
	a.setListedLag(tasks.TopicPartition{Topic: "right"}, -1, 0, 0)
	a.mu.Unlock()
	runQueued(t, a)
	if q := tk.order.qs[0]; q.held() != 0 || q.paused || paused() != "map[]" {
		t.Fatalf("left holds %d, paused %v (client: %s) after processing; want fetching resumed", q.held(), q.paused, paused())
	}
	// Paused again, then the task stops: fetching resumes.
	runQueued(t, a, side("left", 3, 10, 4, 5, 6), side("right", 0, 10, 3))
	if paused() != "map[left:[0]]" {
		t.Fatalf("client pauses %s; want left paused again", paused())
	}
	a.mu.Lock()
	a.stopTask(tk)
	a.mu.Unlock()
	if paused() != "map[]" {
		t.Fatalf("client pauses %s after the task stopped; want nothing paused", paused())
	}
}

// The consumer is told where the queued partitions stand as records are processed from them (it
// fetches them again from there if a revocation fails).
func TestTheConsumerLearnsTheQueuedPositions(t *testing.T) {
	a, _, _ := consumingJoinApp(t, &seenOrder{}, nil)
	runQueued(t, a, side("left", 0, 4, 1, 5), side("right", 0, 3, 3, 100))
	if got, want := fmt.Sprint(a.cons.Uncommitted()), "map[left[0]:2 right[0]:1]"; got != want {
		t.Fatalf("the consumer holds %s; want %s (after each partition's last processed record)", got, want)
	}
}

// Without a consumer (the unit tests of processing) nothing is paused, and processing queues above
// the limit goes on: the pause is the consumer's business.
func TestQueuesAboveTheLimitWithoutAConsumer(t *testing.T) {
	p := &seenOrder{}
	a, _, tk := joinApp(t, p, func(c *config.Config) { c.Runtime.BufferedRecordsPerPartition = 1 })
	runQueued(t, a, side("left", 0, 10, 1, 2, 3))
	if q := tk.order.qs[0]; q.held() != 3 || q.paused {
		t.Fatalf("left holds %d, paused %v; want 3 held, nothing paused without a consumer", q.held(), q.paused)
	}
}

// A listed end of a partition whose position is 0 counts from 0: the lag is the whole partition,
// whatever auto.offset.reset says (the position is known; only an unresolved one, -1, follows the
// reset).
func TestSetListedLagFromPositionZero(t *testing.T) {
	a, _, tk := joinApp(t, &seenOrder{}, func(c *config.Config) { c.Runtime.ResetLatest = true })
	a.orderOf(tk)
	a.setListedLag(tasks.TopicPartition{Topic: "right"}, 0, 0, 7)
	if got := tk.order.qs[1].lag; got != 7 {
		t.Fatalf("lag %d from position 0 to end 7, want 7", got)
	}
}

// Unknown ends are listed at most once per lagListing (a second): a listing a second after the
// last one starts; one sooner does not.
func TestUnknownLagsAreListedOncePerSecond(t *testing.T) {
	a, clk, tk := joinApp(t, &seenOrder{}, nil)
	fakeBroker(t, a) // it holds neither left nor right: every listing answers nothing
	a.mu.Lock()
	a.keep(tk, side("left", 0, 1, 1))
	a.mu.Unlock()
	inFlight := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.lags.inFlight
	}
	ctx := context.Background()
	a.listUnknownLags(ctx)
	if !inFlight() {
		t.Fatal("no listing started for right's unknown end")
	}
	a.lags.wg.Wait()
	clk.t = clk.t.Add(lagListing - time.Millisecond)
	a.listUnknownLags(ctx) // takes the (empty) answer; too soon for another
	if inFlight() {
		t.Fatal("a listing started less than a second after the last")
	}
	if tk.order.qs[1].lag != sm.LagUnknown {
		t.Fatalf("right's lag %d after an empty answer, want unknown", tk.order.qs[1].lag)
	}
	clk.t = clk.t.Add(time.Millisecond)
	a.listUnknownLags(ctx)
	if !inFlight() {
		t.Fatal("no listing started a second after the last")
	}
	a.lags.wg.Wait()
}

// A listing of ends or starts that fails for a partition (here UNKNOWN_SERVER_ERROR in the
// partition's answer) is a failed listing, which answers nothing: the next round asks again,
// rather than taking the failed answer's offsets for the partition's bounds.
func TestListEndsAnswersNothingWhenAPartitionFails(t *testing.T) {
	for _, failing := range []int64{-1, -2} { // the end listing (latest), the start listing (earliest)
		a, _ := newTestApp(t, testConfig(), testProcs())
		c := listingCluster(t, a)
		c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			r := req.(*kmsg.ListOffsetsRequest)
			if len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 || r.Topics[0].Partitions[0].Timestamp != failing {
				return nil, nil, false
			}
			resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
			for _, rt := range r.Topics {
				st := kmsg.NewListOffsetsResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewListOffsetsResponseTopicPartition()
					sp.Partition, sp.ErrorCode, sp.Offset = rp.Partition, kerr.UnknownServerError.Code, -1
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		})
		got := a.listEnds(context.Background(), []string{"in"}, []tasks.TopicPartition{{Topic: "in"}})
		if len(got) != 0 {
			t.Errorf("listing failing at timestamp %d: answered %+v; want nothing", failing, got)
		}
	}
	// The same listing answered by the cluster gives the partition's bounds.
	a, _ := newTestApp(t, testConfig(), testProcs())
	listingCluster(t, a)
	got := a.listEnds(context.Background(), []string{"in"}, []tasks.TopicPartition{{Topic: "in"}})
	if len(got) != 1 || got[0] != (listedEnd{tasks.TopicPartition{Topic: "in"}, 0, 0}) {
		t.Fatalf("answered %+v; want in[0] from 0 to 0 (empty)", got)
	}
}

// listingCluster gives a a client on a one-broker kfake cluster holding "in" (two partitions, no
// records), and returns the cluster.
func listingCluster(t *testing.T, a *App) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	mustNotErr(t, err)
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	mustNotErr(t, err)
	t.Cleanup(cl.Close)
	a.cl = cl
	return c
}
