package admin

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/streamsgroup/streamsgroup/topology"
)

// Comparison is the result of CompareTopology: both sides, the verdict and the action
// (topology.Comparison, the one comparison of the module).
type Comparison = topology.Comparison

// CompareTopology compares a local topology at localEpoch with the group's, before joining
// (topology.Compare with topology.BeforeJoin: a group that is nil or has no topology is
// NoGroupTopology).
func CompareTopology(g *Group, local *topology.Topology, localEpoch int32) Comparison {
	var described *topology.Described
	if g != nil {
		described = g.Topology
	}
	return topology.Compare(described, local, localEpoch, topology.BeforeJoin)
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
