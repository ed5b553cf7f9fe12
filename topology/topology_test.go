package topology

import (
	"errors"
	"fmt"
	"reflect"
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
		{"empty copartition group", []Subtopology{{ID: "0", SourceTopics: []string{"a", "b"},
			CopartitionGroups: [][]string{{}}}}, ErrCopartitionSize, `subtopology "0"`},
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

// TestValidTopicNameEveryByte checks every byte against Kafka's rule, written out as a list, and the
// length limit on both sides.
func TestValidTopicNameEveryByte(t *testing.T) {
	const legal = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	for c := 0; c < 256; c++ {
		name := "a" + string([]byte{byte(c)}) + "b"
		err := ValidTopicName(name)
		if ok := strings.IndexByte(legal, byte(c)) >= 0; ok != (err == nil) {
			t.Errorf("ValidTopicName(%q) = %v; legal: %v", name, err, ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidTopicName) {
			t.Errorf("ValidTopicName(%q) = %v, not ErrInvalidTopicName", name, err)
		}
	}
	for name, ok := range map[string]bool{
		"": false, ".": false, "..": false, "...": true, ".a": true, "_": true,
		strings.Repeat("x", 249): true, strings.Repeat("x", 250): false,
	} {
		if err := ValidTopicName(name); (err == nil) != ok {
			t.Errorf("ValidTopicName(%d characters %.5q…) = %v, want legal=%v", len(name), name, err, ok)
		}
	}
}

// A subtopology needs one input of any kind; any one is enough.
func TestNoSourceOnlyWithoutAnyInput(t *testing.T) {
	for name, s := range map[string]Subtopology{
		"source":             {ID: "0", SourceTopics: []string{"a"}},
		"regex":              {ID: "0", SourceTopicRegexes: []string{"a.*"}},
		"source and regex":   {ID: "0", SourceTopics: []string{"a"}, SourceTopicRegexes: []string{"b.*"}},
		"regex and two more": {ID: "0", SourceTopics: []string{"a", "b"}, SourceTopicRegexes: []string{"c.*"}},
		// A repartition topic nothing writes needs a fixed count (else ErrRepartitionNotWritten).
		"repartition": {ID: "0", RepartitionSourceTopics: []TopicInfo{{Name: "r", Partitions: 2}}},
		"repartition and regexes": {ID: "0", RepartitionSourceTopics: []TopicInfo{{Name: "r", Partitions: 2}},
			SourceTopicRegexes: []string{"c.*", "d.*"}},
	} {
		if _, err := New(s); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The request indexes source and repartition source topics with int16: 32767 of each is the most.
func TestTooManyTopicsAtTheLimit(t *testing.T) {
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	infos := func(prefix string, n int) []TopicInfo {
		out := make([]TopicInfo, n)
		for i, name := range names(prefix, n) {
			out[i] = TopicInfo{Name: name, Partitions: 1} // fixed: no subtopology writes them
		}
		return out
	}
	for _, c := range []struct {
		sources, repartitions int
		ok                    bool
	}{{32767, 0, true}, {32768, 0, false}, {0, 32767, true}, {0, 32768, false}, {32767, 32767, true}} {
		_, err := New(Subtopology{ID: "0", SourceTopics: names("s", c.sources), RepartitionSourceTopics: infos("r", c.repartitions)})
		if c.ok != (err == nil) || (!c.ok && !errors.Is(err, ErrTooManyTopics)) {
			t.Errorf("%d source and %d repartition source topics: %v", c.sources, c.repartitions, err)
		}
	}
}

// FromDescribe keeps what the broker described and nothing more: sorted, replication factor 0 read
// as -1, no configs map for a topic without configs, no regexes, no copartition groups.
func TestFromDescribeContent(t *testing.T) {
	desc := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 4, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
		{SubtopologyID: "2", SourceTopics: []string{"z", "y"}, RepartitionSinkTopics: []string{"r"}},
		{SubtopologyID: "10",
			RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "r", NumPartitions: 6, ReplicationFactor: 0}},
			StateChangelogTopics: []kmsg.TopicInfo{
				{Topic: "c2", NumPartitions: 6, ReplicationFactor: 3, Configs: []kmsg.TopicInfoConfig{{Key: "b", Value: "2"}, {Key: "a", Value: "1"}}},
				{Topic: "c1", NumPartitions: 6, ReplicationFactor: -1, Configs: []kmsg.TopicInfoConfig{}},
			}},
	}}
	d, err := FromDescribe(desc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Subtopology{
		{ID: "10",
			RepartitionSourceTopics: []TopicInfo{{Name: "r", Partitions: 6, ReplicationFactor: -1}},
			StateChangelogTopics: []TopicInfo{
				{Name: "c1", Partitions: 6, ReplicationFactor: -1},
				{Name: "c2", Partitions: 6, ReplicationFactor: 3, Configs: map[string]string{"a": "1", "b": "2"}},
			}},
		{ID: "2", SourceTopics: []string{"y", "z"}, RepartitionSinkTopics: []string{"r"}},
	}
	if d.Epoch != 4 || !reflect.DeepEqual(emptyListsAsNil(d.Subtopologies), want) {
		t.Fatalf("FromDescribe =\n%#v\nwant\n%#v", d.Subtopologies, want)
	}
	local := MustNew(
		Subtopology{ID: "2", SourceTopics: []string{"y", "z"}, RepartitionSinkTopics: []string{"r"}},
		Subtopology{ID: "10", RepartitionSourceTopics: []TopicInfo{{Name: "r"}}, StateChangelogTopics: []TopicInfo{
			{Name: "c1"}, {Name: "c2", ReplicationFactor: 3, Configs: map[string]string{"a": "1", "b": "2"}}}},
	)
	if d.ID != local.ID() || d.ID != refID(want) {
		t.Fatalf("described ID %s, local %s", d.ID, local.ID())
	}
}

// emptyListsAsNil sets the empty lists of subs to nil (not the configs maps), so that DeepEqual
// compares content, and whether a topic has a configs map at all.
func emptyListsAsNil(subs []Subtopology) []Subtopology {
	for i := range subs {
		s := &subs[i]
		for _, l := range []*[]string{&s.SourceTopics, &s.SourceTopicRegexes, &s.RepartitionSinkTopics} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		for _, l := range []*[]TopicInfo{&s.RepartitionSourceTopics, &s.StateChangelogTopics} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		if len(s.CopartitionGroups) == 0 {
			s.CopartitionGroups = nil
		}
	}
	return subs
}

// replication.factor (WithReplicationFactor) sets the factor of every internal topic declared
// without one, keeps a declared one, and the result is the topology written with those factors
// (same ID); the original is untouched.
func TestWithReplicationFactor(t *testing.T) {
	decl := func(changelogRF, repartitionRF, otherRF int16) []Subtopology {
		return []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"app-r-repartition"},
				StateChangelogTopics: []TopicInfo{{Name: "app-a-changelog", ReplicationFactor: changelogRF}}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{{Name: "app-r-repartition", ReplicationFactor: repartitionRF}},
				StateChangelogTopics: []TopicInfo{{Name: "app-b-changelog", ReplicationFactor: otherRF}}},
		}
	}
	orig := MustNew(decl(0, -1, 2)...)
	got := orig.WithReplicationFactor(3)
	want := MustNew(decl(3, 3, 2)...)
	if !got.Equal(want) || got.ID() != want.ID() {
		t.Fatalf("WithReplicationFactor(3):\n%+v\nwant\n%+v", got.Subtopologies(), want.Subtopologies())
	}
	if got.ID() == orig.ID() {
		t.Fatal("the topology ID covers replication factors: it must change")
	}
	if !orig.Equal(MustNew(decl(-1, -1, 2)...)) {
		t.Fatalf("the original changed: %+v", orig.Subtopologies())
	}
	if s, ok := got.Subtopology("1"); !ok || s.RepartitionSourceTopics[0].Name != "app-r-repartition" {
		t.Fatalf("lookup by ID on the copy: %+v %v", s, ok)
	}
	for _, rf := range []int16{-1, 0} {
		if got := orig.WithReplicationFactor(rf); got != orig {
			t.Errorf("WithReplicationFactor(%d) must leave the broker's default: %+v", rf, got.Subtopologies())
		}
	}
	if j := orig.ForJava(Java19Plus).WithReplicationFactor(3); j.java != Java19Plus {
		t.Errorf("the Java runtime's copartition order is lost: %v", j.java)
	}
}
