package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRuntimeDefaultsAreKafkaStreams(t *testing.T) {
	r := Default("app").Runtime
	want := Runtime{Guarantee: AtLeastOnce, CommitInterval: 30 * time.Second, StateCleanupDelay: 10 * time.Minute,
		TransactionTimeout: 10 * time.Second, PollInterval: 100 * time.Millisecond}
	if r != want {
		t.Fatalf("defaults %+v, want %+v", r, want)
	}
}

func TestRuntimeHandlersBySimpleOrFullName(t *testing.T) {
	for val, want := range map[string]ErrorPolicy{
		"LogAndFailProcessingExceptionHandler":                                     LogAndFail,
		"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler": LogAndContinue,
		" LogAndContinueProcessingExceptionHandler ":                               LogAndContinue,
	} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyProcessingExceptionHandler: val})
		if err != nil || c.Runtime.OnProcessingError != want {
			t.Errorf("%q: %v, %v; want %v", val, c.Runtime.OnProcessingError, err, want)
		}
	}
	c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyDeserializationExceptionHandler: "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"})
	if err != nil || c.Runtime.OnDeserializationError != LogAndContinue || c.Runtime.OnProcessingError != LogAndFail {
		t.Fatalf("deserialization handler: %+v, %v", c.Runtime, err)
	}
}

func TestRuntimeRefusals(t *testing.T) {
	for _, tc := range []struct{ key, val, reason string }{
		{KeyProcessingGuarantee, "exactly_once", "removed in Kafka Streams 4.0"},
		{KeyProcessingGuarantee, "exactly_once_beta", "use exactly_once_v2"},
		{KeyProcessingGuarantee, "at-least-once", "must be at_least_once or exactly_once_v2"},
		{KeyCommitInterval, "-1", "must be >= 0"},
		{KeyCommitInterval, "1s", "LONG"},
		{KeyStateCleanupDelay, "-5", "must be >= 0"},
		{KeyProcessingExceptionHandler, "LogAndContinueExceptionHandler", "LogAndFailProcessingExceptionHandler or LogAndContinueProcessingExceptionHandler"},
		{KeyDeserializationExceptionHandler, "com.example.MyHandler", "LogAndFailExceptionHandler or LogAndContinueExceptionHandler"},
		{KeyDefaultDeserializationExceptionHandler, "x", "LogAndFailExceptionHandler"},
		{KeyAutoOffsetReset, "none", "earliest"},
		{KeyTransactionTimeout, "-1", "between 1 and 2147483647"},
		{KeyTransactionTimeout, "2147483648", "INT"},
		{KeyProducerTransactionTimeout, "x", "INT"},
		{KeyPollInterval, "-1", "must be >= 0"},
		{KeyDeadLetterQueueTopic, "bad topic", "is not a topic name"},
		{KeyProductionExceptionHandler, "LogAndFailExceptionHandler", "DefaultProductionExceptionHandler or LogAndContinueProductionExceptionHandler"},
		{KeyDeliveryTimeout, "-5", "between 1 and"},
		{KeyDeadLetterQueueTopic, "..", "is not a topic name"},
		{KeyMaxTaskIdle, "1s", "LONG"},
		{KeyBufferedRecordsPerPartition, "2147483648", "INT"},
		{KeyNumStreamThreads, "0", "at least 1"},
		{KeyStateStoreCacheMaxBytes, "-1", "at least 0"},
		{KeyDSLStoreFormat, "rocks", "DEFAULT or HEADERS"},
		{KeyAllowStateWithoutCommittedOffsets, "yes", "true or false"},
		{KeyAllowStateWithoutCommittedOffsets, "1", "true or false"},
		{KeyCacheMaxBytesBuffering, "many", "LONG"},
		{KeyNumStreamThreads, "-2", "at least 1"},
		{KeyNumStreamThreads, "two", "INT"},
		{KeyTopologyOptimization, "all", "only none"},
		{KeyOuterJoinEmitInterval, "1s", "LONG"},
		{KeyTopologyOptimization, "reuse.ktable.source.topics", "only none"},
		{KeyCompressionType, "brotli", "none, gzip, snappy, lz4, zstd"},
		{KeyWindowedEmitInterval, "x", "LONG"},
		{KeyGlobalProcessingExceptionHandler, "yes", "true or false"},
		{KeyProducerCompressionType, "producer", "none, gzip, snappy, lz4, zstd"},
	} {
		_, err := FromMap(map[string]string{KeyApplicationID: "a", tc.key: tc.val})
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Keys) != 1 || ce.Keys[0].Key != tc.key || !strings.Contains(ce.Keys[0].Reason, tc.reason) {
			t.Errorf("%s=%s: %v; want one problem on %s saying %q", tc.key, tc.val, err, tc.key, tc.reason)
		}
	}
	c := Default("a")
	c.Runtime.Guarantee = "exactly_once"
	c.Runtime.CommitInterval = -time.Second
	var ce *Error
	if err := c.Validate(); !errors.As(err, &ce) || len(ce.Keys) != 2 {
		t.Fatalf("Validate of exactly_once and a negative commit interval: %v", err)
	}
}

// TestTaskIdleAndBufferKeys: max.task.idle.ms (default 0, -1 never waits; Kafka takes any LONG)
// and buffered.records.per.partition (default 1000; Kafka takes any INT, 0 or less pausing as soon
// as a record is held) are read with Kafka's names.
func TestTaskIdleAndBufferKeys(t *testing.T) {
	c, err := FromMap(map[string]string{KeyApplicationID: "a"})
	if err != nil || c.Runtime.MaxTaskIdle != 0 || c.Runtime.Buffered() != 1000 {
		t.Fatalf("defaults: idle %v, buffered %d, %v; want 0 and 1000", c.Runtime.MaxTaskIdle, c.Runtime.Buffered(), err)
	}
	for _, tc := range []struct {
		idle, buffered string
		wantIdle       time.Duration
		wantBuffered   int
	}{
		{"-1", "10", MaxTaskIdleDisabled, 10},
		{"250", "0", 250 * time.Millisecond, 0},
		{" 0 ", "1", 0, 1},
		{"-7", "-3", -7 * time.Millisecond, 0},
	} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyMaxTaskIdle: tc.idle, KeyBufferedRecordsPerPartition: tc.buffered})
		if err != nil || c.Runtime.MaxTaskIdle != tc.wantIdle || c.Runtime.Buffered() != tc.wantBuffered {
			t.Errorf("%s, %s: idle %v, buffered %d, %v; want %v, %d", tc.idle, tc.buffered, c.Runtime.MaxTaskIdle, c.Runtime.Buffered(), err, tc.wantIdle, tc.wantBuffered)
		}
	}
}

// TestNumStreamThreads: num.stream.threads is read with Kafka's name and default (1).
func TestNumStreamThreads(t *testing.T) {
	c, err := FromMap(map[string]string{KeyApplicationID: "a"})
	if err != nil || c.Runtime.Threads() != 1 {
		t.Fatalf("default: %d threads, %v; want 1", c.Runtime.Threads(), err)
	}
	c, err = FromMap(map[string]string{KeyApplicationID: "a", KeyNumStreamThreads: " 3 "})
	if err != nil || c.Runtime.Threads() != 3 {
		t.Fatalf("num.stream.threads=3: %d threads, %v", c.Runtime.Threads(), err)
	}
	c = Default("a")
	c.Runtime.NumStreamThreads = -1
	var ce *Error
	if err := c.Validate(); !errors.As(err, &ce) || !ce.Has(KeyNumStreamThreads) {
		t.Fatalf("Validate of -1 threads: %v; want a problem on num.stream.threads", err)
	}
}

// TestStateStoreCacheMaxBytes: statestore.cache.max.bytes is read with Kafka's name and default
// (10 MiB), 0 turns the cache off, and the old name cache.max.bytes.buffering is read when the new
// one is not given.
func TestStateStoreCacheMaxBytes(t *testing.T) {
	for _, tc := range []struct {
		m    map[string]string
		want int64
	}{
		{map[string]string{}, 10485760},
		{map[string]string{KeyStateStoreCacheMaxBytes: "0"}, 0},
		{map[string]string{KeyStateStoreCacheMaxBytes: " 4096 "}, 4096},
		{map[string]string{KeyCacheMaxBytesBuffering: "1000"}, 1000},
		{map[string]string{KeyCacheMaxBytesBuffering: "1000", KeyStateStoreCacheMaxBytes: "2000"}, 2000},
		{map[string]string{KeyCacheMaxBytesBuffering: "0", KeyStateStoreCacheMaxBytes: "2000"}, 2000},
	} {
		tc.m[KeyApplicationID] = "a"
		c, err := FromMap(tc.m)
		if err != nil || c.Runtime.CacheBytes() != tc.want {
			t.Errorf("%v: %d bytes, %v; want %d", tc.m, c.Runtime.CacheBytes(), err, tc.want)
		}
	}
}

// TestExactlyOnceCommitsEvery100msUnlessTold: Kafka Streams' default commit interval under
// exactly_once_v2 is 100 ms; an explicit commit.interval.ms wins.
func TestExactlyOnceCommitsEvery100msUnlessTold(t *testing.T) {
	c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyProcessingGuarantee: "exactly_once_v2"})
	if err != nil || c.Runtime.Guarantee != ExactlyOnceV2 || c.Runtime.CommitInterval != 100*time.Millisecond {
		t.Fatalf("exactly_once_v2 alone: %+v, %v", c.Runtime, err)
	}
	c, err = FromMap(map[string]string{KeyApplicationID: "a", KeyProcessingGuarantee: "exactly_once_v2", KeyCommitInterval: "2500"})
	if err != nil || c.Runtime.CommitInterval != 2500*time.Millisecond {
		t.Fatalf("exactly_once_v2 with commit.interval.ms=2500: %+v, %v", c.Runtime, err)
	}
	c, err = FromMap(map[string]string{KeyApplicationID: "a"})
	if err != nil || c.Runtime.CommitInterval != 30*time.Second {
		t.Fatalf("at_least_once: %+v, %v", c.Runtime, err)
	}
}

// TestExactlyOnceRefusesACommitIntervalAboveTheTransactionTimeout: as Kafka Streams'
// verifyEOSTransactionTimeoutCompatibility, under exactly_once_v2 a commit.interval.ms above
// transaction.timeout.ms (10 s by default) is refused (equal is allowed); at_least_once has no
// transactions and does not care; producer.transaction.timeout.ms wins over transaction.timeout.ms.
func TestExactlyOnceRefusesACommitIntervalAboveTheTransactionTimeout(t *testing.T) {
	eos := func(kv ...string) map[string]string {
		m := map[string]string{KeyApplicationID: "a", KeyProcessingGuarantee: "exactly_once_v2"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, m := range []map[string]string{
		eos(KeyCommitInterval, "10001"),
		eos(KeyCommitInterval, "30000", KeyTransactionTimeout, "20000"),
		eos(KeyCommitInterval, "30000", KeyTransactionTimeout, "60000", KeyProducerTransactionTimeout, "20000"),
	} {
		_, err := FromMap(m)
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Keys) != 1 || ce.Keys[0].Key != KeyCommitInterval ||
			!strings.Contains(ce.Keys[0].Reason, "longer than transaction.timeout.ms") {
			t.Errorf("%v: %v; want commit.interval.ms refused as longer than the transaction timeout", m, err)
		}
	}
	for _, m := range []map[string]string{
		eos(KeyCommitInterval, "10000"),
		eos(KeyCommitInterval, "30000", KeyTransactionTimeout, "30000"),
		eos(KeyCommitInterval, "30000", KeyTransactionTimeout, "1000", KeyProducerTransactionTimeout, "60000"),
		{KeyApplicationID: "a", KeyCommitInterval: "600000"},
	} {
		if _, err := FromMap(m); err != nil {
			t.Errorf("%v: %v; want it accepted", m, err)
		}
	}
	c, err := FromMap(eos(KeyTransactionTimeout, "1000", KeyProducerTransactionTimeout, "60000"))
	if err != nil || c.Runtime.TxnTimeout() != time.Minute {
		t.Errorf("producer.transaction.timeout.ms=60000 beside transaction.timeout.ms=1000: %v (%v); want one minute", c.Runtime.TxnTimeout(), err)
	}
	// A Config built in Go code with a zero timeout takes the default.
	c = Default("a")
	c.Runtime.Guarantee, c.Runtime.TransactionTimeout, c.Runtime.CommitInterval = ExactlyOnceV2, 0, 11*time.Second
	if err := c.Validate(); err == nil {
		t.Error("a zero transaction timeout (the default, 10 s) accepted an 11 s commit interval")
	}
}

func TestTimestampExtractorsByKafkaStreamsNames(t *testing.T) {
	for val, want := range map[string]TimestampPolicy{
		"FailOnInvalidTimestamp": FailOnInvalidTimestamp,
		"org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp":  LogAndSkipOnInvalidTimestamp,
		"UsePartitionTimeOnInvalidTimestamp":                               UsePartitionTimeOnInvalidTimestamp,
		" org.apache.kafka.streams.processor.WallclockTimestampExtractor ": WallclockTimestamp,
	} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyTimestampExtractor: val})
		if err != nil || c.Runtime.Timestamps != want {
			t.Errorf("%q: %v, %v; want %v", val, c.Runtime.Timestamps, err, want)
		}
	}
	if Default("a").Runtime.Timestamps != FailOnInvalidTimestamp {
		t.Error("the default is not FailOnInvalidTimestamp")
	}
	_, err := FromMap(map[string]string{KeyApplicationID: "a", KeyTimestampExtractor: "com.example.MyExtractor"})
	var ce *Error
	if !errors.As(err, &ce) || !ce.Has(KeyTimestampExtractor) || !strings.Contains(err.Error(), "UsePartitionTimeOnInvalidTimestamp") {
		t.Errorf("an unknown extractor: %v", err)
	}
	if WallclockTimestamp.String() != "WallclockTimestampExtractor" || TimestampPolicy(9).String() != "TimestampPolicy(9)" {
		t.Error("String")
	}
}

// production.exception.handler (and its pre-4.0 name) with Kafka Streams' DefaultProductionExceptionHandler
// (the default: retry retriable errors, fail on others) and the continuing one; delivery.timeout.ms
// and its producer. form, which wins.
func TestProductionHandlerAndDeliveryTimeout(t *testing.T) {
	c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyDefaultProductionExceptionHandler: "LogAndContinueProductionExceptionHandler",
		KeyDeliveryTimeout: "1000", KeyProducerDeliveryTimeout: "5000"})
	if err != nil || c.Runtime.OnProductionError != LogAndContinue || c.Runtime.Delivery() != 5*time.Second {
		t.Fatalf("%+v, %v", c.Runtime, err)
	}
	d := Default("a").Runtime
	if d.OnProductionError != RetryOrFail || d.Delivery() != 2*time.Minute {
		t.Fatalf("defaults %+v", d)
	}
}

// compression.type: Kafka's producer default (none), each codec in any case, and the producer.
// form, which wins.
func TestCompressionType(t *testing.T) {
	if d := Default("a").Runtime.Compression; d != "" {
		t.Fatalf("default %q, want \"\" (none)", d)
	}
	for v, want := range map[string]Compression{"none": CompressionNone, "GZIP": CompressionGzip, " snappy ": CompressionSnappy,
		"lz4": CompressionLz4, "zstd": CompressionZstd} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyCompressionType: v})
		if err != nil || c.Runtime.Compression != want {
			t.Errorf("%s=%q: %q, %v; want %q", KeyCompressionType, v, c.Runtime.Compression, err, want)
		}
	}
	c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyCompressionType: "gzip", KeyProducerCompressionType: "zstd"})
	if err != nil || c.Runtime.Compression != CompressionZstd {
		t.Fatalf("both keys: %q, %v; want the producer. one's zstd", c.Runtime.Compression, err)
	}
}

// topology.optimization=none, Kafka Streams' default, is accepted as Java properties carry it.
func TestTopologyOptimizationNone(t *testing.T) {
	for _, v := range []string{"none", "NONE", " none "} {
		if _, err := FromMap(map[string]string{KeyApplicationID: "a", KeyTopologyOptimization: v}); err != nil {
			t.Errorf("%s=%q: %v", KeyTopologyOptimization, v, err)
		}
	}
}

// TestDSLStoreFormat: dsl.store.format is DEFAULT or HEADERS, in any case; Validate refuses another
// value set in Go.
func TestDSLStoreFormat(t *testing.T) {
	c := Default("a")
	c.Runtime.DSLStoreFormat = "headers"
	var ce *Error
	if err := c.Validate(); !errors.As(err, &ce) || !ce.Has(KeyDSLStoreFormat) {
		t.Fatalf("Validate of %q: %v", c.Runtime.DSLStoreFormat, err)
	}
	for v, want := range map[string]DSLStoreFormat{"DEFAULT": DSLStoreFormatDefault, "default": DSLStoreFormatDefault,
		" Headers ": DSLStoreFormatHeaders, "HEADERS": DSLStoreFormatHeaders} {
		if c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyDSLStoreFormat: v}); err != nil || c.Runtime.DSLStoreFormat != want {
			t.Errorf("%q: %q, %v; want %q", v, c.Runtime.DSLStoreFormat, err, want)
		}
	}
}

// TestAllowStateWithoutCommittedOffsets: the key is a BOOLEAN as Kafka reads one (true or false,
// any case, trimmed); the default refuses state without committed offsets.
func TestAllowStateWithoutCommittedOffsets(t *testing.T) {
	if Default("a").Runtime.AllowStateWithoutCommittedOffsets {
		t.Fatal("allowed by default")
	}
	for v, want := range map[string]bool{"true": true, " TRUE ": true, "True": true, "false": false, "FALSE": false} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyAllowStateWithoutCommittedOffsets: v})
		if err != nil || c.Runtime.AllowStateWithoutCommittedOffsets != want {
			t.Errorf("%q: %v, %v; want %v", v, c.Runtime.AllowStateWithoutCommittedOffsets, err, want)
		}
	}
}

// Kafka Streams' internal emit interval of stream-stream outer joins: 1 s by default, any ms given,
// 0 at every record.
func TestWindowedEmitIntervalAndGlobalHandler(t *testing.T) {
	d := Default("a").Runtime
	if d.WindowedEmitEvery() != 1000 || d.GlobalProcessingErrors {
		t.Fatalf("defaults: %d ms, global handler %v; want 1000 and false", d.WindowedEmitEvery(), d.GlobalProcessingErrors)
	}
	for v, want := range map[string]int64{"0": 0, "250": 250, "-5": 0} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyWindowedEmitInterval: v})
		if err != nil || c.Runtime.WindowedEmitEvery() != want || c.Runtime.OuterJoinEmitEvery() != 1000 {
			t.Errorf("%q: %d, %v; want %d (and the outer join's untouched)", v, c.Runtime.WindowedEmitEvery(), err, want)
		}
	}
	for v, want := range map[string]bool{"true": true, "TRUE": true, "false": false} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyGlobalProcessingExceptionHandler: v})
		if err != nil || c.Runtime.GlobalProcessingErrors != want || c.Runtime.AllowStateWithoutCommittedOffsets {
			t.Errorf("%q: %v, %v; want %v", v, c.Runtime.GlobalProcessingErrors, err, want)
		}
	}
}

func TestOuterJoinEmitInterval(t *testing.T) {
	if n := Default("a").Runtime.OuterJoinEmitEvery(); n != 1000 {
		t.Fatalf("default %d ms, want 1000", n)
	}
	for v, want := range map[string]int64{"250": 250, "0": 0, "1000": 1000, "-1": 0} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyOuterJoinEmitInterval: v})
		if err != nil || c.Runtime.OuterJoinEmitEvery() != want {
			t.Errorf("%q: %d, %v; want %d", v, c.Runtime.OuterJoinEmitEvery(), err, want)
		}
	}
}
