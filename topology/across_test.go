package topology

import (
	"errors"
	"strings"
	"testing"
)

// The rules across subtopologies (issue 10 §1): each case is a topology a user could write, the
// kind New must refuse it with, and text the message must carry (the topic, the subtopologies).
func TestNewComparesSubtopologies(t *testing.T) {
	rep := func(name string, partitions int32) TopicInfo { return TopicInfo{Name: name, Partitions: partitions} }
	cases := []struct {
		name string
		subs []Subtopology
		want error
		text []string
	}{
		{"repartition topic with two partition counts", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"r"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("r", 3)}},
			{ID: "2", RepartitionSourceTopics: []TopicInfo{rep("r", 4)}},
		}, ErrRepartitionCounts, []string{`topic "r"`, `3 in subtopology "1"`, `4 in subtopology "2"`}},
		{"repartition topic read twice", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"r"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("r", 0)}},
			{ID: "2", RepartitionSourceTopics: []TopicInfo{rep("r", 0)}},
		}, ErrRepartitionReadTwice, []string{`subtopology "2": topic "r"`, `"1", "2"`}},
		{"changelog in two subtopologies, different configs", []Subtopology{
			{ID: "0", SourceTopics: []string{"a"}, StateChangelogTopics: []TopicInfo{{Name: "app-s-changelog", Configs: map[string]string{"cleanup.policy": "compact"}}}},
			{ID: "1", SourceTopics: []string{"b"}, StateChangelogTopics: []TopicInfo{{Name: "app-s-changelog", Configs: map[string]string{"cleanup.policy": "delete"}}}},
		}, ErrChangelogShared, []string{`topic "app-s-changelog"`, "different configs", `"0", "1"`}},
		{"changelog in two subtopologies, same configs", []Subtopology{
			{ID: "0", SourceTopics: []string{"a"}, StateChangelogTopics: []TopicInfo{{Name: "app-s-changelog"}}},
			{ID: "1", SourceTopics: []string{"b"}, StateChangelogTopics: []TopicInfo{{Name: "app-s-changelog", ReplicationFactor: -1}}},
		}, ErrChangelogShared, []string{`topic "app-s-changelog"`, "the same configs"}},
		{"user source read by two subtopologies", []Subtopology{
			{ID: "0", SourceTopics: []string{"orders"}},
			{ID: "1", SourceTopics: []string{"orders", "x"}},
		}, ErrSourceReadTwice, []string{`subtopology "1": topic "orders"`, `"0", "1"`}},
		{"source here, repartition source there", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"r"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("r", 0)}},
			{ID: "2", SourceTopics: []string{"r"}},
		}, ErrSourceIsRepartition, []string{`topic "r"`, `"1", "2"`}},
		{"repartition cycle without a user source", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("a", 0)}, RepartitionSinkTopics: []string{"b"}},
			{ID: "2", RepartitionSourceTopics: []TopicInfo{rep("b", 0)}, RepartitionSinkTopics: []string{"a"}},
		}, ErrRepartitionCycle, []string{`subtopology "1": topic "a"`, `subtopology "2": topic "b"`, "Failed to compute number of partitions"}},
		{"a subtopology writing what it reads, nothing else", []Subtopology{
			{ID: "0", RepartitionSourceTopics: []TopicInfo{rep("loop", 0)}, RepartitionSinkTopics: []string{"loop"}},
		}, ErrRepartitionCycle, []string{`topic "loop"`}},
		{"repartition source nobody writes", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("orphan", 0)}},
		}, ErrRepartitionNotWritten, []string{`subtopology "1": topic "orphan"`, "never used as a sink topic"}},
		{"changelog that is a repartition topic", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"r"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("r", 0)}, StateChangelogTopics: []TopicInfo{{Name: "r"}}},
		}, ErrChangelogConflict, []string{`subtopology "1": topic "r"`, "repartition topic too"}},
		{"changelog that another subtopology reads", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []TopicInfo{{Name: "shared"}}},
			{ID: "1", SourceTopics: []string{"shared"}},
		}, ErrChangelogConflict, []string{`subtopology "0": topic "shared"`, `source topic of subtopology "1"`}},
		{"copartitioned repartition topics with different fixed counts", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"r1", "r2"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("r1", 2), rep("r2", 3)}, CopartitionGroups: [][]string{{"r1", "r2"}}},
		}, ErrCopartitionFixedCounts, []string{`subtopology "1"`, `"r1"=2, "r2"=3`}},
		{"repartition-only copartition group, other fixed counts differ (the 4.4 broker compares them all)", []Subtopology{
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"r1", "r2", "r3"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("r1", 0), rep("r2", 0)}, CopartitionGroups: [][]string{{"r1", "r2"}}},
			{ID: "2", RepartitionSourceTopics: []TopicInfo{rep("r3", 5)}, SourceTopics: []string{"x"}, RepartitionSinkTopics: []string{"r4"}},
			{ID: "3", RepartitionSourceTopics: []TopicInfo{rep("r4", 6)}},
		}, ErrCopartitionFixedCounts, []string{`subtopology "1": topic "r1"`, `"r3"=5, "r4"=6`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.subs...)
			if !errors.Is(err, c.want) {
				t.Fatalf("New = %v, want %v", err, c.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("%T, want *ValidationError", err)
			}
			for _, s := range c.text {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message does not say %q:\n%v", s, err)
				}
			}
		})
	}
}

// What Kafka Streams itself sends passes these rules: each case is a topology Kafka Streams 4.4
// built (captured from the Java peer, see integration/javapeer/DslPeer.java), written down here.
func TestNewAcceptsWhatKafkaStreamsSends(t *testing.T) {
	rep := func(name string, partitions int32) TopicInfo { return TopicInfo{Name: name, Partitions: partitions} }
	cases := map[string][]Subtopology{
		// table(orders).join(table(customers), fk) with topology.optimization=all: each KTable's
		// source topic is also its changelog.
		"foreign-key join, source topics as changelogs": {
			{ID: "0", SourceTopics: []string{"orders"}, RepartitionSinkTopics: []string{"app-fk-subscription-registration-topic"},
				RepartitionSourceTopics: []TopicInfo{rep("app-fk-subscription-response-topic", 0)},
				StateChangelogTopics:    []TopicInfo{{Name: "app-enriched-changelog"}, {Name: "orders"}},
				CopartitionGroups:       [][]string{{"orders", "app-fk-subscription-response-topic"}}},
			{ID: "1", SourceTopics: []string{"customers"}, RepartitionSinkTopics: []string{"app-fk-subscription-response-topic"},
				RepartitionSourceTopics: []TopicInfo{rep("app-fk-subscription-registration-topic", 0)},
				StateChangelogTopics:    []TopicInfo{{Name: "app-fk-subscription-store-changelog"}, {Name: "customers"}},
				CopartitionGroups:       [][]string{{"app-fk-subscription-registration-topic", "customers"}}},
		},
		// A repartition topic with a fixed count that no subtopology writes is odd but the broker
		// takes the fixed count as it is.
		"fixed count, not written": {{ID: "0", RepartitionSourceTopics: []TopicInfo{rep("r", 2)}}},
		// A cycle fed by a user topic resolves.
		"cycle with a user source": {
			{ID: "0", SourceTopics: []string{"in"}, RepartitionSourceTopics: []TopicInfo{rep("b", 0)}, RepartitionSinkTopics: []string{"a"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("a", 0)}, RepartitionSinkTopics: []string{"b"}},
		},
		// A fixed count breaks a cycle.
		"cycle with a fixed count": {
			{ID: "0", RepartitionSourceTopics: []TopicInfo{rep("b", 4)}, RepartitionSinkTopics: []string{"a"}},
			{ID: "1", RepartitionSourceTopics: []TopicInfo{rep("a", 0)}, RepartitionSinkTopics: []string{"b"}},
		},
	}
	for name, subs := range cases {
		if _, err := New(subs...); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Messages stay readable whatever the input (issue 10 §3): values are cut, lists capped, characters
// named as runes, NUL bytes and invisible characters escaped.
func TestValidationMessagesStayReadable(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	_, err := New(Subtopology{ID: "0", SourceTopics: []string{huge}})
	if !errors.Is(err, ErrInvalidTopicName) || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "1048576 bytes in all") {
		t.Errorf("1 MiB topic name: %d-byte message %.300q", len(err.Error()), err)
	}

	subs := make([]Subtopology, 10000)
	for i := range subs {
		subs[i] = Subtopology{ID: "0", SourceTopics: []string{"in"}}
	}
	_, err = New(subs...)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) < 9999 {
		t.Fatalf("10,000 duplicate IDs: %v", err)
	}
	if len(err.Error()) > 5000 || !strings.Contains(err.Error(), "more problems (") {
		t.Errorf("10,000 duplicate IDs: %d-byte message, want a capped list: %.300s", len(err.Error()), err)
	}

	for _, c := range []struct{ topic, want string }{
		{"wörter", `character 'ö' (U+00F6) is not one of`},
		{"a\x00b", `topic "a\x00b"`},
		{"a\x00b", `character '\x00' (U+0000)`},
		{"in\u200b", `topic "in\u200b"`},
		{"\ufeffin", `character '\ufeff' (U+FEFF)`},
		{"in ", `topic "in "`},
		{"a\xc3", `byte 0xC3 (not valid UTF-8) at byte 1`},
	} {
		_, err := New(Subtopology{ID: "0", SourceTopics: []string{c.topic}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("topic %q: %v, want it to say %s", c.topic, err, c.want)
		}
		if strings.ContainsRune(err.Error(), 0) {
			t.Errorf("topic %q: the message carries a raw NUL byte", c.topic)
		}
	}

	_, err = New(Subtopology{ID: "0", SourceTopicRegexes: []string{"(" + huge}})
	if !errors.Is(err, ErrBadRegex) || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "missing closing )") {
		t.Errorf("1 MiB regex: %d-byte message %.300q", len(err.Error()), err)
	}
}

// Values of well-known topic configs that the broker's CreateTopics would refuse are refused up
// front; other keys and values pass as they are.
func TestTopicConfigValues(t *testing.T) {
	bad := map[string]string{
		"retention.ms": "1d", "segment.bytes": "4294967296", "cleanup.policy": "compacted",
		"message.timestamp.type": "createtime", "min.compaction.lag.ms": "", "max.message.bytes": "1.5",
	}
	for k, v := range bad {
		_, err := New(Subtopology{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []TopicInfo{{Name: "c", Configs: map[string]string{k: v}}}})
		if !errors.Is(err, ErrTopicConfigValue) || !strings.Contains(err.Error(), quote(k)+"="+quote(v)) {
			t.Errorf("%s=%q: %v", k, v, err)
		}
	}
	good := map[string]string{
		"retention.ms": "-1", "segment.bytes": " 52428800 ", "cleanup.policy": "compact, delete",
		"message.timestamp.type": "LogAppendTime", "some.future.config": "anything", "retention.bytes": "9223372036854775807",
	}
	for k, v := range good {
		if _, err := New(Subtopology{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []TopicInfo{{Name: "c", Configs: map[string]string{k: v}}}}); err != nil {
			t.Errorf("%s=%q refused: %v", k, v, err)
		}
	}
}
