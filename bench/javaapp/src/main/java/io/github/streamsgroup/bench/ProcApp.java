package io.github.streamsgroup.bench;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams side of the processing phase of bench-compare: the apps bench/procapp runs on
 * the Go runtime, with the same topics and serdes, in one KafkaStreams with one stream thread.
 *
 * <p>Flags ({@code --name=value}): {@code --bootstrap}, {@code --app}, {@code --input}, {@code
 * --output}, {@code --mode=map|count|dsl-count|dsl-count-cache|dsl-window|dsl-hopping|dsl-session|dsl-join|dsl-stream-join}, {@code --store=memory|rocksdb} (count, dsl-window), {@code
 * --guarantee=at_least_once|exactly_once_v2}, optional {@code --commit-ms}, {@code --state-dir},
 * {@code --expect-restore}, {@code --threads} (num.stream.threads, default 1).
 *
 * <ul>
 *   <li>map: input (String, String) → value upper-cased → output (String, String);
 *   <li>count: input (String, bytes) → count per key in the store "counts" (logged, not cached:
 *       every update is written to its changelog, as the Go runtime does) → every new count to
 *       output (String, Long).
 * </ul>
 *
 * <p>Stdout carries only these lines, times in microseconds since the Unix epoch: {@code MAIN t},
 * {@code FIRST t p} (the first record of partition p's task processed since the task was last
 * initialised in this process), {@code
 * RESTORING t} (the first store restore began), {@code RESTORED t n} (the restores have applied n
 * ≥ --expect-restore records), {@code READY t p n} (partition p's task is initialised, its restore
 * done, and about to process: its processor's init; n is the records the restores applied in this
 * process so far), {@code STATE s}, {@code CLOSED t}. SIGTERM closes Kafka Streams
 * (leaving the group) and exits.
 */
public final class ProcApp {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final Set<Integer> FIRST = ConcurrentHashMap.newKeySet();
    private static final AtomicBoolean CLOSED = new AtomicBoolean();
    /** The records the restore listener saw applied, over every store of this process. */
    private static final AtomicLong RESTORED = new AtomicLong();
    private static KafkaStreams streams;

    private ProcApp() {
    }

    static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    static void emit(String line) {
        synchronized (OUT) {
            OUT.println(line);
            OUT.flush();
        }
    }

    /** A task starts processing here: its processor was initialised, after its restore. */
    static void ready(int partition) {
        FIRST.remove(partition);
        emit("READY " + micros() + " " + partition + " " + RESTORED.get());
    }

    static void mark(int partition) {
        if (FIRST.add(partition)) {
            emit("FIRST " + micros() + " " + partition);
        }
    }

    public static void main(String[] args) throws Exception {
        emit("MAIN " + micros());
        Map<String, String> flags = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (!a.startsWith("--") || eq < 0) {
                throw new IllegalArgumentException("expected --name=value, got " + a);
            }
            flags.put(a.substring(2, eq), a.substring(eq + 1));
        }
        String stateDir = flags.get("state-dir");
        if (stateDir == null || stateDir.isEmpty()) {
            stateDir = Files.createTempDirectory("procapp-state-").toString();
        }
        String input = flags.get("input");
        String output = flags.get("output");
        Topology topology = new Topology();
        switch (flags.getOrDefault("mode", "count")) {
            case "map":
                topology.addSource("source", Serdes.String().deserializer(), Serdes.String().deserializer(), input)
                    .addProcessor("upper", Upper::new, "source")
                    .addSink("sink", output, Serdes.String().serializer(), Serdes.String().serializer(), "upper");
                break;
            case "count":
                KeyValueBytesStoreSupplier supplier = flags.getOrDefault("store", "memory").equals("rocksdb")
                    ? Stores.persistentKeyValueStore("counts")
                    : Stores.inMemoryKeyValueStore("counts");
                topology.addSource("source", Serdes.String().deserializer(), Serdes.ByteArray().deserializer(), input)
                    .addProcessor("count", Counter::new, "source")
                    .addStateStore(Stores.keyValueStoreBuilder(supplier, Serdes.String(), Serdes.Long())
                        .withLoggingEnabled(Map.of()).withCachingDisabled(), "count")
                    .addSink("sink", output, Serdes.String().serializer(), Serdes.Long().serializer(), "count");
                break;
            case "dsl-count":
            case "dsl-count-cache": {
                // The count written with the DSL, as bench/procapp -mode dsl-count: without the
                // record cache, or (dsl-count-cache) with it at its default size.
                Materialized<String, Long, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>> m =
                    Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"));
                if (flags.get("mode").equals("dsl-count")) {
                    m = m.withCachingDisabled();
                }
                StreamsBuilder builder = new StreamsBuilder();
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                    .peek((k, v) -> mark(0)) // the first record's time, as the Go side marks it
                    .groupByKey(Grouped.with(Serdes.String(), Serdes.ByteArray()))
                    .count(m)
                    .toStream().to(output, Produced.with(Serdes.String(), Serdes.Long()));
                topology = builder.build();
                break;
            }
            case "dsl-window": {
                // A tumbling 1-minute count, as bench/procapp -mode dsl-window, without the cache, in
                // memory or (--store=rocksdb) in the DSL's default persistent window store.
                StreamsBuilder builder = new StreamsBuilder();
                Materialized<String, Long, WindowStore<Bytes, byte[]>> counts = flags.getOrDefault("store", "memory").equals("rocksdb")
                    ? Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("counts")
                    : Materialized.<String, Long>as(Stores.inMemoryWindowStore("counts", Duration.ofMinutes(1), Duration.ofMinutes(1), false));
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                    .peek((k, v) -> mark(0))
                    .groupByKey(Grouped.with(Serdes.String(), Serdes.ByteArray()))
                    .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                    .count(counts.withCachingDisabled())
                    .toStream().to(output, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.Long()));
                topology = builder.build();
                break;
            }
            case "dsl-hopping": {
                // Hopping 1-minute windows advancing by 10 s, as bench/procapp -mode dsl-hopping.
                StreamsBuilder builder = new StreamsBuilder();
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                    .peek((k, v) -> mark(0))
                    .groupByKey(Grouped.with(Serdes.String(), Serdes.ByteArray()))
                    .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)).advanceBy(Duration.ofSeconds(10)))
                    .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("counts", Duration.ofMinutes(1), Duration.ofMinutes(1), false))
                        .withCachingDisabled())
                    .toStream().to(output, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.Long()));
                topology = builder.build();
                break;
            }
            case "dsl-stream-join": {
                // A stream-stream join of the input with a mapped copy within 1 ms, in-memory join
                // stores, as bench/procapp -mode dsl-stream-join.
                StreamsBuilder builder = new StreamsBuilder();
                KStream<String, byte[]> in = builder.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()));
                KStream<String, byte[]> marked = in.peek((k, v) -> mark(0));
                KStream<String, byte[]> copied = marked.mapValues(v -> v);
                marked.join(copied, (v, c) -> v, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(1)),
                        StreamJoined.<String, byte[], byte[]>with(
                                Stores.inMemoryWindowStore("j-this-join-store", Duration.ofMillis(2), Duration.ofMillis(2), true),
                                Stores.inMemoryWindowStore("j-other-join-store", Duration.ofMillis(2), Duration.ofMillis(2), true))
                            .withKeySerde(Serdes.String()).withValueSerde(Serdes.ByteArray()).withOtherValueSerde(Serdes.ByteArray()))
                    .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()));
                topology = builder.build();
                break;
            }
            case "dsl-session": {
                // A session count with a 5-minute gap, as bench/procapp -mode dsl-session.
                StreamsBuilder builder = new StreamsBuilder();
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                    .peek((k, v) -> mark(0))
                    .groupByKey(Grouped.with(Serdes.String(), Serdes.ByteArray()))
                    .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(5)))
                    .count(Materialized.<String, Long>as(Stores.inMemorySessionStore("counts", Duration.ofMinutes(5))).withCachingDisabled())
                    .toStream().to(output, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                topology = builder.build();
                break;
            }
            case "dsl-join": {
                // Each record joined with its key's previous value, as bench/procapp -mode dsl-join.
                StreamsBuilder builder = new StreamsBuilder();
                KStream<String, byte[]> in = builder.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()));
                KTable<String, byte[]> t = in.peek((k, v) -> mark(0))
                    .toTable(Materialized.<String, byte[]>as(Stores.inMemoryKeyValueStore("counts"))
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.ByteArray()).withCachingDisabled());
                in.join(t, (v, tv) -> v).to(output, Produced.with(Serdes.String(), Serdes.ByteArray()));
                topology = builder.build();
                break;
            }
            default:
                throw new IllegalArgumentException("--mode: map, count, dsl-count, dsl-count-cache, dsl-window, dsl-hopping, dsl-session, dsl-join or dsl-stream-join");
        }

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, flags.get("app"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, flags.get("bootstrap"));
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(flags.getOrDefault("threads", "1")));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, flags.getOrDefault("guarantee", "at_least_once"));
        if (flags.containsKey("commit-ms")) {
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(flags.get("commit-ms")));
        }

        long expect = Long.parseLong(flags.getOrDefault("expect-restore", "0"));
        AtomicBoolean restoring = new AtomicBoolean();
        streams = new KafkaStreams(topology, props);
        streams.setStateListener((newState, oldState) -> emit("STATE " + newState));
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                if (restoring.compareAndSet(false, true)) {
                    emit("RESTORING " + micros());
                }
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long endOffset, long n) {
                long after = RESTORED.addAndGet(n);
                if (expect > 0 && after >= expect && after - n < expect) {
                    emit("RESTORED " + micros() + " " + after);
                }
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(ProcApp::close, "procapp-shutdown"));
        streams.start();
        // Until SIGTERM: the shutdown hook closes Kafka Streams.
        Thread.currentThread().join();
    }

    /** Closes Kafka Streams once, leaving the group so that the broker reassigns the tasks at once. */
    private static void close() {
        if (!CLOSED.compareAndSet(false, true)) {
            return;
        }
        streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(30)));
        emit("CLOSED " + micros());
    }

    /** The stateless map: the value upper-cased. */
    private static final class Upper implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private int partition;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.partition = context.taskId().partition();
            ready(partition);
        }

        @Override
        public void process(Record<String, String> record) {
            mark(partition);
            String v = record.value();
            context.forward(record.withValue(v == null ? null : v.toUpperCase()));
        }
    }

    /** The count: one more for the record's key in "counts", the new count forwarded. */
    private static final class Counter implements Processor<String, byte[], String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> counts;
        private int partition;

        @Override
        public void init(ProcessorContext<String, Long> context) {
            this.context = context;
            this.counts = context.getStateStore("counts");
            this.partition = context.taskId().partition();
            ready(partition);
        }

        @Override
        public void process(Record<String, byte[]> record) {
            mark(partition);
            if (record.key() == null) {
                return;
            }
            Long n = counts.get(record.key());
            long next = n == null ? 1 : n + 1;
            counts.put(record.key(), next);
            context.forward(record.withValue(next));
        }
    }
}
