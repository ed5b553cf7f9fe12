package io.github.streamsgroup.peer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs each program of {@link DslPrograms} in Kafka Streams' TopologyTestDriver over the input
 * records of a file and prints every record it writes to its output topics: what the Go DSL's
 * programs must write for the same input (dsl/outputs_test.go compares).
 *
 * <p>Usage: {@code DslDrive <inputs file>}. The file has sections {@code [default]} and
 * {@code [<program> ...]} (a program uses the section that names it, if one does); each record line is
 * {@code <topic suffix> <key> <value> <timestamp ms>}, tab-separated, {@code \N} for null. A
 * program reads {@code t-<program>-<suffix>}. Output lines, in the order each topic was written:
 * {@code <program> <topic> <key> <value> <timestamp ms>}, tab-separated, where a key or value is
 * {@code \N} (null), {@code s:<text>} (printable ASCII) or {@code x:<hex>}. The record cache is off
 * ({@code statestore.cache.max.bytes=0}), so every update is written.
 */
public final class DslDrive {
    private DslDrive() {
    }

    /** One input record. */
    private record In(String suffix, byte[] key, byte[] value, long ts, org.apache.kafka.common.header.Headers headers) {
    }

    public static void main(String[] args) throws IOException {
        Map<String, List<In>> sections = read(Path.of(args[0]));
        // With a second argument, the records each program writes to its stores' changelogs go to
        // that file (with their headers), so that the Go DSL's changelogs are compared with them.
        java.io.PrintStream changelogs = args.length > 1
            ? new java.io.PrintStream(Files.newOutputStream(Path.of(args[1])), true, StandardCharsets.UTF_8) : null;
        for (String program : DslPrograms.NAMES) {
            List<In> inputs = sections.getOrDefault(program, sections.get("default"));
            String app = "app-" + program;
            String t = "t-" + program;
            Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
            props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
            props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            Path stateDir = Files.createTempDirectory("dsldrive");
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            Topology topo = DslPrograms.build(program, t, props);
            try (TopologyTestDriver d = new TopologyTestDriver(topo, props)) {
                Map<String, TestInputTopic<byte[], byte[]>> ins = new LinkedHashMap<>();
                java.util.Set<String> read = new java.util.HashSet<>();
                for (org.apache.kafka.streams.TopologyDescription.Subtopology s : topo.describe().subtopologies()) {
                    for (org.apache.kafka.streams.TopologyDescription.Node n : s.nodes()) {
                        if (n instanceof org.apache.kafka.streams.TopologyDescription.Source src) {
                            read.addAll(src.topicSet());
                        }
                    }
                }
                for (org.apache.kafka.streams.TopologyDescription.GlobalStore g : topo.describe().globalStores()) {
                    read.addAll(g.source().topicSet()); // a global table's topic
                }
                for (In in : inputs) {
                    if (!read.contains(t + "-" + in.suffix)) {
                        continue; // a topic the program does not read
                    }
                    TestInputTopic<byte[], byte[]> topic = ins.computeIfAbsent(in.suffix,
                        s -> d.createInputTopic(t + "-" + s, new ByteArraySerializer(), new ByteArraySerializer()));
                    topic.pipeInput(new TestRecord<>(in.key, in.value, in.headers, Instant.ofEpochMilli(in.ts)));
                }
                for (String topic : new TreeSet<>(d.producedTopicNames())) {
                    if (changelogs != null && topic.startsWith(app + "-") && topic.endsWith("-changelog")) {
                        TestOutputTopic<byte[], byte[]> out = d.createOutputTopic(topic, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                        for (TestRecord<byte[], byte[]> r : out.readRecordsToList()) {
                            StringBuilder hs = new StringBuilder();
                            for (org.apache.kafka.common.header.Header h : r.headers()) {
                                hs.append(hs.length() == 0 ? "" : "|").append(h.key()).append('=').append(show(h.value()));
                            }
                            changelogs.println(program + "\t" + topic + "\t" + show(r.key()) + "\t" + show(r.value()) + "\t" + r.timestamp() + "\t" + hs);
                        }
                        continue;
                    }
                    if (topic.startsWith(app + "-")) {
                        continue; // repartition and changelog topics
                    }
                    TestOutputTopic<byte[], byte[]> out = d.createOutputTopic(topic, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                    for (TestRecord<byte[], byte[]> r : out.readRecordsToList()) {
                        // The headers follow when the record has any (key=value, | between them).
                        StringBuilder hs = new StringBuilder();
                        for (org.apache.kafka.common.header.Header h : r.headers()) {
                            hs.append(hs.length() == 0 ? "\t" : "|").append(h.key()).append('=').append(show(h.value()));
                        }
                        System.out.println(program + "\t" + topic + "\t" + show(r.key()) + "\t" + show(r.value()) + "\t" + r.timestamp() + hs);
                    }
                }
            } finally {
                removeTree(stateDir); // one directory per program and run: nothing is left behind
            }
        }
    }

    /** Deletes dir and everything under it, deepest first. */
    static void removeTree(Path dir) throws IOException {
        try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private static Map<String, List<In>> read(Path p) throws IOException {
        Map<String, List<In>> sections = new LinkedHashMap<>();
        List<In> cur = null;
        for (String line : Files.readAllLines(p, StandardCharsets.UTF_8)) {
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            if (line.startsWith("[")) {
                cur = new ArrayList<>();
                for (String name : line.substring(1, line.length() - 1).split(" ")) {
                    sections.put(name, cur);
                }
                continue;
            }
            String[] f = line.split("\t", -1);
            if (f.length != 4 && f.length != 5 || cur == null) {
                throw new IllegalArgumentException("bad input line: " + line);
            }
            org.apache.kafka.common.header.Headers headers = new org.apache.kafka.common.header.internals.RecordHeaders();
            if (f.length == 5) { // headers: key=value, | between them
                for (String h : f[4].split("\\|")) {
                    int eq = h.indexOf('=');
                    headers.add(h.substring(0, eq), h.substring(eq + 1).getBytes(StandardCharsets.UTF_8));
                }
            }
            cur.add(new In(f[0], bytes(f[1]), bytes(f[2]), Long.parseLong(f[3]), headers));
        }
        return sections;
    }

    private static byte[] bytes(String s) {
        return s.equals("\\N") ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private static String show(byte[] b) {
        if (b == null) {
            return "\\N";
        }
        for (byte c : b) {
            if (c < 0x20 || c > 0x7e) {
                return "x:" + HexFormat.of().formatHex(b);
            }
        }
        return "s:" + new String(b, StandardCharsets.US_ASCII);
    }
}
