package dsl

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/windowed"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Suppression, through the test driver; the expected outputs follow Kafka Streams' documented
// semantics of suppress: untilWindowCloses emits each window's final result once, when stream time
// passes the window's end plus its grace; untilTimeLimit emits a key's latest update once stream
// time is the limit past the first update it held; a bounded buffer emits its earliest keys early,
// or stops the application, when full.

func TestSuppressUntilWindowCloses(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 5*time.Second)).
			Count(Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			Suppress(UntilWindowCloses(BufferConfig{})).
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	in := func(k string, ts int64) { pipeRaw(t, d, "in", []byte(k), []byte("x"), ts) }
	in("a", 1000)
	in("a", 9000)
	in("b", 9500)
	in("a", 14999) // [10 s, 20 s); stream time 14.999 s: [0, 10 s) closes at 15 s
	if got := readRaw(t, d, "out"); len(got) != 0 {
		t.Fatalf("emitted before the window closed: %v", got)
	}
	in("a", 3000)  // late by the window, in time by the grace: counted
	in("c", 15000) // stream time 15 s: [0, 10 s) is closed now
	in("a", 2000)  // too late: dropped, the final count stays 3
	in("c", 30000) // closes [10 s, 20 s)
	got, err := d.ReadRaw("out")
	if err != nil {
		t.Fatal(err)
	}
	type win struct {
		key   string
		start int64
		count int64
		ts    int64
	}
	var wins []win
	for _, r := range got {
		k, w, err := windowed.SplitTimeKey(r.Key, 10000)
		if err != nil {
			t.Fatal(err)
		}
		wins = append(wins, win{string(k), w.Start, int64(binary.BigEndian.Uint64(r.Value)), r.Timestamp.UnixMilli()})
	}
	// In the order of their window ends, then keys' bytes; each with its latest record's timestamp.
	want := []win{{"a", 0, 3, 9000}, {"b", 0, 1, 9500}, {"a", 10000, 1, 14999}, {"c", 10000, 1, 15000}}
	if !slices.Equal(wins, want) {
		t.Fatalf("emitted\n got %v\nwant %v", wins, want)
	}
}

func TestSuppressUntilTimeLimitAndBounds(t *testing.T) {
	d := run(t, func(b *Builder) {
		Table(b, "in", Consumed[string, string]{}).
			Suppress(UntilTimeLimit(time.Second, BufferConfig{MaxRecords: 2})).
			ToStream().To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "in", []byte("a"), []byte("1"), 0)
	pipeRaw(t, d, "in", []byte("a"), []byte("2"), 500) // a held since 0: its time stays 0
	pipeRaw(t, d, "in", []byte("b"), []byte("1"), 600)
	pipeRaw(t, d, "in", []byte("c"), []byte("1"), 700)  // three held, two allowed: a (the earliest) goes early
	pipeRaw(t, d, "in", []byte("b"), nil, 1600)         // b's time 600 is a second behind: its deletion goes
	pipeRaw(t, d, "in", []byte("d"), []byte("1"), 1700) // c's time 700 is
	want := []rawRec{{k: "a", v: "2", ts: 500}, {k: "b", null: true, ts: 1600}, {k: "c", v: "1", ts: 700}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSuppressBufferThatShutsDownWhenFull(t *testing.T) {
	d := start(t, config.Default("ops"), func(b *Builder) {
		Table(b, "in", Consumed[string, string]{}).
			Suppress(UntilTimeLimit(time.Hour, BufferConfig{MaxBytes: 100, WhenFull: ShutDownWhenFull})).
			ToStream().To("out", Produced[string, string]{})
	})
	for i := range 10 {
		if err := d.Pipe("in", []byte{'k', byte('0' + i)}, []byte(strings.Repeat("v", 10)), time.UnixMilli(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Settle returns when the records are processed and committed, or with the application's error.
	err := d.Settle()
	d.Close()
	if !errors.Is(err, ErrBufferFull) {
		t.Fatalf("the application ended with %v, want ErrBufferFull", err)
	}
}

// A buffer bound to no record (Kafka Streams' maxRecords(0), a negative bound here) holds nothing
// past the record that brought it: each update goes on at once, with its own timestamp, deletions
// too; its changelog, written at commits, has only deletions of the keys it held (none is held when
// it commits). Shutting down when full, it fails on the first record.
func TestSuppressBufferOfNoRecords(t *testing.T) {
	for _, bc := range []BufferConfig{{MaxRecords: -1}, {MaxBytes: -1}} {
		d := run(t, func(b *Builder) {
			Table(b, "in", Consumed[string, string]{}).
				Suppress(UntilTimeLimit(time.Hour, bc).WithName("none")).
				ToStream().To("out", Produced[string, string]{})
		})
		pipeRaw(t, d, "in", []byte("a"), []byte("1"), 0)
		pipeRaw(t, d, "in", []byte("a"), []byte("2"), 500)
		pipeRaw(t, d, "in", []byte("b"), []byte("1"), 600)
		pipeRaw(t, d, "in", []byte("a"), nil, 700)
		want := []rawRec{{k: "a", v: "1", ts: 0}, {k: "a", v: "2", ts: 500}, {k: "b", v: "1", ts: 600}, {k: "a", null: true, ts: 700}}
		if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
			t.Fatalf("%+v: got %v, want %v", bc, got, want)
		}
		logged := readRaw(t, d, "ops-none-store-changelog")
		keys := map[string]bool{}
		for _, r := range logged {
			if !r.null {
				t.Fatalf("%+v: the changelog holds a value: %v", bc, logged)
			}
			keys[r.k] = true
		}
		if len(keys) != 2 || !keys["a"] || !keys["b"] {
			t.Fatalf("%+v: the changelog's deletions %v, want some of a and of b", bc, logged)
		}
	}

	d := start(t, config.Default("ops"), func(b *Builder) {
		Table(b, "in", Consumed[string, string]{}).
			Suppress(UntilTimeLimit(time.Hour, BufferConfig{MaxRecords: -1, WhenFull: ShutDownWhenFull})).
			ToStream().To("out", Produced[string, string]{})
	})
	if err := d.Pipe("in", []byte("a"), []byte("1"), time.UnixMilli(0)); err != nil {
		t.Fatal(err)
	}
	err := d.Settle()
	d.Close()
	// Kafka Streams' estimate of the held update: the key (1), its time (8), the new value (1; no
	// old one) and the record context: timestamp, offset, partition (8, 8, 4) and topic "in" (2).
	if !errors.Is(err, ErrBufferFull) || !strings.Contains(err.Error(), "1 records of 0 and 32 bytes of no bound") {
		t.Fatalf("the application ended with %v, want ErrBufferFull with 1 records of 0 and 32 bytes of no bound", err)
	}
}

// The buffer's changelog value is Kafka Streams' format v3, written here byte by byte from its
// BufferValue and ProcessorRecordContext serializers.
func TestSuppressionBufferFormat(t *testing.T) {
	e := &buffered{key: []byte("k"), time: 0x0102, prior: []byte("p"), old: []byte("p"), new: []byte("nn"),
		ctx: recordContext{ts: 7, offset: 9, topic: "t", partition: 2, headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "z"}}}}
	want := []byte{
		0, 0, 0, 0, 0, 0, 0, 7, // timestamp
		0, 0, 0, 0, 0, 0, 0, 9, // offset
		0, 0, 0, 1, 't', // topic
		0, 0, 0, 2, // partition
		0, 0, 0, 2, // headers
		0, 0, 0, 1, 'h', 0, 0, 0, 1, 'v',
		0, 0, 0, 1, 'z', 0xff, 0xff, 0xff, 0xff, // a null header value
		0, 0, 0, 1, 'p', // prior
		0xff, 0xff, 0xff, 0xfe, // old equal to prior
		0, 0, 0, 2, 'n', 'n', // new
		0, 0, 0, 0, 0, 0, 1, 2, // buffer time
	}
	if got := e.encode(); !bytes.Equal(got, want) {
		t.Fatalf("encoded\n got %x\nwant %x", got, want)
	}
	back, err := decodeBuffered([]byte("k"), want)
	if err != nil {
		t.Fatal(err)
	}
	if !back.oldIsPrior || string(back.old) != "p" || string(back.new) != "nn" || back.time != 0x0102 || back.ctx.topic != "t" ||
		back.ctx.partition != 2 || back.ctx.ts != 7 || back.ctx.offset != 9 || len(back.ctx.headers) != 2 || back.ctx.headers[1].Value != nil {
		t.Fatalf("decoded %+v", back)
	}
	// Null prior and old, an old that differs from the prior.
	e2 := &buffered{key: []byte("k"), new: []byte("n"), ctx: recordContext{offset: -1, partition: -1}}
	if got := e2.encode(); !bytes.Contains(got, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 'n'}) {
		t.Fatalf("null prior and old: %x", got)
	}
	e3 := &buffered{key: []byte("k"), prior: []byte("a"), old: []byte("b"), ctx: recordContext{}}
	b3 := e3.encode()
	if back, err := decodeBuffered([]byte("k"), b3); err != nil || back.oldIsPrior || string(back.old) != "b" || back.new != nil {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	for _, bad := range [][]byte{nil, want[:len(want)-1], append(slices.Clone(want), 0)} {
		if _, err := decodeBuffered([]byte("k"), bad); !errors.Is(err, ErrBufferFormat) {
			t.Errorf("decoding %x: %v, want ErrBufferFormat", bad, err)
		}
	}
}

func FuzzDecodeBuffered(f *testing.F) {
	f.Add((&buffered{key: []byte("k"), prior: []byte("p"), old: []byte("p"), new: []byte("n")}).encode())
	f.Add((&buffered{key: []byte("k"), new: []byte("n"), ctx: recordContext{headers: []kgo.RecordHeader{{Key: "a"}}}}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeBuffered([]byte("k"), b)
		if err != nil {
			if !errors.Is(err, ErrBufferFormat) {
				t.Fatalf("an error that is not ErrBufferFormat: %v", err)
			}
			return
		}
		if again := e.encode(); !bytes.Equal(again, b) {
			// The only other writing of one value: an old value equal to the prior written in full.
			if back, err := decodeBuffered([]byte("k"), again); err != nil || !bytes.Equal(back.encode(), again) {
				t.Fatalf("re-encoding %x gave %x", b, again)
			}
		}
	})
}

func TestSuppressProgramErrors(t *testing.T) {
	expectProgramErrors(t, map[string]func(b *Builder){
		"needs a table of a windowed aggregation": func(b *Builder) {
			Table(b, "in", Consumed[string, string]{}).Suppress(UntilWindowCloses(BufferConfig{}))
		},
		"unbounded or shuts down when full": func(b *Builder) {
			g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
			WindowedBy(g, windowed.OfSizeWithNoGrace(time.Second)).Count().Suppress(UntilWindowCloses(BufferConfig{MaxRecords: 3}))
		},
		"negative": func(b *Builder) {
			Table(b, "in", Consumed[string, string]{}).Suppress(UntilTimeLimit(-time.Second, BufferConfig{}))
		},
	})
	b := NewBuilder()
	Table(b, "in", Consumed[string, string]{}).Suppress(UntilTimeLimit(time.Second, BufferConfig{})).ToStream().To("out", Produced[string, string]{})
	cfg := config.Default("ops")
	cfg.Runtime.DSLStoreFormat = config.DSLStoreFormatHeaders
	if _, _, err := b.Build(cfg); err != nil { // its buffer's changelog is written as Kafka Streams 4.4 writes it there (p-suppress-headers)
		t.Fatalf("Build with the HEADERS format: %v", err)
	}
}

// A value's headers and timestamp as Kafka Streams 4.4's headers-aware stores prefix a value with
// them, byte for byte: zigzag varints (a null header value's length -1 is 0x01), the timestamp
// big-endian. (Headers with values are checked against Kafka Streams by p-suppress-headers.)
func TestValueHeaders(t *testing.T) {
	for _, c := range []struct {
		headers []kgo.RecordHeader
		ts      int64
		want    string
	}{
		{nil, -1, "00ffffffffffffffff"},
		{[]kgo.RecordHeader{{Key: "k"}}, 5, "0802026b010000000000000005"},
		{[]kgo.RecordHeader{{Key: "h", Value: []byte("1")}}, 1000, "0a020268023100000000000003e8"},
	} {
		if got := hex.EncodeToString(valueHeaders(c.headers, c.ts)); got != c.want {
			t.Errorf("valueHeaders(%v, %d) = %s, want %s", c.headers, c.ts, got, c.want)
		}
	}
}
