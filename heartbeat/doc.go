// Package heartbeat is everything about one StreamsGroupHeartbeat: building the request (full on
// join and after an error, deltas otherwise), reading the response into typed values, classifying
// errors, timing (interval and backoff with jitter), and the transport to the group coordinator
// over a franz-go client.
package heartbeat
