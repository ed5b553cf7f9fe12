package topology

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
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
	ErrCopartitionSize        = errors.New("copartition group needs at least two topics")
	ErrCopartitionTopic       = errors.New("copartition group names a topic that is not a source or repartition source topic of its subtopology")
	ErrBadRegex               = errors.New("source topic regex does not compile")
	ErrDanglingSink           = errors.New("repartition sink topic is not read as a repartition source by any subtopology")
	ErrTooManyTopics          = errors.New("a subtopology may list at most 32767 source or repartition source topics (the request indexes them with int16)")
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
		fmt.Fprintf(&b, "subtopology %q: ", p.Subtopology)
	}
	if p.Topic != "" {
		fmt.Fprintf(&b, "topic %q: ", p.Topic)
	}
	b.WriteString(p.Err.Error())
	return b.String()
}

func (p *Problem) Unwrap() error { return p.Err }

// ValidationError lists every problem New found in a topology.
type ValidationError struct {
	Problems []*Problem
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return "invalid topology: " + strings.Join(msgs, "; ")
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
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: character %q is not one of [a-zA-Z0-9._-]", ErrInvalidTopicName, c)
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
				add(s.ID, re, fmt.Errorf("%w: %v", ErrBadRegex, err))
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
			if len(g) < 2 {
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
	if len(probs) > 0 {
		return &ValidationError{Problems: probs}
	}
	return nil
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
	for k := range ti.Configs {
		if k == "" {
			add(sub, ti.Name, ErrEmptyConfigKey)
		}
	}
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
