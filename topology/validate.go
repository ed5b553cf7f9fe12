package topology

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
)

// Problem kinds. A *ValidationError wraps one *Problem per finding, and each Problem wraps one of
// these, so errors.Is(err, topology.ErrDuplicateTopic) tells whether a topology has that problem.
var (
	ErrNoSubtopologies        = errors.New("a topology needs at least one subtopology")
	ErrEmptySubtopologyID     = errors.New("subtopology ID is empty")
	ErrDuplicateSubtopologyID = errors.New("subtopology ID is used twice")
	ErrNoSource               = errors.New("subtopology reads no topic: it needs a source topic, a source topic regex or a repartition source topic")
	ErrInvalidTopicName       = errors.New("invalid topic name")
	ErrDuplicateTopic         = errors.New("topic is listed twice")
	ErrSourceAndRepartition   = errors.New("topic is both a source topic and a repartition source topic")
	ErrChangelogPartitions    = errors.New("changelog topics must have 0 partitions (the broker uses the task count)")
	ErrNegativePartitions     = errors.New("partition count is negative")
	ErrReplicationFactor      = errors.New("replication factor must be -1 or 0 (broker default) or positive")
	ErrEmptyConfigKey         = errors.New("topic config key is empty")
	// ErrTopicConfigValue: a well-known topic config has a value the broker's CreateTopics refuses
	// (a number that is not one, an unknown cleanup.policy or message.timestamp.type). The heartbeat
	// would be accepted, but the broker could never create the internal topic (MISSING_INTERNAL_TOPICS).
	ErrTopicConfigValue = errors.New("topic config value is not one the broker accepts")
	// ErrCopartitionSize: a copartition group without a topic. A group of one topic is valid: Kafka
	// Streams registers one for a cogroup of one stream.
	ErrCopartitionSize  = errors.New("copartition group has no topic")
	ErrCopartitionTopic = errors.New("copartition group names a topic that is not a source or repartition source topic of its subtopology")
	ErrBadRegex         = errors.New("source topic regex does not compile")
	ErrDanglingSink     = errors.New("repartition sink topic is not read as a repartition source by any subtopology")
	ErrTooManyTopics    = errors.New("a subtopology may list at most 32767 source or repartition source topics (the request indexes them with int16)")

	// Rules across subtopologies. Kafka Streams reads every topic in exactly one subtopology (one
	// source node subscribes it) and keeps every state store, so its changelog, in one; the broker
	// derives the partition count of each internal topic from that (Kafka's InternalTopicManager),
	// and a topology that breaks these rules is accepted by the heartbeat but fails later, or gets
	// wrong counts.

	// ErrSourceReadTwice: a user source topic is read by two subtopologies.
	ErrSourceReadTwice = errors.New("source topic is read by more than one subtopology (Kafka Streams reads a topic in one subtopology only)")
	// ErrRepartitionReadTwice: a repartition topic is a repartition source of two subtopologies.
	ErrRepartitionReadTwice = errors.New("repartition topic is read by more than one subtopology (Kafka Streams reads a repartition topic in one subtopology only)")
	// ErrRepartitionCounts: one repartition topic is declared with two partition counts.
	ErrRepartitionCounts = errors.New("repartition topic is declared with different partition counts")
	// ErrSourceIsRepartition: a topic is a source topic in one subtopology and a repartition source
	// topic in another.
	ErrSourceIsRepartition = errors.New("topic is a source topic in one subtopology and a repartition source topic in another")
	// ErrChangelogShared: one changelog topic is listed by two subtopologies. A state store belongs to
	// one subtopology, and the broker sizes its changelog by that subtopology's task count.
	ErrChangelogShared = errors.New("changelog topic is listed by more than one subtopology (a state store and its changelog belong to one subtopology)")
	// ErrChangelogConflict: a changelog topic is also a repartition topic, or a source topic of
	// another subtopology, so the broker would size one topic in two ways. (A changelog that is a
	// source topic of its own subtopology is allowed: Kafka Streams sends that when a KTable reuses its
	// source topic as changelog, topology.optimization=all.)
	ErrChangelogConflict = errors.New("changelog topic is also a repartition topic or another subtopology's source topic")
	// ErrRepartitionCycle: the partition count of a repartition topic cannot be derived, because every
	// subtopology that writes it reads only repartition topics whose counts cannot be derived either
	// (a cycle of repartition topics with no user source topic). The broker accepts the heartbeat and
	// then fails the group's topology with "Failed to compute number of partitions for all
	// repartition topics. There may be loops in the topology that cannot be resolved."
	ErrRepartitionCycle = errors.New("the partition count of this repartition topic cannot be derived: it is written only from a cycle of repartition topics that no user source topic feeds (the broker fails with \"Failed to compute number of partitions\"); fix a partition count or read a user topic")
	// ErrRepartitionNotWritten: a repartition source topic without a fixed partition count is not a
	// repartition sink of any subtopology, so the broker cannot derive its count ("a repartition
	// source topic is never used as a sink topic").
	ErrRepartitionNotWritten = errors.New("repartition source topic has no fixed partition count and no subtopology writes it, so the broker cannot derive its count (\"never used as a sink topic\")")
	// ErrCopartitionFixedCounts: repartition topics with fixed partition counts that must be
	// copartitioned have different counts. The broker refuses (INCORRECTLY_PARTITIONED_TOPICS). Kafka
	// 4.4's broker compares, for a copartition group made only of repartition topics, the fixed counts
	// of every repartition topic of the topology, not only the group's.
	ErrCopartitionFixedCounts = errors.New("copartitioned repartition topics have different fixed partition counts (the broker answers INCORRECTLY_PARTITIONED_TOPICS)")
	// ErrRegexUnsupported is returned by CheckJoinable: no broker accepts source topic regexes yet.
	ErrRegexUnsupported = errors.New("source topic regexes are not supported by any Kafka broker yet (KIP-1071); list the topics explicitly")
)

// Problem is one finding about a topology, naming where it is.
type Problem struct {
	Subtopology string // the subtopology's ID, "" for topology-wide problems
	Topic       string // the topic (or regex) concerned, if any
	Err         error  // one of the Err… kinds above
}

func (p *Problem) Error() string {
	var b strings.Builder
	if p.Subtopology != "" {
		fmt.Fprintf(&b, "subtopology %s: ", quote(p.Subtopology))
	}
	if p.Topic != "" {
		fmt.Fprintf(&b, "topic %s: ", quote(p.Topic))
	}
	b.WriteString(p.Err.Error())
	return b.String()
}

func (p *Problem) Unwrap() error { return p.Err }

// ValidationError lists every problem New found in a topology.
type ValidationError struct {
	Problems []*Problem
}

// maxProblemsShown caps the problems a ValidationError message lists; Problems keeps them all.
const maxProblemsShown = 20

// Error lists the problems, at most maxProblemsShown of them, and says how many more there are.
func (e *ValidationError) Error() string {
	n := min(len(e.Problems), maxProblemsShown)
	msgs := make([]string, n)
	for i, p := range e.Problems[:n] {
		msgs[i] = p.Error()
	}
	msg := "invalid topology: " + strings.Join(msgs, "; ")
	if more := len(e.Problems) - n; more > 0 {
		msg += fmt.Sprintf("; and %d more problems (%d in all)", more, len(e.Problems))
	}
	return msg
}

// Unwrap lets errors.Is and errors.As look at each problem.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// maxTopicNameLen is Kafka's limit on topic names.
const maxTopicNameLen = 249

// ValidTopicName reports why name is not a legal Kafka topic name, or nil: 1 to 249 characters of
// ASCII letters, digits, '.', '_' and '-', and neither "." nor "..".
func ValidTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopicName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopicName, name)
	case len(name) > maxTopicNameLen:
		return fmt.Errorf("%w: %d characters, at most %d allowed", ErrInvalidTopicName, len(name), maxTopicNameLen)
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: %s is not one of [a-zA-Z0-9._-]", ErrInvalidTopicName, describeRune(name, i, r))
		}
	}
	return nil
}

func validate(subs []Subtopology) error {
	var probs []*Problem
	add := func(sub, topic string, err error) {
		probs = append(probs, &Problem{Subtopology: sub, Topic: topic, Err: err})
	}
	if len(subs) == 0 {
		add("", "", ErrNoSubtopologies)
	}
	ids := make(map[string]bool)
	repartitionSources := make(map[string]bool)
	for _, s := range subs {
		for _, ti := range s.RepartitionSourceTopics {
			repartitionSources[ti.Name] = true
		}
	}
	for _, s := range subs {
		if s.ID == "" {
			add("", "", ErrEmptySubtopologyID)
		} else if ids[s.ID] {
			add(s.ID, "", ErrDuplicateSubtopologyID)
		}
		ids[s.ID] = true

		if len(s.SourceTopics)+len(s.SourceTopicRegexes)+len(s.RepartitionSourceTopics) == 0 {
			add(s.ID, "", ErrNoSource)
		}
		if len(s.SourceTopics) > 32767 || len(s.RepartitionSourceTopics) > 32767 {
			add(s.ID, "", ErrTooManyTopics)
		}
		inputs := make(map[string]bool)
		checkNames := func(names []string, seen map[string]bool) {
			for _, n := range names {
				if err := ValidTopicName(n); err != nil {
					add(s.ID, n, err)
				} else if seen[n] {
					add(s.ID, n, ErrDuplicateTopic)
				}
				seen[n] = true
			}
		}
		checkNames(s.SourceTopics, inputs)
		checkNames(s.RepartitionSinkTopics, make(map[string]bool))
		for _, sink := range s.RepartitionSinkTopics {
			if ValidTopicName(sink) == nil && !repartitionSources[sink] {
				add(s.ID, sink, ErrDanglingSink)
			}
		}
		for _, re := range s.SourceTopicRegexes {
			if _, err := regexp.Compile(re); err != nil {
				add(s.ID, re, regexError(err))
			}
		}
		for _, ti := range s.RepartitionSourceTopics {
			if inputs[ti.Name] && ValidTopicName(ti.Name) == nil {
				if slices.Contains(s.SourceTopics, ti.Name) {
					add(s.ID, ti.Name, ErrSourceAndRepartition)
				} else {
					add(s.ID, ti.Name, ErrDuplicateTopic)
				}
				continue
			}
			checkNames([]string{ti.Name}, inputs)
			checkTopicInfo(s.ID, ti, false, add)
		}
		changelogs := make(map[string]bool)
		for _, ti := range s.StateChangelogTopics {
			checkNames([]string{ti.Name}, changelogs)
			checkTopicInfo(s.ID, ti, true, add)
		}
		for _, g := range s.CopartitionGroups {
			if len(g) == 0 {
				add(s.ID, strings.Join(g, ","), ErrCopartitionSize)
			}
			inGroup := make(map[string]bool)
			for _, topic := range g {
				if !inputs[topic] {
					add(s.ID, topic, ErrCopartitionTopic)
				} else if inGroup[topic] {
					add(s.ID, topic, ErrDuplicateTopic)
				}
				inGroup[topic] = true
			}
		}
	}
	checkAcross(subs, add)
	if len(probs) > 0 {
		return &ValidationError{Problems: probs}
	}
	return nil
}

// regexError is ErrBadRegex with what the regexp package found, without repeating the expression
// (the Problem names it, quoted and cut to a readable length).
func regexError(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %s", ErrBadRegex, se.Code)
	}
	return ErrBadRegex
}

func checkTopicInfo(sub string, ti TopicInfo, changelog bool, add func(sub, topic string, err error)) {
	switch {
	case changelog && ti.Partitions != 0:
		add(sub, ti.Name, ErrChangelogPartitions)
	case ti.Partitions < 0:
		add(sub, ti.Name, ErrNegativePartitions)
	}
	if ti.ReplicationFactor < -1 {
		add(sub, ti.Name, ErrReplicationFactor)
	}
	for _, k := range slices.Sorted(maps.Keys(ti.Configs)) {
		if k == "" {
			add(sub, ti.Name, ErrEmptyConfigKey)
		} else if err := checkConfigValue(k, ti.Configs[k]); err != nil {
			add(sub, ti.Name, err)
		}
	}
}

// Topic configs whose values Kafka's LogConfig parses as numbers (TopicConfig, Kafka 4.4): the bits
// of each (32 for INT, 64 for LONG).
var numericTopicConfigs = map[string]int{
	"retention.ms": 64, "retention.bytes": 64, "segment.ms": 64, "segment.jitter.ms": 64,
	"min.compaction.lag.ms": 64, "max.compaction.lag.ms": 64, "delete.retention.ms": 64,
	"file.delete.delay.ms": 64, "flush.messages": 64, "flush.ms": 64, "local.retention.ms": 64,
	"local.retention.bytes": 64, "message.timestamp.before.max.ms": 64, "message.timestamp.after.max.ms": 64,
	"segment.bytes": 32, "segment.index.bytes": 32, "index.interval.bytes": 32, "max.message.bytes": 32,
	"min.insync.replicas": 32,
}

// checkConfigValue checks the value of a well-known topic config; other keys pass as they are.
func checkConfigValue(key, value string) error {
	bad := func(want string) error {
		return fmt.Errorf("%w: %s=%s, want %s", ErrTopicConfigValue, quote(key), quote(value), want)
	}
	if bits, ok := numericTopicConfigs[key]; ok {
		if _, err := strconv.ParseInt(strings.TrimSpace(value), 10, bits); err != nil {
			return bad(fmt.Sprintf("an integer (%d-bit)", bits))
		}
		return nil
	}
	switch key {
	case "cleanup.policy":
		for _, p := range strings.Split(value, ",") {
			if p = strings.TrimSpace(p); p != "" && p != "compact" && p != "delete" {
				return bad(`"compact", "delete" or "compact,delete"`)
			}
		}
	case "message.timestamp.type":
		if v := strings.TrimSpace(value); v != "CreateTime" && v != "LogAppendTime" {
			return bad(`"CreateTime" or "LogAppendTime"`)
		}
	}
	return nil
}

// CheckJoinable reports whether today's brokers accept this topology in a heartbeat. It is valid but
// not joinable when it uses source topic regexes, which every broker version still refuses.
func (t *Topology) CheckJoinable() error {
	for _, s := range t.subs {
		if len(s.SourceTopicRegexes) > 0 {
			return &Problem{Subtopology: s.ID, Topic: s.SourceTopicRegexes[0], Err: ErrRegexUnsupported}
		}
	}
	return nil
}
