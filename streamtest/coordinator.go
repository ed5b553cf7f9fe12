package streamtest

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// coordinator plays the streams group for the one member: every task active at the member's
// first heartbeat, and the committed offsets (a transaction's once it commits).
type coordinator struct {
	c        *kfake.Cluster
	subtopos []string

	mu        sync.Mutex
	committed map[tasks.TopicPartition]int64
	pending   map[string]map[tasks.TopicPartition]kmsg.TxnOffsetCommitRequestTopicPartition
	// names are the topics' names by ID (offset requests may name topics by ID): the topics seeded
	// at the start, which are every topic the application commits offsets of.
	names map[[16]byte]string
}

func newCoordinator(c *kfake.Cluster, subtopos []string, names map[[16]byte]string) *coordinator {
	g := &coordinator{c: c, subtopos: subtopos, committed: map[tasks.TopicPartition]int64{},
		pending: map[string]map[tasks.TopicPartition]kmsg.TxnOffsetCommitRequestTopicPartition{},
		names:   names}
	c.ControlKey(int16(kmsg.StreamsGroupHeartbeat), g.heartbeat)
	c.ControlKey(int16(kmsg.OffsetCommit), g.offsetCommit)
	c.ControlKey(int16(kmsg.TxnOffsetCommit), g.txnOffsetCommit)
	c.ControlKey(int16(kmsg.EndTxn), g.endTxn)
	c.ControlKey(int16(kmsg.OffsetFetch), g.offsetFetch)
	return g
}

func (g *coordinator) topic(name string, id [16]byte) string {
	if name != "" {
		return name
	}
	return g.names[id]
}

func (g *coordinator) heartbeat(req kmsg.Request) (kmsg.Response, error, bool) {
	g.c.KeepControl()
	hb := req.(*kmsg.StreamsGroupHeartbeatRequest)
	resp := hb.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.MemberID, resp.HeartbeatIntervalMillis = hb.MemberID, 50
	if hb.MemberEpoch < 0 { // leaving: its epoch says so
		resp.MemberEpoch = hb.MemberEpoch
		return resp, nil, true
	}
	// Joining or staying: epoch 1, every task (the same assignment each time is no change).
	resp.MemberEpoch = 1
	for _, s := range g.subtopos {
		resp.ActiveTasks = append(resp.ActiveTasks, kmsg.TaskIDs{SubtopologyID: s, Partitions: []int32{0}})
	}
	resp.StandbyTasks, resp.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return resp, nil, true
}

func (g *coordinator) offsetCommit(req kmsg.Request) (kmsg.Response, error, bool) {
	g.c.KeepControl()
	oc := req.(*kmsg.OffsetCommitRequest)
	resp := oc.ResponseKind().(*kmsg.OffsetCommitResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, tp := range oc.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
		for _, p := range tp.Partitions {
			g.commit(tasks.TopicPartition{Topic: g.topic(tp.Topic, tp.TopicID), Partition: p.Partition}, p.Offset)
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil, true
}

// commit records an offset; called with g.mu held. (The metadata committed with it, a partition's
// time, is read back only by a member that takes the task over, which the driver never has.)
func (g *coordinator) commit(tp tasks.TopicPartition, offset int64) { g.committed[tp] = offset }

// txnOffsetCommit keeps a transaction's offsets until it commits (kfake ends the transaction).
func (g *coordinator) txnOffsetCommit(req kmsg.Request) (kmsg.Response, error, bool) {
	g.c.KeepControl()
	tc := req.(*kmsg.TxnOffsetCommitRequest)
	resp := tc.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending[tc.TransactionalID] == nil {
		g.pending[tc.TransactionalID] = map[tasks.TopicPartition]kmsg.TxnOffsetCommitRequestTopicPartition{}
	}
	for _, tp := range tc.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
		for _, p := range tp.Partitions {
			g.pending[tc.TransactionalID][tasks.TopicPartition{Topic: g.topic(tp.Topic, tp.TopicID), Partition: p.Partition}] = p
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil, true
}

func (g *coordinator) endTxn(req kmsg.Request) (kmsg.Response, error, bool) {
	g.c.KeepControl()
	et := req.(*kmsg.EndTxnRequest)
	g.mu.Lock()
	defer g.mu.Unlock()
	if et.Commit {
		for tp, p := range g.pending[et.TransactionalID] {
			g.commit(tp, p.Offset)
		}
	}
	delete(g.pending, et.TransactionalID)
	return nil, nil, false // kfake itself ends the transaction
}

func (g *coordinator) offsetFetch(req kmsg.Request) (kmsg.Response, error, bool) {
	g.c.KeepControl()
	of := req.(*kmsg.OffsetFetchRequest)
	resp := of.ResponseKind().(*kmsg.OffsetFetchResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rg := range of.Groups {
		og := kmsg.NewOffsetFetchResponseGroup()
		og.Group = rg.Group
		for _, tp := range rg.Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset = p, -1
				key := tasks.TopicPartition{Topic: g.topic(tp.Topic, tp.TopicID), Partition: p}
				if o, ok := g.committed[key]; ok {
					rp.Offset = o
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			og.Topics = append(og.Topics, rt)
		}
		resp.Groups = append(resp.Groups, og)
	}
	return resp, nil, true
}

// committedOffset is the offset committed for tp (-1: none).
func (g *coordinator) committedOffset(tp tasks.TopicPartition) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o, ok := g.committed[tp]; ok {
		return o
	}
	return -1
}
