package topology

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Benchmarks of what a member does with its topology, for topologies of 10, 1,000 and 10,000
// subtopologies (issue 12): New (validation, canonical order, ID), the topology ID alone, and the join
// request's topology built and encoded. Each subtopology is a link of a chain, as a long DSL program
// gives: the first reads a source topic, each later one reads the repartition topic the one before
// writes, and every one keeps a store with a compacted changelog. Compare ns/op ÷ subtopologies
// between the sizes to see whether a cost grows faster than the topology.

var benchSizes = []int{10, 1_000, 10_000}

// chain returns n subtopologies in the order a program would declare them.
func chain(n int) []Subtopology {
	names := Names{AppID: "bench"}
	subs := make([]Subtopology, n)
	for i := range n {
		s := Subtopology{ID: strconv.Itoa(i)}
		if i == 0 {
			s.SourceTopics = []string{"bench-input"}
		} else {
			s.RepartitionSourceTopics = []TopicInfo{names.Repartition("link-"+strconv.Itoa(i), 0)}
		}
		if i < n-1 {
			s.RepartitionSinkTopics = []string{names.RepartitionTopic("link-" + strconv.Itoa(i+1))}
		}
		s.StateChangelogTopics = []TopicInfo{names.KeyValueChangelog("store-" + strconv.Itoa(i))}
		subs[i] = s
	}
	return subs
}

func BenchmarkNew(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("subtopologies="+strconv.Itoa(n), func(b *testing.B) {
			subs := chain(n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(subs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkID(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("subtopologies="+strconv.Itoa(n), func(b *testing.B) {
			t := MustNew(chain(n)...)
			want := t.ID()
			b.ReportAllocs()
			for b.Loop() {
				if computeID(t.subs) != want {
					b.Fatal("the ID changed")
				}
			}
		})
	}
}

// BenchmarkRequestEncode builds the join request's topology and encodes a whole join heartbeat that
// carries it, into a reused buffer.
func BenchmarkRequestEncode(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("subtopologies="+strconv.Itoa(n), func(b *testing.B) {
			t := MustNew(chain(n)...)
			req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			req.Version = 1
			req.Group, req.MemberID = "bench", "member-1"
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				req.Topology = t.Request(0)
				buf = req.AppendTo(buf[:0])
			}
			b.ReportMetric(float64(len(buf)), "bytes")
		})
	}
}
