package commit

import (
	"encoding/base64"
	"encoding/binary"

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
