package dsl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Foreign-key joins, through the test driver; their outputs for every kind of update are compared
// with Kafka Streams' in the programs p-fk-join and p-fk-join-named (outputs_test.go). These tests
// pin what those cannot reach: answers that no longer match their row, the internal records'
// bytes, and bad records.

// fkProgram is orders ("customer|item") joined by customer, named fk (its topics
// ops-fk-subscription-registration-topic and ops-fk-subscription-response-topic).
func fkProgram(b *Builder) {
	orders := Table(b, "orders", Consumed[string, string]{})
	customers := Table(b, "customers", Consumed[string, string]{})
	JoinForeignKey(orders, customers, func(_, v string) string { return v[:strings.IndexByte(v, '|')] },
		func(_, o, c string) string { return o + "@" + c }, Named("fk")).
		ToStream().To("out", Produced[string, string]{})
}

// appleHash is Kafka Streams' Murmur3.hash128 of "c1|apple" (computed with its kafka-streams jar).
var appleHash = [2]uint64{0x8e44d5646f8e0e13, 0x89ec1eb9113230bb}

// responseBytes is a response record's value laid out by hand: version 0, the hash, the value.
func responseBytes(h [2]uint64, value string) []byte {
	b := []byte{0}
	b = binary.BigEndian.AppendUint64(b, h[0])
	b = binary.BigEndian.AppendUint64(b, h[1])
	return append(b, value...)
}

// An answer is joined only while it matches its row: one carrying the hash of the row's current
// value makes a result, one carrying another hash (the row changed since it asked) or none is
// dropped, as Kafka Streams drops it.
func TestForeignKeyJoinDropsAnswersThatNoLongerMatch(t *testing.T) {
	d := run(t, fkProgram)
	pipeRaw(t, d, "orders", []byte("o1"), []byte("c1|apple"), 1000)
	pipeRaw(t, d, "customers", []byte("c1"), []byte("Alice"), 1100)
	responses := "ops-fk-subscription-response-topic"
	pipeRaw(t, d, responses, []byte("o1"), responseBytes(appleHash, "Zoe"), 1200)
	pipeRaw(t, d, responses, []byte("o1"), responseBytes([2]uint64{appleHash[0], appleHash[1] + 1}, "Stale"), 1300)
	pipeRaw(t, d, responses, []byte("o1"), []byte{0x80}, 1400)
	pipeRaw(t, d, responses, []byte("o2"), responseBytes(appleHash, "NoRow"), 1500)
	want := []rawRec{{"o1", "c1|apple@Alice", false, 1100}, {"o1", "c1|apple@Zoe", false, 1200}}
	if got := readRaw(t, d, "out"); !equalRecs(got, want) {
		t.Fatalf("out:\n got %v\nwant %v", got, want)
	}
	if n := d.App().Metrics().Dropped; n != 3 {
		t.Errorf("dropped %d records, want the three answers that did not match", n)
	}
}

func equalRecs(a, b []rawRec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The subscriptions a row sends and the subscription store's changelog are in Kafka Streams'
// formats (laid out by hand here), and the store's changelog records carry the headers of the
// subscription that wrote them, as Kafka Streams 4.4's headers-aware subscription store writes them.
func TestForeignKeyJoinInternalRecords(t *testing.T) {
	d := run(t, fkProgram)
	h := kgo.RecordHeader{Key: "trace", Value: []byte("t1")}
	if err := d.Pipe("orders", []byte("o1"), []byte("c1|apple"), time.UnixMilli(1000), h); err != nil {
		t.Fatal(err)
	}
	pipeRaw(t, d, "orders", []byte("o1"), nil, 2000)
	hash := append(binary.BigEndian.AppendUint64(nil, appleHash[0]), binary.BigEndian.AppendUint64(nil, appleHash[1])...)
	// version 1, instruction 3 (answer only if the customer exists), the hash, the key, partition 0
	subscribe := append(append([]byte{1, 3}, hash...), 'o', '1', 0, 0, 0, 0)
	// version 1 with the hash-null bit, instruction 1 (delete and answer), the key, partition 0
	unsubscribe := []byte{0x81, 1, 'o', '1', 0, 0, 0, 0}
	raws, err := d.ReadRaw("ops-fk-subscription-registration-topic")
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 2 || string(raws[0].Key) != "c1" || !bytes.Equal(raws[0].Value, subscribe) || raws[0].Timestamp.UnixMilli() != 1000 ||
		len(raws[0].Headers) != 1 || raws[0].Headers[0].Key != "trace" ||
		string(raws[1].Key) != "c1" || !bytes.Equal(raws[1].Value, unsubscribe) || raws[1].Timestamp.UnixMilli() != 2000 {
		t.Fatalf("subscriptions %+v\nwant c1 % x at 1000 with the trace header, c1 % x at 2000", raws, subscribe, unsubscribe)
	}
	raws, err = d.ReadRaw("ops-fk-subscription-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	key := []byte{0, 0, 0, 2, 'c', '1', 'o', '1'}
	if len(raws) != 2 || !bytes.Equal(raws[0].Key, key) || !bytes.Equal(raws[0].Value, subscribe) || raws[0].Timestamp.UnixMilli() != 1000 ||
		len(raws[0].Headers) != 1 || string(raws[0].Headers[0].Value) != "t1" ||
		!bytes.Equal(raws[1].Key, key) || raws[1].Value != nil || raws[1].Timestamp.UnixMilli() != 2000 {
		t.Fatalf("subscription store changelog %+v\nwant % x: the subscription at 1000 with the trace header, then a tombstone at 2000", raws, key)
	}
}

// Bad internal records: one the formats cannot read follows deserialization.exception.handler, one
// of a version this member does not know is a processing error, as in Kafka Streams; a
// subscription without a foreign key asking for no answer is dropped.
func TestForeignKeyJoinBadInternalRecords(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.OnDeserializationError = config.LogAndContinue
	cfg.Runtime.OnProcessingError = config.LogAndContinue
	d := start(t, cfg, fkProgram)
	defer d.Close()
	registrations, responses := "ops-fk-subscription-registration-topic", "ops-fk-subscription-response-topic"
	pipeRaw(t, d, "customers", []byte("c1"), []byte("Alice"), 1000)
	for _, r := range []struct {
		topic      string
		key, value []byte
	}{
		{registrations, []byte("c1"), []byte{1}},                             // too short
		{registrations, []byte("c1"), nil},                                   // no value
		{registrations, []byte("c1"), []byte{0x82, 3, 'o', '1', 0, 0, 0, 0}}, // version 2
		{registrations, nil, []byte{0x81, 3, 'o', '1', 0, 0, 0, 0}},          // no key, no answer asked
		{responses, []byte("o1"), nil},                                       // no value
		{responses, []byte("o1"), []byte{0, 1}},                              // a cut hash
		{responses, []byte("o1"), []byte{0x81}},                              // version 1
		{registrations, []byte("c1"), []byte{0x81, 4, 'o', '1', 0, 0, 0, 0}}, // an unknown instruction
	} {
		pipeRaw(t, d, r.topic, r.key, r.value, 2000)
	}
	if n := d.App().Metrics().Dropped; n != 8 {
		t.Errorf("dropped %d records, want all 8", n)
	}
	if got := readRaw(t, d, "out"); len(got) != 0 {
		t.Errorf("out: %v, want nothing", got)
	}

	failing := start(t, config.Default("ops"), fkProgram)
	defer failing.Close()
	if err := failing.Pipe(registrations, []byte("c1"), []byte{0x82, 3, 'o', '1', 0, 0, 0, 0}, time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	if err := failing.Settle(); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("Settle: %v, want the subscription's version", err)
	}
}

// A program that joins by foreign key without what it needs is refused, naming the operation.
func TestForeignKeyJoinProgramErrors(t *testing.T) {
	type point struct{ X int }
	expectProgramErrors(t, map[string]func(b *Builder){
		"JoinForeignKey needs a table of the same Builder": func(b *Builder) {
			orders := Table(b, "orders", Consumed[string, string]{})
			JoinForeignKey(orders, Table(NewBuilder(), "c", Consumed[string, string]{}), func(_, v string) string { return v },
				func(_, o, c string) string { return o }).ToStream().To("out", Produced[string, string]{})
		},
		"LeftJoinForeignKey needs both tables' serdes": func(b *Builder) {
			orders := Table(b, "orders", Consumed[string, string]{})
			points := Table(b, "points", Consumed[string, point]{Value: serde.JSON[point]()})
			mapped := MapTableValues(points, func(_ string, p point) point { return p })
			LeftJoinForeignKey(orders, mapped, func(_, v string) string { return v },
				func(_, o string, _ point, _ bool) string { return o }).ToStream().To("out", Produced[string, string]{})
		},
		"JoinForeignKey needs a foreign-key extractor and a joiner": func(b *Builder) {
			orders := Table(b, "orders", Consumed[string, string]{})
			JoinForeignKey[string, string, string, string, string](orders, Table(b, "c", Consumed[string, string]{}), nil, nil).
				ToStream().To("out", Produced[string, string]{})
		},
		"JoinForeignKey: windowed tables cannot be joined": func(b *Builder) {
			counts := WindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfSizeWithNoGrace(time.Second)).Count()
			JoinForeignKey(counts, Table(b, "c", Consumed[string, string]{}), func(windowed.Key[string], int64) string { return "" },
				func(_ windowed.Key[string], n int64, _ string) int64 { return n })
		},
	})
}

// A foreign-key join's processor errors reach processing.exception.handler: an extractor that
// panics stops the application (LogAndFail), with the panic.
func TestForeignKeyJoinExtractorPanics(t *testing.T) {
	d := start(t, config.Default("ops"), func(b *Builder) {
		orders := Table(b, "orders", Consumed[string, string]{})
		JoinForeignKey(orders, Table(b, "customers", Consumed[string, string]{}), func(_, v string) string { panic("no customer in " + v) },
			func(_, o, c string) string { return o }).ToStream().To("out", Produced[string, string]{})
	})
	if err := d.Pipe("orders", []byte("o1"), []byte("x"), time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	err := d.Settle()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "no customer in x") {
		t.Fatalf("%v, want the extractor's panic", err)
	}
}

// An answer to a foreign row's update carries that update's headers, as Kafka Streams forwards the
// update's record: here the update a suppression releases later, while another record is processed.
func TestForeignKeyJoinAnswersCarryTheForeignUpdatesHeaders(t *testing.T) {
	d := run(t, func(b *Builder) {
		orders := Table(b, "orders", Consumed[string, string]{})
		customers := Table(b, "customers", Consumed[string, string]{}).Suppress(UntilTimeLimit(time.Second, BufferConfig{}))
		JoinForeignKey(orders, customers, func(_, v string) string { return v[:strings.IndexByte(v, '|')] },
			func(_, o, c string) string { return o + "@" + c }).
			ToStream().To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "orders", []byte("o1"), []byte("c1|apple"), 1000)
	for _, r := range []struct {
		k, v, h string
		ts      int64
	}{{"c1", "Alice", "a", 1000}, {"c2", "Bob", "b", 3000}} {
		pipeRaw(t, d, "customers", []byte(r.k), []byte(r.v), r.ts, kgo.RecordHeader{Key: "h", Value: []byte(r.h)})
	}
	raws, err := d.ReadRaw("out")
	if err != nil {
		t.Fatal(err)
	}
	// c1's update, held until c2's record moved time past its limit, answers o1 with c1's header.
	if len(raws) != 1 || string(raws[0].Value) != "c1|apple@Alice" || len(raws[0].Headers) != 1 || string(raws[0].Headers[0].Value) != "a" {
		t.Fatalf("out %+v, want o1 joined with Alice, with the header h=a", raws)
	}
}
