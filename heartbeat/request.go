package heartbeat

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Protocol constants for MemberEpoch.
const (
	EpochJoin        int32 = 0  // (re-)joining the group
	EpochLeave       int32 = -1 // leaving for good
	EpochLeaveStatic int32 = -2 // a static member leaving for a while (Kafka 4.4+)
)

// JoinInfo is what a member says about itself when it joins. A Builder keeps its copy for the
// member's life. Whether the broker takes task offsets is not here: the member's state machine
// decides, and gives the Builder no offsets for a broker that does not take them.
type JoinInfo struct {
	Group            string
	MemberID         string
	InstanceID       string // static membership; "" for a dynamic member
	ProcessID        string
	Rack             string
	RebalanceTimeout int32 // milliseconds
	EndpointHost     string
	EndpointPort     uint16
	HasEndpoint      bool
	ClientTags       map[string]string
	Topology         *topology.Topology
	TopologyEpoch    int32
}

// Report is what a member reports in one heartbeat.
type Report struct {
	Epoch         int32            // EpochJoin, the current epoch, or a leave epoch
	EndpointEpoch int32            // last EndpointInformationEpoch received, -1 at first
	Owned         tasks.Assignment // the reconciled assignment the application owns
	Shutdown      bool             // ask the whole group to shut down
	// Offsets and EndOffsets are the current task offsets; nil when not provided (always nil for a
	// broker that does not take them). Each list is sent when it changed since last sent and either SendOffsets is set or the
	// request is a join or the first after Reset (after Reset every list counts as changed).
	Offsets, EndOffsets tasks.Offsets
	SendOffsets         bool
}

// Builder builds heartbeat requests. It remembers what it last sent, so that a heartbeat carries only
// what changed, as Kafka's StreamsGroupHeartbeatRequestManager.HeartbeatState does: the owned task
// lists, all three together, only when the owned assignment changed; task offsets only when due and
// changed. After Reset (any error) the next request is full again: every field the join carries
// except the topology. Not safe for concurrent use; the member's state machine owns it.
type Builder struct {
	m        JoinInfo
	full     bool // next request carries every join field
	hasOwned bool
	owned    tasks.Assignment
	offsets  tasks.Offsets
	endOffs  tasks.Offsets
}

// NewBuilder returns a builder for member m; its first request is full.
func NewBuilder(m JoinInfo) *Builder { return &Builder{m: m, full: true} }

// Reset forgets what was last sent, so the next request is full. Call it after any error.
func (b *Builder) Reset() {
	b.full = true
	b.hasOwned = false
	b.offsets, b.endOffs = nil, nil
}

// ForgetOffsets forgets the task offsets last sent, so the next offsets go whole: they did not reach
// the broker (the request went at v0, see ForBroker).
func (b *Builder) ForgetOffsets() { b.offsets, b.endOffs = nil, nil }

// Build returns the request for s and records what it carries as sent.
func (b *Builder) Build(s Report) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = b.m.Group
	req.MemberID = b.m.MemberID
	req.MemberEpoch = s.Epoch
	req.EndpointInformationEpoch = s.EndpointEpoch
	req.ShutdownApplication = s.Shutdown
	if b.m.InstanceID != "" {
		id := b.m.InstanceID
		req.InstanceID = &id
	}
	if s.Epoch < 0 { // a leave carries identity only
		return req
	}
	join := s.Epoch == EpochJoin
	if join || b.full {
		b.fillJoinFields(req)
	}
	if join {
		// Joining: a topology, and three empty (not null) task lists.
		req.Topology = b.m.Topology.Request(b.m.TopologyEpoch)
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		b.hasOwned, b.owned = true, tasks.Assignment{}
	} else if !b.hasOwned || !b.owned.Equal(s.Owned) {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = s.Owned.Active.Kmsg(), s.Owned.Standby.Kmsg(), s.Owned.Warmup.Kmsg()
		b.hasOwned, b.owned = true, s.Owned
	}
	if s.SendOffsets || join || b.full {
		if s.Offsets != nil && (b.offsets == nil || !b.offsets.Equal(s.Offsets)) {
			req.TaskOffsets = s.Offsets.Kmsg()
			b.offsets = s.Offsets
		}
		if s.EndOffsets != nil && (b.endOffs == nil || !b.endOffs.Equal(s.EndOffsets)) {
			req.TaskEndOffsets = s.EndOffsets.Kmsg()
			b.endOffs = s.EndOffsets
		}
	}
	b.full = false
	return req
}

// fillJoinFields sets the member's description: rebalance timeout, process ID, endpoint, rack and
// client tags (always a list, maybe empty), as Kafka Streams sends them on join.
func (b *Builder) fillJoinFields(req *kmsg.StreamsGroupHeartbeatRequest) {
	req.RebalanceTimeoutMillis = b.m.RebalanceTimeout
	pid := b.m.ProcessID
	req.ProcessID = &pid
	if b.m.Rack != "" {
		rack := b.m.Rack
		req.RackID = &rack
	}
	if b.m.HasEndpoint {
		req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: b.m.EndpointHost, Port: b.m.EndpointPort}
	}
	keys := make([]string, 0, len(b.m.ClientTags))
	for k := range b.m.ClientTags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	req.ClientTags = make([]kmsg.StreamsGroupHeartbeatRequestClientTag, 0, len(keys))
	for _, k := range keys {
		req.ClientTags = append(req.ClientTags, kmsg.StreamsGroupHeartbeatRequestClientTag{Key: k, Value: b.m.ClientTags[k]})
	}
}
