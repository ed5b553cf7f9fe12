// Package windowed holds what windowed operations share with Kafka Streams: a window, a key with
// its window, Kafka Streams' time windows (tumbling and hopping, with a grace period), and the byte
// layouts Kafka Streams gives windowed keys — in a window store and its changelog (the key, the
// window start, a sequence number), in a session store (the key, the end, the start), and on topics
// (the key and the window start; Kafka's TimeWindowedSerializer and SessionWindowedSerializer) — so
// that Go and Kafka Streams members read each other's windowed changelogs and outputs.
//
// Times are Unix milliseconds, as Kafka's are. A layout that cannot be read (too short, a session
// that ends before it starts) is a *serde.DecodeError, never a panic.
package windowed
