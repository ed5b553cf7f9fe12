package commit

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// The vectors are Kafka Streams' TopicPartitionMetadata encodings, written out by hand: Base64 of
// magic | partition time (big-endian int64) | processor metadata.
func TestPartitionTimeMetadataIsKafkaStreams(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want string
	}{
		{1_700_000_000_000, "AgAAAYvP5WgA"}, // 02 00 00 01 8b cf e5 68 00
		{-1, "Av//////////"},                // unknown, as Kafka Streams writes it
		{0, "AgAAAAAAAAAA"},
	} {
		if got := EncodePartitionTime(c.ms); got != c.want {
			t.Errorf("EncodePartitionTime(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
	for _, c := range []struct {
		meta string
		want int64
	}{
		{"AgAAAYvP5WgA", 1_700_000_000_000},
		{"AQAAAAAAAATS", 1234},                       // magic 1: the time alone
		{"AgAAAAAAAABjAAAAAQAAAAFrAAAAAAAAAAc=", 99}, // magic 2 with processor metadata {"k": 7}
		{"AwAAAAAAAABj", UnknownPartitionTime},       // a magic Kafka Streams does not know
		{"", UnknownPartitionTime},                   // no metadata
		{"not base64!", UnknownPartitionTime},        // another client's metadata
		{"AgAAAA==", UnknownPartitionTime},           // too short
		{"Av//////////", UnknownPartitionTime},       // -1 written
	} {
		if got := DecodePartitionTime(c.meta); got != c.want {
			t.Errorf("DecodePartitionTime(%q) = %d, want %d", c.meta, got, c.want)
		}
	}
}

func FuzzDecodePartitionTime(f *testing.F) {
	for _, s := range []string{"", "AgAAAYvP5WgA", "AQAAAAAAAATS", "AgAAAAAAAABjAAAAAQAAAAFrAAAAAAAAAAc=", "AwAAAAAAAABj", "%%%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, processor := DecodeMetadata(s) // never panics, whatever the group holds
		if ms == UnknownPartitionTime {
			return
		}
		if again, p := DecodeMetadata(EncodeMetadata(ms, processor)); again != ms || string(p) != string(processor) {
			t.Fatalf("%q decodes to %d %x, which does not survive its own encoding (%d %x)", s, ms, processor, again, p)
		}
	})
}

// partitionTimes is a Metadata of fixed commit metadata.
type partitionTimes struct {
	commit map[tasks.TopicPartition]string
}

func (p *partitionTimes) CommitMetadata(tp tasks.TopicPartition) string { return p.commit[tp] }

// metadataOfRequest maps each partition of an offset commit to its metadata.
func metadataOfRequest[P any](topics []string, parts [][]P, get func(P) (int32, *string)) map[tasks.TopicPartition]*string {
	out := map[tasks.TopicPartition]*string{}
	for i, topic := range topics {
		for _, p := range parts[i] {
			n, m := get(p)
			out[tp(topic, n)] = m
		}
	}
	return out
}

// Every offset goes out with its partition's metadata, in OffsetCommit and TxnOffsetCommit; without
// a Metadata none is sent (the broker stores an empty string).
func TestCommitsCarryTheMetadata(t *testing.T) {
	meta := &partitionTimes{commit: map[tasks.TopicPartition]string{tp("in", 0): "AgAAAYvP5WgA", tp("in", 1): "AQAAAAAAAATS"}}
	cl := &fakeCluster{}
	c := newCommitter(t, cl, member("m-1", 7, "0_0", "0_1"), WithMetadata(meta))
	mustCommit(t, c.Commit(context.Background(), Offsets{tp("in", 0): 5, tp("in", 1): 9}))
	req := cl.commits[0]
	var topics []string
	var parts [][]kmsg.OffsetCommitRequestTopicPartition
	for _, rt := range req.Topics {
		topics, parts = append(topics, rt.Topic), append(parts, rt.Partitions)
	}
	got := metadataOfRequest(topics, parts, func(p kmsg.OffsetCommitRequestTopicPartition) (int32, *string) { return p.Partition, p.Metadata })
	for p, want := range meta.commit {
		if got[p] == nil || *got[p] != want {
			t.Errorf("OffsetCommit %v: metadata %v, want %q", p, got[p], want)
		}
	}

	tcl := &txnCluster{}
	c = newCommitter(t, tcl, member("m-1", 7, "0_0", "0_1"), WithMetadata(meta))
	mustCommit(t, c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 0): 5, tp("in", 1): 9}))
	topics, tparts := nil, [][]kmsg.TxnOffsetCommitRequestTopicPartition(nil)
	for _, rt := range tcl.commits[0].Topics {
		topics, tparts = append(topics, rt.Topic), append(tparts, rt.Partitions)
	}
	got = metadataOfRequest(topics, tparts, func(p kmsg.TxnOffsetCommitRequestTopicPartition) (int32, *string) { return p.Partition, p.Metadata })
	for p, want := range meta.commit {
		if got[p] == nil || *got[p] != want {
			t.Errorf("TxnOffsetCommit %v: metadata %v, want %q", p, got[p], want)
		}
	}

	plain := &fakeCluster{}
	c = newCommitter(t, plain, member("m-1", 7, "0_0"))
	mustCommit(t, c.Commit(context.Background(), Offsets{tp("in", 0): 5}))
	if m := plain.commits[0].Topics[0].Partitions[0].Metadata; m != nil {
		t.Errorf("without a Metadata the commit carries %q", *m)
	}
}

// Committed reads each partition's committed offset with the metadata committed beside it (where
// Kafka Streams keeps the partition's time); a partition without a committed offset has neither.
func TestCommittedReadsTheMetadata(t *testing.T) {
	cl := &fakeCluster{fetch: func(int) (int16, map[tasks.TopicPartition]int64) {
		return 0, map[tasks.TopicPartition]int64{tp("in", 0): 12}
	}, fetchMetadata: map[tasks.TopicPartition]string{tp("in", 0): "AgAAAYvP5WgA"}}
	c := newCommitter(t, cl, member("m-1", 6))
	offs, meta, err := c.Committed(context.Background(), set("0_0", "0_1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 1 || offs[tp("in", 0)] != 12 {
		t.Errorf("offsets %v; want in[0] at 12 only", offs)
	}
	if len(meta) != 1 || meta[tp("in", 0)] != "AgAAAYvP5WgA" {
		t.Fatalf("metadata %v; want in[0]'s only (in[1] has no committed offset)", meta)
	}
}

func mustCommit(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Kafka Streams' ProcessorMetadata bytes, written out by hand: entries (int32), then per entry the
// key's length (int32), its UTF-8 bytes and the value (int64), big-endian.
func TestProcessorMetadataIsKafkaStreams(t *testing.T) {
	one := []byte{0, 0, 0, 1, 0, 0, 0, 1, 'k', 0, 0, 0, 0, 0, 0, 0, 7}
	if got := EncodeProcessorMetadata(map[string]int64{"k": 7}); !bytes.Equal(got, one) {
		t.Errorf("encode {k:7} = %x, want %x", got, one)
	}
	two := []byte{0, 0, 0, 2, 0, 0, 0, 1, 'a', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, 'b', 'c', 0, 0, 0, 0, 0, 0, 1, 0}
	if got := EncodeProcessorMetadata(map[string]int64{"bc": 256, "a": -1}); !bytes.Equal(got, two) {
		t.Errorf("encode {a:-1, bc:256} = %x, want %x (keys sorted)", got, two)
	}
	if got := EncodeProcessorMetadata(nil); len(got) != 0 {
		t.Errorf("encode {} = %x, want nothing", got)
	}
	for _, c := range []struct {
		b    []byte
		want map[string]int64
	}{
		{nil, map[string]int64{}},
		{one, map[string]int64{"k": 7}},
		{two, map[string]int64{"a": -1, "bc": 256}},
		{[]byte{0xff, 0xff, 0xff, 0xff}, map[string]int64{}}, // a negative count: no entries, as Java's loop
	} {
		got, err := DecodeProcessorMetadata(c.b)
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("decode %x = %v %v, want %v", c.b, got, err, c.want)
		}
	}
	for _, b := range [][]byte{
		{0, 0, 1}, // shorter than a count
		{0, 0, 0, 2, 0, 0, 0, 1, 'k', 0, 0, 0, 0, 0, 0, 0, 7},        // two entries announced, room for one
		{0, 0, 0, 1, 0, 0, 0, 9, 'k', 0, 0, 0, 0, 0, 0, 0, 7},        // a key longer than what is left
		{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, // a negative key length
		{0, 0, 0, 1, 0, 0, 0, 5, 'k', 'e', 'y', 's', 's', 0, 0, 0},   // the value cut short
	} {
		if _, err := DecodeProcessorMetadata(b); !errors.Is(err, ErrProcessorMetadata) {
			t.Errorf("decode %x: %v, want ErrProcessorMetadata", b, err)
		}
	}
}

func FuzzDecodeProcessorMetadata(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 'k', 0, 0, 0, 0, 0, 0, 0, 7})
	f.Add([]byte{})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeProcessorMetadata(b) // never panics
		if err != nil {
			return
		}
		if again, err := DecodeProcessorMetadata(EncodeProcessorMetadata(m)); err != nil || !maps.Equal(again, m) {
			t.Fatalf("%x decodes to %v, which does not survive its own encoding (%v, %v)", b, m, again, err)
		}
	})
}
