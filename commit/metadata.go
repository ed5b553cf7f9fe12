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
// milliseconds), in Kafka Streams' format.
func EncodePartitionTime(ms int64) string {
	var b [9]byte
	b[0] = partitionTimeMagic
	binary.BigEndian.PutUint64(b[1:], uint64(ms))
	return base64.StdEncoding.EncodeToString(b[:])
}

// DecodePartitionTime reads the partition time from offset commit metadata written by Kafka Streams
// or EncodePartitionTime: UnknownPartitionTime when there is none or the metadata is not Kafka
// Streams' (any string is accepted, never an error: the group may hold metadata of other clients).
func DecodePartitionTime(metadata string) int64 {
	if metadata == "" {
		return UnknownPartitionTime
	}
	b, err := base64.StdEncoding.DecodeString(metadata)
	if err != nil || len(b) < 9 || (b[0] != 1 && b[0] != partitionTimeMagic) {
		return UnknownPartitionTime
	}
	return int64(binary.BigEndian.Uint64(b[1:9]))
}

// Metadata is what a Committer commits beside each offset, and where it hands the metadata an
// offset fetch read: the stream runtime's partition times. Both are called while the Committer
// builds a request or reads an answer, from the committing goroutine, and must not block.
type Metadata interface {
	// CommitMetadata is the metadata to commit with tp's offset ("" for none).
	CommitMetadata(tp tasks.TopicPartition) string
	// Fetched is the metadata committed with tp's offset, as CommittedOffsets read it.
	Fetched(tp tasks.TopicPartition, metadata string)
}

// WithMetadata commits m's metadata with every offset and hands it every fetched one.
func WithMetadata(m Metadata) Option { return func(c *Committer) { c.meta = m } }

// metadataOf is the metadata to commit with tp's offset (nil when the Committer has no Metadata).
func (c *Committer) metadataOf(tp tasks.TopicPartition) *string {
	if c.meta == nil {
		return nil
	}
	s := c.meta.CommitMetadata(tp)
	return &s
}
