package admin

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/streamsgroup/streamsgroup/topology"
)

// Verdict is how a local topology relates to the group's.
type Verdict int

const (
	// NoGroupTopology: the group has no topology yet; the first member to join sets it.
	NoGroupTopology Verdict = iota + 1
	// Same: same topology ID and epoch; members join normally.
	Same
	// Newer: the local epoch is higher than the group's.
	Newer
	// Older: the local epoch is lower; its members would be told STALE_TOPOLOGY and get no tasks.
	Older
	// ChangedWithoutEpochBump: same epoch, different topology; the broker refuses such members.
	ChangedWithoutEpochBump
)

func (v Verdict) String() string {
	switch v {
	case NoGroupTopology:
		return "no-group-topology"
	case Same:
		return "same"
	case Newer:
		return "newer"
	case Older:
		return "older"
	case ChangedWithoutEpochBump:
		return "changed-without-epoch-bump"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Comparison is the result of CompareTopology, with both sides and a sentence on what follows.
type Comparison struct {
	Verdict     Verdict
	GroupID     topology.ID
	GroupEpoch  int32
	LocalID     topology.ID
	LocalEpoch  int32
	Explanation string
}

// CompareTopology compares a local topology at localEpoch with the group's.
func CompareTopology(g *Group, local *topology.Topology, localEpoch int32) Comparison {
	c := Comparison{LocalID: local.ID(), LocalEpoch: localEpoch}
	if g == nil || g.Topology == nil {
		c.Verdict = NoGroupTopology
		c.Explanation = "the group has no topology yet: the first member to join sets it"
		return c
	}
	c.GroupID, c.GroupEpoch = g.Topology.ID, g.Topology.Epoch
	switch {
	case localEpoch < c.GroupEpoch:
		c.Verdict = Older
		c.Explanation = fmt.Sprintf("the group runs epoch %d; members with epoch %d are told STALE_TOPOLOGY", c.GroupEpoch, localEpoch)
	case localEpoch > c.GroupEpoch:
		c.Verdict = Newer
		c.Explanation = fmt.Sprintf("epoch %d is newer than the group's %d; brokers up to Kafka 4.4 keep a group's first topology "+
			"and refuse any other, so roll out with a new application.id or delete the emptied group first", localEpoch, c.GroupEpoch)
	case c.GroupID == c.LocalID:
		c.Verdict = Same
		c.Explanation = "the group runs this topology at this epoch"
	default:
		c.Verdict = ChangedWithoutEpochBump
		c.Explanation = fmt.Sprintf("the topology differs from the group's at the same epoch %d: the broker refuses such members; "+
			"use topology.epoch %d for the new topology", localEpoch, NextEpoch(nil, c.GroupEpoch))
	}
	return c
}

// NextEpoch returns the topology epoch a rolling upgrade of the group should use: one above the
// group's, or above fallback when g has no topology (0 for a group that does not exist: the first
// topology can use any epoch, and 0 is what Kafka Streams sends).
func NextEpoch(g *Group, fallback int32) int32 {
	if g != nil && g.Topology != nil {
		return g.Topology.Epoch + 1
	}
	if fallback < 0 {
		return 0
	}
	return fallback + 1
}

// PartitionOffset is the committed position of the group on one input partition and its lag.
type PartitionOffset struct {
	Topic       string
	Partition   int32
	Committed   int64 // -1 when the group has committed nothing for the partition
	LeaderEpoch int32 // -1 when unknown
	End         int64 // log end offset (high watermark)
	Lag         int64 // End minus Committed (End when nothing is committed)
}

// Offsets returns the group's committed offsets on its input topics (source and repartition source
// topics of its topology) and the lag of each partition, sorted by topic and partition.
func (c *Client) Offsets(ctx context.Context, g *Group) ([]PartitionOffset, error) {
	if g.Topology == nil {
		return nil, nil
	}
	seen := make(map[string]bool)
	var topics []string
	for _, s := range g.Topology.Subtopologies {
		for _, t := range s.InputTopics() {
			if !seen[t] {
				seen[t] = true
				topics = append(topics, t)
			}
		}
	}
	adm := kadm.NewClient(c.cl)
	committed, err := adm.FetchOffsets(ctx, g.ID)
	if err != nil {
		return nil, fmt.Errorf("fetching the committed offsets of %q: %w", g.ID, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing end offsets: %w", err)
	}
	var out []PartitionOffset
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return
		}
		po := PartitionOffset{Topic: o.Topic, Partition: o.Partition, Committed: -1, LeaderEpoch: -1, End: o.Offset}
		if r, ok := committed.Lookup(o.Topic, o.Partition); ok && r.Err == nil && r.At >= 0 {
			po.Committed, po.LeaderEpoch = r.At, r.LeaderEpoch
		}
		po.Lag = po.End - max(po.Committed, 0)
		out = append(out, po)
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}
