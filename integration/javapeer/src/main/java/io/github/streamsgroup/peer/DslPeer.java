package io.github.streamsgroup.peer;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.internals.AsyncKafkaConsumer;
import org.apache.kafka.clients.consumer.internals.StreamsRebalanceData;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.internals.ConsumerWrapper;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams DSL applications (group.protocol=streams), several in one JVM, that the Go DSL interop
 * tests (../javapeer_dsl_test.go) run next to Go members, and that print the topology each one
 * sends to the broker.
 *
 * <p>Flags (all {@code --name=value}): {@code --bootstrap}; {@code --apps}, a comma-separated list of
 * {@code construct@application.id}; {@code --topics}, the prefix of every input and output topic
 * (construct {@code c} reads {@code <topics>-<c>-<role>}, see {@link #build}); optional
 * {@code --state-dir}; optional {@code --optimization} (topology.optimization, default none);
 * optional {@code --processing-guarantee} (default at_least_once), optional
 * {@code --cache-max-bytes} (statestore.cache.max.bytes; default 0, the record cache off, so every
 * update is written), optional {@code --dsl-store-format} (DEFAULT or HEADERS);
 * optional {@code --print=true}, which only builds each application, prints its
 * topology and exits without contacting a broker.
 *
 * <p>Stdout carries only machine-readable lines, each flushed:
 * <pre>
 *   TOPOLOGY &lt;app&gt; &lt;json&gt;       what the application sends in its joining heartbeat (see below)
 *   DESCRIBE &lt;app&gt; &lt;json string&gt; Topology.describe(), as one JSON string (print mode only)
 *   STATE &lt;app&gt; &lt;state&gt;         on every KafkaStreams state change
 *   TASKS &lt;app&gt; active=0_0 standby= whenever the application's task sets change
 *   ERROR &lt;app&gt; &lt;message&gt;       from the uncaught exception handler
 *   CLOSED                        after every KafkaStreams.close returned
 * </pre>
 * The TOPOLOGY JSON is the Go package topology's JSON form, taken from the StreamsRebalanceData that
 * Kafka Streams hands its consumer (captured through the consumer-wrapper hook, so it is exactly
 * what the heartbeat sends): subtopologies by ID, topics sorted, configs sorted by key, and
 * copartition groups in the order Kafka Streams iterates them, which is the order on the wire.
 *
 * <p>Logging goes to stderr. The process closes every application (leaving the groups) and exits
 * when stdin reaches EOF or on SIGTERM.
 */
public final class DslPeer {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    /** The DSL constructs this peer can run, in the order {@code --apps=all} lists them. */
    static final List<String> CONSTRUCTS = List.of(
        "aggregate", "stream-table-join", "stream-stream-join", "stream-stream-left-join", "fk-join",
        "windowed-suppress", "global-table", "versioned-table", "repartition-fixed", "aggregate-unnamed",
        "stream-stream-outer-join", "table-table-join", "session-count", "readme");

    private static final Map<String, KafkaStreams> STREAMS = new LinkedHashMap<>();
    /** The state directory this process made for itself (no --state-dir), removed at close. */
    private static Path ownStateDir;
    private static final Map<String, String> LAST_TASKS = new TreeMap<>();
    private static volatile boolean closed;

    private DslPeer() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> flags = parseFlags(args);
        String bootstrap = flags.getOrDefault("bootstrap", "127.0.0.1:1");
        String topics = require(flags, "topics");
        boolean print = Boolean.parseBoolean(flags.getOrDefault("print", "false"));
        String optimization = flags.getOrDefault("optimization", StreamsConfig.NO_OPTIMIZATION);
        String guarantee = flags.getOrDefault("processing-guarantee", StreamsConfig.AT_LEAST_ONCE);
        String cacheBytes = flags.getOrDefault("cache-max-bytes", "0");
        String storeFormat = flags.getOrDefault("dsl-store-format", "DEFAULT");
        String stateDir = flags.get("state-dir");
        if (stateDir == null || stateDir.isEmpty()) {
            ownStateDir = Files.createTempDirectory("dslpeer-state-");
            stateDir = ownStateDir.toString();
        }

        Map<String, String> apps = new LinkedHashMap<>(); // application.id -> construct
        String appsFlag = require(flags, "apps");
        if (appsFlag.startsWith("all@")) {
            String prefix = appsFlag.substring(4);
            for (String c : CONSTRUCTS) {
                apps.put(prefix + "-" + c, c);
            }
        } else if (appsFlag.startsWith("programs@")) {
            String prefix = appsFlag.substring("programs@".length());
            for (String c : DslPrograms.NAMES) {
                apps.put(prefix + "-" + c, c);
            }
        } else {
            for (String spec : appsFlag.split(",")) {
                int at = spec.indexOf('@');
                if (at <= 0) {
                    throw new IllegalArgumentException("--apps entries are construct@application.id, got " + spec);
                }
                apps.put(spec.substring(at + 1), spec.substring(0, at));
            }
        }

        for (Map.Entry<String, String> e : apps.entrySet()) {
            String app = e.getKey();
            Properties props = props(app, bootstrap, stateDir);
            props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, optimization);
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
            // Windowed aggregations that emit final results look for closed windows at every record
            // (as TopologyTestDriver has them), not once a second of wall-clock time: a test's last
            // record of a phase then emits what it closed.
            props.put("__emit.interval.ms.kstreams.windowed.aggregation__", flags.getOrDefault("windowed-emit-interval-ms", "0"));
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, Long.parseLong(cacheBytes));
            props.put("dsl.store.format", storeFormat);
            Topology topology = build(e.getValue(), topics + "-" + e.getValue(), props);
            if (print) {
                emit("DESCRIBE " + app + " " + Json.string(topology.describe().toString()));
            }
            KafkaStreams ks = new KafkaStreams(topology, props);
            ks.setStateListener((newState, oldState) -> emit("STATE " + app + " " + newState));
            ks.setUncaughtExceptionHandler(ex -> {
                emit("ERROR " + app + " " + oneLine(ex));
                return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            STREAMS.put(app, ks);
        }
        if (print) {
            for (KafkaStreams ks : STREAMS.values()) {
                ks.close(Duration.ZERO);
            }
            removeOwnStateDir();
            emit("CLOSED");
            System.exit(0);
        }

        Runtime.getRuntime().addShutdownHook(new Thread(DslPeer::close, "dslpeer-shutdown"));
        ScheduledExecutorService poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "dslpeer-task-poller");
            t.setDaemon(true);
            return t;
        });
        poller.scheduleWithFixedDelay(DslPeer::pollTasks, 0, 200, TimeUnit.MILLISECONDS);
        for (KafkaStreams ks : STREAMS.values()) {
            ks.start();
        }
        drain(System.in);
        close();
        poller.shutdownNow();
        System.exit(0);
    }

    private static Properties props(String app, String bootstrap, String stateDir) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put("__internal.consumer.wrapper__", TopologyCapture.class);
        return props;
    }

    /**
     * Builds the DSL topology of one construct. Every name a user can give is given, as a user who
     * wants stable internal topic names does ({@code aggregate-unnamed} is the exception that shows
     * the generated names). Topics: {@code t} is the construct's topic prefix.
     */
    static Topology build(String construct, String t, Properties props) {
        StreamsBuilder b = new StreamsBuilder();
        switch (construct) {
            case "aggregate": {
                // words → groupBy(value) → count: a repartition topic and a key-value store.
                b.<String, String>stream(t + "-words")
                    .groupBy((k, v) -> v, Grouped.as("by-word"))
                    .count(Materialized.as("counts"))
                    .toStream().to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            case "aggregate-unnamed": {
                b.<String, String>stream(t + "-words")
                    .groupBy((k, v) -> v)
                    .count()
                    .toStream().to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            case "stream-table-join": {
                // orders ⋈ customers (a KTable): copartitioned inputs, the table's own changelog.
                KTable<String, String> customers = b.table(t + "-customers", Materialized.as("customers"));
                b.<String, String>stream(t + "-orders")
                    .join(customers, (order, customer) -> order + "/" + customer)
                    .to(t + "-out");
                break;
            }
            case "stream-stream-join": {
                KStream<String, String> left = b.stream(t + "-left");
                KStream<String, String> right = b.stream(t + "-right");
                left.join(right, (l, r) -> l + "/" + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(5)),
                        StreamJoined.as("pairs"))
                    .to(t + "-out");
                break;
            }
            case "stream-stream-left-join": {
                KStream<String, String> left = b.stream(t + "-left");
                KStream<String, String> right = b.stream(t + "-right");
                left.leftJoin(right, (l, r) -> l + "/" + r,
                        JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(30)),
                        StreamJoined.as("lpairs"))
                    .to(t + "-out");
                break;
            }
            case "fk-join": {
                // orders (key order id, value customer id) ⋈ customers by foreign key.
                KTable<String, String> orders = b.table(t + "-orders", Materialized.as("orders"));
                KTable<String, String> customers = b.table(t + "-customers", Materialized.as("customers"));
                orders.join(customers, (String order) -> order, (order, customer) -> order + "/" + customer,
                        TableJoined.as("fk"), Materialized.as("enriched"))
                    .toStream().to(t + "-out");
                break;
            }
            case "windowed-suppress": {
                b.<String, String>stream(t + "-clicks")
                    .groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
                    .count(Materialized.as("per-minute"))
                    .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("final"))
                    .toStream()
                    .map((w, n) -> KeyValue.pair(w.key() + "@" + w.window().start(), n))
                    .to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            case "global-table": {
                // The global table comes first, so its node group takes number 0.
                GlobalKTable<String, String> countries = b.globalTable(t + "-countries", Materialized.as("countries"));
                b.<String, String>stream(t + "-visits")
                    .join(countries, (k, v) -> v, (visit, country) -> visit + "/" + country)
                    .to(t + "-out");
                break;
            }
            case "versioned-table": {
                KTable<String, String> prices = b.table(t + "-prices",
                    Materialized.as(Stores.persistentVersionedKeyValueStore("prices", Duration.ofHours(1))));
                b.<String, String>stream(t + "-events")
                    .join(prices, (e, p) -> e + "/" + p)
                    .to(t + "-out");
                break;
            }
            case "repartition-fixed": {
                // An explicit repartition with a fixed partition count, then an aggregation.
                b.<String, String>stream(t + "-events", Consumed.as("events"))
                    .selectKey((k, v) -> v)
                    .repartition(Repartitioned.<String, String>as("rekeyed").withNumberOfPartitions(3))
                    .groupByKey()
                    .count(Materialized.as("per-key"))
                    .toStream().to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            case "stream-stream-outer-join": {
                KStream<String, String> left = b.stream(t + "-left");
                KStream<String, String> right = b.stream(t + "-right");
                left.outerJoin(right, (l, r) -> l + "/" + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)),
                        StreamJoined.as("opairs"))
                    .to(t + "-out");
                break;
            }
            case "table-table-join": {
                KTable<String, String> left = b.table(t + "-left", Materialized.as("left"));
                KTable<String, String> right = b.table(t + "-right", Materialized.as("right"));
                left.join(right, (l, r) -> l + "/" + r, Materialized.as("joined")).toStream().to(t + "-out");
                break;
            }
            case "session-count": {
                b.<String, String>stream(t + "-clicks")
                    .groupByKey()
                    .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(5), Duration.ofMinutes(1)))
                    .count(Materialized.as("sessions"))
                    .toStream()
                    .map((w, n) -> KeyValue.pair(w.key() + "@" + w.window().start(), n))
                    .to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            case "readme": {
                // The worked example of the README ("Matching a Kafka Streams topology").
                GlobalKTable<String, String> countries = b.globalTable(t + "-countries", Materialized.as("countries"));
                KTable<String, String> customers = b.table(t + "-customers", Materialized.as("customers"));
                b.<String, String>stream(t + "-orders")
                    .join(customers, (order, customer) -> customer)
                    .join(countries, (k, customer) -> customer, (customer, country) -> country)
                    .groupBy((k, country) -> country, Grouped.as("by-country"))
                    .count(Materialized.as("per-country"))
                    .toStream().to(t + "-counts", Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            default:
                if (DslPrograms.NAMES.contains(construct)) {
                    return DslPrograms.build(construct, t, props);
                }
                throw new IllegalArgumentException("unknown construct " + construct + " (" + CONSTRUCTS + ")");
        }
        return b.build(props);
    }

    /**
     * The consumer-wrapper hook Kafka Streams offers (internal config {@code __internal.consumer.wrapper__}):
     * it receives the StreamsRebalanceData whose subtopologies the heartbeat sends, prints them once,
     * and delegates everything else to the real consumer.
     */
    public static final class TopologyCapture extends ConsumerWrapper {
        @Override
        public void wrapConsumer(AsyncKafkaConsumer<byte[], byte[]> delegate, Map<String, Object> config,
                                 java.util.Optional<StreamsRebalanceData> data) {
            super.wrapConsumer(delegate, config, data);
            String app = String.valueOf(config.get("group.id"));
            data.ifPresent(d -> emit("TOPOLOGY " + app + " " + topologyJson(d.subtopologies())));
        }
    }

    /** The subtopologies in the Go package topology's JSON form (see the class comment). */
    static String topologyJson(Map<String, StreamsRebalanceData.Subtopology> subs) {
        StringBuilder sb = new StringBuilder("{\"subtopologies\":[");
        boolean first = true;
        for (Map.Entry<String, StreamsRebalanceData.Subtopology> e : new TreeMap<>(subs).entrySet()) {
            StreamsRebalanceData.Subtopology s = e.getValue();
            sb.append(first ? "" : ",").append("{\"id\":").append(Json.string(e.getKey()));
            first = false;
            sb.append(",\"sourceTopics\":").append(Json.strings(new TreeSet<>(s.sourceTopics())));
            sb.append(",\"repartitionSinkTopics\":").append(Json.strings(new TreeSet<>(s.repartitionSinkTopics())));
            sb.append(",\"repartitionSourceTopics\":").append(topicsJson(s.repartitionSourceTopics()));
            sb.append(",\"stateChangelogTopics\":").append(topicsJson(s.stateChangelogTopics()));
            sb.append(",\"copartitionGroups\":[");
            boolean firstGroup = true;
            for (Set<String> g : s.copartitionGroups()) {
                sb.append(firstGroup ? "" : ",").append(Json.strings(g));
                firstGroup = false;
            }
            sb.append("]}");
        }
        return sb.append("]}").toString();
    }

    private static String topicsJson(Map<String, StreamsRebalanceData.TopicInfo> topics) {
        StringBuilder sb = new StringBuilder("[");
        boolean first = true;
        for (Map.Entry<String, StreamsRebalanceData.TopicInfo> e : new TreeMap<>(topics).entrySet()) {
            StreamsRebalanceData.TopicInfo ti = e.getValue();
            sb.append(first ? "" : ",").append("{\"name\":").append(Json.string(e.getKey()));
            first = false;
            sb.append(",\"partitions\":").append(ti.numPartitions().orElse(0));
            sb.append(",\"replicationFactor\":").append(ti.replicationFactor().orElse((short) -1));
            sb.append(",\"configs\":{");
            boolean firstConfig = true;
            for (Map.Entry<String, String> c : new TreeMap<>(ti.topicConfigs()).entrySet()) {
                sb.append(firstConfig ? "" : ",").append(Json.string(c.getKey())).append(':').append(Json.string(c.getValue()));
                firstConfig = false;
            }
            sb.append("}}");
        }
        return sb.append(']').toString();
    }

    /** Minimal JSON string encoding. */
    static final class Json {
        private Json() {
        }

        static String string(String s) {
            StringBuilder sb = new StringBuilder("\"");
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                }
            }
            return sb.append('"').toString();
        }

        static String strings(Collection<String> list) {
            List<String> out = new ArrayList<>();
            for (String s : list) {
                out.add(string(s));
            }
            return "[" + String.join(",", out) + "]";
        }
    }

    /** Prints a TASKS line per application whenever its active or standby task sets change. */
    private static synchronized void pollTasks() {
        for (Map.Entry<String, KafkaStreams> e : STREAMS.entrySet()) {
            TreeSet<String> active = new TreeSet<>();
            TreeSet<String> standby = new TreeSet<>();
            if (!closed) {
                try {
                    for (ThreadMetadata tm : e.getValue().metadataForLocalThreads()) {
                        for (TaskMetadata task : tm.activeTasks()) {
                            active.add(task.taskId().toString());
                        }
                        for (TaskMetadata task : tm.standbyTasks()) {
                            standby.add(task.taskId().toString());
                        }
                    }
                } catch (IllegalStateException notRunning) {
                    active.clear();
                    standby.clear();
                } catch (RuntimeException transientError) {
                    continue;
                }
            }
            String line = "TASKS " + e.getKey() + " active=" + String.join(",", active) + " standby=" + String.join(",", standby);
            if (!line.equals(LAST_TASKS.get(e.getKey()))) {
                LAST_TASKS.put(e.getKey(), line);
                emit(line);
            }
        }
    }

    /** Closes every application once, leaving its group, all at the same time. */
    private static void close() {
        synchronized (DslPeer.class) {
            if (closed) {
                return;
            }
            closed = true;
        }
        List<Thread> closers = new ArrayList<>();
        for (KafkaStreams ks : STREAMS.values()) {
            Thread t = new Thread(() -> ks.close(CloseOptions.groupMembershipOperation(
                CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(CLOSE_TIMEOUT)));
            t.start();
            closers.add(t);
        }
        for (Thread t : closers) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        pollTasks();
        removeOwnStateDir();
        emit("CLOSED");
    }

    /** Removes the state directory this process made for itself, if it made one. */
    private static void removeOwnStateDir() {
        if (ownStateDir == null) {
            return;
        }
        try {
            DslDrive.removeTree(ownStateDir);
        } catch (java.io.IOException e) {
            System.err.println("removing " + ownStateDir + ": " + e);
        }
    }

    private static void drain(InputStream in) {
        byte[] buf = new byte[256];
        try {
            while (in.read(buf) >= 0) {
                // Input is ignored; only EOF matters.
            }
        } catch (IOException e) {
            // A broken stdin counts as EOF.
        }
    }

    static void emit(String line) {
        synchronized (OUT) {
            OUT.println(line);
            OUT.flush();
        }
    }

    private static String oneLine(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (sb.length() > 0) {
                sb.append(" | caused by: ");
            }
            sb.append(t.getClass().getName());
            if (t.getMessage() != null) {
                sb.append(": ").append(t.getMessage());
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return sb.toString().replace('\n', ' ').replace('\r', ' ');
    }

    private static Map<String, String> parseFlags(String[] args) {
        Map<String, String> flags = new LinkedHashMap<>();
        for (String a : args) {
            if (!a.startsWith("--") || !a.contains("=")) {
                throw new IllegalArgumentException("expected --name=value, got " + a);
            }
            int eq = a.indexOf('=');
            flags.put(a.substring(2, eq), a.substring(eq + 1));
        }
        return flags;
    }

    private static String require(Map<String, String> flags, String name) {
        String v = flags.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return v;
    }
}
