package topology

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wordcount is a two-subtopology topology in the shape Kafka Streams builds for
// stream.groupBy(...).count(): subtopology 0 reads the input and writes a repartition topic,
// subtopology 1 reads it and keeps a changelogged store.
func wordcount(app string) []Subtopology {
	n := Names{AppID: app}
	return []Subtopology{
		{ID: "0", SourceTopics: []string{"words"}, RepartitionSinkTopics: []string{n.RepartitionTopic("counts")}},
		{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition("counts", 0)},
			StateChangelogTopics: []TopicInfo{n.KeyValueChangelog("counts-store")}},
	}
}

func TestNewAcceptsValidTopologies(t *testing.T) {
	topo, err := New(wordcount("app")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(topo.Subtopologies()); got != 2 {
		t.Fatalf("got %d subtopologies, want 2", got)
	}
	if !topo.HasSubtopology("1") || topo.HasSubtopology("2") {
		t.Fatal("HasSubtopology disagrees with the declared IDs")
	}
	if got := strings.Join(topo.InputTopics("1"), ","); got != "app-counts-repartition" {
		t.Fatalf("InputTopics(1) = %s", got)
	}
	if topo.InputTopics("nope") != nil {
		t.Fatal("InputTopics of an unknown subtopology must be nil")
	}
	if err := topo.CheckJoinable(); err != nil {
		t.Fatal(err)
	}
}

func TestValidationNamesEveryProblem(t *testing.T) {
	long := strings.Repeat("x", 250)
	cases := []struct {
		name  string
		subs  []Subtopology
		want  error
		where string // the subtopology or topic the problem must name
	}{
		{"no subtopologies", nil, ErrNoSubtopologies, ""},
		{"empty id", []Subtopology{{SourceTopics: []string{"a"}}}, ErrEmptySubtopologyID, ""},
		{"duplicate id", []Subtopology{{ID: "0", SourceTopics: []string{"a"}}, {ID: "0", SourceTopics: []string{"b"}}}, ErrDuplicateSubtopologyID, `subtopology "0"`},
		{"no source", []Subtopology{{ID: "7"}}, ErrNoSource, `subtopology "7"`},
		{"empty topic", []Subtopology{{ID: "0", SourceTopics: []string{""}}}, ErrInvalidTopicName, "invalid topic name: empty"},
		{"long topic", []Subtopology{{ID: "0", SourceTopics: []string{long}}}, ErrInvalidTopicName, long},
		{"illegal char", []Subtopology{{ID: "0", SourceTopics: []string{"a b"}}}, ErrInvalidTopicName, `topic "a b"`},
		{"dot", []Subtopology{{ID: "0", SourceTopics: []string{".."}}}, ErrInvalidTopicName, `".."`},
		{"duplicate source", []Subtopology{{ID: "0", SourceTopics: []string{"a", "a"}}}, ErrDuplicateTopic, `topic "a"`},
		{"source and repartition", []Subtopology{
			{ID: "0", SourceTopics: []string{"a"}, RepartitionSinkTopics: []string{"r"}},
			{ID: "1", SourceTopics: []string{"r"}, RepartitionSourceTopics: []TopicInfo{{Name: "r"}}},
		}, ErrSourceAndRepartition, `subtopology "1": topic "r"`},
		{"changelog partitions", []Subtopology{{ID: "0", SourceTopics: []string{"a"},
			StateChangelogTopics: []TopicInfo{{Name: "c", Partitions: 3}}}}, ErrChangelogPartitions, `topic "c"`},
		{"negative partitions", []Subtopology{{ID: "0", SourceTopics: []string{"a"},
			RepartitionSourceTopics: []TopicInfo{{Name: "r", Partitions: -1}}}}, ErrNegativePartitions, `topic "r"`},
		{"bad replication", []Subtopology{{ID: "0", SourceTopics: []string{"a"},
			StateChangelogTopics: []TopicInfo{{Name: "c", ReplicationFactor: -2}}}}, ErrReplicationFactor, `topic "c"`},
		{"empty config key", []Subtopology{{ID: "0", SourceTopics: []string{"a"},
			StateChangelogTopics: []TopicInfo{{Name: "c", Configs: map[string]string{"": "x"}}}}}, ErrEmptyConfigKey, `topic "c"`},
		{"copartition of one", []Subtopology{{ID: "0", SourceTopics: []string{"a", "b"},
			CopartitionGroups: [][]string{{"a"}}}}, ErrCopartitionSize, `subtopology "0"`},
		{"copartition outside", []Subtopology{{ID: "0", SourceTopics: []string{"a", "b"},
			CopartitionGroups: [][]string{{"a", "z"}}}}, ErrCopartitionTopic, `topic "z"`},
		{"bad regex", []Subtopology{{ID: "0", SourceTopicRegexes: []string{"a("}}}, ErrBadRegex, `topic "a("`},
		{"dangling sink", []Subtopology{{ID: "0", SourceTopics: []string{"a"}, RepartitionSinkTopics: []string{"r"}}}, ErrDanglingSink, `topic "r"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.subs...)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %T, want *ValidationError", err)
			}
			if !strings.Contains(err.Error(), c.where) {
				t.Fatalf("error %q does not name %q", err, c.where)
			}
		})
	}
}

func TestValidationListsAllProblemsAtOnce(t *testing.T) {
	_, err := New(Subtopology{ID: "0", SourceTopics: []string{"a b"}},
		Subtopology{ID: "1", SourceTopics: []string{"ok"}, StateChangelogTopics: []TopicInfo{{Name: "c", Partitions: 1}}})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("want two problems, got %v", err)
	}
	if !errors.Is(err, ErrInvalidTopicName) || !errors.Is(err, ErrChangelogPartitions) {
		t.Fatalf("both kinds must be visible through errors.Is: %v", err)
	}
}

func TestRegexIsValidButNotJoinable(t *testing.T) {
	topo, err := New(Subtopology{ID: "0", SourceTopicRegexes: []string{"in-.*"}})
	if err != nil {
		t.Fatal(err)
	}
	err = topo.CheckJoinable()
	if !errors.Is(err, ErrRegexUnsupported) || !strings.Contains(err.Error(), "in-.*") {
		t.Fatalf("CheckJoinable = %v, want ErrRegexUnsupported naming the regex", err)
	}
}

func TestMustNewPanicsOnInvalid(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustNew accepted an invalid topology")
		}
	}()
	MustNew()
}

func TestCanonicalOrderAndImmutability(t *testing.T) {
	subs := []Subtopology{
		{ID: "2", SourceTopics: []string{"z", "b"}},
		{ID: "10", SourceTopics: []string{"y"}, StateChangelogTopics: []TopicInfo{{Name: "s2"}, {Name: "s1", Configs: map[string]string{"b": "2", "a": "1"}}}},
		{ID: "1", SourceTopics: []string{"x"}},
	}
	topo := MustNew(subs...)
	subs[0].SourceTopics[0] = "mutated" // the caller's slices are not shared
	req := topo.Request(3)
	if req.Epoch != 3 {
		t.Fatalf("epoch %d, want 3", req.Epoch)
	}
	var ids []string
	for _, s := range req.Subtopologies {
		ids = append(ids, s.SubtopologyID)
	}
	if got := strings.Join(ids, ","); got != "1,10,2" {
		t.Fatalf("subtopology order %s, want string order 1,10,2", got)
	}
	if got := strings.Join(req.Subtopologies[2].SourceTopics, ","); got != "b,z" {
		t.Fatalf("source topics %s, want b,z", got)
	}
	cl := req.Subtopologies[1].StateChangelogTopics
	if cl[0].Topic != "s1" || cl[0].Configs[0].Key != "a" || cl[0].ReplicationFactor != -1 {
		t.Fatalf("changelogs not canonical: %+v", cl)
	}
	got := topo.Subtopologies()
	got[0].SourceTopics[0] = "changed"
	if s, _ := topo.Subtopology("1"); s.SourceTopics[0] != "x" {
		t.Fatal("Subtopologies returned shared slices")
	}
	if _, ok := topo.Subtopology("nope"); ok {
		t.Fatal("found an unknown subtopology")
	}
	for _, s := range req.Subtopologies {
		if s.SourceTopicRegex == nil || s.RepartitionSinkTopics == nil || s.RepartitionSourceTopics == nil ||
			s.StateChangelogTopics == nil || s.CopartitionGroups == nil {
			t.Fatalf("subtopology %s has a nil list; Kafka Streams always sends lists", s.SubtopologyID)
		}
	}
}

func TestEqual(t *testing.T) {
	a := MustNew(wordcount("app")...)
	b := MustNew(wordcount("app")...)
	if !a.Equal(b) {
		t.Fatal("equal topologies are not Equal")
	}
	c := wordcount("app")
	c[1].RepartitionSourceTopics[0].Partitions = 4
	if a.Equal(MustNew(c...)) {
		t.Fatal("a partition change is not seen by Equal")
	}
	if a.Equal(MustNew(Subtopology{ID: "0", SourceTopics: []string{"words"}}, Subtopology{ID: "1", SourceTopics: []string{"other"}})) {
		t.Fatal("different topologies are Equal")
	}
}

func TestFromDescribe(t *testing.T) {
	if _, err := FromDescribe(nil); !errors.Is(err, ErrNoTopology) {
		t.Fatalf("nil topology: %v", err)
	}
	bad := &kmsg.StreamsGroupDescribeResponseGroupTopology{Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{{}}}
	if _, err := FromDescribe(bad); !errors.Is(err, ErrEmptySubtopologyID) {
		t.Fatalf("empty ID: %v", err)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	topo := MustNew(wordcount("app")...)
	b, err := topo.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(topo) || back.ID() != topo.ID() {
		t.Fatalf("round trip changed the topology:\n%s", b)
	}
	if _, err := ReadJSON(strings.NewReader(`{"subtopologies":[{"id":"0","sourceTopic":["x"]}]}`)); err == nil {
		t.Fatal("an unknown field (typo) must be an error")
	}
	if _, err := ReadJSON(strings.NewReader(`{"subtopologies":[{"id":"0"}]}`)); !errors.Is(err, ErrNoSource) {
		t.Fatalf("validation applies: %v", err)
	}
	d, err := FromDescribe(describedOf(topo, 4))
	if err != nil {
		t.Fatal(err)
	}
	db, _ := d.MarshalJSON()
	if !strings.Contains(string(db), topo.ID().Hex()) || !strings.Contains(string(db), `"epoch":0`) {
		t.Fatalf("described JSON: %s", db)
	}
}
