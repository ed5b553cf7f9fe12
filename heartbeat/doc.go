// Package heartbeat is everything about one StreamsGroupHeartbeat, and pure: building the request
// (full on join and after an error, deltas otherwise), reading the response into typed values
// (Classify, Parse), classifying errors, timing (backoff with jitter), and what the cluster supports
// (Capabilities, read from an ApiVersions answer). It does no I/O: the transport to the group
// coordinator over a franz-go client is internal/transport.
package heartbeat
