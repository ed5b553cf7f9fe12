package tasks

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/topology"
)

func TestPartitionerSendsChangelogRecordsToTheirTask(t *testing.T) {
	r, err := NewRouter(topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"},
		StateChangelogTopics: []topology.TopicInfo{{Name: "app-store-changelog"}}}))
	if err != nil {
		t.Fatal(err)
	}
	p := r.Partitioner()
	if got := p.ForTopic("app-store-changelog").Partition(&kgo.Record{Topic: "app-store-changelog", Partition: 5, Key: []byte("word")}, 8); got != 5 {
		t.Fatalf("changelog record went to %d, want its task's partition 5", got)
	}
	// Kafka 4.4's Utils.toPositive(Utils.murmur2(key)) % 8, computed with its kafka-clients jar.
	for key, want := range map[string]int{"word": 3, "k": 0, "customer-42": 1} {
		for _, topic := range []string{"out", "in"} {
			rec := &kgo.Record{Topic: topic, Key: []byte(key), Partition: 7}
			if got := p.ForTopic(topic).Partition(rec, 8); got != want {
				t.Errorf("key %q to %s went to partition %d, want %d as Kafka's default partitioner", key, topic, got, want)
			}
		}
	}
}

// A record whose context carries a partition key goes where that key would (a windowed key to its
// inner key's partition), and records without a key keep the default's stickiness across a batch.
func TestPartitionerHeedsThePartitionKey(t *testing.T) {
	r, err := NewRouter(topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}}))
	if err != nil {
		t.Fatal(err)
	}
	tp := r.Partitioner().ForTopic("out")
	// "word" goes to 3 of 8 (Kafka's murmur2, above); its windowed form by its inner key alone.
	windowedKey := append([]byte("word"), 0, 0, 0, 0, 0, 0, 0x03, 0xe8)
	rec := &kgo.Record{Topic: "out", Key: windowedKey, Context: WithPartitionKey(context.Background(), []byte("word"))}
	if got := tp.Partition(rec, 8); got != 3 {
		t.Fatalf("a windowed key went to %d, want its inner key's partition 3", got)
	}
	if !tp.RequiresConsistency(rec) || !tp.RequiresConsistency(&kgo.Record{Key: []byte("k")}) || tp.RequiresConsistency(&kgo.Record{}) {
		t.Fatal("RequiresConsistency: keyed records must keep their partition, keyless ones need not")
	}
	if got := tp.Partition(&kgo.Record{Key: windowedKey, Context: context.Background()}, 8); got == 3 {
		t.Fatal("a record without a partition key went by another key")
	}
	// An empty partition key is the empty key's partition (murmur2 of no bytes), not a keyless record.
	empty := &kgo.Record{Key: []byte("x"), Context: WithPartitionKey(context.Background(), nil)}
	if got, want := tp.Partition(empty, 8), tp.Partition(&kgo.Record{Key: []byte{}}, 8); got != want {
		t.Fatalf("empty partition key to %d, want %d", got, want)
	}
	// Keyless records stick to one partition until a new batch.
	first := tp.Partition(&kgo.Record{}, 1000)
	if tp.Partition(&kgo.Record{}, 1000) != first {
		t.Fatal("a keyless record left the sticky partition before a new batch")
	}
	moved := false
	for range 20 {
		tp.(kgo.TopicPartitionerOnNewBatch).OnNewBatch()
		if tp.Partition(&kgo.Record{}, 1000) != first {
			moved = true
			break
		}
	}
	if !moved {
		t.Fatal("OnNewBatch was not passed on: keyless records stick to one partition for ever")
	}
}

// A record whose context fixes a partition goes there, whatever its key or partition key, and keeps
// it.
func TestPartitionerHeedsAFixedPartition(t *testing.T) {
	r, err := NewRouter(topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}}))
	if err != nil {
		t.Fatal(err)
	}
	tp := r.Partitioner().ForTopic("out")
	for _, p := range []int32{0, 5, 7} {
		// "word" alone would go to 3 of 8 (above).
		rec := &kgo.Record{Key: []byte("word"), Context: WithPartition(WithPartitionKey(context.Background(), []byte("word")), p)}
		if got := tp.Partition(rec, 8); got != int(p) {
			t.Errorf("a record for partition %d went to %d", p, got)
		}
		if keyless := (&kgo.Record{Context: WithPartition(context.Background(), p)}); !tp.RequiresConsistency(keyless) || tp.Partition(keyless, 8) != int(p) {
			t.Errorf("a keyless record for partition %d did not keep it", p)
		}
	}
}

// KeyPartition places every key where kgo's default partitioner (an implementation of its own of
// Kafka's murmur2) places a record with that key: keys of every length (each tail of 0 to 3 bytes),
// bytes with the high bit set, and partition counts that are not powers of two.
func TestKeyPartitionIsKafkasDefault(t *testing.T) {
	def := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	rng := rand.New(rand.NewPCG(7, 28))
	for i := range 5000 {
		key := make([]byte, i%41)
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		n := 1 + int(rng.Uint32()%97)
		if got, want := KeyPartition(key, n), def.Partition(&kgo.Record{Key: key}, n); got != want {
			t.Fatalf("key %x of %d partitions: %d, want %d", key, n, got, want)
		}
	}
	// And the Java client's own answers (above): Utils.toPositive(Utils.murmur2(key)) % 8.
	for key, want := range map[string]int{"word": 3, "k": 0, "customer-42": 1} {
		if got := KeyPartition([]byte(key), 8); got != want {
			t.Errorf("%q: %d, want %d", key, got, want)
		}
	}
}

// A placement survives contexts wrapped around it (a deadline, a value), and the values of the
// contexts it wraps stay readable through it.
func TestPlacementThroughWrappedContexts(t *testing.T) {
	type other struct{}
	base := context.WithValue(context.Background(), other{}, "v")
	ctx, cancel := context.WithCancel(WithPartition(base, 6))
	defer cancel()
	tp := keyed{kgo.StickyKeyPartitioner(nil).ForTopic("t")}
	if got := tp.Partition(&kgo.Record{Key: []byte("word"), Context: ctx}, 8); got != 6 {
		t.Fatalf("a fixed partition under a cancel context: %d, want 6", got)
	}
	if ctx.Value(other{}) != "v" {
		t.Fatal("a value below the placement was lost")
	}
	byKey := context.WithValue(WithPartitionKey(context.Background(), []byte("word")), other{}, 1)
	if got := tp.Partition(&kgo.Record{Key: []byte("x"), Context: byKey}, 8); got != 3 {
		t.Fatalf("a partition key under a value context: %d, want 3", got)
	}
}

// A record whose context carries a key prefix goes where that prefix of its key would go as a
// partition key, whatever the rest of the key; a prefix longer than the key is the whole key.
func TestPartitionerHeedsAKeyPrefix(t *testing.T) {
	r, err := NewRouter(topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}}))
	if err != nil {
		t.Fatal(err)
	}
	tp := r.Partitioner().ForTopic("out")
	ctx := WithKeyPrefix(context.Background(), 4)
	for _, suffix := range [][]byte{nil, {0, 0, 0, 0, 0, 0, 0x03, 0xe8}, []byte("-other-suffix")} {
		rec := &kgo.Record{Key: append([]byte("word"), suffix...), Context: ctx}
		if got := tp.Partition(rec, 8); got != 3 { // "word" goes to 3 of 8 (above)
			t.Errorf("key %q: partition %d, want 3, the prefix's", rec.Key, got)
		}
		if !tp.RequiresConsistency(rec) {
			t.Errorf("key %q: a record placed by its key's prefix may move", rec.Key)
		}
	}
	short := &kgo.Record{Key: []byte("wor"), Context: ctx}
	if got, want := tp.Partition(short, 8), KeyPartition([]byte("wor"), 8); got != want {
		t.Errorf("a key shorter than the prefix: %d, want its own partition %d", got, want)
	}
	none := &kgo.Record{Key: []byte("word"), Context: WithKeyPrefix(context.Background(), 0)}
	if got, want := tp.Partition(none, 8), KeyPartition([]byte{}, 8); got != want {
		t.Errorf("an empty prefix: %d, want the empty key's %d", got, want)
	}
}
