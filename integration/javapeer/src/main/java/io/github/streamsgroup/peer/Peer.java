package io.github.streamsgroup.peer;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * A Kafka Streams application (group.protocol=streams) that the Go integration tests run next to Go
 * members of the same streams group.
 *
 * <p>Flags (all {@code --name=value}): {@code --bootstrap}, {@code --app} (application.id = group),
 * {@code --input}, {@code --output}, {@code --store}, optional {@code --mode} ({@code default} or
 * {@code extra-source}), {@code --state-dir} and {@code --guarantee} (processing.guarantee:
 * {@code at_least_once}, the default, or {@code exactly_once_v2}).
 *
 * <p>The topology is built with the Processor API and explicit names, so that what Kafka Streams
 * sends to the broker is fully determined by the flags: one subtopology "0" whose source topic is
 * the input topic and whose only state changelog is {@code <app>-<store>-changelog}. Mode
 * {@code extra-source} also reads {@code <input>-extra}, a deliberately different topology.
 *
 * <p>Stdout carries only machine-readable lines, each flushed:
 * <pre>
 *   STATE &lt;new state&gt;                        on every KafkaStreams state change
 *   TASKS active=0_0,0_1 standby=0_2           whenever the local task sets change
 *   ERROR &lt;one-line message&gt;                 from the uncaught exception handler
 *   CLOSED                                     after KafkaStreams.close returned
 * </pre>
 * Logging goes to stderr. The process closes Kafka Streams (leaving the group) and exits when stdin
 * reaches EOF or on SIGTERM.
 */
public final class Peer {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private static KafkaStreams streams;
    private static final TaskReporter REPORTER = new TaskReporter();
    // Set once, under the Peer.class lock, when closing starts; volatile so the task poller reads it
    // without waiting for a close in progress.
    private static volatile boolean closed;

    private Peer() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> flags = parseFlags(args);
        String bootstrap = require(flags, "bootstrap");
        String app = require(flags, "app");
        String input = require(flags, "input");
        String output = require(flags, "output");
        String store = require(flags, "store");
        String mode = flags.getOrDefault("mode", "default");
        String stateDir = flags.get("state-dir");
        if (stateDir == null || stateDir.isEmpty()) {
            stateDir = Files.createTempDirectory("javapeer-state-").toString();
        }

        List<String> sources = new ArrayList<>();
        sources.add(input);
        switch (mode) {
            case "default":
                break;
            case "extra-source":
                sources.add(input + "-extra");
                break;
            default:
                throw new IllegalArgumentException("unknown --mode " + mode + " (default, extra-source)");
        }

        Topology topology = new Topology()
            .addSource("source", Serdes.String().deserializer(), Serdes.String().deserializer(),
                sources.toArray(new String[0]))
            .addProcessor("counter", Counter.supplier(store), "source")
            .addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(store),
                Serdes.String(), Serdes.Long()), "counter")
            .addSink("sink", output, Serdes.String().serializer(), Serdes.Long().serializer(), "counter");

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // at_least_once (the default) or exactly_once_v2 (the Go exactly-once tests).
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, flags.getOrDefault("guarantee", StreamsConfig.AT_LEAST_ONCE));

        streams = new KafkaStreams(topology, props);
        streams.setStateListener((newState, oldState) -> emit("STATE " + newState));
        streams.setUncaughtExceptionHandler(e -> {
            emit("ERROR " + oneLine(e));
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        Runtime.getRuntime().addShutdownHook(new Thread(Peer::close, "peer-shutdown"));

        ScheduledExecutorService poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "peer-task-poller");
            t.setDaemon(true);
            return t;
        });
        poller.scheduleWithFixedDelay(REPORTER::poll, 0, 100, TimeUnit.MILLISECONDS);

        streams.start();

        // The test harness keeps stdin open as a life line: EOF (the pipe closed, or the parent gone)
        // means "shut down now".
        drain(System.in);
        close();
        poller.shutdownNow();
        System.exit(0);
    }

    /** Closes Kafka Streams once, leaving the group so the broker reassigns the tasks at once. */
    private static synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(CLOSE_TIMEOUT));
        REPORTER.poll(); // the empty task sets are reported before CLOSED, however fast close was
        emit("CLOSED");
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

    /** Writes one protocol line; synchronized so lines from different threads never interleave. */
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
        Map<String, String> flags = new HashMap<>();
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

    /**
     * Polls the local thread metadata and prints a TASKS line whenever the active or standby task
     * sets change. Outside RUNNING and REBALANCING Kafka Streams refuses to give metadata; then the
     * process owns no tasks, which is reported as empty sets. Once closing starts the sets are
     * reported empty too, so the last TASKS line never claims tasks of a closed client.
     */
    private static final class TaskReporter {
        private String last;

        synchronized void poll() {
            TreeSet<String> active = new TreeSet<>();
            TreeSet<String> standby = new TreeSet<>();
            if (!closed) {
                try {
                    for (ThreadMetadata tm : streams.metadataForLocalThreads()) {
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
                } catch (RuntimeException e) {
                    return; // transient; try again at the next tick
                }
            }
            String line = "TASKS active=" + String.join(",", active) + " standby=" + String.join(",", standby);
            if (!line.equals(last)) {
                last = line;
                emit(line);
            }
        }
    }

    /** Counts records per key in the store and forwards the new count. */
    private static final class Counter implements Processor<String, String, String, Long> {
        private final String storeName;
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> store;

        private Counter(String storeName) {
            this.storeName = storeName;
        }

        static ProcessorSupplier<String, String, String, Long> supplier(String storeName) {
            return () -> new Counter(storeName);
        }

        @Override
        public void init(ProcessorContext<String, Long> context) {
            this.context = context;
            this.store = context.getStateStore(storeName);
        }

        @Override
        public void process(Record<String, String> record) {
            if (record.key() == null) {
                return; // nothing to count by
            }
            Long prev = store.get(record.key());
            long next = prev == null ? 1 : prev + 1;
            store.put(record.key(), next);
            context.forward(record.withValue(next));
        }
    }
}
