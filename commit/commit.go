package commit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Member is where a Committer reads the member's ID, epoch and owned tasks from, all from one
// moment: *membership.Manager. A Member that also has Changed() <-chan struct{} (the Manager does)
// tells the Committer when its epoch moves; others are polled every 10 ms while a commit waits
// for that.
type Member interface {
	Snapshot() membership.Snapshot
}

// changeNotifier is a Member that tells when its ID, epoch or state changes.
type changeNotifier interface {
	Changed() <-chan struct{}
}

// Requester sends one request to the cluster and returns its answer: the user's *kgo.Client, which
// routes OffsetCommit and OffsetFetch to the group coordinator and retries coordinator moves.
type Requester interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// Offsets are positions of input partitions: for each, the offset of the next record to process
// (the last processed offset + 1), as Kafka commits them.
type Offsets map[tasks.TopicPartition]int64

const (
	// staleEpochWait is how long a commit answered STALE_MEMBER_EPOCH waits for the member's epoch
	// to move on before it reports the tasks lost: a heartbeat answer may have bumped the epoch on
	// the broker a moment before the member saw it.
	staleEpochWait = 2 * time.Second
	// maxAttempts bounds the attempts of one call, whatever the reasons for retrying.
	maxAttempts = 12
)

var errNilCommitter = errors.New("commit: nil *Committer (use New)")

// Committer commits and fetches a member's input offsets with the member's ID and epoch. It is safe
// for concurrent use.
type Committer struct {
	cl        Requester
	group     string
	router    *tasks.Router
	staleWait time.Duration
	// backoff paces retries (coordinator moves, CONCURRENT_TRANSACTIONS): retry.backoff.ms and
	// retry.backoff.max.ms, jittered as the member's heartbeats are.
	backoff heartbeat.Backoff

	meta Metadata // may be nil: no metadata committed

	mu     sync.Mutex
	member Member
	ids    map[string][16]byte // topic IDs, resolved once
}

// Option wires a collaborator into a Committer. What a Committer does is configured by the
// config.Config given to New.
type Option func(*Committer)

// WithMember binds the member at construction (see Bind).
func WithMember(m Member) Option { return func(c *Committer) { c.member = m } }

// New returns a Committer for the member configured by cfg and the group's topology, which says
// which partitions belong to which task. It commits for the group cfg.ApplicationID and paces its
// retries with cfg.RetryBackoff and cfg.RetryBackoffMax (retry.backoff.ms, retry.backoff.max.ms),
// the member's own backoff. Requests go through cl, normally the user's *kgo.Client. An invalid cfg
// is its *config.Error (cfg.Validate); a topology with a topic that belongs to two subtopologies is a
// *tasks.SharedTopicError.
func New(cl Requester, cfg config.Config, topo *topology.Topology, opts ...Option) (*Committer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cl == nil:
		return nil, errors.New("commit: a client (*kgo.Client) is required")
	case topo == nil:
		return nil, errors.New("commit: the topology is required")
	}
	router, err := tasks.NewRouter(topo)
	if err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	c := &Committer{
		cl: cl, group: cfg.ApplicationID, router: router, staleWait: staleEpochWait,
		backoff: heartbeat.Backoff{Min: cfg.RetryBackoff, Max: cfg.RetryBackoffMax, Rand: rand.Float64},
		ids:     make(map[string][16]byte),
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Bind sets the member whose identity and ownership every commit and fetch uses, for an application
// that builds the member after the Committer (a listener chain on the pieces whose listener commits:
// commit.OnRevoke behind consume.Consumer); one that builds the member first passes it to New with
// WithMember. Binding again replaces it.
func (c *Committer) Bind(m Member) {
	c.mu.Lock()
	c.member = m
	c.mu.Unlock()
}

func (c *Committer) bound() Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.member
}

// Commit commits offsets with the member ID and epoch of one snapshot of the member, after checking
// against the same snapshot that every partition belongs to a task the member owns as active.
// Errors: *InvalidOffsetsError and *NotOwnedError (nothing sent), ErrNotBound, ErrNotJoined,
// *LostError (errors.Is ErrTasksLost: nothing committed, the tasks are gone), *PartitionError (the
// broker refused some partitions; joined with errors.Join when several), or the transport's error.
// An empty Offsets commits nothing.
func (c *Committer) Commit(ctx context.Context, offsets Offsets) error {
	if c == nil {
		return errNilCommitter
	}
	if err := c.check(offsets); err != nil {
		return err
	}
	if len(offsets) == 0 {
		return nil
	}
	m := c.bound()
	if m == nil {
		return ErrNotBound
	}
	r := retrier{c: c}
	for {
		f, err := c.fence(m.Snapshot(), offsets)
		if err != nil {
			return err
		}
		if err := c.resolveIDs(ctx, f.topicNames()); err != nil {
			return err
		}
		resp, err := f.commitRequest(c.group, c.topicIDs(f.topicNames())).RequestWith(ctx, c.cl)
		if err != nil {
			return fmt.Errorf("commit: OffsetCommit: %w", err)
		}
		var v verdict
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				v.add(tasks.TopicPartition{Topic: t.Topic, Partition: p.Partition}, p.ErrorCode)
			}
		}
		if len(v.unknownIDs) > 0 {
			c.forgetIDs(v.unknownIDs)
		}
		if again, err := r.next(ctx, m, f, v); !again {
			return err
		}
	}
}

// CommittedOffsets fetches the committed positions of the input partitions of tasks s (normally the
// tasks being assigned, inside OnTasksAssigned), with the member ID and epoch as streams groups
// require. A partition without a committed offset is left out. s need not be owned yet; its tasks
// must be of the topology (*tasks.UnknownSubtopologyError otherwise). Other errors as for Commit.
func (c *Committer) CommittedOffsets(ctx context.Context, s tasks.Set) (Offsets, error) {
	offs, _, err := c.Committed(ctx, s)
	return offs, err
}

// Committed is CommittedOffsets with the metadata committed with each offset (Kafka Streams keeps a
// partition's time there: DecodeMetadata), for the partitions that have both.
func (c *Committer) Committed(ctx context.Context, s tasks.Set) (Offsets, map[tasks.TopicPartition]string, error) {
	if c == nil {
		return nil, nil, errNilCommitter
	}
	var parts []tasks.TopicPartition
	for id := range s.All() {
		in, err := c.router.Inputs(id)
		if err != nil {
			return nil, nil, fmt.Errorf("commit: %w", err)
		}
		parts = append(parts, in...)
	}
	if len(parts) == 0 {
		return Offsets{}, map[tasks.TopicPartition]string{}, nil
	}
	m := c.bound()
	if m == nil {
		return nil, nil, ErrNotBound
	}
	r := retrier{c: c}
	for {
		snap := m.Snapshot()
		if snap.Epoch <= 0 || snap.MemberID == "" {
			return nil, nil, ErrNotJoined
		}
		f := &fenced{memberID: snap.MemberID, epoch: snap.Epoch, tasks: s}
		for _, tp := range parts {
			f.add(tp, 0, nil)
		}
		resp, err := f.fetchRequest(c.group).RequestWith(ctx, c.cl)
		if err != nil {
			return nil, nil, fmt.Errorf("commit: OffsetFetch: %w", err)
		}
		out, meta := Offsets{}, map[tasks.TopicPartition]string{}
		var v verdict
		groupCode, topics := fetchAnswer(resp, c.group)
		if groupCode != 0 {
			for _, tp := range parts {
				v.add(tp, groupCode)
			}
		} else {
			for _, t := range topics {
				for _, p := range t.Partitions {
					tp := tasks.TopicPartition{Topic: t.Topic, Partition: p.Partition}
					v.add(tp, p.ErrorCode)
					if p.ErrorCode == 0 && p.Offset >= 0 {
						out[tp] = p.Offset
						if p.Metadata != nil {
							meta[tp] = *p.Metadata
						}
					}
				}
			}
		}
		again, err := r.next(ctx, m, f, v)
		if !again {
			if err != nil {
				return nil, nil, err
			}
			return out, meta, nil
		}
	}
}

// fetchAnswer finds the group's answer in an OffsetFetch response of any version.
func fetchAnswer(resp *kmsg.OffsetFetchResponse, group string) (int16, []kmsg.OffsetFetchResponseGroupTopic) {
	for _, g := range resp.Groups {
		if g.Group == group {
			return g.ErrorCode, g.Topics
		}
	}
	if len(resp.Groups) > 0 {
		return kerr.InvalidGroupID.Code, nil
	}
	// Before v8 the answer is not per group.
	var topics []kmsg.OffsetFetchResponseGroupTopic
	for _, t := range resp.Topics {
		gt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			gt.Partitions = append(gt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{
				Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode})
		}
		topics = append(topics, gt)
	}
	return resp.ErrorCode, topics
}

// check refuses offsets that no member could commit.
func (c *Committer) check(offsets Offsets) error {
	var probs []string
	for tp, o := range offsets {
		_, kind, ok := c.router.Task(tp.Topic, tp.Partition)
		switch {
		case tp.Partition < 0:
			probs = append(probs, fmt.Sprintf("%v: negative partition", tp))
		case !ok || kind != tasks.Input:
			probs = append(probs, fmt.Sprintf("%v: not an input partition of any task of the topology", tp))
		case o < 0:
			probs = append(probs, fmt.Sprintf("%v: negative offset %d", tp, o))
		}
	}
	if len(probs) > 0 {
		slices.Sort(probs)
		return &InvalidOffsetsError{Problems: probs}
	}
	return nil
}

// fenced is a commit checked against one snapshot of the member: the identity it goes out with and
// its offsets by topic. The request is built from it; an exactly-once variant would build a
// TxnOffsetCommit from the same value.
type fenced struct {
	memberID string
	epoch    int32
	tasks    tasks.Set
	topics   map[string][]kmsg.OffsetCommitRequestTopicPartition
}

func (f *fenced) add(tp tasks.TopicPartition, offset int64, metadata *string) {
	if f.topics == nil {
		f.topics = make(map[string][]kmsg.OffsetCommitRequestTopicPartition)
	}
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = tp.Partition, offset, -1, metadata
	f.topics[tp.Topic] = append(f.topics[tp.Topic], p)
}

func (f *fenced) topicNames() []string {
	names := make([]string, 0, len(f.topics))
	for t := range f.topics {
		names = append(names, t)
	}
	slices.Sort(names)
	return names
}

// fence checks the offsets against one snapshot: every partition's task must be owned as active.
func (c *Committer) fence(snap membership.Snapshot, offsets Offsets) (*fenced, error) {
	f := &fenced{memberID: snap.MemberID, epoch: snap.Epoch}
	var notOwned []tasks.TopicPartition
	var notOwnedTasks, owned []tasks.ID
	for tp, o := range offsets {
		id, _, _ := c.router.Task(tp.Topic, tp.Partition) // check passed: an input partition
		if !snap.Owned.Active.Contains(id) {
			notOwned = append(notOwned, tp)
			notOwnedTasks = append(notOwnedTasks, id)
			continue
		}
		owned = append(owned, id)
		f.add(tp, o, c.metadataOf(tp))
	}
	if len(notOwned) > 0 {
		slices.SortFunc(notOwned, compareTP)
		return nil, &NotOwnedError{Partitions: notOwned, Tasks: tasks.NewSet(notOwnedTasks...), Epoch: snap.Epoch}
	}
	if snap.Epoch <= 0 || snap.MemberID == "" {
		return nil, ErrNotJoined
	}
	f.tasks = tasks.NewSet(owned...)
	for _, ps := range f.topics {
		slices.SortFunc(ps, func(a, b kmsg.OffsetCommitRequestTopicPartition) int { return int(a.Partition) - int(b.Partition) })
	}
	return f, nil
}

func compareTP(a, b tasks.TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// commitRequest builds the OffsetCommit: topic names and IDs both, so that the version the client
// negotiates (v10+ names topics by ID, older versions by name) finds what it needs.
func (f *fenced) commitRequest(group string, ids map[string][16]byte) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, f.epoch, f.memberID
	for _, name := range f.topicNames() {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic, t.TopicID, t.Partitions = name, ids[name], f.topics[name]
		req.Topics = append(req.Topics, t)
	}
	return req
}

// fetchRequest builds the OffsetFetch (v9+ group form with member ID and epoch; the client fills in
// topic IDs for v10+ and maps them back to names in the answer).
func (f *fenced) fetchRequest(group string) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	// RequireStable: offsets of a transaction still open come back as UNSTABLE_OFFSET_COMMIT (retried)
	// instead of the older committed value, so a task never starts before an exactly-once commit.
	req.RequireStable = true
	g.Group, g.MemberEpoch = group, f.epoch
	id := f.memberID
	g.MemberID = &id
	for _, name := range f.topicNames() {
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic = name
		for _, p := range f.topics[name] {
			t.Partitions = append(t.Partitions, p.Partition)
		}
		g.Topics = append(g.Topics, t)
	}
	req.Groups = append(req.Groups, g)
	return req
}

// resolveIDs looks up, once, the topic IDs that OffsetCommit v10+ names topics by.
func (c *Committer) resolveIDs(ctx context.Context, topics []string) error {
	c.mu.Lock()
	var missing []string
	for _, t := range topics {
		if _, ok := c.ids[t]; !ok {
			missing = append(missing, t)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range missing {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return fmt.Errorf("commit: looking up topic IDs: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("commit: looking up topic %s: %w", *t.Topic, err)
		}
		c.ids[*t.Topic] = t.TopicID // all zero from brokers without topic IDs: names are used then
	}
	for _, t := range missing {
		if _, ok := c.ids[t]; !ok {
			return fmt.Errorf("commit: looking up topic %s: not in the metadata answer", t)
		}
	}
	return nil
}

func (c *Committer) topicIDs(topics []string) map[string][16]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][16]byte, len(topics))
	for _, t := range topics {
		out[t] = c.ids[t]
	}
	return out
}

func (c *Committer) forgetIDs(topics []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		delete(c.ids, t)
	}
}

// verdict classifies the error codes of one answer.
type verdict struct {
	stale      error // kerr.StaleMemberEpoch
	lost       error // kerr.UnknownMemberID or kerr.FencedMemberEpoch
	retry      bool  // a coordinator move or another retriable error
	retryErr   error // the last retriable error, for the message when the attempts run out
	unknownIDs []string
	failed     []error // *PartitionError
}

func (v *verdict) add(tp tasks.TopicPartition, code int16) {
	err := kerr.ErrorForCode(code)
	switch {
	case err == nil:
	case errors.Is(err, kerr.StaleMemberEpoch):
		v.stale = err
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedMemberEpoch), errors.Is(err, kerr.IllegalGeneration):
		v.lost = err
	case errors.Is(err, kerr.UnknownTopicID):
		if !slices.Contains(v.unknownIDs, tp.Topic) {
			v.unknownIDs = append(v.unknownIDs, tp.Topic)
		}
		v.retry, v.retryErr = true, err
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable),
		errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.RequestTimedOut),
		errors.Is(err, kerr.UnstableOffsetCommit), errors.Is(err, kerr.RebalanceInProgress):
		v.retry, v.retryErr = true, err
	default:
		v.failed = append(v.failed, &PartitionError{Partition: tp, Err: err})
	}
}

// retrier decides, answer after answer, whether one call tries again.
type retrier struct {
	c        *Committer
	attempts int // answers so far
	retries  int // waits so far (retriable answers)
}

// next returns true to try again, or false and the call's result.
func (r *retrier) next(ctx context.Context, m Member, f *fenced, v verdict) (bool, error) {
	r.attempts++
	lost := func(err error) error {
		return &LostError{Tasks: f.tasks, MemberID: f.memberID, Epoch: f.epoch, Err: err}
	}
	switch {
	case v.lost != nil:
		return false, lost(v.lost)
	case v.stale != nil:
		if r.attempts < maxAttempts && r.c.waitEpochMoved(ctx, m, f.epoch) {
			return true, nil
		}
		return false, lost(v.stale)
	case len(v.failed) > 0:
		return false, errors.Join(v.failed...)
	case v.retry:
		if r.attempts >= maxAttempts {
			if errors.Is(v.retryErr, kerr.UnstableOffsetCommit) {
				return false, fmt.Errorf("commit: gave up after %d attempts: a transaction still holds these offsets pending; "+
					"the broker aborts an abandoned one after its transaction.timeout.ms, and one that lasts longer is hanging "+
					"(kafka-transactions.sh find-hanging names it) (last: %w)", r.attempts, v.retryErr)
			}
			return false, fmt.Errorf("commit: gave up after %d attempts: the coordinator kept moving or loading (last: %w)", r.attempts, v.retryErr)
		}
		d := r.c.backoff.Delay(r.retries)
		r.retries++
		if err := sleep(ctx, d); err != nil {
			return false, fmt.Errorf("commit: %w", err)
		}
		return true, nil
	}
	return false, nil
}

// waitEpochMoved waits, at most the stale-epoch wait, for the member's epoch to differ from epoch.
func (c *Committer) waitEpochMoved(ctx context.Context, m Member, epoch int32) bool {
	deadline := time.Now().Add(c.staleWait)
	n, notifies := m.(changeNotifier)
	for {
		var changed <-chan struct{} // nil (never ready) for a Member that does not notify
		wait := time.Until(deadline)
		if notifies {
			changed = n.Changed() // before the snapshot, so that a change in between is not missed
		} else {
			wait = min(10*time.Millisecond, wait)
		}
		if s := m.Snapshot(); s.Epoch != epoch && s.Epoch > 0 {
			return true
		}
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}
