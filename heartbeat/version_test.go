package heartbeat

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodeAs encodes r as kgo would at version (SetVersion, then AppendTo) and decodes it back.
func decodeAs(t *testing.T, r kmsg.Request, version int16) *kmsg.StreamsGroupHeartbeatRequest {
	t.Helper()
	r.SetVersion(version)
	got := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	got.SetVersion(version)
	if err := got.ReadFrom(r.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	return got
}

// Issue 22 §1: a heartbeat that goes to a v0 coordinator (Kafka 4.2/4.3, during a rolling upgrade)
// carries no task offsets, end offsets or warm-up tasks, which those brokers refuse as
// INVALID_REQUEST; at v1 it carries them. The decision is made when kgo sets the version it
// negotiated with that broker, not from a probe of another broker.
func TestForBrokerDropsV1ContentAtV0(t *testing.T) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "app", "m", 3
	req.InstanceID = kmsg.StringPtr("i")
	req.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
	req.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1}}}
	req.TaskOffsets = []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 0, Offset: 5}}
	req.TaskEndOffsets = []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 0, Offset: 9}}

	if raw := decodeAs(t, req, 0); raw.TaskOffsets == nil {
		t.Fatal("kmsg no longer encodes TaskOffsets at v0: ForBroker may be unnecessary")
	}
	v0 := decodeAs(t, ForBroker(req), 0)
	if v0.TaskOffsets != nil || v0.TaskEndOffsets != nil || v0.WarmupTasks == nil || len(v0.WarmupTasks) != 0 {
		t.Fatalf("v0: offsets %v ends %v warm-up %v, want null, null and []", v0.TaskOffsets, v0.TaskEndOffsets, v0.WarmupTasks)
	}
	if len(v0.ActiveTasks) != 1 || v0.InstanceID == nil || v0.MemberEpoch != 3 {
		t.Fatalf("v0 lost other fields: %+v", v0)
	}
	if req.TaskOffsets == nil || len(req.WarmupTasks) != 1 {
		t.Fatal("the request itself was changed")
	}
	v1 := decodeAs(t, ForBroker(req), 1)
	if len(v1.TaskOffsets) != 1 || len(v1.TaskEndOffsets) != 1 || len(v1.WarmupTasks) != 1 {
		t.Fatalf("v1: %+v, want the offsets and warm-up tasks", v1)
	}
	if req.GetVersion() != 1 {
		t.Fatalf("the version kgo set is not visible on the request: %d", req.GetVersion())
	}
	plain := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	if AtVersion(plain, 0) != plain {
		t.Error("a request with nothing to drop is copied")
	}
}

// A request without warm-up tasks keeps them null at v0: only a non-empty list is replaced by [].
func TestForBrokerKeepsNullWarmupTasksAtV0(t *testing.T) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "app", "m", 3
	req.TaskOffsets = []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 0, Offset: 5}}
	if got := AtVersion(req, 0); got.WarmupTasks != nil {
		t.Fatalf("warm-up tasks %#v at v0, want null", got.WarmupTasks)
	}
}

// The member epochs that mean something on the wire (KIP-1071): join 0, leave -1, a static
// member's temporary leave -2.
func TestEpochConstantsAreTheWireValues(t *testing.T) {
	if EpochJoin != 0 || EpochLeave != -1 || EpochLeaveStatic != -2 {
		t.Fatalf("join %d, leave %d, static leave %d; want 0, -1, -2", EpochJoin, EpochLeave, EpochLeaveStatic)
	}
}
