// Package topology describes the topology metadata a streams-group member sends when it joins:
// subtopologies with their source, repartition and changelog topics and copartition groups.
//
// It validates a topology, puts it in exactly the canonical form Kafka Streams sends (the broker
// compares topologies field by field, in order), computes a stable topology ID, converts to the
// StreamsGroupHeartbeat request and from a StreamsGroupDescribe response, and offers the Kafka
// Streams naming rules for internal topics so Go and Java members can share one group.
package topology
