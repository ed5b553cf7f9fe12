package commit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

func testTopology() *topology.Topology {
	return topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"app-rep-repartition"},
			StateChangelogTopics: []topology.TopicInfo{{Name: "app-st-changelog"}}},
		topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{{Name: "app-rep-repartition"}}},
	)
}

var topicIDs = map[string][16]byte{"in": {1}, "app-rep-repartition": {2}, "app-st-changelog": {3}}

func tid(s string) tasks.ID {
	id, err := tasks.ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

func set(ids ...string) tasks.Set {
	out := make([]tasks.ID, len(ids))
	for i, s := range ids {
		out[i] = tid(s)
	}
	return tasks.NewSet(out...)
}

func tp(topic string, p int32) tasks.TopicPartition {
	return tasks.TopicPartition{Topic: topic, Partition: p}
}

// fakeMember is a member whose snapshot the test sets, and which counts how often it was read. It
// has no Changed: a commit waiting for its epoch to move polls it.
type fakeMember struct {
	mu    sync.Mutex
	snap  membership.Snapshot
	reads int
}

func (m *fakeMember) Snapshot() membership.Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	return m.snap
}

func (m *fakeMember) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

func (m *fakeMember) set(f func(*membership.Snapshot)) {
	m.mu.Lock()
	f(&m.snap)
	m.mu.Unlock()
}

func member(id string, epoch int32, active ...string) *fakeMember {
	return &fakeMember{snap: membership.Snapshot{State: membership.Stable, MemberID: id, Epoch: epoch,
		Owned: tasks.Assignment{Active: set(active...)}}}
}

// fakeCluster answers Metadata from topicIDs and OffsetCommit/OffsetFetch with scripted codes.
type fakeCluster struct {
	mu       sync.Mutex
	metadata int
	commits  []*kmsg.OffsetCommitRequest
	fetches  []*kmsg.OffsetFetchRequest
	// commitCode returns the code of every partition of the n-th commit (0-based).
	commitCode func(n int) int16
	// fetch answers the n-th fetch: a group code, and committed offsets (missing = -1).
	fetch func(n int) (int16, map[tasks.TopicPartition]int64)
	// fetchMetadata is the metadata answered with a fetched offset (none when absent).
	fetchMetadata map[tasks.TopicPartition]string
	afterReq      func() // runs after each commit or fetch was recorded
}

func (f *fakeCluster) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	f.mu.Lock()
	defer func() {
		f.mu.Unlock()
		if f.afterReq != nil {
			f.afterReq()
		}
	}()
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		f.metadata++
		resp := kmsg.NewPtrMetadataResponse()
		for _, t := range r.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic = t.Topic
			id, ok := topicIDs[*t.Topic]
			if !ok {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			rt.TopicID = id
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.OffsetCommitRequest:
		n := len(f.commits)
		f.commits = append(f.commits, r)
		code := int16(0)
		if f.commitCode != nil {
			code = f.commitCode(n)
		}
		resp := kmsg.NewPtrOffsetCommitResponse()
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.OffsetFetchRequest:
		n := len(f.fetches)
		f.fetches = append(f.fetches, r)
		code, offs := int16(0), map[tasks.TopicPartition]int64{}
		if f.fetch != nil {
			code, offs = f.fetch(n)
		}
		resp := kmsg.NewPtrOffsetFetchResponse()
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			for _, t := range g.Topics {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset = p, -1
					if o, ok := offs[tp(t.Topic, p)]; ok {
						rp.Offset = o
					}
					if m, ok := f.fetchMetadata[tp(t.Topic, p)]; ok {
						rp.Metadata = &m
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("unexpected request %T", req)
}

func (f *fakeCluster) counts() (metadata, commits, fetches int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.metadata, len(f.commits), len(f.fetches)
}

// testConfig is the configuration of the group "app" with a backoff of 1 ms doubling to 2 ms.
func testConfig() config.Config {
	cfg := config.Default("app")
	cfg.RetryBackoff, cfg.RetryBackoffMax = time.Millisecond, 2*time.Millisecond
	return cfg
}

// withStaleEpochWait sets how long a STALE_MEMBER_EPOCH answer waits for the epoch to move (a
// behaviour without a Kafka key: only tests change it).
func withStaleEpochWait(d time.Duration) Option { return func(c *Committer) { c.staleWait = d } }

func newCommitter(t *testing.T, cl Requester, m Member, opts ...Option) *Committer {
	t.Helper()
	return newCommitterOf(t, testConfig(), cl, m, opts...)
}

func newCommitterOf(t *testing.T, cfg config.Config, cl Requester, m Member, opts ...Option) *Committer {
	t.Helper()
	c, err := New(cl, cfg, testTopology(), append([]Option{WithMember(m), withStaleEpochWait(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCommitCarriesTheSnapshotIdentityAndTopicIDs(t *testing.T) {
	cl := &fakeCluster{}
	c := newCommitter(t, cl, member("m-1", 7, "0_0", "0_1", "1_1"))
	offs := Offsets{tp("in", 1): 9, tp("in", 0): 5, tp("app-rep-repartition", 1): 3}
	if err := c.Commit(context.Background(), offs); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 6}); err != nil {
		t.Fatal(err)
	}
	md, commits, _ := cl.counts()
	if md != 1 || commits != 2 {
		t.Fatalf("metadata asked %d times, %d commits; want topic IDs resolved once and cached", md, commits)
	}
	req := cl.commits[0]
	if req.Group != "app" || req.MemberID != "m-1" || req.Generation != 7 {
		t.Fatalf("commit identity: group %q member %q generation %d", req.Group, req.MemberID, req.Generation)
	}
	type part struct {
		topic string
		id    [16]byte
		p     int32
		o     int64
	}
	var got []part
	for _, rt := range req.Topics {
		for _, p := range rt.Partitions {
			if p.LeaderEpoch != -1 {
				t.Fatalf("leader epoch %d", p.LeaderEpoch)
			}
			got = append(got, part{rt.Topic, rt.TopicID, p.Partition, p.Offset})
		}
	}
	want := []part{{"app-rep-repartition", topicIDs["app-rep-repartition"], 1, 3}, {"in", topicIDs["in"], 0, 5}, {"in", topicIDs["in"], 1, 9}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("commit carries %v, want %v (names and IDs, sorted)", got, want)
	}
	if err := c.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, commits, _ := cl.counts(); commits != 2 {
		t.Fatal("an empty commit sent a request")
	}
}

func TestCommitRefusesPartitionsOfTasksNotOwnedAsActive(t *testing.T) {
	cl := &fakeCluster{}
	m := member("m-1", 3, "0_0")
	m.snap.Owned.Standby = set("0_1")
	c := newCommitter(t, cl, m)
	err := c.Commit(context.Background(), Offsets{tp("in", 0): 1, tp("in", 1): 2, tp("app-rep-repartition", 2): 3})
	var no *NotOwnedError
	if !errors.As(err, &no) {
		t.Fatalf("got %v, want *NotOwnedError", err)
	}
	if want := []tasks.TopicPartition{tp("app-rep-repartition", 2), tp("in", 1)}; !reflect.DeepEqual(no.Partitions, want) ||
		!no.Tasks.Equal(set("0_1", "1_2")) || no.Epoch != 3 {
		t.Fatalf("refused %v of %v at %d", no.Partitions, no.Tasks, no.Epoch)
	}
	if md, commits, _ := cl.counts(); md+commits != 0 {
		t.Fatal("a refused commit sent requests")
	}
}

func TestCommitRefusesInvalidOffsets(t *testing.T) {
	cl := &fakeCluster{}
	c := newCommitter(t, cl, member("m-1", 3, "0_0"))
	err := c.Commit(context.Background(), Offsets{
		tp("app-st-changelog", 0): 1, tp("nope", 0): 1, tp("in", 0): -4, tp("in", -1): 2,
	})
	var inv *InvalidOffsetsError
	if !errors.As(err, &inv) || len(inv.Problems) != 4 {
		t.Fatalf("got %v, want four problems", err)
	}
	if md, commits, _ := cl.counts(); md+commits != 0 {
		t.Fatal("invalid offsets sent requests")
	}
}

func TestCommitWithoutMemberOrEpoch(t *testing.T) {
	c, err := New(&fakeCluster{}, testConfig(), testTopology())
	if err != nil {
		t.Fatal(err)
	}
	var nilC *Committer
	if err := nilC.Commit(context.Background(), Offsets{tp("in", 0): 1}); err == nil {
		t.Fatal("a nil Committer committed")
	}
	if _, err := nilC.CommittedOffsets(context.Background(), set("0_0")); err == nil {
		t.Fatal("a nil Committer fetched")
	}
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 1}); !errors.Is(err, ErrNotBound) {
		t.Fatalf("unbound: %v", err)
	}
	if _, err := c.CommittedOffsets(context.Background(), set("0_0")); !errors.Is(err, ErrNotBound) {
		t.Fatalf("unbound fetch: %v", err)
	}
	m := member("m-1", 0, "0_0")
	c.Bind(m)
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 1}); !errors.Is(err, ErrNotJoined) {
		t.Fatalf("epoch 0: %v", err)
	}
	if _, err := c.CommittedOffsets(context.Background(), set("0_0")); !errors.Is(err, ErrNotJoined) {
		t.Fatalf("epoch 0 fetch: %v", err)
	}
	negative := testConfig()
	negative.RetryBackoff = -time.Millisecond
	for i, bad := range []func() (*Committer, error){
		func() (*Committer, error) { return New(nil, testConfig(), testTopology()) },
		func() (*Committer, error) { return New(&fakeCluster{}, config.Default(""), testTopology()) },
		func() (*Committer, error) {
			return New(&fakeCluster{}, config.Config{ApplicationID: "app"}, testTopology())
		},
		func() (*Committer, error) { return New(&fakeCluster{}, negative, testTopology()) },
		func() (*Committer, error) { return New(&fakeCluster{}, testConfig(), nil) },
		func() (*Committer, error) {
			return New(&fakeCluster{}, testConfig(), topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"table"}, StateChangelogTopics: []topology.TopicInfo{{Name: "table"}}}))
		},
	} {
		if _, err := bad(); err == nil {
			t.Errorf("case %d: New accepted bad arguments", i)
		}
	}
	var ce *config.Error
	if _, err := New(&fakeCluster{}, negative, testTopology()); !errors.As(err, &ce) || !ce.Has(config.KeyRetryBackoff) {
		t.Errorf("a negative retry.backoff.ms: %v; want a *config.Error naming it", err)
	}
}

func TestCommitLostMemberIsATypedError(t *testing.T) {
	for _, code := range []int16{kerr.UnknownMemberID.Code, kerr.FencedMemberEpoch.Code} {
		cl := &fakeCluster{commitCode: func(int) int16 { return code }}
		c := newCommitter(t, cl, member("m-1", 4, "0_0", "0_2"))
		err := c.Commit(context.Background(), Offsets{tp("in", 2): 8})
		var lost *LostError
		if !errors.As(err, &lost) || !errors.Is(err, ErrTasksLost) || !errors.Is(err, kerr.ErrorForCode(code)) {
			t.Fatalf("code %d: got %v, want a *LostError", code, err)
		}
		if !lost.Tasks.Equal(set("0_2")) || lost.MemberID != "m-1" || lost.Epoch != 4 {
			t.Fatalf("lost %v member %s epoch %d", lost.Tasks, lost.MemberID, lost.Epoch)
		}
		if _, commits, _ := cl.counts(); commits != 1 {
			t.Fatalf("a lost member's commit was retried %d times", commits)
		}
	}
}

// A stale epoch is retried once the member saw its new epoch (a heartbeat answer bumped it on the
// broker a moment before), with the new epoch.
func TestCommitStaleEpochRetriedWithTheNewEpoch(t *testing.T) {
	m := member("m-1", 4, "0_0")
	cl := &fakeCluster{commitCode: func(n int) int16 {
		if n == 0 {
			return kerr.StaleMemberEpoch.Code
		}
		return 0
	}}
	cl.afterReq = func() { m.set(func(s *membership.Snapshot) { s.Epoch = 5 }) }
	c := newCommitter(t, cl, m)
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err != nil {
		t.Fatal(err)
	}
	if cl.commits[0].Generation != 4 || cl.commits[1].Generation != 5 || len(cl.commits) != 2 {
		t.Fatalf("generations sent: %d then %d (%d commits)", cl.commits[0].Generation, cl.commits[1].Generation, len(cl.commits))
	}
}

func TestCommitStaleEpochThatDoesNotMoveIsLost(t *testing.T) {
	cl := &fakeCluster{commitCode: func(int) int16 { return kerr.StaleMemberEpoch.Code }}
	c := newCommitter(t, cl, member("m-1", 4, "0_0"), withStaleEpochWait(20*time.Millisecond))
	err := c.Commit(context.Background(), Offsets{tp("in", 0): 8})
	if !errors.Is(err, ErrTasksLost) || !errors.Is(err, kerr.StaleMemberEpoch) {
		t.Fatalf("got %v", err)
	}
	if _, commits, _ := cl.counts(); commits != 1 {
		t.Fatalf("%d commits; the epoch never moved, so one", commits)
	}
}

// The epoch moved, but the task went with it: the retry is refused locally.
func TestCommitStaleEpochAfterRevocationIsNotOwned(t *testing.T) {
	m := member("m-1", 4, "0_0")
	cl := &fakeCluster{commitCode: func(int) int16 { return kerr.StaleMemberEpoch.Code }}
	cl.afterReq = func() {
		m.set(func(s *membership.Snapshot) { s.Epoch, s.Owned = 5, tasks.Assignment{Active: set("0_1")} })
	}
	c := newCommitter(t, cl, m)
	var no *NotOwnedError
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); !errors.As(err, &no) || no.Epoch != 5 {
		t.Fatalf("got %v", err)
	}
}

func TestCommitRetriesCoordinatorMoves(t *testing.T) {
	codes := []int16{kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, 0}
	cl := &fakeCluster{commitCode: func(n int) int16 { return codes[n] }}
	c := newCommitter(t, cl, member("m-1", 4, "0_0"))
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err != nil {
		t.Fatal(err)
	}
	if _, commits, _ := cl.counts(); commits != 4 {
		t.Fatalf("%d commits, want 4", commits)
	}
	// A coordinator that never settles: a bounded number of attempts, then an error.
	cl = &fakeCluster{commitCode: func(int) int16 { return kerr.NotCoordinator.Code }}
	c = newCommitter(t, cl, member("m-1", 4, "0_0"))
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err == nil {
		t.Fatal("a coordinator that never settles: no error")
	}
	if _, commits, _ := cl.counts(); commits != maxAttempts {
		t.Fatalf("%d commits, want %d", commits, maxAttempts)
	}
	// ctx ends during the backoff.
	cl = &fakeCluster{commitCode: func(int) int16 { return kerr.NotCoordinator.Code }}
	hour := testConfig()
	hour.RetryBackoff, hour.RetryBackoffMax = time.Hour, time.Hour
	c = newCommitterOf(t, hour, cl, member("m-1", 4, "0_0"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Commit(ctx, Offsets{tp("in", 0): 8}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx ended in the backoff: %v", err)
	}
}

func TestCommitRefreshesAnUnknownTopicID(t *testing.T) {
	codes := []int16{kerr.UnknownTopicID.Code, 0}
	cl := &fakeCluster{commitCode: func(n int) int16 { return codes[n] }}
	c := newCommitter(t, cl, member("m-1", 4, "0_0"))
	if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err != nil {
		t.Fatal(err)
	}
	if md, commits, _ := cl.counts(); md != 2 || commits != 2 {
		t.Fatalf("metadata %d, commits %d: an unknown topic ID is looked up again", md, commits)
	}
}

func TestCommitOtherErrorsArePartitionErrors(t *testing.T) {
	cl := &fakeCluster{commitCode: func(int) int16 { return kerr.GroupAuthorizationFailed.Code }}
	c := newCommitter(t, cl, member("m-1", 4, "0_0", "0_1"))
	err := c.Commit(context.Background(), Offsets{tp("in", 0): 8, tp("in", 1): 2})
	var pe *PartitionError
	if !errors.As(err, &pe) || !errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, ErrTasksLost) {
		t.Fatalf("got %v", err)
	}
}

func TestCommitTopicLookupFailure(t *testing.T) {
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"missing"}})
	c, err := New(&fakeCluster{}, testConfig(), topo, WithMember(member("m-1", 4, "0_0")))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(context.Background(), Offsets{tp("missing", 0): 1}); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("got %v", err)
	}
}

func TestCommittedOffsets(t *testing.T) {
	m := member("m-1", 6)
	cl := &fakeCluster{fetch: func(n int) (int16, map[tasks.TopicPartition]int64) {
		if n == 0 {
			return kerr.StaleMemberEpoch.Code, nil
		}
		return 0, map[tasks.TopicPartition]int64{tp("in", 0): 12, tp("app-rep-repartition", 3): 0}
	}}
	cl.afterReq = func() { m.set(func(s *membership.Snapshot) { s.Epoch = 7 }) }
	c := newCommitter(t, cl, m)
	got, err := c.CommittedOffsets(context.Background(), set("0_0", "0_1", "1_3"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Offsets{tp("in", 0): 12, tp("app-rep-repartition", 3): 0}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v (no committed offset: absent)", got, want)
	}
	for i, want := range []int32{6, 7} {
		g := cl.fetches[i].Groups[0]
		if g.Group != "app" || g.MemberID == nil || *g.MemberID != "m-1" || g.MemberEpoch != want {
			t.Fatalf("fetch %d identity: %q %v %d", i, g.Group, g.MemberID, g.MemberEpoch)
		}
	}
	var topics []string
	for _, tt := range cl.fetches[1].Groups[0].Topics {
		topics = append(topics, fmt.Sprint(tt.Topic, tt.Partitions))
	}
	if want := []string{"app-rep-repartition[3]", "in[0 1]"}; !reflect.DeepEqual(topics, want) {
		t.Fatalf("fetched %v, want the inputs of the tasks only %v", topics, want)
	}
	if got, err := c.CommittedOffsets(context.Background(), tasks.Set{}); err != nil || len(got) != 0 {
		t.Fatalf("no tasks: %v %v", got, err)
	}
	var ue *tasks.UnknownSubtopologyError
	if _, err := c.CommittedOffsets(context.Background(), set("9_0")); !errors.As(err, &ue) {
		t.Fatalf("unknown subtopology: %v", err)
	}
	lostCl := &fakeCluster{fetch: func(int) (int16, map[tasks.TopicPartition]int64) { return kerr.UnknownMemberID.Code, nil }}
	c = newCommitter(t, lostCl, member("m-1", 6))
	if _, err := c.CommittedOffsets(context.Background(), set("0_0")); !errors.Is(err, ErrTasksLost) {
		t.Fatalf("unknown member: %v", err)
	}
}

type recListener struct {
	calls []string
	err   error
}

func (l *recListener) OnTasksRevoked(_ context.Context, s tasks.Set) error {
	l.calls = append(l.calls, "revoked "+s.String())
	return l.err
}

func (l *recListener) OnTasksAssigned(_ context.Context, a tasks.Assignment, ready bool) error {
	l.calls = append(l.calls, fmt.Sprintf("assigned %v %v", a.Active, ready))
	return nil
}

func (l *recListener) OnAllTasksLost(_ context.Context, a tasks.Assignment) error {
	l.calls = append(l.calls, "lost "+a.Active.String())
	return nil
}

func TestOnRevokeCommitsBeforePassingOn(t *testing.T) {
	cl := &fakeCluster{}
	c := newCommitter(t, cl, member("m-1", 4, "0_0", "0_1"))
	next := &recListener{}
	var asked tasks.Set
	l := OnRevoke(c, func(_ context.Context, revoked tasks.Set) (Offsets, error) {
		asked = revoked
		_, commits, _ := cl.counts()
		next.calls = append(next.calls, fmt.Sprintf("offsets (after %d commits)", commits))
		return Offsets{tp("in", 1): 40}, nil
	}, next)
	ctx := context.Background()
	if err := l.OnTasksRevoked(ctx, set("0_1")); err != nil {
		t.Fatal(err)
	}
	if !asked.Equal(set("0_1")) || len(cl.commits) != 1 || cl.commits[0].Topics[0].Partitions[0].Offset != 40 {
		t.Fatalf("asked %v, commits %d", asked, len(cl.commits))
	}
	_ = l.OnTasksAssigned(ctx, tasks.Assignment{Active: set("0_0")}, true)
	_ = l.OnAllTasksLost(ctx, tasks.Assignment{Active: set("0_0")})
	want := []string{"offsets (after 0 commits)", "revoked [0_1]", "assigned [0_0] true", "lost [0_0]"}
	if !reflect.DeepEqual(next.calls, want) {
		t.Fatalf("calls %q, want %q", next.calls, want)
	}
	// A failed commit fails the revocation and does not reach next.
	cl.commitCode = func(int) int16 { return kerr.UnknownMemberID.Code }
	next.calls = nil
	if err := l.OnTasksRevoked(ctx, set("0_1")); !errors.Is(err, ErrTasksLost) {
		t.Fatalf("got %v", err)
	}
	if len(next.calls) != 1 { // only the offsets call
		t.Fatalf("next was called after a failed commit: %q", next.calls)
	}
	boom := errors.New("flush failed")
	l = OnRevoke(c, func(context.Context, tasks.Set) (Offsets, error) { return nil, boom }, nil)
	if err := l.OnTasksRevoked(ctx, set("0_1")); !errors.Is(err, boom) {
		t.Fatalf("offsets error: %v", err)
	}
	l = OnRevoke(c, func(context.Context, tasks.Set) (Offsets, error) { return nil, nil }, nil)
	if err := l.OnTasksRevoked(ctx, set("0_1")); err != nil {
		t.Fatal(err)
	}
	if l.OnTasksAssigned(ctx, tasks.Assignment{}, true) != nil || l.OnAllTasksLost(ctx, tasks.Assignment{}) != nil {
		t.Fatal("a nil next failed")
	}
	if err := OnRevoke(nil, nil, nil).OnTasksRevoked(ctx, set("0_1")); err == nil {
		t.Fatal("OnRevoke without a Committer passed")
	}
}

func TestErrorTexts(t *testing.T) {
	for _, e := range []error{
		&LostError{Tasks: set("0_1"), MemberID: "m", Epoch: 3, Err: kerr.FencedMemberEpoch},
		&NotOwnedError{Partitions: []tasks.TopicPartition{tp("in", 1)}, Tasks: set("0_1"), Epoch: 3},
		&InvalidOffsetsError{Problems: []string{"x"}},
		&PartitionError{Partition: tp("in", 1), Err: kerr.GroupAuthorizationFailed},
	} {
		if e.Error() == "" {
			t.Errorf("%T has no text", e)
		}
	}
}

// An offset of 0 (nothing processed yet but the first record) is valid and goes out as 0; the
// request lists topics by name and each topic's partitions in ascending order, whatever the map's
// iteration order (repeated, so that a comparator that never sorts cannot pass by luck).
func TestCommitSendsOffsetZeroAndSortsTopicsThenPartitions(t *testing.T) {
	active := []string{"1_0", "1_1", "1_2", "1_3"}
	for p := range 12 {
		active = append(active, fmt.Sprintf("0_%d", p))
	}
	offs := Offsets{}
	for p := range int32(12) {
		offs[tp("in", p)] = int64(p) * 10 // in-0 at offset 0
	}
	for p := range int32(4) {
		offs[tp("app-rep-repartition", p)] = int64(p) + 100
	}
	want := []string{
		"app-rep-repartition/0@100", "app-rep-repartition/1@101", "app-rep-repartition/2@102", "app-rep-repartition/3@103",
		"in/0@0", "in/1@10", "in/2@20", "in/3@30", "in/4@40", "in/5@50", "in/6@60", "in/7@70", "in/8@80", "in/9@90",
		"in/10@100", "in/11@110",
	}
	for round := range 3 {
		cl := &fakeCluster{}
		c := newCommitter(t, cl, member("m-1", 4, active...))
		if err := c.Commit(context.Background(), offs); err != nil {
			t.Fatalf("round %d: %v (an offset of 0 is valid)", round, err)
		}
		var got []string
		for _, rt := range cl.commits[0].Topics {
			for _, p := range rt.Partitions {
				got = append(got, fmt.Sprintf("%s/%d@%d", rt.Topic, p.Partition, p.Offset))
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: committed %v, want %v", round, got, want)
		}
	}
}

// The partitions of a refused commit are reported by topic, then partition, ascending.
func TestNotOwnedPartitionsAreSorted(t *testing.T) {
	offs := Offsets{tp("in", 0): 1}
	for p := range int32(11) {
		offs[tp("in", p+1)] = 1
	}
	for p := range int32(4) {
		offs[tp("app-rep-repartition", p)] = 1
	}
	want := []tasks.TopicPartition{tp("app-rep-repartition", 0), tp("app-rep-repartition", 1), tp("app-rep-repartition", 2),
		tp("app-rep-repartition", 3), tp("in", 1), tp("in", 2), tp("in", 3), tp("in", 4), tp("in", 5), tp("in", 6),
		tp("in", 7), tp("in", 8), tp("in", 9), tp("in", 10), tp("in", 11)}
	for round := range 3 {
		c := newCommitter(t, &fakeCluster{}, member("m-1", 4, "0_0"))
		var no *NotOwnedError
		if err := c.Commit(context.Background(), offs); !errors.As(err, &no) {
			t.Fatalf("round %d: got %v, want *NotOwnedError", round, err)
		}
		if !reflect.DeepEqual(no.Partitions, want) {
			t.Fatalf("round %d: refused %v, want %v", round, no.Partitions, want)
		}
	}
}

// STALE_MEMBER_EPOCH is retried while the epoch keeps moving, but no more than maxAttempts (12)
// times in all: the 12th stale answer is the end, reported as lost at the epoch it went out with.
func TestCommitStaleEpochRetriesAreBounded(t *testing.T) {
	m := member("m-1", 4, "0_0")
	cl := &fakeCluster{commitCode: func(int) int16 {
		m.set(func(s *membership.Snapshot) { s.Epoch++ }) // each answer comes with a new epoch
		return kerr.StaleMemberEpoch.Code
	}}
	c := newCommitter(t, cl, m)
	err := c.Commit(context.Background(), Offsets{tp("in", 0): 8})
	var lost *LostError
	if !errors.As(err, &lost) || !errors.Is(err, kerr.StaleMemberEpoch) {
		t.Fatalf("got %v, want a *LostError for STALE_MEMBER_EPOCH", err)
	}
	if len(cl.commits) != 12 {
		t.Fatalf("%d commits, want 12 (maxAttempts)", len(cl.commits))
	}
	for i, r := range cl.commits {
		if r.Generation != int32(4+i) {
			t.Fatalf("commit %d went out with epoch %d, want %d", i, r.Generation, 4+i)
		}
	}
	if lost.Epoch != 15 {
		t.Fatalf("lost at epoch %d, want 15 (the 12th commit's)", lost.Epoch)
	}
}

// requesterFunc is a Requester answering with a function.
type requesterFunc func(kmsg.Request) (kmsg.Response, error)

func (f requesterFunc) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	return f(req)
}

// An OffsetFetch answer names the groups it answers (v8+); an answer with groups but not ours is an
// error, and an answer without groups (before v8) is the group's answer in the top-level fields.
func TestCommittedOffsetsReadsEveryAnswerForm(t *testing.T) {
	otherGroup := requesterFunc(func(kmsg.Request) (kmsg.Response, error) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = "not-app"
		gt := kmsg.NewOffsetFetchResponseGroupTopic()
		gt.Topic = "in"
		gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		gp.Partition, gp.Offset = 0, 12
		gt.Partitions = append(gt.Partitions, gp)
		g.Topics = append(g.Topics, gt)
		resp.Groups = append(resp.Groups, g)
		return resp, nil
	})
	c := newCommitter(t, otherGroup, member("m-1", 6, "0_0"))
	got, err := c.CommittedOffsets(context.Background(), set("0_0"))
	var pe *PartitionError
	if !errors.As(err, &pe) || !errors.Is(err, kerr.InvalidGroupID) || pe.Partition != tp("in", 0) {
		t.Fatalf("an answer for another group: %v %v, want INVALID_GROUP_ID for in-0", got, err)
	}

	old := requesterFunc(func(kmsg.Request) (kmsg.Response, error) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = "in"
		for p, o := range []int64{12, -1} {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset = int32(p), o
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	})
	c = newCommitter(t, old, member("m-1", 6, "0_0", "0_1"))
	got, err = c.CommittedOffsets(context.Background(), set("0_0", "0_1"))
	if want := (Offsets{tp("in", 0): 12}); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("an answer before v8: %v %v, want %v", got, err, want)
	}
}
