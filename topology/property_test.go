package topology

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genSubtopologies draws a valid topology: one to four subtopologies with IDs that sort differently
// as strings and as numbers, source topics, optionally source topic regexes, repartition topics
// written by one or two subtopologies that read a user topic and read by one, changelog topics, topic configs, replication
// factors including 0 (= -1), and copartition groups over each subtopology's input topics.
func genSubtopologies(t *rapid.T, regexes bool) []Subtopology {
	n := rapid.IntRange(1, 4).Draw(t, "subtopologies")
	ids := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"0", "1", "2", "10", "11", "9", "a"}), n, n, rapid.ID[string]).Draw(t, "ids")
	serial := 0
	name := func(label string) string {
		serial++
		return rapid.StringMatching(`[a-zA-Z0-9._-]{0,6}`).Draw(t, label) + "-" + fmt.Sprint(serial)
	}
	// Every fixed repartition count of the topology is the same (copartitioned repartition topics
	// must agree, and the broker compares all of them for a group of repartition topics only).
	fixedCount := rapid.Int32Range(1, 4).Draw(t, "fixed partition count")
	info := func(label string, partitions bool) TopicInfo {
		ti := TopicInfo{
			Name:              name(label),
			ReplicationFactor: rapid.SampledFrom([]int16{-1, 0, 1, 3, 300}).Draw(t, label+" rf"),
			Configs:           rapid.MapOfN(rapid.StringMatching(`[a-z.]{1,6}`), rapid.StringMatching(`[a-z0-9,-]{0,4}`), 0, 3).Draw(t, label+" configs"),
		}
		if partitions && rapid.Bool().Draw(t, label+" fixed") {
			ti.Partitions = fixedCount
		}
		return ti
	}
	subs := make([]Subtopology, n)
	for i := range subs {
		s := &subs[i]
		s.ID = ids[i]
		for range rapid.IntRange(0, 3).Draw(t, "sources") {
			s.SourceTopics = append(s.SourceTopics, name("source"))
		}
		if regexes {
			s.SourceTopicRegexes = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"in-.*", "a+", "[0-9]+", "x|y"}), 0, 2, rapid.ID[string]).Draw(t, "regexes")
		}
		for range rapid.IntRange(0, 2).Draw(t, "changelogs") {
			s.StateChangelogTopics = append(s.StateChangelogTopics, info("changelog", false))
		}
	}
	for range rapid.IntRange(0, 3).Draw(t, "repartition topics") {
		ti := info("repartition", true)
		reader := rapid.IntRange(0, n-1).Draw(t, "reader")
		subs[reader].RepartitionSourceTopics = append(subs[reader].RepartitionSourceTopics, ti)
		for _, w := range rapid.SliceOfNDistinct(rapid.IntRange(0, n-1), 1, 2, rapid.ID[int]).Draw(t, "writers") {
			subs[w].RepartitionSinkTopics = append(subs[w].RepartitionSinkTopics, ti.Name)
			if len(subs[w].SourceTopics) == 0 { // so the broker can derive the topic's count
				subs[w].SourceTopics = append(subs[w].SourceTopics, name("source"))
			}
		}
	}
	for i := range subs {
		s := &subs[i]
		if len(s.SourceTopics)+len(s.SourceTopicRegexes)+len(s.RepartitionSourceTopics) == 0 {
			s.SourceTopics = append(s.SourceTopics, name("source"))
		}
		inputs := slices.Clone(s.SourceTopics)
		for _, ti := range s.RepartitionSourceTopics {
			inputs = append(inputs, ti.Name)
		}
		if len(inputs) < 2 {
			continue
		}
		for range rapid.IntRange(0, 2).Draw(t, "copartition groups") {
			perm := rapid.Permutation(inputs).Draw(t, "group order")
			s.CopartitionGroups = append(s.CopartitionGroups, perm[:rapid.IntRange(2, len(perm)).Draw(t, "group size")])
		}
	}
	return subs
}

func drawRand(t *rapid.T) *rand.Rand {
	return rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
}

// TestTopologyInvariants holds checkTopology on drawn topologies: among others, the ID does not
// depend on the order of subtopologies, topics or configs, equals the documented hash, and equals the
// ID FromDescribe computes from the broker's description of the topology's own request.
func TestTopologyInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		subs := genSubtopologies(t, rapid.Bool().Draw(t, "with regexes"))
		topo, err := New(subs...)
		if err != nil {
			t.Fatalf("a valid topology is refused: %v", err)
		}
		checkTopology(t, subs, topo, drawRand(t))
	})
}

// TestIDIgnoresOnlyWhatDescribeLacks: changing any field the ID covers changes it; changing what it
// leaves out (partition counts, copartition groups) does not.
func TestIDIgnoresOnlyWhatDescribeLacks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		subs := genSubtopologies(t, false)
		base := MustNew(subs...)
		changed := permuted(subs, drawRand(t))
		i := rapid.IntRange(0, len(changed)-1).Draw(t, "subtopology")
		s := &changed[i]
		covered := true
		switch what := rapid.IntRange(0, 5).Draw(t, "change"); what {
		case 0:
			s.SourceTopics = append(s.SourceTopics, "extra-source")
		case 1:
			s.SourceTopicRegexes = append(s.SourceTopicRegexes, "extra-.*")
		case 2:
			s.StateChangelogTopics = append(s.StateChangelogTopics, TopicInfo{Name: "extra-changelog"})
		case 3:
			s.CopartitionGroups = nil
			covered = false
		case 4:
			if len(s.RepartitionSourceTopics) == 0 {
				t.Skip("no repartition source topic")
			}
			// A new fixed count, given to every fixed repartition topic alike (they must agree, see
			// genSubtopologies), and to this one.
			newCount := s.RepartitionSourceTopics[0].Partitions + 3
			for j := range changed {
				for k := range changed[j].RepartitionSourceTopics {
					if changed[j].RepartitionSourceTopics[k].Partitions > 0 {
						newCount = changed[j].RepartitionSourceTopics[k].Partitions + 3
					}
				}
			}
			for j := range changed {
				for k := range changed[j].RepartitionSourceTopics {
					if changed[j].RepartitionSourceTopics[k].Partitions > 0 {
						changed[j].RepartitionSourceTopics[k].Partitions = newCount
					}
				}
			}
			s.RepartitionSourceTopics[0].Partitions = newCount
			covered = false
		case 5:
			l := s.StateChangelogTopics
			if len(l) == 0 {
				t.Skip("no changelog topic")
			}
			c := maps.Clone(l[0].Configs)
			if c == nil {
				c = map[string]string{}
			}
			c["X"] = "1" // the drawn keys are lower case
			l[0].Configs = c
		}
		other, err := New(changed...)
		if err != nil {
			t.Fatalf("the changed topology is refused: %v", err)
		}
		if (other.ID() != base.ID()) != covered {
			t.Fatalf("covered=%v but ID %s → %s", covered, base.ID(), other.ID())
		}
		if other.ID() != refID(changed) {
			t.Fatal("the ID is not the documented hash")
		}
	})
}
