package admin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/topology"
)

// PartitionResult is the outcome of deleting one partition's committed offset. Partition is -1 for a
// failure about the whole topic (it does not exist).
type PartitionResult struct {
	Topic     string
	Partition int32
	Err       error // nil when the offset was deleted
}

// DeleteOffsets deletes the group's committed offsets: with topics nil, those of every source topic
// of its topology (Kafka's --all-input-topics), otherwise those of the topics and partitions named (a
// topic without partitions: all of its partitions). The group must be an empty streams group (a
// *GroupError with ErrGroupNotEmpty otherwise). The results are sorted by topic and partition.
func (c *Client) DeleteOffsets(ctx context.Context, group string, topics []TopicPartitions) ([]PartitionResult, error) {
	g, err := c.emptyGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	var out []PartitionResult
	set := kadm.TopicsSet{}
	if topics == nil {
		if g.Topology == nil {
			return nil, fmt.Errorf("group %q: %w; its input topics are not known", group, ErrNoTopology)
		}
		sources, _ := sourceTopics(g)
		committed, err := kadm.NewClient(c.cl).FetchOffsets(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("fetching the committed offsets of %q: %w", group, err)
		}
		in := map[string]bool{}
		for _, t := range sources {
			in[t] = true
		}
		committed.Each(func(o kadm.OffsetResponse) {
			if in[o.Topic] && o.Err == nil && o.At >= 0 {
				set.Add(o.Topic, o.Partition)
			}
		})
	} else {
		var whole []string
		for _, t := range topics {
			if len(t.Partitions) == 0 {
				whole = append(whole, t.Topic)
				continue
			}
			set.Add(t.Topic, t.Partitions...)
		}
		parts, err := c.partitions(ctx, whole)
		if err != nil {
			return nil, err
		}
		for _, t := range whole {
			if len(parts[t]) == 0 {
				out = append(out, PartitionResult{Topic: t, Partition: -1, Err: kerr.UnknownTopicOrPartition})
				continue
			}
			set.Add(t, parts[t]...)
		}
	}
	if len(set) > 0 {
		resp, err := kadm.NewClient(c.cl).DeleteOffsets(ctx, group, set)
		if err != nil {
			if errors.Is(err, kerr.NonEmptyGroup) {
				return nil, &GroupError{Group: group, Kind: ErrGroupNotEmpty, Kafka: err}
			}
			return nil, fmt.Errorf("deleting the offsets of %q: %w", group, err)
		}
		for t, ps := range set {
			for p := range ps {
				var perr error
				if pe, ok := resp[t][p]; ok {
					perr = pe
				} else {
					perr = errors.New("the broker did not answer for this partition")
				}
				out = append(out, PartitionResult{Topic: t, Partition: p, Err: perr})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// fkJoinTopic matches the internal topics of a foreign-key join that Kafka Streams names itself.
var fkJoinTopic = regexp.MustCompile(`^.+-KTABLE-FK-JOIN-SUBSCRIPTION-(?:REGISTRATION|RESPONSE)-\d+-topic$`)

// IsInternalTopicName reports whether topic has the form of an internal topic of the application
// (group) appID: "<appID>-" followed by a name ending in -changelog, -repartition or one of the
// foreign-key join suffixes, the topic-name rules Kafka Streams and Kafka's tool use.
func IsInternalTopicName(topic, appID string) bool {
	if !strings.HasPrefix(topic, appID+"-") {
		return false
	}
	for _, s := range []string{"-changelog", "-repartition", "-subscription-registration-topic", "-subscription-response-topic"} {
		if strings.HasSuffix(topic, s) {
			return true
		}
	}
	return fkJoinTopic.MatchString(topic)
}

// InternalTopics returns the internal topics of g: the repartition and changelog topics of its
// topology that are not also source topics and that are named as the group's internal topics (see
// IsInternalTopicName). Topics of the topology that fail the name rule are returned apart: they may
// be shared with another application, and are never deleted. Both are sorted.
func InternalTopics(g *Group) (internal, notInferred []string) {
	if g == nil || g.Topology == nil {
		return nil, nil
	}
	sources := map[string]bool{}
	for _, s := range g.Topology.Subtopologies {
		for _, t := range s.SourceTopics {
			sources[t] = true
		}
	}
	seen := map[string]bool{}
	for _, s := range g.Topology.Subtopologies {
		for _, t := range append(append([]string{}, names(s.RepartitionSourceTopics)...), names(s.StateChangelogTopics)...) {
			if sources[t] || seen[t] {
				continue
			}
			seen[t] = true
			if IsInternalTopicName(t, g.ID) {
				internal = append(internal, t)
			} else {
				notInferred = append(notInferred, t)
			}
		}
	}
	sort.Strings(internal)
	sort.Strings(notInferred)
	return internal, notInferred
}

// TopicsResult is the outcome of deleting a group's internal topics.
type TopicsResult struct {
	Deleted     []string         // deleted now (or, for a dry run, that would be)
	Absent      []string         // internal topics of the topology that do not exist (nothing to delete)
	NotInferred []string         // topology topics not named as the group's internal topics: kept
	Failed      map[string]error // topics the broker refused to delete
	// Request is set when the topics could not be listed or deleted at all (the group itself was
	// deleted); Deleted and Absent are then empty.
	Request error
}

// Err returns the failures of r as one error (nil when there were none), naming each topic.
func (r *TopicsResult) Err() error {
	if r == nil || (len(r.Failed) == 0 && r.Request == nil) {
		return nil
	}
	var errs []error
	if r.Request != nil {
		errs = append(errs, r.Request)
	}
	for _, t := range sortedKeys(r.Failed) {
		errs = append(errs, fmt.Errorf("deleting topic %q: %w", t, r.Failed[t]))
	}
	return errors.Join(errs...)
}

// DeleteInternalTopics deletes the internal topics (InternalTopics) of an empty streams group,
// keeping the group and its committed offsets; with dryRun it only reports what it would delete.
// A group with members is refused (ErrGroupNotEmpty): its members would recreate and use the
// topics meanwhile.
func (c *Client) DeleteInternalTopics(ctx context.Context, group string, dryRun bool) (*TopicsResult, error) {
	g, err := c.emptyGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	if g.Topology == nil {
		return nil, fmt.Errorf("group %q: %w; its internal topics are not known", group, ErrNoTopology)
	}
	return c.deleteInternal(ctx, g, dryRun)
}

// deleteInternal deletes the internal topics of g, described before.
func (c *Client) deleteInternal(ctx context.Context, g *Group, dryRun bool) (*TopicsResult, error) {
	internal, notInferred := InternalTopics(g)
	res := &TopicsResult{NotInferred: notInferred, Failed: map[string]error{}}
	if len(internal) == 0 {
		return res, nil
	}
	exist, err := c.partitions(ctx, internal)
	if err != nil {
		return nil, err
	}
	var present []string
	for _, t := range internal {
		if len(exist[t]) > 0 {
			present = append(present, t)
		} else {
			res.Absent = append(res.Absent, t)
		}
	}
	if dryRun || len(present) == 0 {
		res.Deleted = present
		return res, nil
	}
	resp, err := kadm.NewClient(c.cl).DeleteTopics(ctx, present...)
	if err != nil {
		return nil, fmt.Errorf("deleting the internal topics of %q: %w", g.ID, err)
	}
	for _, t := range present {
		r, ok := resp[t]
		switch {
		case !ok:
			res.Failed[t] = errors.New("the broker did not answer for this topic")
		case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
			res.Absent = append(res.Absent, t) // deleted by someone else meanwhile
		case r.Err != nil:
			res.Failed[t] = r.Err
		default:
			res.Deleted = append(res.Deleted, t)
		}
	}
	sort.Strings(res.Absent)
	return res, nil
}

// DeleteWithInternalTopics deletes empty streams groups, as Delete does, and then the internal
// topics of each group deleted (their names are read from the groups' topologies before the groups
// go). With dryRun nothing is deleted: the groups that would be deleted map to nil, and their topics
// are reported as Deleted. The topics of a group that was not deleted are left alone.
func (c *Client) DeleteWithInternalTopics(ctx context.Context, dryRun bool, groups ...string) (map[string]error, map[string]*TopicsResult, error) {
	described := map[string]*Group{}
	errs := map[string]error{}
	var deletable []string
	for _, g := range groups {
		d, err := c.emptyGroup(ctx, g)
		if err != nil {
			errs[g] = err
			continue
		}
		described[g] = d
		deletable = append(deletable, g)
	}
	topics := map[string]*TopicsResult{}
	if dryRun {
		for _, g := range deletable {
			errs[g] = nil
			r, err := c.deleteInternal(ctx, described[g], true)
			if err != nil {
				return errs, topics, err
			}
			topics[g] = r
		}
		return errs, topics, nil
	}
	if len(deletable) > 0 {
		res, err := c.Delete(ctx, deletable...)
		for g, e := range res {
			errs[g] = e
		}
		if err != nil {
			return errs, topics, err
		}
	}
	for _, g := range deletable {
		if errs[g] != nil {
			continue
		}
		r, err := c.deleteInternal(ctx, described[g], false)
		if err != nil {
			r = &TopicsResult{Failed: map[string]error{}, Request: err}
		}
		topics[g] = r
	}
	return errs, topics, nil
}

func names(ts []topology.TopicInfo) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}
