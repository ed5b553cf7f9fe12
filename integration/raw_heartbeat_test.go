package integration

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/internal/coordinator"
	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

// rawMember speaks StreamsGroupHeartbeat with nothing but kmsg and the coordinator cache. It pins the
// broker's contract that the library is built on, independent of the library's own logic.
type rawMember struct {
	t     *testing.T
	coord *coordinator.Cache
	group string
	id    string
	epoch int32
}

func (m *rawMember) send(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	m.t.Helper()
	req.Group = m.group
	req.MemberID = m.id
	for {
		resp, node, err := m.coord.Send(ctx, m.group, req)
		if err != nil {
			if neterr.IsRetriableTransport(err) && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			m.t.Fatalf("heartbeat: %v", err)
		}
		r := resp.(*kmsg.StreamsGroupHeartbeatResponse)
		if neterr.IsCoordinatorMoved(r.ErrorCode) {
			m.coord.Invalidate(m.group, node)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if r.ErrorCode == kerr.CoordinatorLoadInProgress.Code { // right coordinator, still loading
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return r
	}
}

func oneSubtopology(topic string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID = "0"
	sub.SourceTopics = []string{topic}
	sub.SourceTopicRegex = []string{}
	sub.StateChangelogTopics = []kmsg.TopicInfo{}
	sub.RepartitionSinkTopics = []string{}
	sub.RepartitionSourceTopics = []kmsg.TopicInfo{}
	sub.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{}
	topo.Subtopologies = append(topo.Subtopologies, sub)
	return &topo
}

func joinRequest(topo *kmsg.StreamsGroupHeartbeatRequestTopology) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.MemberEpoch = 0
	req.EndpointInformationEpoch = -1
	req.RebalanceTimeoutMillis = 30000
	req.Topology = topo
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	pid := uuid.NewString()
	req.ProcessID = &pid
	req.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{}
	return req
}

func activePartitions(tasks []kmsg.TaskIDs) []string {
	var out []string
	for _, t := range tasks {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s_%d", t.SubtopologyID, p))
		}
	}
	sort.Strings(out)
	return out
}

// TestRawHeartbeatJoinAssignLeave walks the whole member life cycle by hand: join at epoch 0, heartbeat
// until the member is at epoch >= 1 with all four active tasks, acknowledge, leave with epoch -1, and
// confirm with StreamsGroupDescribe that the group has no members left.
func TestRawHeartbeatJoinAssignLeave(t *testing.T) {
	b := Get(t)
	topic := Name(t, "in")
	group := Name(t, "app")
	b.CreateTopic(t, topic, 4)
	b.DeleteGroupAtEnd(t, group)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	m := &rawMember{t: t, coord: coordinator.NewCache(b.Client(t)), group: group, id: uuid.NewString()}
	resp := m.send(ctx, joinRequest(oneSubtopology(topic)))
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("join: %v (%v)", err, resp.ErrorMessage)
	}
	if resp.HeartbeatIntervalMillis <= 0 {
		t.Fatalf("join response carries no heartbeat interval: %d", resp.HeartbeatIntervalMillis)
	}
	m.epoch = resp.MemberEpoch

	var owned []kmsg.TaskIDs
	target := resp.ActiveTasks
	want := []string{"0_0", "0_1", "0_2", "0_3"}
	Eventually(t, 30*time.Second, func() (bool, string) {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.MemberEpoch = m.epoch
		req.EndpointInformationEpoch = -1
		// Acknowledge the latest target by reporting it as owned (all three lists together).
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = target, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if req.ActiveTasks == nil {
			req.ActiveTasks = []kmsg.TaskIDs{}
		}
		r := m.send(ctx, req)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		m.epoch = r.MemberEpoch
		owned = target
		if r.ActiveTasks != nil {
			target = r.ActiveTasks
		}
		got := activePartitions(owned)
		return m.epoch >= 1 && fmt.Sprint(got) == fmt.Sprint(want),
			fmt.Sprintf("epoch %d, owned active tasks %v, want %v; statuses %v", m.epoch, got, want, r.Status)
	})

	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.MemberEpoch = -1
	leave.EndpointInformationEpoch = -1
	r := m.send(ctx, leave)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		t.Fatalf("leave: %v", err)
	}
	if r.MemberEpoch != -1 {
		t.Fatalf("leave answered epoch %d, want -1", r.MemberEpoch)
	}

	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{group}
	dr, _, err := m.coord.Send(ctx, group, d)
	if err != nil {
		t.Fatal(err)
	}
	g := dr.(*kmsg.StreamsGroupDescribeResponse).Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		t.Fatalf("describe: %v", err)
	}
	if len(g.Members) != 0 {
		t.Fatalf("group %s still has %d members after the leave", group, len(g.Members))
	}
}

// TestRawHeartbeatTopologyOnNonZeroEpochIsInvalid pins a broker validation rule the request builder
// must respect: a topology may only be sent when (re-)joining.
func TestRawHeartbeatTopologyOnNonZeroEpochIsInvalid(t *testing.T) {
	b := Get(t)
	topic := Name(t, "in")
	group := Name(t, "app")
	b.CreateTopic(t, topic, 1)
	b.DeleteGroupAtEnd(t, group)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	m := &rawMember{t: t, coord: coordinator.NewCache(b.Client(t)), group: group, id: uuid.NewString()}
	resp := m.send(ctx, joinRequest(oneSubtopology(topic)))
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("join: %v", err)
	}
	bad := joinRequest(oneSubtopology(topic))
	bad.MemberEpoch = resp.MemberEpoch
	bad.RebalanceTimeoutMillis = -1
	r := m.send(ctx, bad)
	if got := kerr.ErrorForCode(r.ErrorCode); got != kerr.InvalidRequest {
		t.Fatalf("topology on epoch %d: got %v, want INVALID_REQUEST", bad.MemberEpoch, got)
	}
	if r.ErrorMessage == nil || *r.ErrorMessage == "" {
		t.Fatal("INVALID_REQUEST without an error message")
	}
	t.Logf("broker says: %s", *r.ErrorMessage)

	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.MemberEpoch = -1
	m.send(ctx, leave)
}
