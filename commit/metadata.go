package commit

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"maps"
	"slices"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// Kafka Streams commits each input partition's offset with metadata that carries the partition's
// time (the largest timestamp of the records processed from it), so that the task's next owner,
// Go or Java, starts with the stream time its previous owner had: Base64 of a magic byte (2), the
// partition time as a big-endian int64, and the processors' metadata (nothing when it has none).
// Magic 1 had the time alone. An empty string, an unknown magic or bytes that do not decode mean
// the time is unknown (UnknownPartitionTime), as Kafka Streams reads them.

// UnknownPartitionTime is the partition time of a partition without one (Kafka Streams' -1).
const UnknownPartitionTime int64 = -1

const partitionTimeMagic = 2

// EncodePartitionTime is the offset commit metadata of a partition whose time is ms (unix
// milliseconds), in Kafka Streams' format, without processor metadata.
func EncodePartitionTime(ms int64) string { return EncodeMetadata(ms, nil) }

// EncodeMetadata is the offset commit metadata of a partition whose time is ms, followed by
// processor metadata as Kafka Streams' ProcessorMetadata serialized it (kept as read from the last
// commit: windowed operators of a Java member record their last emitted times there).
func EncodeMetadata(ms int64, processor []byte) string {
	b := make([]byte, 9, 9+len(processor))
	b[0] = partitionTimeMagic
	binary.BigEndian.PutUint64(b[1:], uint64(ms))
	return base64.StdEncoding.EncodeToString(append(b, processor...))
}

// DecodePartitionTime reads the partition time from offset commit metadata written by Kafka Streams
// or EncodePartitionTime: UnknownPartitionTime when there is none or the metadata is not Kafka
// Streams' (any string is accepted, never an error: the group may hold metadata of other clients).
func DecodePartitionTime(metadata string) int64 {
	ms, _ := DecodeMetadata(metadata)
	return ms
}

// DecodeMetadata is DecodePartitionTime with the processor metadata that follows the time (magic 2
// only; nil when there is none).
func DecodeMetadata(metadata string) (ms int64, processor []byte) {
	if metadata == "" {
		return UnknownPartitionTime, nil
	}
	b, err := base64.StdEncoding.DecodeString(metadata)
	if err != nil || len(b) < 9 || (b[0] != 1 && b[0] != partitionTimeMagic) {
		return UnknownPartitionTime, nil
	}
	if b[0] == partitionTimeMagic && len(b) > 9 {
		processor = b[9:]
	}
	return int64(binary.BigEndian.Uint64(b[1:9])), processor
}

// Metadata is what a Committer commits beside each offset: the stream runtime's partition times.
// It is called while the Committer builds a request, from the committing goroutine, and must not
// block. (What was committed with an offset is read with Committed.)
type Metadata interface {
	// CommitMetadata is the metadata to commit with tp's offset ("" for none).
	CommitMetadata(tp tasks.TopicPartition) string
}

// WithMetadata commits m's metadata with every offset.
func WithMetadata(m Metadata) Option { return func(c *Committer) { c.meta = m } }

// metadataOf is the metadata to commit with tp's offset (nil when the Committer has no Metadata).
func (c *Committer) metadataOf(tp tasks.TopicPartition) *string {
	if c.meta == nil {
		return nil
	}
	s := c.meta.CommitMetadata(tp)
	return &s
}

// ErrProcessorMetadata says processor metadata bytes are not Kafka Streams' ProcessorMetadata.
var ErrProcessorMetadata = errors.New("commit: processor metadata is not Kafka Streams' ProcessorMetadata")

// EncodeProcessorMetadata serializes processor metadata (named longs: a windowed aggregation's last
// emitted window close time under its store's name) as Kafka Streams' ProcessorMetadata does: the
// number of entries, then each key's UTF-8 length, bytes and value, big-endian; nothing for none.
// Keys are written sorted (Kafka Streams writes them in its map's order, which readers ignore).
func EncodeProcessorMetadata(m map[string]int64) []byte {
	if len(m) == 0 {
		return nil
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint64(b, uint64(m[k]))
	}
	return b
}

// DecodeProcessorMetadata reads processor metadata as Kafka Streams' ProcessorMetadata.deserialize
// does: empty bytes are no metadata; an entry count the bytes cannot hold, a key length past the
// end or entries cut short are ErrProcessorMetadata (Kafka Streams then takes the partition's
// metadata as unknown).
func DecodeProcessorMetadata(b []byte) (map[string]int64, error) {
	m := map[string]int64{}
	if len(b) == 0 {
		return m, nil
	}
	if len(b) < 4 {
		return nil, ErrProcessorMetadata
	}
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if int(n) > len(b)/12 {
		return nil, ErrProcessorMetadata
	}
	for range n {
		if len(b) < 4 {
			return nil, ErrProcessorMetadata
		}
		kl := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if kl < 0 || int(kl) > len(b) || len(b)-int(kl) < 8 {
			return nil, ErrProcessorMetadata
		}
		m[string(b[:kl])] = int64(binary.BigEndian.Uint64(b[kl:]))
		b = b[kl+8:]
	}
	return m, nil
}
