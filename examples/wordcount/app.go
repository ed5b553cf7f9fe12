package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// store is the state of one task of subtopology 1: word counts, and how far the changelog has been
// read (the next changelog offset) and how far it reaches.
type store struct {
	counts map[string]int64
	pos    int64 // next changelog offset to apply; also the task offset reported to the broker
	end    int64 // changelog high watermark last seen (-1 unknown)
}

func newStore() *store { return &store{counts: map[string]int64{}, end: -1} }

// task is an active task: the input partition it reads and, for subtopology 1, its store.
type task struct {
	id        tasks.ID
	topic     string // input topic of the task
	next      int64  // next input offset to process (= the offset to commit)
	committed int64
	store     *store // subtopology 1 only
	restoreTo int64  // the changelog offset restoration must reach before processing
	restoring bool
}

type app struct {
	appID, input, output     string
	repartition, changelog   string
	topo                     *topology.Topology
	log                      *slog.Logger
	cl                       *kgo.Client
	mgr                      *membership.Manager
	mu                       sync.Mutex
	active                   map[tasks.ID]*task
	standby                  map[tasks.ID]*store
	topicIDs                 map[string][16]byte
	lastCommit               time.Time
	processedLines, produced int64
}

func newApp(appID, input, output string, log *slog.Logger) *app {
	n := topology.Names{AppID: appID}
	a := &app{
		appID: appID, input: input, output: output, log: log,
		repartition: n.RepartitionTopic("words"), changelog: n.ChangelogTopic("counts"),
		active: map[tasks.ID]*task{}, standby: map[tasks.ID]*store{}, topicIDs: map[string][16]byte{},
	}
	a.topo = topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{input}, RepartitionSinkTopics: []string{a.repartition}},
		topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{n.Repartition("words", 0)},
			StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog("counts")}},
	)
	return a
}

// partitioner sends changelog records to the partition of their task (set on the record) and hashes
// keys for every other topic, as Kafka Streams does.
func (a *app) partitioner() kgo.Partitioner { return partitioner{changelog: a.changelog} }

type partitioner struct{ changelog string }

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if topic == p.changelog {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return kgo.StickyKeyPartitioner(nil).ForTopic(topic)
}

// ---- listener: called by the member, one callback at a time ----

// OnTasksAssigned starts consuming the input partitions of new active tasks (from the committed
// offsets), restores their stores first, and keeps standby stores fed from the changelog.
func (a *app) OnTasksAssigned(ctx context.Context, as tasks.Assignment, ready bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var newActive []tasks.ID
	for id := range as.Active.All() {
		if _, ok := a.active[id]; !ok {
			newActive = append(newActive, id)
		}
	}
	committed, err := a.committedOffsets(ctx)
	if err != nil {
		return err // the member retries the assignment
	}
	adm := kadm.NewClient(a.cl)
	changelogEnds, err := adm.ListEndOffsets(ctx, a.changelog)
	if err != nil && len(newActive)+as.Standby.Len() > 0 {
		return fmt.Errorf("listing changelog end offsets: %w", err)
	}
	addInput := map[string]map[int32]kgo.Offset{}
	addChangelog := map[int32]kgo.Offset{}
	var pause []int32
	for _, id := range newActive {
		t := &task{id: id, topic: a.input, next: -1, committed: -1}
		if id.Subtopology == "1" {
			t.topic = a.repartition
			// A standby of this task becomes the active store: only the rest has to be restored.
			t.store = a.standby[id]
			delete(a.standby, id)
			if t.store == nil {
				t.store = newStore()
				addChangelog[id.Partition] = kgo.NewOffset().At(0)
			}
			if o, ok := changelogEnds.Lookup(a.changelog, id.Partition); ok && o.Err == nil {
				t.restoreTo = o.Offset
			}
			// Hold the input until the store has caught up (checkRestored resumes it, and stops
			// reading the changelog, which this task now writes itself).
			t.restoring = true
			pause = append(pause, id.Partition)
		}
		start := kgo.NewOffset().AtStart()
		if o, ok := committed.Lookup(t.topic, id.Partition); ok && o.Err == nil && o.At >= 0 {
			start = kgo.NewOffset().At(o.At)
			t.next, t.committed = o.At, o.At
		}
		if addInput[t.topic] == nil {
			addInput[t.topic] = map[int32]kgo.Offset{}
		}
		addInput[t.topic][id.Partition] = start
		a.active[id] = t
		a.log.Info("task started", "task", id.String(), "from_offset", t.next, "restore_to", t.restoreTo, "restoring", t.restoring)
	}
	// Standby tasks of the stateful subtopology keep a store up to date from the changelog.
	for id := range as.Standby.All() {
		if id.Subtopology != "1" || a.standby[id] != nil {
			continue
		}
		a.standby[id] = newStore()
		addChangelog[id.Partition] = kgo.NewOffset().At(0)
		a.log.Info("standby started", "task", id.String())
	}
	var dropChangelog []int32
	for id := range a.standby {
		if !as.Standby.Contains(id) && !as.Active.Contains(id) {
			delete(a.standby, id)
			dropChangelog = append(dropChangelog, id.Partition)
		}
	}
	if len(pause) > 0 {
		a.cl.PauseFetchPartitions(map[string][]int32{a.repartition: pause})
	}
	if len(addChangelog) > 0 {
		addInput[a.changelog] = addChangelog
	}
	if len(dropChangelog) > 0 {
		a.cl.RemoveConsumePartitions(map[string][]int32{a.changelog: dropChangelog})
	}
	a.cl.AddConsumePartitions(addInput)
	a.checkRestored()
	return nil
}

// OnTasksRevoked stops the tasks after flushing what they produced and committing how far they got.
func (a *app) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ts []*task
	for id := range revoked.All() {
		if t := a.active[id]; t != nil {
			ts = append(ts, t)
		}
	}
	if err := a.flushAndCommit(ctx, ts); err != nil {
		return err // the member keeps the tasks and retries the revocation
	}
	a.stop(ts)
	a.log.Info("tasks revoked and committed", "tasks", revoked.String())
	return nil
}

// OnAllTasksLost drops every task without committing: another member may already own them.
func (a *app) OnAllTasksLost(_ context.Context, lost tasks.Assignment) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ts []*task
	for _, t := range a.active {
		ts = append(ts, t)
	}
	a.stop(ts)
	var parts []int32
	for id := range a.standby {
		parts = append(parts, id.Partition)
	}
	a.standby = map[tasks.ID]*store{}
	a.cl.RemoveConsumePartitions(map[string][]int32{a.changelog: parts})
	a.log.Warn("all tasks lost", "tasks", lost.String())
	return nil
}

func (a *app) stop(ts []*task) {
	remove := map[string][]int32{}
	for _, t := range ts {
		remove[t.topic] = append(remove[t.topic], t.id.Partition)
		if t.restoring {
			remove[a.changelog] = append(remove[a.changelog], t.id.Partition)
		}
		delete(a.active, t.id)
	}
	a.cl.RemoveConsumePartitions(remove)
}

// TaskOffsets reports, for the tasks with a store, the changelog position and end (Kafka 4.4 brokers
// place warm-up tasks with them).
func (a *app) TaskOffsets(tasks.Assignment) (tasks.Offsets, tasks.Offsets) {
	a.mu.Lock()
	defer a.mu.Unlock()
	offs, ends := tasks.Offsets{}, tasks.Offsets{}
	add := func(id tasks.ID, s *store) {
		offs[id] = s.pos
		if s.end >= 0 {
			ends[id] = s.end
		} else {
			ends[id] = tasks.UnknownOffset
		}
	}
	for id, t := range a.active {
		if t.store != nil {
			add(id, t.store)
		}
	}
	for id, s := range a.standby {
		add(id, s)
	}
	return offs, ends
}

// ---- processing ----

func (a *app) process(ctx context.Context) error {
	for {
		// Poll with a deadline so that commits stay periodic when no records arrive.
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := a.cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				a.log.Warn("fetch error", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
			}
		}
		a.mu.Lock()
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Topic == a.changelog {
				a.applyChangelog(p)
				return
			}
			t := a.active[tasks.ID{Subtopology: a.subtopologyOf(p.Topic), Partition: p.Partition}]
			if t == nil || t.restoring {
				return // revoked meanwhile, or still restoring (the fetch raced the pause)
			}
			for _, r := range p.Records {
				if r.Offset < t.next {
					continue
				}
				a.processRecord(t, r)
				t.next = r.Offset + 1
			}
		})
		a.checkRestored()
		due := time.Since(a.lastCommit) > time.Second
		a.mu.Unlock()
		if due {
			a.commitAll(ctx)
		}
	}
}

func (a *app) subtopologyOf(topic string) string {
	if topic == a.repartition {
		return "1"
	}
	return "0"
}

func (a *app) processRecord(t *task, r *kgo.Record) {
	if t.id.Subtopology == "0" {
		a.processedLines++
		for _, w := range strings.Fields(strings.ToLower(string(r.Value))) {
			a.cl.Produce(context.Background(), &kgo.Record{Topic: a.repartition, Key: []byte(w), Value: []byte("1")}, a.produceFailed)
		}
		return
	}
	word := string(r.Key)
	t.store.counts[word]++
	val := []byte(strconv.FormatInt(t.store.counts[word], 10))
	a.cl.Produce(context.Background(), &kgo.Record{Topic: a.changelog, Partition: t.id.Partition, Key: r.Key, Value: val}, a.produceFailed)
	a.cl.Produce(context.Background(), &kgo.Record{Topic: a.output, Key: r.Key, Value: val}, a.produceFailed)
	a.produced++
}

func (a *app) produceFailed(r *kgo.Record, err error) {
	if err != nil {
		a.log.Error("produce failed", "topic", r.Topic, "err", err)
	}
}

// applyChangelog restores active stores and keeps standby stores current.
func (a *app) applyChangelog(p kgo.FetchTopicPartition) {
	id := tasks.ID{Subtopology: "1", Partition: p.Partition}
	var s *store
	if t := a.active[id]; t != nil && t.restoring {
		s = t.store
	} else if st := a.standby[id]; st != nil {
		s = st
	}
	if s == nil {
		return
	}
	s.end = p.HighWatermark
	for _, r := range p.Records {
		if r.Offset < s.pos {
			continue
		}
		n, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err == nil {
			s.counts[string(r.Key)] = n
		}
		s.pos = r.Offset + 1
	}
}

// checkRestored starts processing the tasks whose store has caught up with the changelog.
func (a *app) checkRestored() {
	var resume []int32
	for _, t := range a.active {
		if t.restoring && t.store.pos >= t.restoreTo {
			t.restoring = false
			resume = append(resume, t.id.Partition)
			// The active task writes the changelog itself from now on; stop reading it.
			a.cl.RemoveConsumePartitions(map[string][]int32{a.changelog: {t.id.Partition}})
			a.log.Info("task restored", "task", t.id.String(), "changelog_offset", t.store.pos, "words", len(t.store.counts))
		}
	}
	if len(resume) > 0 {
		a.cl.ResumeFetchPartitions(map[string][]int32{a.repartition: resume})
	}
}

// ---- commits ----

func (a *app) commitAll(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ts []*task
	for _, t := range a.active {
		ts = append(ts, t)
	}
	if err := a.flushAndCommit(ctx, ts); err != nil && ctx.Err() == nil {
		a.log.Warn("periodic commit failed; retrying next time", "err", err)
	}
	a.lastCommit = time.Now()
}

// errStaleEpoch means the member's epoch moved on between reading it and committing: the commit is
// simply retried with the new epoch (next period, or the member retries the revocation).
var errStaleEpoch = errors.New("stale member epoch")

// flushAndCommit makes everything the tasks produced durable, then commits their input positions
// with the member ID and epoch (streams groups check both).
func (a *app) flushAndCommit(ctx context.Context, ts []*task) error {
	if err := a.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flushing: %w", err)
	}
	memberID, epoch := a.mgr.Member()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = a.appID, epoch, memberID
	byTopic := map[string]*kmsg.OffsetCommitRequestTopic{}
	for _, t := range ts {
		if t.next < 0 || t.next == t.committed {
			continue
		}
		rt := byTopic[t.topic]
		if rt == nil {
			id, err := a.topicID(ctx, t.topic)
			if err != nil {
				return err
			}
			rt = &kmsg.OffsetCommitRequestTopic{Topic: t.topic, TopicID: id}
			byTopic[t.topic] = rt
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = t.id.Partition, t.next, -1
		rt.Partitions = append(rt.Partitions, p)
	}
	if len(byTopic) == 0 {
		return nil
	}
	for _, rt := range byTopic {
		req.Topics = append(req.Topics, *rt)
	}
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			switch err := kerr.ErrorForCode(p.ErrorCode); {
			case err == nil:
			case errors.Is(err, kerr.StaleMemberEpoch):
				return errStaleEpoch
			default:
				return fmt.Errorf("committing %s[%d]: %w", rt.Topic, p.Partition, err)
			}
		}
	}
	for _, t := range ts {
		t.committed = t.next
	}
	return nil
}

// topicID returns a topic's ID (OffsetCommit v10 names topics by ID), from metadata once.
func (a *app) topicID(ctx context.Context, topic string) ([16]byte, error) {
	if id, ok := a.topicIDs[topic]; ok {
		return id, nil
	}
	td, err := kadm.NewClient(a.cl).ListTopics(ctx, topic)
	if err != nil {
		return [16]byte{}, err
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return [16]byte{}, fmt.Errorf("topic %s: no metadata", topic)
	}
	a.topicIDs[topic] = d.ID
	return d.ID, nil
}

// committedOffsets reads the group's committed input offsets (admin OffsetFetch: a streams group
// accepts it without a member ID).
func (a *app) committedOffsets(ctx context.Context) (kadm.OffsetResponses, error) {
	resps, err := kadm.NewClient(a.cl).FetchOffsets(ctx, a.appID)
	if err != nil {
		return nil, fmt.Errorf("fetching committed offsets: %w", err)
	}
	return resps, nil
}
