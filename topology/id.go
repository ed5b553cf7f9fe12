package topology

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
)

// ID is the topology ID: a SHA-256 hash of a canonical encoding of the topology. The protocol has no
// topology identity of its own (only an epoch that Kafka Streams always sends as 0); the ID lets a
// member, and the streams-groups tool, say which topology a group runs and which one a member brings.
//
// What it covers is exactly what both the heartbeat request and the broker's StreamsGroupDescribe
// answer carry, so the ID computed from a local topology equals the one computed from the broker's
// description of the group:
//
//   - every subtopology ID,
//   - its source topics, source topic regexes and repartition sink topics (as sorted sets),
//   - its repartition source topics and state changelog topics: name, replication factor and topic
//     configs (sorted by name, configs by key).
//
// Left out, deliberately: partition counts (the broker's description reports the counts it resolved
// for internal topics, not the 0 a member sends) and copartition groups (the description omits them).
// Two topologies that differ only there have the same ID; Topology.Equal and the broker still tell
// them apart.
//
// The encoding, version 1: the ASCII tag "streamsgroup/topology-id/v1", then the subtopologies in ID
// order; each is the byte 'S' and its ID, then the byte 's', 'x', 'k' each followed by a count and
// that many strings (sources, regexes, sinks), then 'r' and 'c' each followed by a count and that many
// topics (repartition sources, changelogs), a topic being its name, its replication factor as two
// big-endian bytes, a count of configs and each config's key and value. Counts are uvarints; strings
// are a uvarint length and the UTF-8 bytes. Nothing depends on Go version, map order or platform.
type ID [sha256.Size]byte

// String returns the short readable form: the first 8 bytes in hex (16 characters).
func (id ID) String() string { return hex.EncodeToString(id[:8]) }

// Hex returns the whole hash in hex.
func (id ID) Hex() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the zero value (no topology).
func (id ID) IsZero() bool { return id == ID{} }

// Matches reports whether s is id in its short or full hex form.
func (id ID) Matches(s string) bool { return s == id.String() || s == id.Hex() }

const idTag = "streamsgroup/topology-id/v1"

type idEncoder struct{ buf []byte }

func (e *idEncoder) count(n int) { e.buf = binary.AppendUvarint(e.buf, uint64(n)) }
func (e *idEncoder) str(s string) {
	e.count(len(s))
	e.buf = append(e.buf, s...)
}
func (e *idEncoder) strs(tag byte, ss []string) {
	sorted := slices.Clone(ss)
	sort.Strings(sorted)
	e.buf = append(e.buf, tag)
	e.count(len(sorted))
	for _, s := range sorted {
		e.str(s)
	}
}
func (e *idEncoder) topics(tag byte, infos []TopicInfo) {
	sorted := slices.Clone(infos)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	e.buf = append(e.buf, tag)
	e.count(len(sorted))
	for _, ti := range sorted {
		e.str(ti.Name)
		rf := ti.ReplicationFactor
		if rf == 0 {
			rf = -1
		}
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(rf))
		keys := make([]string, 0, len(ti.Configs))
		for k := range ti.Configs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.count(len(keys))
		for _, k := range keys {
			e.str(k)
			e.str(ti.Configs[k])
		}
	}
}

// computeID hashes subtopologies as documented on ID. It sorts copies itself, so it serves both a
// canonical Topology and a broker description in whatever order the broker sent it.
func computeID(subs []Subtopology) ID {
	sorted := slices.Clone(subs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	e := &idEncoder{buf: append([]byte(nil), idTag...)}
	for _, s := range sorted {
		e.buf = append(e.buf, 'S')
		e.str(s.ID)
		e.strs('s', s.SourceTopics)
		e.strs('x', s.SourceTopicRegexes)
		e.strs('k', s.RepartitionSinkTopics)
		e.topics('r', s.RepartitionSourceTopics)
		e.topics('c', s.StateChangelogTopics)
	}
	return sha256.Sum256(e.buf)
}

// ParseID reads the full hex form of an ID (64 characters), as printed by ID.Hex.
func ParseID(s string) (ID, error) {
	var id ID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return ID{}, fmt.Errorf("topology ID %q: want %d hex characters", s, 2*len(id))
	}
	copy(id[:], b)
	return id, nil
}
