// Package topology describes the topology metadata a streams-group member sends when it joins:
// subtopologies with their source, repartition and changelog topics and copartition groups.
//
// It validates a topology (each subtopology, and the subtopologies against each other as Kafka
// Streams builds them and the broker derives their internal topics), puts it in exactly the
// canonical form Kafka Streams sends (the broker compares topologies field by field, in order),
// computes a stable topology ID, converts to the StreamsGroupHeartbeat request and from a
// StreamsGroupDescribe response, reads and writes a JSON form, and lists the differences from a
// group's described topology (Diff). Names and the DSL helpers (StreamStreamJoin, ForeignKeyJoin,
// SuppressChangelog, CopartitionGroup, …) give the internal topics and copartition groups Kafka
// Streams 4.4 sends for each DSL construct, so Go and Java members can share one group.
package topology
