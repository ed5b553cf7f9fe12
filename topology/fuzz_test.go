package topology

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
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

// FuzzNew builds a topology from arbitrary text. If New accepts it, the topology must satisfy every
// invariant of checkTopology (canonical, legal names, the documented ID, the same topology and ID
// whatever the declaration order, a request that survives kmsg encode/decode and reads back as the
// same topology, and the same ID from the broker's description). If New refuses it, the error must be
// a *ValidationError whose problems are all of the documented kinds and name the input's
// subtopologies. Either way, the verdict must agree with expectedProblems, a reference check of
// the simple rules written here from New's documentation.
func FuzzNew(f *testing.F) {
	f.Add("0|words|app-r||\n1|||app-r:|app-c|")
	f.Add("0|a,b,c|||x|a,b;b,c")
	f.Add("0|a,b|r,s||c:|a,b\n1|x||r:xx:xxx,s|d,e:|x,r;s,r\n10|y||||")
	f.Add("re:a(|||")
	f.Add("re:in-.*|||")
	f.Add("0|a,a|||c::|a")
	f.Add("\n\n|..|.|\x00|")
	f.Fuzz(func(t *testing.T, in string) {
		subs := subtopologiesFrom(in)
		want := expectedProblems(subs)
		topo, err := New(subs...)
		for _, kind := range want {
			if !errors.Is(err, kind) {
				t.Fatalf("New(%q) = %v, want a problem %q", in, err, kind)
			}
		}
		if err != nil {
			checkValidationError(t, subs, err)
			return
		}
		h := fnv.New64a()
		h.Write([]byte(in))
		checkTopology(t, subs, topo, rand.New(rand.NewPCG(h.Sum64(), 2)))
	})
}

var problemKinds = []error{ErrNoSubtopologies, ErrEmptySubtopologyID, ErrDuplicateSubtopologyID, ErrNoSource,
	ErrInvalidTopicName, ErrDuplicateTopic, ErrSourceAndRepartition, ErrChangelogPartitions, ErrNegativePartitions,
	ErrReplicationFactor, ErrEmptyConfigKey, ErrCopartitionSize, ErrCopartitionTopic, ErrBadRegex, ErrDanglingSink,
	ErrTooManyTopics, ErrSourceReadTwice, ErrRepartitionReadTwice, ErrRepartitionCounts, ErrSourceIsRepartition,
	ErrChangelogShared, ErrChangelogConflict, ErrRepartitionCycle, ErrRepartitionNotWritten, ErrCopartitionFixedCounts,
	ErrTopicConfigValue}

// checkValidationError holds what New promises about a refusal: one *ValidationError listing at
// least one problem, each of a documented kind, each naming a subtopology of the input (or none), and
// a message that carries every problem.
func checkValidationError(t *testing.T, subs []Subtopology, err error) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		t.Fatalf("untyped or empty error %T: %v", err, err)
	}
	for i, p := range ve.Problems {
		if !slices.ContainsFunc(problemKinds, func(k error) bool { return errors.Is(p, k) }) {
			t.Fatalf("problem of an undocumented kind: %v", p)
		}
		if p.Subtopology != "" && !slices.ContainsFunc(subs, func(s Subtopology) bool { return s.ID == p.Subtopology }) {
			t.Fatalf("problem names subtopology %q, which the input does not have", p.Subtopology)
		}
		// The message lists the first maxProblemsShown problems and counts the rest.
		if i < maxProblemsShown && !strings.Contains(err.Error(), p.Error()) {
			t.Fatalf("the message %q leaves out the problem %q", err, p)
		}
	}
	if len(ve.Problems) > maxProblemsShown && !strings.Contains(err.Error(), fmt.Sprintf("(%d in all)", len(ve.Problems))) {
		t.Fatalf("the message %q does not count the %d problems", err, len(ve.Problems))
	}
}

// expectedProblems is a reference for the rules of New that need no look at other subtopologies or
// topics: every kind it returns must be among New's problems. New may refuse for other reasons too
// (duplicate topics, dangling sinks, copartition topics, …), which it does not model.
func expectedProblems(subs []Subtopology) []error {
	var out []error
	add := func(kind error) {
		if !slices.Contains(out, kind) {
			out = append(out, kind)
		}
	}
	seen := map[string]bool{}
	for _, s := range subs {
		switch {
		case s.ID == "":
			add(ErrEmptySubtopologyID)
		case seen[s.ID]:
			add(ErrDuplicateSubtopologyID)
		}
		seen[s.ID] = true
		if len(s.SourceTopics) == 0 && len(s.SourceTopicRegexes) == 0 && len(s.RepartitionSourceTopics) == 0 {
			add(ErrNoSource)
		}
		names := slices.Concat(s.SourceTopics, s.RepartitionSinkTopics)
		for _, ti := range slices.Concat(s.RepartitionSourceTopics, s.StateChangelogTopics) {
			names = append(names, ti.Name)
		}
		for _, n := range names {
			if !isLegalTopic(n) {
				add(ErrInvalidTopicName)
			}
		}
		for _, ti := range s.StateChangelogTopics {
			if ti.Partitions != 0 {
				add(ErrChangelogPartitions)
			}
			if ti.ReplicationFactor < -1 {
				add(ErrReplicationFactor)
			}
		}
		for _, re := range s.SourceTopicRegexes {
			if _, err := regexp.Compile(re); err != nil {
				add(ErrBadRegex)
			}
		}
		for _, g := range s.CopartitionGroups {
			if len(g) == 0 {
				add(ErrCopartitionSize)
			}
		}
	}
	return out
}
