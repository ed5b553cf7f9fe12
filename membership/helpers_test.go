package membership

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// testTopology has two subtopologies: "0" reads t0, "1" reads t1 and a repartition topic.
var testTopology = topology.MustNew(
	topology.Subtopology{ID: "0", SourceTopics: []string{"t0"}, RepartitionSinkTopics: []string{"rep"}},
	topology.Subtopology{ID: "1", SourceTopics: []string{"t1"}, RepartitionSourceTopics: []topology.TopicInfo{{Name: "rep"}}},
)

// caps44 is what a Kafka 4.4 cluster says it supports.
var caps44 = heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}

// set parses task IDs like "0_1".
func set(ids ...string) tasks.Set {
	out := make([]tasks.ID, 0, len(ids))
	for _, s := range ids {
		id, err := tasks.ParseID(s)
		if err != nil {
			panic(err)
		}
		out = append(out, id)
	}
	return tasks.NewSet(out...)
}

const interval = 500 * time.Millisecond

// resp builds an answer; a nil assignment leaves the three task lists null (unchanged).
func resp(epoch int32, a *tasks.Assignment, statuses ...heartbeat.Status) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = "member-1"
	r.MemberEpoch = epoch
	r.HeartbeatIntervalMillis = int32(interval / time.Millisecond)
	r.AcceptableRecoveryLag = -1
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	for _, s := range statuses {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: int8(s.Code), StatusDetail: s.Detail})
	}
	if a != nil {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = a.Active.Kmsg(), a.Standby.Kmsg(), a.Warmup.Kmsg()
	}
	return r
}

func active(ids ...string) *tasks.Assignment { return &tasks.Assignment{Active: set(ids...)} }

// offs builds task offsets from pairs of task ID and offset: offs("0_0", 5, "0_1", 7).
func offs(pairs ...any) tasks.Offsets {
	o := tasks.Offsets{}
	for i := 0; i < len(pairs); i += 2 {
		id, _ := tasks.ParseID(pairs[i].(string))
		o[id] = int64(pairs[i+1].(int))
	}
	return o
}
