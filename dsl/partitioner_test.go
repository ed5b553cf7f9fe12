package dsl

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
)

// StreamPartitioners, through the test driver, whose topics have one partition each (as
// TopologyTestDriver's): what a partitioner is asked and what each of its answers does, as Kafka
// Streams' record collector applies them (StreamPartitioner's documented contract: no choice is the
// default partitioning, an empty set drops the record, several partitions each get it). Where the
// chosen partitions go among several is shown against a broker (integration).

// partitionCall is one call of a partitioner.
type partitionCall struct {
	topic, key, value, header string
	n                         int
}

func TestStreamPartitionerAnswers(t *testing.T) {
	var calls []partitionCall
	part := func(topic, k, v string, headers []kgo.RecordHeader, n int) ([]int32, bool) {
		h := ""
		if len(headers) > 0 {
			h = headers[0].Key + "=" + string(headers[0].Value)
		}
		calls = append(calls, partitionCall{topic, k, v, h, n})
		switch k {
		case "default":
			return nil, false
		case "drop":
			return []int32{}, true
		case "twice":
			return []int32{0, 0}, true
		}
		return []int32{0}, true
	}
	d := run(t, func(b *Builder) {
		s := Stream(b, "in", Consumed[string, string]{})
		s.To("out", Produced[string, string]{Partitioner: part})
		s.Repartition(Repartitioned[string, string]{Name: "r", Partitioner: part}).To("out2", Produced[string, string]{})
		s.ToFunc(func(string, string) string { return "out3" }, Produced[string, string]{Partitioner: part})
	})
	pipeRaw(t, d, "in", []byte("one"), []byte("1"), 10, kgo.RecordHeader{Key: "h", Value: []byte("x")})
	pipeRaw(t, d, "in", []byte("default"), []byte("2"), 20)
	pipeRaw(t, d, "in", []byte("drop"), []byte("3"), 30)
	pipeRaw(t, d, "in", []byte("twice"), nil, 40) // a tombstone: the partitioner gets the zero value
	// The partition chosen twice gets the record once: Kafka Streams' partitioner answers a set.
	want := []rawRec{{k: "one", v: "1", ts: 10}, {k: "default", v: "2", ts: 20}, {k: "twice", null: true, ts: 40}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Fatalf("out: got %v, want %v", got, want)
	}
	if got := readRaw(t, d, "out2"); !slices.Equal(got, want) {
		t.Fatalf("out2 (through the repartition topic): got %v, want %v", got, want)
	}
	if got := readRaw(t, d, "out3"); !slices.Equal(got, want) {
		t.Fatalf("out3 (a topic function's): got %v, want %v", got, want)
	}
	// Each record asks the sink's partitioner, the repartition sink's, then the topic function's.
	var wantCalls []partitionCall
	for _, c := range []partitionCall{{"", "one", "1", "h=x", 1}, {"", "default", "2", "", 1}, {"", "drop", "3", "", 1}, {"", "twice", "", "", 1}} {
		wantCalls = append(wantCalls, partitionCall{"out", c.key, c.value, c.header, c.n}, partitionCall{"ops-r-repartition", c.key, c.value, c.header, c.n},
			partitionCall{"out3", c.key, c.value, c.header, c.n})
	}
	if !slices.Equal(calls, wantCalls) {
		t.Fatalf("the partitioner was asked\n%v\nwant\n%v", calls, wantCalls)
	}
	// The record dropped by each sink is counted, as Kafka Streams' dropped-records metric does.
	if n := d.App().Metrics().Dropped; n != 3 {
		t.Fatalf("dropped-records-total %d, want 3", n)
	}
}

// A partition the topic does not have is a processing error, and so is any choice but one
// partition in a foreign-key join.
func TestStreamPartitionerErrors(t *testing.T) {
	one := func(p ...int32) StreamPartitioner[string, struct{}] {
		return func(string, string, struct{}, []kgo.RecordHeader, int) ([]int32, bool) { return p, true }
	}
	for name, program := range map[string]func(b *Builder){
		"past the last": func(b *Builder) {
			Stream(b, "in", Consumed[string, string]{}).To("out", Produced[string, string]{
				Partitioner: func(string, string, string, []kgo.RecordHeader, int) ([]int32, bool) { return []int32{0, 1}, true }})
		},
		"negative": func(b *Builder) {
			Stream(b, "in", Consumed[string, string]{}).Repartition(Repartitioned[string, string]{
				Partitioner: func(string, string, string, []kgo.RecordHeader, int) ([]int32, bool) { return []int32{-1}, true }}).
				To("out", Produced[string, string]{})
		},
		"fk subscription of two": func(b *Builder) {
			fkJoined(b, TableJoined[string, string]{OtherPartitioner: one(0, 1)})
		},
		"fk subscription of none": func(b *Builder) {
			fkJoined(b, TableJoined[string, string]{OtherPartitioner: one()})
		},
		"fk response past the last": func(b *Builder) {
			fkJoined(b, TableJoined[string, string]{Partitioner: one(1)})
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := start(t, config.Default("ops"), program)
			defer d.Close()
			recs := [][3]string{{"in", "a", "f"}}
			if strings.HasPrefix(name, "fk") {
				recs = [][3]string{{"in2", "f", "F"}, {"in", "a", "f"}} // the foreign row first: the join answers
			}
			for _, r := range recs {
				if err := d.Pipe(r[0], []byte(r[1]), []byte(r[2]), time.UnixMilli(1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Settle(); !errors.Is(err, ErrPartition) {
				t.Fatalf("the application ended with %v, want ErrPartition", err)
			}
		})
	}
}

// fkJoined joins table in (rows whose value is a key of in2) with in2 by foreign key.
func fkJoined(b *Builder, tj TableJoined[string, string]) {
	JoinForeignKey(Table(b, "in", Consumed[string, string]{}), Table(b, "in2", Consumed[string, string]{}),
		func(_, v string) string { return v }, func(_, v, vo string) string { return v + "+" + vo }, tj).
		ToStream().To("out", Produced[string, string]{Key: serde.String, Value: serde.String})
}

// A foreign-key join asks its partitioners where each subscription and each answer goes: the
// other table's partitioner with the foreign key, the left table's with the row's key, both with no
// value (Kafka Streams passes null); an answer placed so comes back to its row.
func TestTableJoinedPartitionersAreAsked(t *testing.T) {
	var calls []partitionCall
	part := func(topic, k string, _ struct{}, _ []kgo.RecordHeader, n int) ([]int32, bool) {
		calls = append(calls, partitionCall{topic: topic, key: k, n: n})
		return []int32{0}, true
	}
	d := run(t, func(b *Builder) {
		fkJoined(b, TableJoined[string, string]{Name: "j", Partitioner: part, OtherPartitioner: part})
	})
	pipeRaw(t, d, "in2", []byte("f"), []byte("F"), 1)
	pipeRaw(t, d, "in", []byte("a"), []byte("f"), 2)
	pipeRaw(t, d, "in", []byte("a"), []byte("g"), 3) // moves to g, which in2 lacks: the result goes
	want := []rawRec{{k: "a", v: "f+F", ts: 2}, {k: "a", null: true, ts: 3}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	sub, resp := "ops-j-subscription-registration-topic", "ops-j-subscription-response-topic"
	wantCalls := []partitionCall{
		{topic: sub, key: "f", n: 1}, {topic: resp, key: "a", n: 1}, // a subscribes to f, and is answered
		{topic: sub, key: "f", n: 1}, {topic: sub, key: "g", n: 1}, {topic: resp, key: "a", n: 1}, // a leaves f for g, answered null
	}
	if !slices.Equal(calls, wantCalls) {
		t.Fatalf("the partitioners were asked\n%v\nwant\n%v", calls, wantCalls)
	}
}
