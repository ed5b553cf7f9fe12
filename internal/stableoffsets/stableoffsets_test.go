package stableoffsets

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cluster is a kfake cluster where group "g" committed in-0 at 5 and in-1 at 7, whose OffsetFetch
// answers are scripted: answer(n) for the n-th fetch (from 0) says which partitions to answer
// UNSTABLE_OFFSET_COMMIT for (-1: the whole group), nil to let the cluster answer.
type cluster struct {
	adm *kadm.Client

	mu     sync.Mutex
	asked  int
	stable []bool // RequireStable of every fetch
}

func newCluster(t *testing.T, answer func(n int) []int32) *cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	f := &cluster{adm: kadm.NewClient(cl)}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "in", Partition: 0, At: 5, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "in", Partition: 1, At: 7, LeaderEpoch: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := f.adm.CommitOffsets(ctx, "g", offs); err != nil || resp.Error() != nil {
		t.Fatalf("committing: %v %v", err, resp.Error())
	}
	// OffsetFetch v10+ names topics by ID: the scripted answers carry it.
	topics, err := f.adm.ListTopics(ctx, "in")
	if err != nil {
		t.Fatal(err)
	}
	id := topics["in"].ID
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.OffsetFetchRequest)
		f.mu.Lock()
		n := f.asked
		f.asked++
		f.stable = append(f.stable, r.RequireStable)
		f.mu.Unlock()
		unstable := answer(n)
		if unstable == nil {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		code := kerr.UnstableOffsetCommit.Code
		if len(r.Groups) == 0 {
			t.Errorf("OffsetFetch v%d without groups: the test answers only the batched form", r.Version)
			return nil, nil, false
		}
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = r.Groups[0].Group
		if slices.Contains(unstable, -1) {
			g.ErrorCode = code
			resp.Groups = append(resp.Groups, g)
			return resp, nil, true
		}
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = "in", id
		for p := range int32(2) {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, 5+2*int64(p), -1
			if slices.Contains(unstable, p) {
				rp.Offset, rp.ErrorCode = -1, code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		g.Topics = append(g.Topics, rt)
		resp.Groups = append(resp.Groups, g)
		return resp, nil, true
	})
	return f
}

func (f *cluster) fetches() (int, []bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked, slices.Clone(f.stable)
}

func committedOf(t *testing.T, r kadm.OffsetResponses) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	r.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Errorf("in-%d: %v", o.Partition, o.Err)
		}
		out[o.Partition] = o.At
	})
	return out
}

// Partitions a transaction still holds, and a group the broker says is unstable as a whole, are
// asked again until the broker answers the settled offsets; every fetch requires stable offsets.
func TestFetchWaitsOutPendingTransactions(t *testing.T) {
	f := newCluster(t, func(n int) []int32 {
		switch n {
		case 0:
			return []int32{1}
		case 1:
			return []int32{-1}
		case 2:
			return []int32{0, 1}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := Fetch(ctx, f.adm, "g")
	if err != nil {
		t.Fatal(err)
	}
	if got := committedOf(t, r); got[0] != 5 || got[1] != 7 || len(got) != 2 {
		t.Errorf("committed %v; want in-0 at 5 and in-1 at 7", got)
	}
	asked, stable := f.fetches()
	if asked != 4 || slices.Contains(stable, false) {
		t.Errorf("%d fetches, require_stable %v; want 4, each requiring stable offsets", asked, stable)
	}
}

// Settled offsets are answered at the first fetch.
func TestFetchAnswersSettledOffsetsAtOnce(t *testing.T) {
	f := newCluster(t, func(int) []int32 { return nil })
	r, err := Fetch(context.Background(), f.adm, "g")
	if err != nil {
		t.Fatal(err)
	}
	if got := committedOf(t, r); got[0] != 5 || got[1] != 7 {
		t.Errorf("committed %v; want in-0 at 5 and in-1 at 7", got)
	}
	if asked, _ := f.fetches(); asked != 1 {
		t.Errorf("%d fetches; want 1", asked)
	}
}

// A transaction that does not end within ctx is a *PendingError naming the partitions it holds,
// which is both UNSTABLE_OFFSET_COMMIT and the context's end.
func TestFetchGivesUpWithTheContext(t *testing.T) {
	f := newCluster(t, func(int) []int32 { return []int32{1} })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Fetch(ctx, f.adm, "g")
	var pe *PendingError
	if !errors.As(err, &pe) || pe.Group != "g" || !slices.Equal(pe.Partitions, []string{"in-1"}) {
		t.Fatalf("Fetch returned %v; want a *PendingError for g naming in-1", err)
	}
	if !errors.Is(err, kerr.UnstableOffsetCommit) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v is not both UNSTABLE_OFFSET_COMMIT and the deadline", err)
	}
	if asked, _ := f.fetches(); asked < 2 {
		t.Errorf("%d fetches; want the pending partition asked again", asked)
	}
}

// Another error is returned as it comes, without asking again.
func TestFetchReturnsOtherErrors(t *testing.T) {
	f := newCluster(t, func(int) []int32 { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Fetch(ctx, f.adm, "g"); !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch with a cancelled context returned %v", err)
	}
}
