package heartbeat

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestBuilderMinimalMember(t *testing.T) {
	m := JoinInfo{Group: "g", MemberID: "m", ProcessID: "p", RebalanceTimeout: 5, Topology: topo}
	b := NewBuilder(m)
	req := b.Build(Report{Epoch: EpochJoin, EndpointEpoch: -1})
	if req.RackID != nil || req.UserEndpoint != nil || req.InstanceID != nil {
		t.Fatalf("no rack, endpoint or instance ID unless set: %+v %+v %+v", req.RackID, req.UserEndpoint, req.InstanceID)
	}
	if req.ClientTags == nil || len(req.ClientTags) != 0 {
		t.Fatalf("client tags are an empty list, not null: %#v", req.ClientTags)
	}
	if req.Group != "g" || req.MemberID != "m" || req.MemberEpoch != 0 || req.EndpointInformationEpoch != -1 || req.ShutdownApplication {
		t.Fatalf("identity: %+v", req)
	}
	if req.Topology == nil || req.Topology.Epoch != 0 || len(req.Topology.Subtopologies) != 1 {
		t.Fatalf("topology: %+v", req.Topology)
	}
	if req.TaskOffsets != nil {
		t.Fatal("no offsets to a broker that does not take them")
	}
	// A full heartbeat after the join goes only after Reset.
	if req := b.Build(Report{Epoch: 4, EndpointEpoch: 2, Shutdown: true}); req.ProcessID != nil || req.EndpointInformationEpoch != 2 || !req.ShutdownApplication || req.MemberEpoch != 4 {
		t.Fatalf("steady state: %+v", req)
	}
}

func TestBuilderOwnedListsAfterAJoin(t *testing.T) {
	b := NewBuilder(member())
	b.Build(Report{Epoch: EpochJoin})
	// The join reported three empty lists: an empty assignment is not resent.
	if req := b.Build(Report{Epoch: 1, Owned: tasks.Assignment{}}); req.ActiveTasks != nil {
		t.Fatal("the join's empty lists count as sent")
	}
	// The first request of a builder that never joined carries the lists, even empty.
	b = NewBuilder(member())
	req := b.Build(Report{Epoch: 3, Owned: tasks.Assignment{}})
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil || req.Topology != nil || req.ProcessID == nil {
		t.Fatalf("a first request at a non-zero epoch is full, without topology: %+v", req)
	}
	standby := tasks.Assignment{Standby: tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 1})}
	req = b.Build(Report{Epoch: 3, Owned: standby})
	if len(req.StandbyTasks) != 1 || req.ActiveTasks == nil || len(req.ActiveTasks) != 0 {
		t.Fatalf("a change in one list sends all three: %+v", req)
	}
	// A leave changes nothing the builder remembers.
	b.Build(Report{Epoch: EpochLeave, Owned: tasks.Assignment{}})
	if req := b.Build(Report{Epoch: 3, Owned: standby}); req.StandbyTasks != nil {
		t.Fatal("after a leave request the lists last sent are still the standby one")
	}
}

func TestBuilderEmptyOffsetsAreSent(t *testing.T) {
	m := member()
	b := NewBuilder(m)
	req := b.Build(Report{Epoch: EpochJoin, Offsets: tasks.Offsets{}, EndOffsets: tasks.Offsets{}})
	if req.TaskOffsets == nil || req.TaskEndOffsets == nil || len(req.TaskOffsets) != 0 {
		t.Fatalf("empty offsets go as empty lists on join: %#v %#v", req.TaskOffsets, req.TaskEndOffsets)
	}
	if req := b.Build(Report{Epoch: 1, Offsets: tasks.Offsets{}, EndOffsets: tasks.Offsets{}, SendOffsets: true}); req.TaskOffsets != nil || req.TaskEndOffsets != nil {
		t.Fatal("unchanged empty offsets are not resent")
	}
	// Nil offsets: nothing to send, and nothing recorded.
	b.Reset()
	if req := b.Build(Report{Epoch: 1, SendOffsets: true}); req.TaskOffsets != nil || req.TaskEndOffsets != nil {
		t.Fatal("no offsets provided")
	}
	offs := tasks.Offsets{{Subtopology: "0", Partition: 0}: 5}
	if req := b.Build(Report{Epoch: 1, Offsets: offs, EndOffsets: offs, SendOffsets: true}); len(req.TaskOffsets) != 1 || len(req.TaskEndOffsets) != 1 ||
		!reflect.DeepEqual(req.TaskOffsets[0], kmsg.TaskOffset{SubtopologyID: "0", Partition: 0, Offset: 5}) {
		t.Fatalf("offsets: %+v", req.TaskOffsets)
	}
	// Due but only the end offsets changed.
	ends := tasks.Offsets{{Subtopology: "0", Partition: 0}: 9}
	if req := b.Build(Report{Epoch: 1, Offsets: offs, EndOffsets: ends, SendOffsets: true}); req.TaskOffsets != nil || len(req.TaskEndOffsets) != 1 {
		t.Fatal("only the changed list")
	}
}
