package topology

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// subtopologiesFrom turns arbitrary text into subtopologies: lines are "id|sources|sinks|repartition
// sources|changelogs|copartition groups", lists comma separated, groups separated by ';', topic infos
// as name:partitions:replication.
func subtopologiesFrom(in string) []Subtopology {
	var subs []Subtopology
	for _, line := range strings.Split(in, "\n") {
		f := strings.Split(line, "|")
		for len(f) < 6 {
			f = append(f, "")
		}
		s := Subtopology{ID: f[0], SourceTopics: list(f[1]), RepartitionSinkTopics: list(f[2]),
			RepartitionSourceTopics: infos(f[3]), StateChangelogTopics: infos(f[4])}
		for _, g := range strings.Split(f[5], ";") {
			if g != "" {
				s.CopartitionGroups = append(s.CopartitionGroups, list(g))
			}
		}
		if strings.HasPrefix(f[0], "re:") {
			s.SourceTopicRegexes = []string{strings.TrimPrefix(f[0], "re:")}
		}
		subs = append(subs, s)
	}
	return subs
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func infos(s string) []TopicInfo {
	var out []TopicInfo
	for _, item := range list(s) {
		p := strings.Split(item, ":")
		ti := TopicInfo{Name: p[0], Configs: map[string]string{"k": item}}
		if len(p) > 1 {
			ti.Partitions = int32(len(p[1])) - 1
		}
		if len(p) > 2 {
			ti.ReplicationFactor = int16(len(p[2])) - 2
		}
		out = append(out, ti)
	}
	return out
}

// FuzzNew checks that any input either builds a topology whose request encodes and whose ID is
// stable, or fails with a *ValidationError; never a panic.
func FuzzNew(f *testing.F) {
	f.Add("0|words|app-r||\n1|||app-r:|app-c|")
	f.Add("0|a,b,c|||x|a,b;b,c")
	f.Add("re:a(|||")
	f.Add("0|a,a|||c::|a")
	f.Add("\n\n|..|.|\x00|")
	f.Fuzz(func(t *testing.T, in string) {
		subs := subtopologiesFrom(in)
		topo, err := New(subs...)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		hb := &StreamsHeartbeatForTest{}
		hb.encode(topo)
		if again := MustNew(subtopologiesFrom(in)...); again.ID() != topo.ID() || !again.Equal(topo) {
			t.Fatal("the same input gave two different topologies")
		}
		_ = topo.CheckJoinable()
	})
}

// StreamsHeartbeatForTest wraps a topology in a join request so tests can encode it with kmsg.
type StreamsHeartbeatForTest struct{ bytes []byte }

func (h *StreamsHeartbeatForTest) encode(topo *Topology) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID = "g", "m"
	req.Topology = topo.Request(0)
	h.bytes = req.AppendTo(nil)
}
