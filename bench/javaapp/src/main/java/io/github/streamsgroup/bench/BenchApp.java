package io.github.streamsgroup.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;

/**
 * The Kafka Streams side of bench-compare: one stateless subtopology "0" (a source topic and a
 * processor), which is what the Go side (bench/cmd/gomember) declares, run with N stream threads, each
 * a member of the streams group.
 *
 * <p>Flags ({@code --name=value}): {@code --bootstrap}, {@code --app} (application.id = group),
 * {@code --input}, optional {@code --threads} (default 1) and {@code --state-dir}.
 *
 * <p>Stdout carries only these lines, each flushed; times are microseconds since the Unix epoch:
 * <pre>
 *   MAIN &lt;t&gt;        first thing in main()
 *   TASKS &lt;t&gt;       the first processor of the process was initialised: tasks handed to the application
 *   ADD &lt;t&gt; &lt;k&gt;     stdin said "ADD k": k stream threads are being added (addStreamThread)
 *   STATE &lt;s&gt;       a KafkaStreams state change
 *   CLOSED &lt;t&gt;      after KafkaStreams.close returned
 * </pre>
 * The process closes Kafka Streams (leaving the group) and exits on SIGTERM or when stdin ends.
 */
public final class BenchApp {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final AtomicBoolean FIRST_TASK = new AtomicBoolean();
    private static final AtomicBoolean CLOSED = new AtomicBoolean();
    private static KafkaStreams streams;

    private BenchApp() {
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

    public static void main(String[] args) throws Exception {
        long mainAt = micros();
        emit("MAIN " + mainAt);
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
            stateDir = Files.createTempDirectory("benchapp-state-").toString();
        }

        Topology topology = new Topology()
            .addSource("source", Serdes.String().deserializer(), Serdes.String().deserializer(), flags.get("input"))
            .addProcessor("touch", Touch::new, "source");

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, flags.get("app"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, flags.get("bootstrap"));
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(flags.getOrDefault("threads", "1")));

        streams = new KafkaStreams(topology, props);
        streams.setStateListener((newState, oldState) -> emit("STATE " + newState));
        Runtime.getRuntime().addShutdownHook(new Thread(BenchApp::close, "bench-shutdown"));
        streams.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] words = line.trim().split("\\s+");
            if (words.length == 2 && words[0].equals("ADD")) {
                int k = Integer.parseInt(words[1]);
                emit("ADD " + micros() + " " + k);
                for (int i = 0; i < k; i++) {
                    streams.addStreamThread();
                }
            }
        }
        close();
        System.exit(0);
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

    /** Does nothing with records; its init marks the moment a task is handed to the application. */
    private static final class Touch implements Processor<String, String, Void, Void> {
        @Override
        public void init(ProcessorContext<Void, Void> context) {
            if (FIRST_TASK.compareAndSet(false, true)) {
                emit("TASKS " + micros());
            }
        }

        @Override
        public void process(Record<String, String> record) {
        }
    }
}
