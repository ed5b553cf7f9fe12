package heartbeat

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// FuzzParse feeds arbitrary bytes to the response decoder and Parse: any answer a broker (or a
// corrupted connection) could send yields a typed error or a valid Response, never a panic.
func FuzzParse(f *testing.F) {
	r := response()
	r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, 1}}}
	r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 1, StatusDetail: "Source topics in are missing."}}
	f.Add(r.AppendTo(nil), int16(1))
	f.Add(response().AppendTo(nil), int16(0))
	f.Fuzz(func(t *testing.T, raw []byte, version int16) {
		resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.Version = version & 1
		if err := resp.ReadFrom(raw); err != nil || resp.ErrorCode != 0 {
			return
		}
		p, err := Parse(resp, topo)
		if err != nil {
			var pe *ProtocolError
			var ue *tasks.UnknownSubtopologyError
			if !errors.As(err, &pe) && !errors.As(err, &ue) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		for _, s := range p.Statuses {
			_ = s.Topics()
		}
		if p.Assignment != nil {
			if err := tasks.CheckKnown(topo, p.Assignment.All()); err != nil {
				t.Fatalf("Parse let an unknown subtopology through: %v", err)
			}
		}
	})
}
