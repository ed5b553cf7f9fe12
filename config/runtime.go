package config

import (
	"fmt"

	"math"
	"strconv"
	"strings"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// Keys of Kafka Streams' runtime that the stream runtime (package stream) honours, with Kafka's
// names, values and defaults.
const (
	KeyCommitInterval                  = "commit.interval.ms"
	KeyProcessingGuarantee             = "processing.guarantee"
	KeyStateCleanupDelay               = "state.cleanup.delay.ms"
	KeyProcessingExceptionHandler      = "processing.exception.handler"
	KeyDeserializationExceptionHandler = "deserialization.exception.handler"
	// KeyDefaultDeserializationExceptionHandler is the name Kafka Streams used before 4.0; it is read
	// as KeyDeserializationExceptionHandler.
	KeyDefaultDeserializationExceptionHandler = "default.deserialization.exception.handler"
	KeyAutoOffsetReset                        = "auto.offset.reset"
	// KeyTransactionTimeout is the transactional producer's transaction.timeout.ms under
	// exactly_once_v2; Kafka Streams also reads it as KeyProducerTransactionTimeout (its producer.
	// prefix), which wins when both are given.
	KeyTransactionTimeout         = "transaction.timeout.ms"
	KeyProducerTransactionTimeout = "producer.transaction.timeout.ms"
	// KeyPollInterval is Kafka Streams' poll.ms: how long one poll waits for records.
	KeyPollInterval = "poll.ms"
	// KeyTopologyOptimization is Kafka Streams' topology.optimization; only none (its default) is
	// accepted: the DSL (package dsl) builds the topology Kafka Streams builds without optimization.
	KeyTopologyOptimization = "topology.optimization"
	// KeyTimestampExtractor is Kafka Streams' default.timestamp.extractor, with its built-in
	// extractors' class names.
	KeyTimestampExtractor = "default.timestamp.extractor"
	// KeyDeadLetterQueueTopic is Kafka Streams' errors.dead.letter.queue.topic.name (KIP-1034).
	KeyDeadLetterQueueTopic = "errors.dead.letter.queue.topic.name"
	// KeyProductionExceptionHandler is Kafka Streams' production.exception.handler; its pre-4.0
	// name KeyDefaultProductionExceptionHandler is read as it.
	KeyProductionExceptionHandler        = "production.exception.handler"
	KeyDefaultProductionExceptionHandler = "default.production.exception.handler"
	// KeyDeliveryTimeout is the producer's delivery.timeout.ms (also read with Kafka Streams'
	// producer. prefix, which wins): how long a record may wait to be written.
	KeyDeliveryTimeout         = "delivery.timeout.ms"
	KeyProducerDeliveryTimeout = "producer.delivery.timeout.ms"
	// KeyCompressionType is the producer's compression.type (also read with Kafka Streams'
	// producer. prefix, which wins): how the runtime's writes are compressed.
	KeyCompressionType         = "compression.type"
	KeyProducerCompressionType = "producer.compression.type"
	// KeyMaxTaskIdle is Kafka Streams' max.task.idle.ms: how long a task with several input
	// partitions waits for records of an empty one before it processes the others' (-1: never).
	KeyMaxTaskIdle = "max.task.idle.ms"
	// KeyBufferedRecordsPerPartition is Kafka Streams' buffered.records.per.partition: how many
	// fetched records of one input partition a task holds before fetching it pauses.
	KeyBufferedRecordsPerPartition = "buffered.records.per.partition"
	// KeyNumStreamThreads is Kafka Streams' num.stream.threads: how many stream threads (each a
	// member of the group with its own tasks) one process runs.
	KeyNumStreamThreads = "num.stream.threads"
	// KeyStateStoreCacheMaxBytes is Kafka Streams' statestore.cache.max.bytes: the bytes the DSL's
	// record cache may hold across the process's threads. Its pre-3.4 name KeyCacheMaxBytesBuffering
	// is read as it when it is not given.
	KeyStateStoreCacheMaxBytes = "statestore.cache.max.bytes"
	KeyCacheMaxBytesBuffering  = "cache.max.bytes.buffering"
	// KeyDSLStoreFormat is Kafka Streams' dsl.store.format: DEFAULT (timestamped stores) or HEADERS
	// (4.4's headers-aware stores).
	KeyDSLStoreFormat = "dsl.store.format"
	// KeyAllowStateWithoutCommittedOffsets is this runtime's own key (Kafka Streams has none): true
	// lets a task whose stores restore state start although its inputs have no committed offset,
	// processing its input again on top of that state (default false: the application stops with a
	// *stream.OrphanedStateError). See docs/upgrades.md.
	KeyAllowStateWithoutCommittedOffsets = "allow.state.without.committed.offsets"
	// KeyOuterJoinEmitInterval is Kafka Streams' internal key of how often, in wall-clock ms, a
	// stream-stream left or outer join looks for the records no other joined whose window closed
	// (StreamsConfig.InternalConfig's; default 1000, 0 at every record, as TopologyTestDriver sets it).
	KeyOuterJoinEmitInterval = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"
	// KeyWindowedEmitInterval is Kafka Streams' internal key of how often, in wall-clock ms, a
	// windowed aggregation that emits final results (EmitStrategy.onWindowClose) looks for windows
	// that closed (StreamsConfig.InternalConfig's; default 1000, 0 at every record, as
	// TopologyTestDriver sets it).
	KeyWindowedEmitInterval = "__emit.interval.ms.kstreams.windowed.aggregation__"
	// KeyGlobalProcessingExceptionHandler is Kafka Streams' processing.exception.handler.global.enabled:
	// whether processing.exception.handler also decides on the records of global stores' topics
	// (default false: a global store's processor that fails stops the application).
	KeyGlobalProcessingExceptionHandler = "processing.exception.handler.global.enabled"
)

// DefaultOuterJoinEmitInterval is KeyOuterJoinEmitInterval's default.
const DefaultOuterJoinEmitInterval = time.Second

// DSLStoreFormat is dsl.store.format: the format of the DSL's stores.
type DSLStoreFormat string

// The formats of Kafka Streams 4.4.
const (
	// DSLStoreFormatDefault (the default; also the zero value "") is timestamped key-value stores.
	DSLStoreFormatDefault DSLStoreFormat = "DEFAULT"
	// DSLStoreFormatHeaders is headers-aware stores: their changelog records also carry the
	// headers of the record whose update each one is (stream.TimestampedHeadersStore).
	DSLStoreFormatHeaders DSLStoreFormat = "HEADERS"
)

// DefaultStateStoreCacheMaxBytes is Kafka Streams' statestore.cache.max.bytes: 10 MiB.
const DefaultStateStoreCacheMaxBytes = 10 * 1024 * 1024

// MaxTaskIdleDisabled is max.task.idle.ms=-1: a task never waits for an empty input partition.
const MaxTaskIdleDisabled = -time.Millisecond

// DefaultBufferedRecordsPerPartition is Kafka Streams' buffered.records.per.partition.
const DefaultBufferedRecordsPerPartition = 1000

// DefaultDeliveryTimeout is Kafka's delivery.timeout.ms.
const DefaultDeliveryTimeout = 2 * time.Minute

// TimestampPolicy is default.timestamp.extractor: which timestamp a record is processed with, and
// what a record whose own timestamp is invalid (negative) does.
type TimestampPolicy int

// The built-in timestamp extractors of Kafka Streams.
const (
	// FailOnInvalidTimestamp (the default) uses the record's timestamp and stops the application on
	// a negative one.
	FailOnInvalidTimestamp TimestampPolicy = iota
	// LogAndSkipOnInvalidTimestamp logs and skips a record with a negative timestamp.
	LogAndSkipOnInvalidTimestamp
	// UsePartitionTimeOnInvalidTimestamp gives a record with a negative timestamp its partition's
	// time (and stops the application when the partition has none yet).
	UsePartitionTimeOnInvalidTimestamp
	// WallclockTimestamp processes every record at the system clock's time.
	WallclockTimestamp
)

// timestampClasses are Kafka Streams' extractor classes (package org.apache.kafka.streams.processor).
var timestampClasses = []string{"FailOnInvalidTimestamp", "LogAndSkipOnInvalidTimestamp",
	"UsePartitionTimeOnInvalidTimestamp", "WallclockTimestampExtractor"}

// String names the policy as Kafka Streams' extractor class does.
func (p TimestampPolicy) String() string {
	if int(p) >= 0 && int(p) < len(timestampClasses) {
		return timestampClasses[p]
	}
	return fmt.Sprintf("TimestampPolicy(%d)", int(p))
}

// Runtime defaults (Kafka Streams').
const (
	DefaultCommitInterval    = 30 * time.Second       // commit.interval.ms under at_least_once
	DefaultCommitIntervalEOS = 100 * time.Millisecond // commit.interval.ms under exactly_once_v2
	DefaultStateCleanupDelay = 10 * time.Minute       // state.cleanup.delay.ms
	// DefaultTransactionTimeout is the transaction.timeout.ms Kafka Streams gives its producers
	// under exactly_once_v2 (the Kafka producer's own default is one minute).
	DefaultTransactionTimeout = 10 * time.Second
	DefaultPollInterval       = 100 * time.Millisecond // poll.ms
)

// Guarantee is processing.guarantee.
type Guarantee string

// The processing guarantees, with Kafka's names.
const (
	AtLeastOnce   Guarantee = "at_least_once"
	ExactlyOnceV2 Guarantee = "exactly_once_v2"
)

// ErrorPolicy is what the runtime does with a record its processor (or a deserializer) fails on.
type ErrorPolicy int

const (
	// LogAndFail (Kafka Streams' LogAndFail…ExceptionHandler, the default) stops the application with
	// the error; nothing past the failed record is committed.
	LogAndFail ErrorPolicy = iota
	// LogAndContinue (Kafka Streams' LogAndContinue…ExceptionHandler) logs the error, skips the record
	// and goes on; the skipped record counts as processed.
	LogAndContinue
)

// RetryOrFail is the default production.exception.handler (Kafka Streams'
// DefaultProductionExceptionHandler): a write that failed with a retriable error (the brokers
// unreachable past delivery.timeout.ms, a leader moving) makes the tasks go back to their last
// commit and process again, as Kafka Streams' TaskCorruptedException does; any other stops the
// application. It is the zero ErrorPolicy, which production.exception.handler reads as this.
const RetryOrFail = LogAndFail

// String names the policy as Kafka Streams' handler class does.
func (p ErrorPolicy) String() string {
	if p == LogAndContinue {
		return "LogAndContinue"
	}
	return "LogAndFail"
}

// Compression is a producer's compression.type.
type Compression string

// The codecs of compression.type.
const (
	CompressionNone   Compression = "none"
	CompressionGzip   Compression = "gzip"
	CompressionSnappy Compression = "snappy"
	CompressionLz4    Compression = "lz4"
	CompressionZstd   Compression = "zstd"
)

// Delivery is DeliveryTimeout, or its default when zero.
func (r Runtime) Delivery() time.Duration {
	if r.DeliveryTimeout == 0 {
		return DefaultDeliveryTimeout
	}
	return r.DeliveryTimeout
}

// Runtime is the configuration of the stream runtime: how it processes, commits and keeps state.
// A member that is not run by the runtime ignores it.
type Runtime struct {
	// Guarantee (processing.guarantee) is at_least_once (the default) or exactly_once_v2
	// (transactions: every record's effects become visible once, to read_committed readers).
	Guarantee Guarantee
	// CommitInterval (commit.interval.ms) is how often processed input offsets are committed, once
	// everything the records produced is acknowledged (under exactly_once_v2: how often the
	// transaction commits). Default 30 s under at_least_once; FromMap makes it 100 ms under
	// exactly_once_v2 when the key is not given, as Kafka Streams does (a Config built in Go code
	// sets it itself: DefaultCommitIntervalEOS). 0 commits after every poll.
	CommitInterval time.Duration
	// StateCleanupDelay (state.cleanup.delay.ms) is how long the directory of a persistent store of a
	// task this process no longer owns is kept before it is deleted. Default 10 minutes.
	StateCleanupDelay time.Duration
	// OnProcessingError (processing.exception.handler) is what a processor's error does. Default
	// LogAndFail.
	OnProcessingError ErrorPolicy
	// OnDeserializationError (deserialization.exception.handler) is what a record that its serdes
	// cannot decode does. Default LogAndFail.
	OnDeserializationError ErrorPolicy
	// ResetLatest (auto.offset.reset=latest) starts an input partition without a committed offset at
	// its end instead of its start (earliest, Kafka Streams' default).
	ResetLatest bool
	// TransactionTimeout (transaction.timeout.ms, or producer.transaction.timeout.ms) is how long the
	// transaction coordinator lets a transaction stay open before it aborts it, under
	// exactly_once_v2. Zero means DefaultTransactionTimeout. It must not be lower than
	// CommitInterval, or every transaction would be aborted before its commit: Kafka Streams
	// refuses that configuration too.
	TransactionTimeout time.Duration
	// PollInterval (poll.ms) is how long one poll waits for records, and so how late a wall-clock
	// punctuation or a commit can be. Zero means DefaultPollInterval.
	PollInterval time.Duration
	// Timestamps (default.timestamp.extractor) is which timestamp records are processed with.
	// Default FailOnInvalidTimestamp.
	Timestamps TimestampPolicy
	// OnProductionError (production.exception.handler) is what a write the brokers did not take
	// does under at_least_once: RetryOrFail (Kafka Streams' DefaultProductionExceptionHandler, the
	// default) or LogAndContinue. Under exactly_once_v2 a failed write aborts the transaction and
	// the work is redone, or stops the application, whatever this says.
	OnProductionError ErrorPolicy
	// DeliveryTimeout (delivery.timeout.ms) is how long a record may wait to be written before it
	// fails. Zero means DefaultDeliveryTimeout.
	DeliveryTimeout time.Duration
	// Compression (compression.type) is the codec of the runtime's writes: none (Kafka's default,
	// and so Kafka Streams'), gzip, snappy, lz4 or zstd. "" means none.
	Compression Compression
	// DeadLetterQueueTopic (errors.dead.letter.queue.topic.name) is where an input record that a
	// processor or its serdes failed on is written, with Kafka Streams' error headers, whatever the
	// handler then does. "" (the default): nowhere.
	DeadLetterQueueTopic string
	// MaxTaskIdle (max.task.idle.ms) is how long a task with several input partitions waits, when
	// one of them has no record fetched and none known to be on the brokers, before it processes
	// the others' records without it (it always waits for records known to be there, and then
	// processes in timestamp order across its partitions). Default 0; MaxTaskIdleDisabled (-1)
	// never waits; other negative values wait as 0 does (as in Kafka Streams).
	MaxTaskIdle time.Duration
	// BufferedRecordsPerPartition (buffered.records.per.partition) is how many fetched records of
	// one input partition such a task holds before fetching that partition pauses (it pauses with
	// more than that held). Zero means DefaultBufferedRecordsPerPartition; a negative value pauses
	// as soon as one record is held.
	BufferedRecordsPerPartition int
	// NumStreamThreads (num.stream.threads) is how many stream threads the process runs: each is a
	// member of the group with its own tasks, consumer positions and (under exactly_once_v2)
	// transactional producer, all sharing the process ID and state.dir. Zero means 1 (the
	// default).
	NumStreamThreads int
	// StateStoreCacheMaxBytes (statestore.cache.max.bytes) is how many bytes the DSL's record cache
	// may hold, across the process's threads: updates of a key between commits are held there and
	// only the latest is written to the store, its changelog and downstream, at the commit or when
	// the cache is full. Zero means DefaultStateStoreCacheMaxBytes; a negative value turns the cache
	// off (FromMap reads statestore.cache.max.bytes=0 so), and every update is written at once.
	StateStoreCacheMaxBytes int64
	// DSLStoreFormat (dsl.store.format) is the format of the DSL's stores: DSLStoreFormatDefault
	// ("" too) or DSLStoreFormatHeaders.
	DSLStoreFormat DSLStoreFormat
	// AllowStateWithoutCommittedOffsets (allow.state.without.committed.offsets) lets a task start
	// whose stores hold restored state while none of its inputs has a committed offset (the group's
	// offsets were deleted and its changelogs kept): its input is then processed again from
	// auto.offset.reset on top of that state, which doubles every count and total. False (the
	// default) refuses it: the application stops with a *stream.OrphanedStateError before the task
	// processes a record.
	AllowStateWithoutCommittedOffsets bool
	// OuterJoinEmitInterval (KeyOuterJoinEmitInterval) is how often, in wall-clock time, a
	// stream-stream left or outer join looks for the records no other joined whose window closed.
	// Zero means DefaultOuterJoinEmitInterval; a negative value looks at every record (FromMap reads
	// 0 so).
	OuterJoinEmitInterval time.Duration
	// WindowedEmitInterval (KeyWindowedEmitInterval) is how often, in wall-clock time, a windowed
	// aggregation that emits final results looks for windows that closed. Zero means
	// DefaultOuterJoinEmitInterval's second too; a negative value looks at every record (FromMap
	// reads 0 so).
	WindowedEmitInterval time.Duration
	// GlobalProcessingErrors (processing.exception.handler.global.enabled) has
	// processing.exception.handler decide on the records of global stores' topics too; false (the
	// default): a global store's processor that fails stops the application, as in Kafka Streams.
	GlobalProcessingErrors bool
}

// WindowedEmitEvery is WindowedEmitInterval in ms: its default (1000) when zero, 0 when negative.
func (r Runtime) WindowedEmitEvery() int64 {
	switch {
	case r.WindowedEmitInterval == 0:
		return DefaultOuterJoinEmitInterval.Milliseconds()
	case r.WindowedEmitInterval < 0:
		return 0
	}
	return r.WindowedEmitInterval.Milliseconds()
}

// OuterJoinEmitEvery is OuterJoinEmitInterval in ms: its default when zero, 0 when negative.
func (r Runtime) OuterJoinEmitEvery() int64 {
	switch {
	case r.OuterJoinEmitInterval == 0:
		return DefaultOuterJoinEmitInterval.Milliseconds()
	case r.OuterJoinEmitInterval < 0:
		return 0
	}
	return r.OuterJoinEmitInterval.Milliseconds()
}

// CacheBytes is the record cache's size: StateStoreCacheMaxBytes, its default when zero, 0 (no
// cache) when negative.
func (r Runtime) CacheBytes() int64 {
	switch {
	case r.StateStoreCacheMaxBytes == 0:
		return DefaultStateStoreCacheMaxBytes
	case r.StateStoreCacheMaxBytes < 0:
		return 0
	}
	return r.StateStoreCacheMaxBytes
}

// Threads is NumStreamThreads, or 1 when zero.
func (r Runtime) Threads() int { return max(r.NumStreamThreads, 1) }

// Buffered is how many records of one input partition a task with several may hold before
// fetching pauses: BufferedRecordsPerPartition, its default when zero, 0 when negative.
func (r Runtime) Buffered() int {
	switch {
	case r.BufferedRecordsPerPartition == 0:
		return DefaultBufferedRecordsPerPartition
	case r.BufferedRecordsPerPartition < 0:
		return 0
	}
	return r.BufferedRecordsPerPartition
}

// TxnTimeout is TransactionTimeout, or its default when zero.
func (r Runtime) TxnTimeout() time.Duration {
	if r.TransactionTimeout == 0 {
		return DefaultTransactionTimeout
	}
	return r.TransactionTimeout
}

// Poll is PollInterval, or its default when zero.
func (r Runtime) Poll() time.Duration {
	if r.PollInterval == 0 {
		return DefaultPollInterval
	}
	return r.PollInterval
}

// defaultRuntime is Kafka Streams' runtime defaults.
func defaultRuntime() Runtime {
	return Runtime{Guarantee: AtLeastOnce, CommitInterval: DefaultCommitInterval, StateCleanupDelay: DefaultStateCleanupDelay,
		TransactionTimeout: DefaultTransactionTimeout, PollInterval: DefaultPollInterval}
}

// isRuntimeKey reports whether key is one of the runtime keys read by parseRuntime.
func isRuntimeKey(key string) bool {
	switch key {
	case KeyCommitInterval, KeyProcessingGuarantee, KeyStateCleanupDelay, KeyProcessingExceptionHandler,
		KeyDeserializationExceptionHandler, KeyDefaultDeserializationExceptionHandler, KeyAutoOffsetReset,
		KeyTransactionTimeout, KeyProducerTransactionTimeout, KeyPollInterval, KeyTimestampExtractor, KeyDeadLetterQueueTopic,
		KeyProductionExceptionHandler, KeyDefaultProductionExceptionHandler, KeyDeliveryTimeout, KeyProducerDeliveryTimeout,
		KeyMaxTaskIdle, KeyBufferedRecordsPerPartition, KeyNumStreamThreads, KeyTopologyOptimization,
		KeyStateStoreCacheMaxBytes, KeyCacheMaxBytesBuffering, KeyDSLStoreFormat, KeyAllowStateWithoutCommittedOffsets,
		KeyOuterJoinEmitInterval, KeyCompressionType, KeyProducerCompressionType, KeyWindowedEmitInterval,
		KeyGlobalProcessingExceptionHandler:
		return true
	}
	return false
}

// handlerClasses maps Kafka Streams' handler classes (fully qualified or simple names) to policies.
var handlerClasses = map[string]map[string]ErrorPolicy{
	KeyProcessingExceptionHandler: {
		"org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler":     LogAndFail,
		"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler": LogAndContinue,
	},
	KeyDeserializationExceptionHandler: {
		"org.apache.kafka.streams.errors.LogAndFailExceptionHandler":     LogAndFail,
		"org.apache.kafka.streams.errors.LogAndContinueExceptionHandler": LogAndContinue,
	},
	// Kafka Streams ships DefaultProductionExceptionHandler only (RETRY or FAIL); the continuing
	// one is this library's, named as Kafka Streams names its others.
	KeyProductionExceptionHandler: {
		"org.apache.kafka.streams.errors.DefaultProductionExceptionHandler":        RetryOrFail,
		"org.apache.kafka.streams.errors.LogAndContinueProductionExceptionHandler": LogAndContinue,
	},
}

// parseRuntime reads one runtime key into c.Runtime.
func parseRuntime(c *Config, key, raw string, p *problems) {
	val := strings.TrimSpace(raw)
	r := &c.Runtime
	switch key {
	case KeyCommitInterval, KeyStateCleanupDelay, KeyPollInterval:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "LONG", math.MaxInt64))
			return
		}
		d := time.Duration(min(max(n, -maxMillis), maxMillis)) * time.Millisecond
		switch key {
		case KeyCommitInterval:
			r.CommitInterval = d
		case KeyPollInterval:
			r.PollInterval = d
		default:
			r.StateCleanupDelay = d
		}
	case KeyMaxTaskIdle:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "LONG", math.MaxInt64))
			return
		}
		r.MaxTaskIdle = time.Duration(min(max(n, -maxMillis), maxMillis)) * time.Millisecond
	case KeyBufferedRecordsPerPartition:
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "INT", math.MaxInt32))
			return
		}
		r.BufferedRecordsPerPartition = int(n)
		if n <= 0 {
			// Kafka accepts any INT: 0 or less pauses fetching as soon as a record is held. Zero is
			// the default here, so such a value is kept as -1, which behaves the same.
			r.BufferedRecordsPerPartition = -1
		}
	case KeyNumStreamThreads:
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "INT", math.MaxInt32))
			return
		}
		if n < 1 {
			// Kafka Streams starts a client without threads and lets the application add them
			// (addStreamThread); here the process is its threads, so it needs one at least.
			p.add(key, raw, "must be at least 1 (the application adds no threads later)")
			return
		}
		r.NumStreamThreads = int(n)
	case KeyStateStoreCacheMaxBytes, KeyCacheMaxBytesBuffering:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "LONG", math.MaxInt64))
			return
		}
		if n < 0 {
			p.add(key, raw, "must be at least 0 (0 turns the record cache off)")
			return
		}
		r.StateStoreCacheMaxBytes = n
		if n == 0 {
			r.StateStoreCacheMaxBytes = -1 // zero is the default here; -1 is "no cache"
		}
	case KeyOuterJoinEmitInterval, KeyWindowedEmitInterval:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "LONG", math.MaxInt64))
			return
		}
		d := time.Duration(min(n, maxMillis)) * time.Millisecond
		if n <= 0 {
			// Zero is the default here; -1 is "at every record", which is what Kafka Streams' throttle
			// does with 0 or a negative interval (it reads the key as any LONG).
			d = -1
		}
		if key == KeyOuterJoinEmitInterval {
			r.OuterJoinEmitInterval = d
		} else {
			r.WindowedEmitInterval = d
		}
	case KeyAllowStateWithoutCommittedOffsets, KeyGlobalProcessingExceptionHandler:
		// A BOOLEAN as Kafka's ConfigDef reads one: true or false, in any case.
		var b bool
		switch {
		case strings.EqualFold(val, "true"):
			b = true
		case strings.EqualFold(val, "false"):
		default:
			p.add(key, raw, "must be true or false")
			return
		}
		if key == KeyAllowStateWithoutCommittedOffsets {
			r.AllowStateWithoutCommittedOffsets = b
		} else {
			r.GlobalProcessingErrors = b
		}
	case KeyDSLStoreFormat:
		switch f := DSLStoreFormat(strings.ToUpper(val)); f {
		case DSLStoreFormatDefault, DSLStoreFormatHeaders:
			r.DSLStoreFormat = f
		default:
			p.add(key, raw, "must be DEFAULT or HEADERS")
		}
	case KeyTopologyOptimization:
		if !strings.EqualFold(val, "none") {
			p.add(key, raw, "only none (Kafka Streams' default) is supported: the DSL builds the topology Kafka Streams builds "+
				"without optimization, and all or single optimizations (reuse.ktable.source.topics, merge.repartition.topics, "+
				"single.store.self.join) would change it; the Kafka Streams members of the group need none too, so that the "+
				"topologies agree")
		}
	case KeyDeadLetterQueueTopic:
		r.DeadLetterQueueTopic = val
	case KeyTimestampExtractor:
		for i, class := range timestampClasses {
			if val == class || val == "org.apache.kafka.streams.processor."+class {
				r.Timestamps = TimestampPolicy(i)
				return
			}
		}
		p.add(key, raw, "must be one of Kafka Streams' extractors %s (fully qualified in org.apache.kafka.streams.processor or not); "+
			"an extractor of your own is Go code: set the timestamp of the records you produce", strings.Join(timestampClasses, ", "))
	case KeyTransactionTimeout, KeyProducerTransactionTimeout:
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "INT", math.MaxInt32))
			return
		}
		r.TransactionTimeout = time.Duration(n) * time.Millisecond
	case KeyProcessingGuarantee:
		switch Guarantee(val) {
		case AtLeastOnce:
			r.Guarantee = AtLeastOnce
		case ExactlyOnceV2:
			r.Guarantee = ExactlyOnceV2
		case "exactly_once", "exactly_once_beta":
			p.add(key, raw, "was removed in Kafka Streams 4.0: use exactly_once_v2, its successor")
		default:
			p.add(key, raw, "must be at_least_once or exactly_once_v2")
		}
	case KeyProcessingExceptionHandler, KeyDeserializationExceptionHandler, KeyDefaultDeserializationExceptionHandler,
		KeyProductionExceptionHandler, KeyDefaultProductionExceptionHandler:
		canonical := key
		switch key {
		case KeyDefaultDeserializationExceptionHandler:
			canonical = KeyDeserializationExceptionHandler
		case KeyDefaultProductionExceptionHandler:
			canonical = KeyProductionExceptionHandler
		}
		policy, ok := lookupHandler(canonical, val)
		if !ok {
			p.add(key, raw, "%s", handlerReason(canonical))
			return
		}
		switch canonical {
		case KeyProcessingExceptionHandler:
			r.OnProcessingError = policy
		case KeyProductionExceptionHandler:
			r.OnProductionError = policy
		default:
			r.OnDeserializationError = policy
		}
	case KeyCompressionType, KeyProducerCompressionType:
		switch c := Compression(strings.ToLower(val)); c {
		case CompressionNone, CompressionGzip, CompressionSnappy, CompressionLz4, CompressionZstd:
			r.Compression = c
		default:
			p.add(key, raw, "must be one of none, gzip, snappy, lz4, zstd (Kafka's producer codecs)")
		}
	case KeyDeliveryTimeout, KeyProducerDeliveryTimeout:
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil {
			p.add(key, raw, "%s", numberReason(err, "INT", math.MaxInt32))
			return
		}
		r.DeliveryTimeout = time.Duration(n) * time.Millisecond
	case KeyAutoOffsetReset:
		switch strings.ToLower(val) {
		case "earliest":
			r.ResetLatest = false
		case "latest":
			r.ResetLatest = true
		default:
			p.add(key, raw, "must be earliest (Kafka Streams' default) or latest")
		}
	}
}

// lookupHandler finds a handler class by its fully qualified or simple name.
func lookupHandler(key, val string) (ErrorPolicy, bool) {
	for class, policy := range handlerClasses[key] {
		if val == class || val == class[strings.LastIndexByte(class, '.')+1:] {
			return policy, true
		}
	}
	return 0, false
}

func handlerReason(key string) string {
	var names []string
	for class := range handlerClasses[key] {
		names = append(names, class[strings.LastIndexByte(class, '.')+1:])
	}
	if len(names) == 2 && strings.Contains(names[0], "Continue") {
		names[0], names[1] = names[1], names[0]
	}
	return "must be one of Kafka Streams' handlers " + strings.Join(names, " or ") +
		" (fully qualified or not); handlers of your own are Go code: return nil from the processor to skip a record"
}

// validateRuntime checks the runtime fields.
func (c *Config) validateRuntime(p *problems) {
	r := c.Runtime
	if r.CommitInterval < 0 {
		p.add(KeyCommitInterval, ms(r.CommitInterval), "must be >= 0")
	}
	if r.StateCleanupDelay < 0 {
		p.add(KeyStateCleanupDelay, ms(r.StateCleanupDelay), "must be >= 0")
	}
	if r.DeadLetterQueueTopic != "" {
		if bad := text.FirstIllegal(r.DeadLetterQueueTopic, topicChar); bad != "" || len(r.DeadLetterQueueTopic) > 249 ||
			r.DeadLetterQueueTopic == "." || r.DeadLetterQueueTopic == ".." {
			p.add(KeyDeadLetterQueueTopic, r.DeadLetterQueueTopic, "is not a topic name (at most 249 of [a-zA-Z0-9._-], not . or ..)")
		}
	}
	if r.DeliveryTimeout < 0 || r.DeliveryTimeout > math.MaxInt32*time.Millisecond {
		p.add(KeyDeliveryTimeout, ms(r.DeliveryTimeout), "must be between 1 and %d ms (an INT in Kafka)", math.MaxInt32)
	}
	if r.NumStreamThreads < 0 {
		p.add(KeyNumStreamThreads, strconv.Itoa(r.NumStreamThreads), "must be at least 1")
	}
	switch r.DSLStoreFormat {
	case "", DSLStoreFormatDefault, DSLStoreFormatHeaders:
	default:
		p.add(KeyDSLStoreFormat, string(r.DSLStoreFormat), "must be DEFAULT or HEADERS")
	}
	if r.PollInterval < 0 {
		p.add(KeyPollInterval, ms(r.PollInterval), "must be >= 0")
	}

	if r.TransactionTimeout < 0 || r.TransactionTimeout > math.MaxInt32*time.Millisecond {
		p.add(KeyTransactionTimeout, ms(r.TransactionTimeout), "must be between 1 and %d ms (an INT in Kafka)", math.MaxInt32)
	} else if r.Guarantee == ExactlyOnceV2 && r.CommitInterval > r.TxnTimeout() {
		// StreamsConfig.verifyEOSTransactionTimeoutCompatibility: a transaction open longer than its
		// timeout is aborted by the coordinator, so every commit would fail and the work be redone
		// for ever.
		p.add(KeyCommitInterval, ms(r.CommitInterval), "is longer than transaction.timeout.ms (%s) under exactly_once_v2: the "+
			"transaction coordinator would abort every transaction before its commit; lower commit.interval.ms or raise "+
			"transaction.timeout.ms (the broker's transaction.max.timeout.ms bounds it)", ms(r.TxnTimeout()))
	}
	switch r.Guarantee {
	case AtLeastOnce, ExactlyOnceV2, "":
	default:
		p.add(KeyProcessingGuarantee, string(r.Guarantee), "must be at_least_once or exactly_once_v2")
	}
}
