package io.github.streamsgroup.peer;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The DSL programs the Go DSL (package dsl) is compared with: each is written here in Java and in
 * dsl/programs_test.go in Go, operation for operation. Topics: {@code t} is the program's prefix; it
 * reads {@code <t>-in} (and {@code <t>-in2}) and writes {@code <t>-out}. Keys and values are strings
 * unless an operation makes them longs.
 */
final class DslPrograms {
    /** The programs, in the order {@code --apps=programs@<prefix>} lists them. */
    static final List<String> NAMES = List.of(
        "p-stateless", "p-stateless-named", "p-wordcount", "p-count-unnamed", "p-count-materialized-unnamed",
        "p-reduce", "p-aggregate", "p-merge", "p-repartition", "p-repartition-named", "p-flatmap",
        "p-two-sources", "p-groupbykey-source", "p-split", "p-split-named", "p-to-extractor", "p-totable",
        "p-table-ops", "p-table-ops-materialized", "p-process", "p-table-groupby-count", "p-table-groupby-reduce",
        "p-table-groupby-aggregate", "p-cogroup", "p-cogroup-three", "p-named-source", "p-table-source",
        "p-table-source-unnamed", "p-cogroup-one", "p-grouped-twice", "p-cogroup-after-aggregate",
        "p-table-filter-unnamed-materialized", "p-cogroup-after-totable", "p-count-filter", "p-table-filter-groupby",
        "p-table-unnamed-filter-groupby", "p-count-regroup", "p-mapvalues-null", "p-grouped-table-twice",
        "p-process-forward", "p-processvalues", "p-named-aggregations", "p-window-tumbling-count",
        "p-window-hopping-grace", "p-window-reduce-aggregate", "p-join-stream-table", "p-join-rekeyed",
        "p-join-prices", "p-join-tables", "p-join-tables-chained", "p-suppress-window-close",
        "p-suppress-time-limit", "p-join-copartition-edges", "p-join-keyless-regroup",
        "p-session-count", "p-session-reduce-aggregate", "p-session-counts-only", "p-session-cache", "p-sliding-cache",
        "p-sliding", "p-join-streams", "p-join-streams-named", "p-join-streams-sum",
        "p-suppress-getter", "p-suppress-leftjoin-ts", "p-suppress-bytes", "p-session-suppress-regroup", "p-self-join",
        "p-suppress-dedup", "p-join-streams-left-outer", "p-join-global", "p-join-global-named",
        "p-join-global-prices", "p-window-emit-final", "p-window-emit-final-hopping",
        "p-window-emit-final-retained", "p-sliding-emit-final", "p-fk-join", "p-fk-join-named",
        "p-fk-join-prices", "p-join-versioned", "p-join-versioned-prices", "p-versioned-ops", "p-headers-format", "p-zero-forms", "p-suppress-headers",
        "p-suppress-zero", "p-fk-join-partitioned", "p-session-emit-final", "p-global-store-prices");

    private DslPrograms() {
    }

    /** The customer of an order "customer|item", or null when it names none. */
    private static String customerOf(String order) {
        int i = order.indexOf('|');
        return i < 0 ? null : order.substring(0, i);
    }

    /** The number a key ends with ("o12" is 12; none is 0). */
    private static int trailingNumber(String key) {
        int i = key.length();
        while (i > 0 && Character.isDigit(key.charAt(i - 1))) {
            i--;
        }
        return i == key.length() ? 0 : Integer.parseInt(key.substring(i));
    }

    /** Places a key on the partition its trailing number names, modulo the partitions. */
    @SuppressWarnings("deprecation") // the four-argument partitions is still the one to implement
    private static <V> StreamPartitioner<String, V> byTrailingNumber() {
        return (topic, key, value, n) -> Optional.of(Set.of(trailingNumber(key) % n));
    }

    /** Places a key on the partition after the one its trailing number names, modulo the partitions. */
    @SuppressWarnings("deprecation")
    private static <V> StreamPartitioner<String, V> byNextNumber() {
        return (topic, key, value, n) -> Optional.of(Set.of((trailingNumber(key) + 1) % n));
    }

    /** Places a key whose number is a multiple of 5 on every partition, any other by its number. */
    @SuppressWarnings("deprecation")
    private static <V> StreamPartitioner<String, V> fivesEverywhere() {
        return (topic, key, value, n) -> trailingNumber(key) % 5 == 0
            ? Optional.of(IntStream.range(0, n).boxed().collect(Collectors.toSet()))
            : Optional.of(Set.of(trailingNumber(key) % n));
    }

    static Topology build(String program, String t, Properties props) {
        StreamsBuilder b = new StreamsBuilder();
        Produced<String, Long> longs = Produced.with(Serdes.String(), Serdes.Long());
        switch (program) {
            case "p-stateless": {
                KStream<String, String> in = b.stream(t + "-in");
                in.filter((k, v) -> !v.isEmpty())
                    .filterNot((k, v) -> v.startsWith("#"))
                    .mapValues(v -> v.toUpperCase())
                    .peek((k, v) -> { })
                    .to(t + "-out");
                in.foreach((k, v) -> { });
                break;
            }
            case "p-stateless-named": {
                KStream<String, String> in = b.stream(t + "-in", Consumed.as("lines"));
                in.filter((k, v) -> !v.isEmpty(), Named.as("non-empty"))
                    .filterNot((k, v) -> v.startsWith("#"), Named.as("no-comments"))
                    .mapValues(v -> v.toUpperCase(), Named.as("upper"))
                    .peek((k, v) -> { }, Named.as("look"))
                    .to(t + "-out", Produced.as("written"));
                in.foreach((k, v) -> { }, Named.as("each"));
                break;
            }
            case "p-wordcount": {
                b.<String, String>stream(t + "-in")
                    .flatMapValues(v -> Arrays.asList(v.split(" ")))
                    .groupBy((k, w) -> w, Grouped.as("words"))
                    .count(Materialized.as("counts"))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-count-unnamed": {
                b.<String, String>stream(t + "-in")
                    .groupBy((k, v) -> v)
                    .count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-count-materialized-unnamed": {
                b.<String, String>stream(t + "-in")
                    .selectKey((k, v) -> v)
                    .groupByKey()
                    .count(Materialized.with(Serdes.String(), Serdes.Long()))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-reduce": {
                b.<String, String>stream(t + "-in")
                    .selectKey((k, v) -> v.substring(0, Math.min(1, v.length())))
                    .groupByKey()
                    .reduce((a, v) -> a + "," + v)
                    .toStream().to(t + "-out");
                break;
            }
            case "p-aggregate": {
                b.<String, String>stream(t + "-in")
                    // A null key becomes "": what the Go twin can say (its string key has no null).
                    .map((k, v) -> KeyValue.pair(v, k == null ? "" : k))
                    .groupByKey(Grouped.as("by-value"))
                    .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(),
                        Materialized.<String, Long, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("lengths")
                            .withValueSerde(Serdes.Long()))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-merge": {
                KStream<String, String> a = b.stream(t + "-in");
                KStream<String, String> c = b.stream(t + "-in2");
                a.merge(c).groupByKey().count(Materialized.as("merged")).toStream().to(t + "-out", longs);
                break;
            }
            case "p-repartition": {
                b.<String, String>stream(t + "-in")
                    .selectKey((k, v) -> v)
                    .repartition()
                    .groupByKey()
                    .count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-repartition-named": {
                b.<String, String>stream(t + "-in")
                    .repartition(Repartitioned.<String, String>as("spread").withNumberOfPartitions(2))
                    .mapValues(v -> v + "!")
                    .to(t + "-out");
                break;
            }
            case "p-flatmap": {
                b.<String, String>stream(t + "-in")
                    // A null key becomes "", as in the Go twin.
                    .flatMap((k, v) -> List.of(KeyValue.pair(v, v), KeyValue.pair(k == null ? "" : k, v)))
                    .groupByKey()
                    .count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-two-sources": {
                b.<String, String>stream(t + "-in").mapValues(v -> v + "?").to(t + "-out");
                b.<String, String>stream(t + "-in2")
                    .groupBy((k, v) -> v, Grouped.as("second"))
                    .reduce((a, v) -> v, Materialized.as("latest"))
                    .toStream().to(t + "-out");
                break;
            }
            case "p-groupbykey-source": {
                b.<String, String>stream(t + "-in")
                    .groupByKey()
                    .count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-split": {
                Map<String, KStream<String, String>> branches = b.<String, String>stream(t + "-in")
                    .split()
                    .branch((k, v) -> v.startsWith("a"))
                    .branch((k, v) -> v.startsWith("b"))
                    .defaultBranch();
                branches.get("KSTREAM-BRANCH-00000000011").to(t + "-out");
                branches.get("KSTREAM-BRANCH-00000000012").groupByKey().count().toStream().to(t + "-out2", longs);
                branches.get("KSTREAM-BRANCH-00000000010").to(t + "-rest");
                break;
            }
            case "p-split-named": {
                Map<String, KStream<String, String>> branches = b.<String, String>stream(t + "-in")
                    .split(Named.as("by-"))
                    .branch((k, v) -> v.startsWith("a"), Branched.as("a"))
                    .noDefaultBranch();
                branches.get("by-a").mapValues(v -> v + "!").to(t + "-out");
                break;
            }
            case "p-to-extractor": {
                b.<String, String>stream(t + "-in")
                    .filter((k, v) -> v != null)
                    .to((k, v, ctx) -> t + "-out-" + v.length() % 2);
                break;
            }
            case "p-totable": {
                b.<String, String>stream(t + "-in")
                    .selectKey((k, v) -> v)
                    .toTable()
                    .toStream().to(t + "-out");
                break;
            }
            case "p-table-ops": {
                b.<String, String>stream(t + "-in")
                    .toTable(Materialized.as("latest"))
                    .filter((k, v) -> v.length() > 1)
                    .mapValues(v -> v.toUpperCase())
                    .toStream().to(t + "-out");
                break;
            }
            case "p-table-ops-materialized": {
                b.<String, String>stream(t + "-in")
                    .toTable(Named.as("as-table"), Materialized.as("latest"))
                    .filterNot((k, v) -> v.isEmpty(), Named.as("non-empty"), Materialized.as("kept"))
                    .mapValues(v -> (long) v.length(), Materialized.<String, Long, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("lengths")
                        .withValueSerde(Serdes.Long()))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-process": {
                b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("seen"), Serdes.String(), Serdes.String()));
                b.<String, String>stream(t + "-in")
                    .mapValues(v -> v + "?")
                    .process(() -> new org.apache.kafka.streams.processor.api.Processor<String, String, Void, Void>() {
                        @Override
                        public void process(org.apache.kafka.streams.processor.api.Record<String, String> r) {
                        }
                    }, "seen");
                break;
            }
            case "p-table-groupby-count": {
                // users (key: user, value: region) as a table, counted per region: a move subtracts.
                b.<String, String>stream(t + "-in")
                    .toTable(Materialized.as("users"))
                    .groupBy((user, region) -> KeyValue.pair(region, user), Grouped.as("by-region"))
                    .count(Materialized.as("per-region"))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-table-groupby-reduce": {
                b.<String, String>stream(t + "-in")
                    .toTable()
                    .groupBy((k, v) -> KeyValue.pair(v.substring(0, Math.min(1, v.length())), v))
                    .reduce((agg, v) -> agg + "+" + v, (agg, v) -> agg + "-" + v)
                    .toStream().to(t + "-out");
                break;
            }
            case "p-table-groupby-aggregate": {
                b.<String, String>stream(t + "-in")
                    .groupByKey().reduce((a, v) -> v, Materialized.as("latest"))
                    .groupBy((k, v) -> KeyValue.pair(v, k))
                    .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(), (k, v, agg) -> agg - v.length(),
                        Materialized.<String, Long, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("sums")
                            .withValueSerde(Serdes.Long()))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-cogroup": {
                // Lengths in from "in" minus lengths from "in2", per key, in one store.
                KGroupedStream<String, String> plus = b.<String, String>stream(t + "-in").groupByKey();
                KGroupedStream<String, String> minus = b.<String, String>stream(t + "-in2").groupByKey();
                plus.<Long>cogroup((k, v, agg) -> agg + v.length())
                    .cogroup(minus, (k, v, agg) -> agg - v.length())
                    .aggregate(() -> 0L, Materialized.<String, Long, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("net")
                        .withValueSerde(Serdes.Long()))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-cogroup-three": {
                // Three streams of one key space cogrouped into the last value seen from each, in a
                // store with a generated name. (A cogroup whose input repartitions cannot run in a
                // streams group: Kafka Streams 4.4 fails to build its broker topology, because the
                // copartition group it registers spans two subtopologies.)
                KGroupedStream<String, String> a = b.<String, String>stream(t + "-in").filter((k, v) -> true).groupByKey();
                KGroupedStream<String, String> c = b.<String, String>stream(t + "-in2").groupByKey(Grouped.as("second"));
                KGroupedStream<String, String> d = b.<String, String>stream(t + "-in3", Consumed.as("third")).groupByKey();
                a.<String>cogroup((k, v, agg) -> "a=" + v)
                    .cogroup(c, (k, v, agg) -> "b=" + v)
                    .cogroup(d, (k, v, agg) -> "c=" + v)
                    .aggregate(() -> "")
                    .toStream().to(t + "-out");
                break;
            }
            case "p-named-source": {
                // A named source, then generated names: whether the name takes a number shows in the store's.
                b.<String, String>stream(t + "-in", Consumed.as("src"))
                    .groupByKey()
                    .count()
                    .toStream().to(t + "-out", longs);
                b.<String, String>stream(t + "-in2")
                    .filter((k, v) -> true, Named.as("f"))
                    .mapValues(v -> v, Named.as("mv"))
                    .groupBy((k, v) -> v, Grouped.as("g"))
                    .count(Materialized.as("named-count"))
                    .toStream(Named.as("ts"))
                    .groupByKey()
                    .count()
                    .toStream().to(t + "-out2", longs);
                break;
            }
            case "p-table-source": {
                b.<String, String>table(t + "-in", Consumed.as("users"), Materialized.as("users-store"))
                    .filter((k, v) -> !v.isEmpty())
                    .toStream().to(t + "-out");
                break;
            }
            case "p-table-source-unnamed": {
                b.<String, String>table(t + "-in")
                    .mapValues(v -> v + "!")
                    .toStream().to(t + "-out");
                b.<String, String>table(t + "-in2")
                    .groupBy((k, v) -> KeyValue.pair(v, k))
                    .count()
                    .toStream().to(t + "-out2", longs);
                break;
            }
            case "p-cogroup-one": {
                b.<String, String>stream(t + "-in").groupByKey()
                    .<Long>cogroup((k, v, agg) -> agg + 1)
                    .aggregate(() -> 0L, Materialized.<String, Long, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("one")
                        .withValueSerde(Serdes.Long()))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-grouped-twice": {
                // Two aggregations of one named grouping share its repartition topic; two of an
                // unnamed one get one each (named after their stores).
                KGroupedStream<String, String> named = b.<String, String>stream(t + "-in").groupBy((k, v) -> v, Grouped.as("by-v"));
                named.count(Materialized.as("c1")).toStream().to(t + "-out", longs);
                named.reduce((a, v) -> v, Materialized.as("r1")).toStream().to(t + "-out2");
                KGroupedStream<String, String> unnamed = b.<String, String>stream(t + "-in2").groupBy((k, v) -> v);
                unnamed.count().toStream().to(t + "-out", longs);
                unnamed.count().toStream().to(t + "-out", longs);
                break;
            }
            case "p-cogroup-after-aggregate": {
                b.<String, String>stream(t + "-in").groupBy((k, v) -> v).count()
                    .toStream().groupByKey(Grouped.with(Serdes.String(), Serdes.Long()))
                    .<Long>cogroup((k, v, agg) -> agg + v)
                    .aggregate(() -> 0L, Materialized.<String, Long, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("sum-of-counts")
                        .withValueSerde(Serdes.Long()))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-table-filter-unnamed-materialized": {
                // A Materialized without a name is not kept, but takes a number: the count's
                // generated store shows it.
                b.<String, String>stream(t + "-in")
                    .toTable(Materialized.as("t"))
                    .filter((k, v) -> true, Materialized.with(Serdes.String(), Serdes.String()))
                    .mapValues(v -> v, Materialized.with(Serdes.String(), Serdes.String()))
                    .toStream().groupByKey().count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-cogroup-after-totable": {
                // A table re-keyed through its repartition topic, streamed and cogrouped: the
                // copartition group is the repartition topic the table reads.
                b.<String, String>stream(t + "-in").selectKey((k, v) -> v).toTable()
                    .toStream().groupByKey()
                    .<String>cogroup((k, v, agg) -> agg + v)
                    .aggregate(() -> "")
                    .toStream().to(t + "-out");
                break;
            }
            case "p-count-filter": {
                // A filter on a table that sends old values: an update rejected before and after
                // is dropped, not turned into a deletion.
                b.<String, String>stream(t + "-in")
                    .groupByKey()
                    .count()
                    .filter((k, v) -> v > 1)
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-table-filter-groupby": {
                b.<String, String>table(t + "-in", Materialized.as("src"))
                    .filter((k, v) -> v.length() > 1)
                    .groupBy((k, v) -> KeyValue.pair(v, k))
                    .count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-table-unnamed-filter-groupby": {
                // The regrouping needs old values: Kafka Streams keeps the source table in a store
                // through the filter.
                b.<String, String>table(t + "-in")
                    .filter((k, v) -> v.length() > 1)
                    .mapValues(v -> v + "!")
                    .groupBy((k, v) -> KeyValue.pair(v, k))
                    .count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-count-regroup": {
                // A count's first update of a key carries the initial 0 as its old value.
                b.<String, String>stream(t + "-in")
                    .groupByKey()
                    .count()
                    .groupBy((k, v) -> KeyValue.pair(v.toString(), k))
                    .count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-mapvalues-null": {
                b.<String, String>stream(t + "-in")
                    .mapValues(v -> v.startsWith("a") ? null : v)
                    .to(t + "-out");
                break;
            }
            case "p-grouped-table-twice": {
                // Two aggregations of one named table grouping share its repartition topic.
                org.apache.kafka.streams.kstream.KGroupedTable<String, String> g = b.<String, String>table(t + "-in", Materialized.as("users"))
                    .groupBy((k, v) -> KeyValue.pair(v, k), Grouped.as("by-region"));
                g.count(Materialized.as("n")).toStream().to(t + "-out", longs);
                g.reduce((a, v) -> a + v, (a, v) -> a.replace(v, ""), Materialized.as("members")).toStream().to(t + "-out2");
                break;
            }
            case "p-process-forward": {
                // A processor that forwards one record per word, keyed by the word: the count after it
                // repartitions.
                b.<String, String>stream(t + "-in")
                    .process(() -> new org.apache.kafka.streams.processor.api.Processor<String, String, String, String>() {
                        private org.apache.kafka.streams.processor.api.ProcessorContext<String, String> ctx;

                        @Override
                        public void init(org.apache.kafka.streams.processor.api.ProcessorContext<String, String> c) {
                            ctx = c;
                        }

                        @Override
                        public void process(org.apache.kafka.streams.processor.api.Record<String, String> r) {
                            for (String w : r.value().split(" ")) {
                                ctx.forward(r.withKey(w));
                            }
                        }
                    })
                    .groupByKey().count()
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-processvalues": {
                // A value processor with a store of its own: each value with the key's previous one.
                b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("last"), Serdes.String(), Serdes.String()));
                b.<String, String>stream(t + "-in")
                    .processValues(() -> new org.apache.kafka.streams.processor.api.FixedKeyProcessor<String, String, String>() {
                        private org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, String> ctx;
                        private org.apache.kafka.streams.state.KeyValueStore<String, String> last;

                        @Override
                        public void init(org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, String> c) {
                            ctx = c;
                            last = c.getStateStore("last");
                        }

                        @Override
                        public void process(org.apache.kafka.streams.processor.api.FixedKeyRecord<String, String> r) {
                            if (r.key() == null) {
                                ctx.forward(r.withValue("no key"));
                                return;
                            }
                            String prev = last.get(r.key());
                            last.put(r.key(), r.value());
                            ctx.forward(r.withValue(prev == null ? "first " + r.value() : prev + " > " + r.value()));
                        }
                    }, "last")
                    .to(t + "-out");
                break;
            }
            case "p-named-aggregations": {
                // Named aggregation nodes: a count, a reduce, and a table count (whose repartition's
                // sink and source take the name too).
                b.<String, String>stream(t + "-in").groupBy((k, v) -> v, Grouped.as("by-v"))
                    .count(Named.as("cnt"), Materialized.as("counted"))
                    .toStream().to(t + "-out", longs);
                b.<String, String>stream(t + "-in2").groupByKey()
                    .reduce((a, v) -> a + v, Named.as("red"), Materialized.as("reduced"))
                    .toStream().to(t + "-out2");
                b.<String, String>table(t + "-in3").groupBy((k, v) -> KeyValue.pair(v, k))
                    .count(Named.as("tcnt"))
                    .toStream().to(t + "-out3", longs);
                break;
            }
            case "p-window-tumbling-count": {
                // A tumbling count without grace; the windowed keys written with Kafka's
                // TimeWindowedSerde (the key, then the window start).
                b.<String, String>stream(t + "-in").groupByKey()
                    .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10)))
                    .count()
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                break;
            }
            case "p-window-hopping-grace": {
                // Hopping windows with a grace period after a key change (a repartition first), in a
                // named store.
                b.<String, String>stream(t + "-in").groupBy((k, v) -> v)
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)).advanceBy(Duration.ofSeconds(5)))
                    .count(Materialized.as("hop-counts"))
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                break;
            }
            case "p-window-reduce-aggregate": {
                // A windowed reduce with a longer retention, and a named windowed aggregate.
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupByKey();
                g.windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                    .reduce((a, v) -> a + "+" + v,
                        Materialized.<String, String, WindowStore<Bytes, byte[]>>as("joined").withRetention(Duration.ofMinutes(5)))
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.String()));
                g.windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                    .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), Named.as("lengths"),
                        Materialized.with(Serdes.String(), Serdes.Long()))
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.Long()));
                break;
            }
            case "p-join-stream-table": {
                // An inner and a left join of one stream with a table read from a topic (which the
                // joins have kept in a generated store).
                KStream<String, String> in = b.stream(t + "-in");
                KTable<String, String> users = b.table(t + "-in2");
                in.join(users, (v, u) -> v + "@" + u).to(t + "-out");
                in.leftJoin(users, (v, u) -> v + "@" + (u == null ? "-" : u)).to(t + "-out2");
                break;
            }
            case "p-join-rekeyed": {
                // Joins after key changes (repartitions first): a named join with a filtered and
                // mapped table read through its parent's named store, and a left join of a second
                // stream that keeps records without a key.
                KTable<String, String> users = b.table(t + "-in2", Materialized.as("users"));
                KTable<String, String> shown = users.filter((k, u) -> !u.startsWith("x")).mapValues(u -> u.toUpperCase());
                b.<String, String>stream(t + "-in").selectKey((k, v) -> v)
                    .join(shown, (k, v, u) -> k + ":" + v + "=" + u, Joined.as("enrich"))
                    .to(t + "-out");
                b.<String, String>stream(t + "-in3").map((k, v) -> KeyValue.pair(v, k))
                    .leftJoin(users, (v, u) -> v + "/" + u)
                    .to(t + "-out2");
                break;
            }
            case "p-join-prices": {
                // A left join of quantities with a table of prices: each record's price plus its
                // quantity, -1 without a price (the mixed-group test's program).
                KTable<String, String> prices = b.table(t + "-in2");
                b.<String, String>stream(t + "-in")
                    .leftJoin(prices, (q, p) -> p == null ? -1L : Long.parseLong(p) + Long.parseLong(q))
                    .to(t + "-out", longs);
                break;
            }
            case "p-join-tables": {
                // The three table-table joins of two tables read from topics: inner (regrouped, so
                // its old values are asked for), left (named) and outer (in a named store).
                KTable<String, String> left = b.table(t + "-in");
                KTable<String, String> right = b.table(t + "-in2");
                left.join(right, (a, c) -> a + "+" + c)
                    .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v)).count()
                    .toStream().to(t + "-out", longs);
                left.leftJoin(right, (a, c) -> a + "+" + c, Named.as("lj")).toStream().to(t + "-out2");
                left.outerJoin(right, (a, c) -> a + "+" + c, Materialized.as("outer")).toStream().to(t + "-out3");
                break;
            }
            case "p-join-tables-chained": {
                // A left join with a count, read by a stream-table join through the join (it has no
                // store), and an inner join kept in a store an unnamed Materialized generates, then
                // filtered.
                KTable<String, String> a = b.table(t + "-in");
                KTable<String, Long> counts = b.<String, String>stream(t + "-in3").groupByKey().count();
                KTable<String, String> both = a.leftJoin(counts, (v, n) -> v + "#" + n);
                b.<String, String>stream(t + "-in2").join(both, (s, j) -> s + "->" + j).to(t + "-out");
                a.join(counts, (v, n) -> v.length() + n, Materialized.with(Serdes.String(), Serdes.Long()))
                    .filter((k, n) -> n % 2 == 0)
                    .toStream().to(t + "-out2", longs);
                break;
            }
            case "p-suppress-window-close": {
                // Each window's final count, once, when it closes (its end plus the grace). The
                // buffer keeps the windowed keys with the table's serde, which the count's
                // Materialized gives (Kafka Streams' default serde would not take a Windowed key).
                b.<String, String>stream(t + "-in").groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
                    .count(Materialized.with(Serdes.String(), Serdes.Long()))
                    .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                break;
            }
            case "p-suppress-headers": {
                // Suppression in the headers-aware store format (dsl.store.format=HEADERS), over
                // records with headers: a count held 5 s, at most two keys, and a table's updates
                // and deletions held 3 s, both logged (their buffers' changelogs carry the prior and
                // old values' headers and timestamps); a windowed count's final results.
                props.put("dsl.store.format", "HEADERS");
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupByKey();
                g.count()
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(5), Suppressed.BufferConfig.maxRecords(2)).withName("limited"))
                    .toStream().to(t + "-out", longs);
                b.<String, String>table(t + "-in2", Materialized.as("tbl"))
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(3), Suppressed.BufferConfig.unbounded()))
                    .toStream().to(t + "-out2");
                g.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
                    .count(Materialized.with(Serdes.String(), Serdes.Long()))
                    .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                    .toStream().to(t + "-out3", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                break;
            }
            case "p-suppress-zero": {
                // Buffers of no capacity: a count's updates each emitted at once (maxRecords(0),
                // emit early; the changelog has only tombstones), a table's through maxBytes(0)
                // under a name, and a table that shuts down when full on its first record (in3,
                // given no records).
                b.<String, String>stream(t + "-in").groupByKey().count()
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(5), Suppressed.BufferConfig.maxRecords(0)).withName("none"))
                    .toStream().to(t + "-out", longs);
                b.<String, String>table(t + "-in2")
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(3), Suppressed.BufferConfig.maxBytes(0).emitEarlyWhenFull()))
                    .toStream().to(t + "-out2");
                b.<String, String>table(t + "-in3")
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(3), Suppressed.BufferConfig.maxRecords(0).shutDownWhenFull()))
                    .toStream().to(t + "-out3");
                break;
            }
            case "p-suppress-time-limit": {
                // A count's latest value once 5 s passed since its first held update, at most two
                // keys held (the earliest emitted early); a table's updates, deletions included, 3 s
                // late, held in memory only.
                b.<String, String>stream(t + "-in").groupByKey().count()
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(5), Suppressed.BufferConfig.maxRecords(2)).withName("limited"))
                    .toStream().to(t + "-out", longs);
                b.<String, String>table(t + "-in2")
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(3), Suppressed.BufferConfig.unbounded().withLoggingDisabled()))
                    .toStream().to(t + "-out2");
                break;
            }
            case "p-join-copartition-edges": {
                // A rekeyed stream joined with two tables (the second join reuses the repartition
                // under a source name Kafka Streams never adds, so its copartition group holds the
                // second table's topic alone), and a stream joined with a cogroup's table (whose
                // source node is the cogroup's merge node: the group holds the stream's topic alone).
                KStream<String, String> byV = b.<String, String>stream(t + "-in").selectKey((k, v) -> v);
                byV.join(b.<String, String>table(t + "-in2"), (v, u) -> v + "|" + u).to(t + "-out");
                byV.join(b.<String, String>table(t + "-in3"), (v, u) -> v + "&" + u).to(t + "-out2");
                KTable<String, Long> co = b.<String, String>stream(t + "-in4").groupByKey()
                    .<Long>cogroup((k, v, a) -> a + 1L)
                    .aggregate(() -> 0L, Materialized.with(Serdes.String(), Serdes.Long()));
                b.<String, String>stream(t + "-in5").join(co, (v, n) -> v + n).to(t + "-out3");
                break;
            }
            case "p-join-keyless-regroup": {
                // A left join below a regrouped table below a repartition: both repartitions keep
                // records without a key (Kafka Streams rewrites only the others to drop them).
                KStream<String, String> r = b.<String, String>stream(t + "-in").repartition();
                r.to(t + "-out2");
                r.toTable().groupBy((k, v) -> KeyValue.pair(v, k)).count().toStream()
                    .leftJoin(b.<String, String>table(t + "-in2"), (n, u) -> n + "/" + u)
                    .to(t + "-out");
                break;
            }
            case "p-global-store-prices": {
                // A global store kept by a processor of its own (addGlobalStore): each key's highest
                // price, a null value deleting it, a record without a key kept under "nokey" (the
                // restore never hands the processor such a record; later ones reach it). Quantities
                // look their key's price up in it: price plus quantity, -1 without one.
                b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("prices"), Serdes.String(), Serdes.String()),
                    t + "-in2", Consumed.with(Serdes.String(), Serdes.String()),
                    () -> new org.apache.kafka.streams.processor.api.Processor<String, String, Void, Void>() {
                        private org.apache.kafka.streams.state.KeyValueStore<String, String> prices;

                        @Override
                        public void init(org.apache.kafka.streams.processor.api.ProcessorContext<Void, Void> c) {
                            prices = c.getStateStore("prices");
                        }

                        @Override
                        public void process(org.apache.kafka.streams.processor.api.Record<String, String> r) {
                            String k = r.key() == null ? "nokey" : r.key();
                            if (r.value() == null) {
                                prices.delete(k);
                                return;
                            }
                            String old = prices.get(k);
                            if (old == null || Long.parseLong(old) < Long.parseLong(r.value())) {
                                prices.put(k, r.value());
                            }
                        }
                    });
                b.<String, String>stream(t + "-in")
                    .processValues(() -> new org.apache.kafka.streams.processor.api.FixedKeyProcessor<String, String, Long>() {
                        private org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, Long> ctx;
                        private org.apache.kafka.streams.state.KeyValueStore<String, String> prices;

                        @Override
                        public void init(org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, Long> c) {
                            ctx = c;
                            prices = c.getStateStore("prices");
                        }

                        @Override
                        public void process(org.apache.kafka.streams.processor.api.FixedKeyRecord<String, String> r) {
                            String p = r.key() == null || r.value() == null ? null : prices.get(r.key());
                            ctx.forward(r.withValue(p == null ? -1L : Long.parseLong(p) + Long.parseLong(r.value())));
                        }
                    })
                    .to(t + "-out", longs);
                break;
            }
            case "p-session-emit-final": {
                // Session aggregations that emit final results: a count (5 s gap, 2 s grace) and a
                // named reduce (3 s gap, no grace), each session once when the stream time passes
                // its end plus the gap and the grace, in order of end, then start, then key, with
                // the headers of the record that closed it; merges, late records, a record without
                // a key, and a session whose interval of ends expired before it was emitted.
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupByKey();
                g.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .count()
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                g.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(3), Duration.ZERO))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .reduce((a, v) -> a + "+" + v, Named.as("joined"), Materialized.as("joined-store"))
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
                break;
            }
            case "p-session-count": {
                // Sessions of a 5 s gap with a 2 s grace; merged sessions leave as tombstones.
                b.<String, String>stream(t + "-in").groupByKey()
                    .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
                    .count()
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                break;
            }
            case "p-session-reduce-aggregate": {
                // A session reduce whose merge order shows (concatenation), in a named store with a
                // retention, and a named session aggregate with a merger.
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupByKey();
                g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofSeconds(3)))
                    .reduce((a, v) -> a + "+" + v,
                        Materialized.<String, String, SessionStore<Bytes, byte[]>>as("sessions").withRetention(Duration.ofMinutes(1)))
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
                g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofSeconds(3)))
                    .aggregate(() -> 0L, (k, v, agg) -> agg + (v == null ? 0 : v.length()), (k, a1, a2) -> a1 + a2, Named.as("lens"),
                        Materialized.with(Serdes.String(), Serdes.Long()))
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                break;
            }
            case "p-session-cache": {
                // The record cache on (statestore.cache.max.bytes at Kafka's default, where the
                // driver runs without it): a session count and a session reduce, whose updates the
                // cache's flush hands on with the headers of the record that made them.
                props.put("statestore.cache.max.bytes", 10L * 1024 * 1024);
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupByKey();
                g.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2))).count()
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofSeconds(3)))
                    .reduce((a, v) -> a + "+" + v)
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
                break;
            }
            case "p-session-counts-only": {
                // Session counts without the deletions of merged sessions (the mixed-group test's
                // program: its outputs are all counts).
                b.<String, String>stream(t + "-in").groupByKey()
                    .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
                    .count()
                    .toStream().filter((k, n) -> n != null)
                    .to(t + "-out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                break;
            }
            case "p-sliding-cache":
                // p-sliding with the record cache on (statestore.cache.max.bytes at Kafka's default,
                // where the driver runs without it): the same program, read through the cache.
                props.put("statestore.cache.max.bytes", 10L * 1024 * 1024);
                // fall through
            case "p-sliding": {
                // Sliding windows: a count (5 s apart, 2 s grace) and a reduce (3 s, no grace, named)
                // that shows which records each window holds.
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupByKey();
                g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
                    .count()
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000L), Serdes.Long()));
                g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(3)))
                    .reduce((a, v) -> a + "+" + v, Named.as("slide"), Materialized.as("slid"))
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 3_000L), Serdes.String()));
                break;
            }
            case "p-sliding-emit-final": {
                // The sliding count and reduce of p-sliding, emitting each window once, when it closes.
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupByKey();
                g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .count()
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5_000L), Serdes.Long()));
                g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(3)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .reduce((a, v) -> a + "+" + v, Named.as("slide"), Materialized.as("slid"))
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 3_000L), Serdes.String()));
                break;
            }
            case "p-fk-join": {
                // Orders ("customer|item") joined with customers by the customer, inner and left: a
                // value without '|' has no foreign key.
                KTable<String, String> orders = b.table(t + "-in");
                KTable<String, String> customers = b.table(t + "-in2");
                orders.join(customers, DslPrograms::customerOf, (o, c) -> o + "@" + c).toStream().to(t + "-out");
                orders.leftJoin(customers, DslPrograms::customerOf, (o, c) -> o + "@" + c).toStream().to(t + "-out2");
                break;
            }
            case "p-fk-join-named": {
                // Named joins: with a store, regrouped (its old values asked for), and with the key
                // in the extractor; the foreign table filtered (read through its source's store).
                KTable<String, String> orders = b.table(t + "-in", Materialized.as("orders"));
                KTable<String, String> customers = b.<String, String>table(t + "-in2").filter((k, v) -> !v.startsWith("x"));
                orders.join(customers, DslPrograms::customerOf, (o, c) -> c, TableJoined.as("fkj"), Materialized.as("fkj-out"))
                    .groupBy((k, v) -> KeyValue.pair(v, k)).count()
                    .toStream().to(t + "-out", longs);
                orders.leftJoin(customers, (k, v) -> k.equals("o3") ? null : customerOf(v), (o, c) -> o + "@" + c, TableJoined.as("fkl"))
                    .mapValues(v -> v.toUpperCase())
                    .toStream().to(t + "-out2");
                break;
            }
            case "p-fk-join-prices": {
                // Orders ("item#quantity") priced by their item: the price plus the quantity, a Long.
                KTable<String, String> orders = b.table(t + "-in");
                KTable<String, String> prices = b.table(t + "-in2");
                orders.join(prices, o -> o.substring(0, o.indexOf('#')),
                        (o, p) -> Long.parseLong(p) + Long.parseLong(o.substring(o.indexOf('#') + 1)))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-fk-join-partitioned": {
                // p-fk-join-prices over tables written partitioned by the number each key ends
                // with, not by its hash, which the join is told (TableJoined's partitioners); its
                // results repartitioned on the partition after their number's (Repartitioned's),
                // then written by their number, those of multiples of 5 to every partition
                // (Produced's).
                KTable<String, String> orders = b.table(t + "-in");
                KTable<String, String> prices = b.table(t + "-in2");
                orders.join(prices, o -> o.substring(0, o.indexOf('#')),
                        (o, p) -> Long.parseLong(p) + Long.parseLong(o.substring(o.indexOf('#') + 1)),
                        TableJoined.with(byTrailingNumber(), byTrailingNumber()))
                    .toStream()
                    .repartition(Repartitioned.with(Serdes.String(), Serdes.Long()).withName("rekeyed").withStreamPartitioner(byNextNumber()))
                    .to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()).withStreamPartitioner(fivesEverywhere()));
                break;
            }
            case "p-zero-forms": {
                // The zero forms: a versioned table without history (Duration.ZERO: the latest
                // value of each key only), a stream joined with it with a grace period of
                // Duration.ZERO (its buffer declared, each record through it and out at once), and
                // left-joined without one; the table's updates as a stream.
                KTable<String, String> prices = b.table(t + "-in2",
                    Materialized.as(Stores.persistentVersionedKeyValueStore("prices0", Duration.ZERO)));
                KStream<String, String> orders = b.stream(t + "-in");
                orders.join(prices, (o, p) -> o + "@" + p,
                        Joined.<String, String, String>as("zero").withGracePeriod(Duration.ZERO))
                    .to(t + "-out");
                orders.leftJoin(prices, (o, p) -> o + "@" + p).to(t + "-out2");
                prices.toStream().to(t + "-out3");
                break;
            }
            case "p-join-versioned": {
                // A stream joined with a versioned table, as of each record's time: inner without a
                // grace, inner with an unnamed grace, left with a named one (records held until the
                // stream time passes them by the grace, then joined in time order); the table's
                // updates, out of order ones and too old ones included, as a stream.
                KTable<String, String> prices = b.table(t + "-in2",
                    Materialized.as(Stores.persistentVersionedKeyValueStore("prices", Duration.ofSeconds(30))));
                KStream<String, String> orders = b.stream(t + "-in");
                orders.join(prices, (o, p) -> o + "@" + p).to(t + "-out");
                orders.join(prices, (o, p) -> o + "@" + p,
                        Joined.<String, String, String>with(null, null, null).withGracePeriod(Duration.ofSeconds(1)))
                    .to(t + "-out2");
                orders.leftJoin(prices, (o, p) -> o + "@" + p,
                        Joined.<String, String, String>as("graced").withGracePeriod(Duration.ofSeconds(3)))
                    .to(t + "-out3");
                prices.toStream().to(t + "-out4");
                break;
            }
            case "p-headers-format": {
                // The DSL's stores in Kafka Streams 4.4's headers-aware format (dsl.store.format=
                // HEADERS), over records with headers: a count, a windowed count, a session count,
                // a table, a foreign-key join and a stream-stream join; their changelogs carry the
                // headers as each store writes them.
                props.put("dsl.store.format", "HEADERS");
                KStream<String, String> in = b.stream(t + "-in");
                KGroupedStream<String, String> g = in.groupByKey();
                g.count().toStream().to(t + "-out", longs);
                g.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5))).count()
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                g.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2))).count()
                    .toStream().to(t + "-out3", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                KTable<String, String> customers = b.table(t + "-in2", Materialized.as("customers"));
                customers.toStream().to(t + "-out4");
                KTable<String, String> orders = b.table(t + "-in3");
                orders.join(customers, DslPrograms::customerOf, (o, c) -> o + "@" + c).toStream().to(t + "-out5");
                in.join(b.<String, String>stream(t + "-in4"), (a, c) -> a + "*" + c,
                        JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(5)))
                    .to(t + "-out6");
                break;
            }
            case "p-versioned-ops": {
                // Table operations on versioned tables (KIP-914): an update out of order is kept in
                // the history and passed on by a filter (with the latest value as the old one; a
                // rejected update is a deletion even for a key not in the result) and a mapping;
                // joins of tables, foreign-key joins and a regrouping skip it. A stream joined with
                // the mapped filter reads it as of each record's time. A Materialized filter ends
                // the versioned semantics below it: its join skips only the other side's.
                KTable<String, String> prices = b.table(t + "-in2",
                    Materialized.as(Stores.persistentVersionedKeyValueStore("prices", Duration.ofSeconds(30))));
                KTable<String, String> names = b.table(t + "-in3",
                    Materialized.as(Stores.persistentVersionedKeyValueStore("names", Duration.ofSeconds(30))));
                KTable<String, String> cheap = prices.filter((k, v) -> Long.parseLong(v) < 50);
                cheap.toStream().to(t + "-out");
                KTable<String, String> doubled = cheap.mapValues(v -> String.valueOf(Long.parseLong(v) * 2));
                doubled.join(names, (p, n) -> n + "=" + p).toStream().to(t + "-out2");
                prices.groupBy((k, v) -> KeyValue.pair(v.length() > 1 ? "big" : "small", v)).count()
                    .toStream().to(t + "-out3", longs);
                b.<String, String>stream(t + "-in").join(doubled, (o, p) -> o + "@" + p).to(t + "-out4");
                prices.filter((k, v) -> true, Materialized.as("kept")).join(names, (p, n) -> n + "~" + p)
                    .toStream().to(t + "-out5");
                prices.join(names, v -> "n" + v.substring(0, 1), (p, n) -> p + "/" + n).toStream().to(t + "-out6");
                break;
            }
            case "p-join-versioned-prices": {
                // Quantities priced as of their time by a versioned table (10 min of history), held
                // 5 s: price * 1000 + quantity, a Long.
                KTable<String, String> prices = b.table(t + "-in2",
                    Materialized.as(Stores.persistentVersionedKeyValueStore("prices", Duration.ofMinutes(10))));
                b.<String, String>stream(t + "-in")
                    .join(prices, (q, p) -> Long.parseLong(p) * 1000 + Long.parseLong(q),
                        Joined.<String, String, String>as("priced").withGracePeriod(Duration.ofSeconds(5)))
                    .to(t + "-out", longs);
                break;
            }
            case "p-join-streams": {
                // A stream-stream inner join, asymmetric (2 s before, 5 s after) with a 1 s grace.
                KStream<String, String> left = b.stream(t + "-in");
                KStream<String, String> right = b.stream(t + "-in2");
                left.join(right, (a, c) -> a + "*" + c,
                        JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)).before(Duration.ofSeconds(2)))
                    .to(t + "-out");
                break;
            }
            case "p-join-streams-named": {
                // A named stream-stream join with named stores, one side rekeyed (repartitioned
                // first, as <name>-left).
                KStream<String, String> l = b.<String, String>stream(t + "-in").selectKey((k, v) -> v);
                KStream<String, String> r = b.stream(t + "-in2");
                l.join(r, (a, c) -> a + "*" + c, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(3)),
                        StreamJoined.<String, String, String>as("st").withName("sj"))
                    .to(t + "-out");
                break;
            }
            case "p-join-streams-sum": {
                // The sum of the numbers of two streams' records within 3 s of each other (the
                // mixed-group test's program).
                KStream<String, String> left = b.stream(t + "-in");
                left.join(b.<String, String>stream(t + "-in2"), (a, c) -> Long.parseLong(a) + Long.parseLong(c),
                        JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(3)))
                    .to(t + "-out", longs);
                break;
            }
            case "p-suppress-getter": {
                KTable<String, Long> counts = b.<String, String>stream(t + "-in").groupByKey().count()
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(10), Suppressed.BufferConfig.unbounded()));
                b.<String, String>stream(t + "-in2").join(counts, (s, n) -> s + "#" + n).to(t + "-out");
                break;
            }
            case "p-suppress-leftjoin-ts": {
                KTable<String, Long> counts = b.<String, String>stream(t + "-in").groupByKey().count()
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(10), Suppressed.BufferConfig.unbounded()));
                KTable<String, String> other = b.table(t + "-in2");
                counts.leftJoin(other, (n, s) -> n + "/" + s).toStream().to(t + "-out");
                break;
            }
            case "p-suppress-bytes": {
                b.<String, String>stream(t + "-in").groupByKey().count()
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(100), Suppressed.BufferConfig.maxBytes(65)))
                    .toStream().to(t + "-out", longs);
                break;
            }
            case "p-session-suppress-regroup": {
                KTable<org.apache.kafka.streams.kstream.Windowed<String>, Long> s = b.<String, String>stream(t + "-in").groupByKey()
                    .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2)))
                    .count(Materialized.with(Serdes.String(), Serdes.Long()));
                s.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                s.groupBy((wk, n) -> KeyValue.pair(wk.key(), n), org.apache.kafka.streams.kstream.Grouped.with(Serdes.String(), Serdes.Long()))
                    .reduce((a, v) -> a + v, (a, v) -> a - v)
                    .toStream().to(t + "-out2", longs);
                break;
            }
            case "p-self-join": {
                KTable<String, String> a = b.table(t + "-in");
                a.join(a.filter((k, v) -> v.length() > 1), (x, y) -> x + "=" + y).toStream().to(t + "-out");
                break;
            }
            case "p-suppress-dedup": {
                b.<String, String>table(t + "-in")
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(10), Suppressed.BufferConfig.maxBytes(111)))
                    .toStream().to(t + "-out");
                break;
            }
            case "p-join-streams-left-outer": {
                // A stream-stream left join and an outer join (named, with named stores): records
                // joined, records no other joined (emitted once their window closes; the join looks
                // at every newest record, as TopologyTestDriver turns its wall-clock throttle off),
                // and records without a key.
                KStream<String, String> left = b.stream(t + "-in");
                KStream<String, String> right = b.stream(t + "-in2");
                left.leftJoin(right, (a, c) -> a + "*" + c, JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                    .to(t + "-out");
                left.outerJoin(right, (a, c) -> a + "*" + c, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(3)).after(Duration.ofSeconds(1)),
                        StreamJoined.<String, String, String>as("oj").withName("outer"))
                    .to(t + "-out2");
                break;
            }
            case "p-window-emit-final": {
                // A tumbling count with a grace that emits each window once, when it closes.
                b.<String, String>stream(t + "-in").groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .count()
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                break;
            }
            case "p-window-emit-final-retained": {
                // Final counts of windows kept 5 minutes: a window stays in the store after it was
                // emitted, so only the last emitted close time (the processor metadata committed with
                // the offsets) keeps the task's next owner from emitting it again.
                b.<String, String>stream(t + "-in").groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("retained").withRetention(Duration.ofMinutes(5)))
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                break;
            }
            case "p-window-emit-final-hopping": {
                // Hopping windows without a grace after a key change, a named reduce in a named store
                // that emits final results, and the same windows emitting every update beside it.
                KGroupedStream<String, String> g = b.<String, String>stream(t + "-in").groupBy((k, v) -> v);
                g.windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10)).advanceBy(Duration.ofSeconds(5)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .reduce((a, v) -> a + "+" + v, Named.as("final"), Materialized.as("final-store"))
                    .toStream().to(t + "-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.String()));
                g.windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10)).advanceBy(Duration.ofSeconds(5)))
                    .emitStrategy(EmitStrategy.onWindowUpdate())
                    .count()
                    .toStream().to(t + "-out2", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), Serdes.Long()));
                break;
            }
            case "p-join-global": {
                // A global table declared first (its node group takes subtopology 0, which the
                // heartbeat leaves out), an inner and a left join looking it up by the record's
                // value.
                GlobalKTable<String, String> users = b.globalTable(t + "-in2");
                KStream<String, String> in = b.stream(t + "-in");
                in.join(users, (k, v) -> v, (v, u) -> v + "@" + u).to(t + "-out");
                in.leftJoin(users, (k, v) -> v, (v, u) -> v + "@" + (u == null ? "-" : u)).to(t + "-out2");
                break;
            }
            case "p-join-global-named": {
                // A named global table between two streams; a stream rekeyed before a named left
                // join, which needs no repartition, and counted after it, which does.
                KStream<String, String> in = b.stream(t + "-in");
                GlobalKTable<String, String> users = b.globalTable(t + "-in2", Consumed.as("users-in"), Materialized.as("users"));
                in.selectKey((k, v) -> v)
                    .leftJoin(users, (k, v) -> k, (v, u) -> v + "=" + u, Named.as("enrich"))
                    .groupByKey().count().toStream().to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()));
                b.<String, String>stream(t + "-in3").join(users, (k, v) -> v, (v, u) -> v + "/" + u).to(t + "-out2");
                break;
            }
            case "p-join-global-prices": {
                // Quantities left-joined with a global table of prices by their key: the price
                // plus the quantity, -1 without a price (the mixed-group test's program).
                GlobalKTable<String, String> prices = b.globalTable(t + "-in2");
                b.<String, String>stream(t + "-in")
                    .leftJoin(prices, (k, q) -> k, (q, p) -> p == null ? -1L : Long.parseLong(p) + Long.parseLong(q))
                    .to(t + "-out", Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            default:
                throw new IllegalArgumentException("unknown program " + program + " (" + NAMES + ")");
        }
        return b.build(props);
    }
}
