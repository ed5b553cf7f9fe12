package heartbeat

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// broken says, independently of Parse, which rule of a successful answer resp breaks ("" for none),
// and whether it names a subtopology topo does not know.
func broken(resp *kmsg.StreamsGroupHeartbeatResponse) (rule string, unknownSub bool) {
	switch {
	case resp.MemberEpoch < 0:
		return "epoch", false
	case resp.HeartbeatIntervalMillis <= 0:
		return "interval", false
	case resp.TaskOffsetIntervalMillis < 0:
		return "offset interval", false
	}
	lists := [][]kmsg.TaskIDs{resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks}
	nils := 0
	for _, l := range lists {
		if l == nil {
			nils++
		}
	}
	if nils != 0 && nils != 3 {
		return "all three or none", false
	}
	for _, l := range lists {
		for _, t := range l {
			for _, p := range t.Partitions {
				if p < 0 {
					return "negative task partition", false
				}
			}
		}
	}
	for _, l := range lists {
		for _, t := range l {
			if !topo.HasSubtopology(t.SubtopologyID) && len(t.Partitions) > 0 {
				unknownSub = true
			}
		}
	}
	for _, e := range resp.PartitionsByUserEndpoint {
		for _, p := range e.ActivePartitions {
			if slices.ContainsFunc(p.Partitions, func(x int32) bool { return x < 0 }) {
				return "negative endpoint partition", unknownSub
			}
		}
		for _, p := range e.StandbyPartitions {
			if slices.ContainsFunc(p.Partitions, func(x int32) bool { return x < 0 }) {
				return "negative endpoint partition", unknownSub
			}
		}
	}
	return "", unknownSub
}

// FuzzParse feeds arbitrary bytes to the response decoder and Parse, and checks the result against
// an oracle of its own (broken): an answer that breaks a rule is refused with a *ProtocolError, one
// that names an unknown subtopology with a *tasks.UnknownSubtopologyError, and any other is accepted,
// with an epoch >= 0, an interval > 0, and every partition non-negative, sorted and unique. Never a
// panic.
func FuzzParse(f *testing.F) {
	r := response()
	r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, 1}}}
	r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 1, StatusDetail: "Source topics in are missing."}}
	r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
		{UserEndpoint: kmsg.Endpoint{Host: "h", Port: 1}, ActivePartitions: activeEP("in", 1, 0), StandbyPartitions: standbyEP("in", 2)}}
	f.Add(r.AppendTo(nil), int16(1))
	f.Add(response().AppendTo(nil), int16(0))
	zero := response()
	zero.HeartbeatIntervalMillis, zero.MemberEpoch = 0, -1
	f.Add(zero.AppendTo(nil), int16(1))
	f.Fuzz(func(t *testing.T, raw []byte, version int16) {
		resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.Version = version & 1
		if err := resp.ReadFrom(raw); err != nil || resp.ErrorCode != 0 {
			return
		}
		rule, unknown := broken(resp)
		p, err := parse(resp, topo)
		_, isPE := errors.AsType[*ProtocolError](err)
		_, isUE := errors.AsType[*tasks.UnknownSubtopologyError](err)
		switch {
		case rule != "" && !unknown:
			if !isPE {
				t.Fatalf("the answer breaks %q: want a *ProtocolError, got %v, %T %v", rule, p, err, err)
			}
			return
		case rule == "" && unknown:
			if !isUE {
				t.Fatalf("the answer names an unknown subtopology: want a *tasks.UnknownSubtopologyError, got %T %v", err, err)
			}
			return
		case rule != "" && unknown: // which check comes first is Parse's business
			if !isPE && !isUE {
				t.Fatalf("an answer that breaks %q and names an unknown subtopology: %T %v", rule, err, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("a valid answer was refused: %v", err)
		}
		if p.Epoch != resp.MemberEpoch || p.Epoch < 0 || p.Interval <= 0 || p.MemberID != resp.MemberID {
			t.Fatalf("parsed %+v from epoch %d interval %d", p, resp.MemberEpoch, resp.HeartbeatIntervalMillis)
		}
		if (p.Assignment == nil) != (resp.ActiveTasks == nil) {
			t.Fatalf("assignment %v from active list %v", p.Assignment, resp.ActiveTasks)
		}
		if (p.Endpoints == nil) != (resp.PartitionsByUserEndpoint == nil) {
			t.Fatal("the endpoint map is present exactly when the answer has one")
		}
		for _, ep := range p.Endpoints {
			for _, m := range []map[string][]int32{ep.Active, ep.Standby} {
				for _, ps := range m {
					if !slices.IsSorted(ps) || len(slices.Compact(slices.Clone(ps))) != len(ps) || slices.ContainsFunc(ps, func(x int32) bool { return x < 0 }) {
						t.Fatalf("endpoint partitions %v", ps)
					}
				}
			}
		}
		if len(p.Statuses) != len(resp.Status) {
			t.Fatalf("%d statuses of %d", len(p.Statuses), len(resp.Status))
		}
		for _, s := range p.Statuses {
			for _, topic := range s.Topics() {
				if topic == "" {
					t.Fatal("an empty topic name from a status")
				}
			}
		}
	})
}

// FuzzStatusTopics: no detail text makes Topics panic (a broker text "Source topics are missing."
// once did), and what it returns are valid topic names, sorted, each once.
func FuzzStatusTopics(f *testing.F) {
	for _, s := range []string{"Source topics are missing.", "Source topics a, b are missing.", "Internal topics are missing: a; x",
		"[l, r]", "partitions: [] y]", ":", "Source topics ", "are missing:"} {
		f.Add(int8(1), s)
		f.Add(int8(2), s)
	}
	f.Fuzz(func(t *testing.T, code int8, detail string) {
		got := Status{Code: StatusCode(code), Detail: detail}.Topics()
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("%q: %q", detail, got)
		}
		for _, name := range got {
			if topology.ValidTopicName(name) != nil {
				t.Fatalf("%q: invalid topic name %q", detail, name)
			}
		}
	})
}
