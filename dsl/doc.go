// Package dsl is a typed Kafka Streams DSL: a Builder and typed handles (KStream, KGroupedStream,
// KTable) whose operations build both the processing and the topology, as Kafka Streams'
// StreamsBuilder does. The application never writes a subtopology ID, an internal topic name or a
// store's changelog: Build derives them from the code with Kafka Streams' own rules (node and store
// names such as KSTREAM-AGGREGATE-STATE-STORE-0000000002, the user-given names of Named, Grouped,
// Materialized, Produced and Repartitioned, repartition topics, subtopology numbering), so the
// topology a Go program sends in its heartbeat is, byte for byte, what Kafka Streams 4.4 sends for the
// same program in Java, and Go and Java members can share one group.
//
// Operations that keep a stream's types are methods (Filter, Peek, To, GroupByKey, Count, …);
// those that change them are functions, since Go methods have no type parameters:
//
//	b := dsl.NewBuilder()
//	lines := dsl.Stream(b, "lines", dsl.Consumed[string, string]{})
//	words := dsl.FlatMapValues(lines, func(_ string, line string) []string { return strings.Fields(line) })
//	counts := dsl.GroupBy(words, func(_, w string) string { return w }, dsl.Grouped[string, string]{Name: "words"}).
//		Count(dsl.Materialized[string, int64]{Name: "counts"})
//	counts.ToStream().To("word-counts", dsl.Produced[string, int64]{})
//	topo, procs, err := b.Build(cfg)
//	app, err := stream.New(cfg, topo, procs)
//
// Serdes are given where Kafka Streams takes Consumed, Produced, Grouped and Materialized; where none
// is given, string, []byte, int32 and int64 get Kafka's serdes for them, and any other type needs
// one (Build says where).
//
// What this package covers so far, and how it differs from Kafka Streams, is in docs/dsl.md.
package dsl
