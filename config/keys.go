package config

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// KeyGroupProtocol is Kafka Streams' group.protocol. Kafka Streams 4.4 needs group.protocol=streams to
// use streams groups, so a properties file written for it has the key; "streams" is accepted (in
// any case) and changes nothing, any other value is refused.
const KeyGroupProtocol = "group.protocol"

// keyClientTags names the set of client tags in a problem about all of them (their number).
const keyClientTags = PrefixClientTag + "*"

// keysRead are the keys FromMap reads, for suggestions.
var keysRead = []string{KeyApplicationID, KeyBootstrapServers, KeyTopologyEpoch, KeyReplicationFactor, KeyTaskOffsetInterval, KeyProcessID,
	KeyGroupInstanceID, KeyClientRack, KeyApplicationServer, KeyMaxPollInterval, KeyRetryBackoff, KeyRetryBackoffMax,
	KeyRequestTimeout, KeyStateDir, KeyGroupProtocol, KeyCommitInterval, KeyProcessingGuarantee,
	KeyStateCleanupDelay, KeyProcessingExceptionHandler, KeyDeserializationExceptionHandler, KeyAutoOffsetReset,
	KeyTransactionTimeout, KeyProducerTransactionTimeout, KeyPollInterval, KeyClientID, KeyTimestampExtractor, KeyDeadLetterQueueTopic,
	KeyProductionExceptionHandler, KeyDeliveryTimeout, KeyCompressionType}

// The security keys (security.go) are read by FromMap too, and so are suggested for typos.
func init() { keysRead = append(keysRead, securityKeys...) }

// brokerSide maps Kafka Streams keys that streams groups moved to the broker to the name of the
// group config (streams.<name> per group, group.streams.<name> as the broker's default).
// session.timeout.ms is one: Kafka's consumer refuses it under the new protocols and Kafka Streams
// ignores it, and a member-side value would only let the member's session guard disagree with the
// broker (the guard reads the group's value from the coordinator).
var brokerSide = map[string]string{
	"session.timeout.ms":         "session.timeout.ms",
	"num.standby.replicas":       "num.standby.replicas",
	"heartbeat.interval.ms":      "heartbeat.interval.ms",
	"acceptable.recovery.lag":    "acceptable.recovery.lag",
	"max.warmup.replicas":        "num.warmup.replicas",
	"rack.aware.assignment.tags": "rack.aware.assignment.tags",
}

// runtimeKeys are Kafka Streams settings of its own runtime (threads, serdes, commits, caches,
// exception handlers): the application does that work here, so this package does not read them.
var runtimeKeys = map[string]bool{
	"default.key.serde": true, "default.value.serde": true,
	"upgrade.from": true, "probing.rebalance.interval.ms": true,
	"task.timeout.ms":       true,
	"rocksdb.config.setter": true, "num.stream.threads.max": true,
	"metrics.recording.level": true, "metrics.num.samples": true, "metrics.sample.window.ms": true,
	"metric.reporters": true, "windowstore.changelog.additional.retention.ms": true,
	"dsl.store.suppliers.class": true, "default.dsl.store": true, "log.summary.interval.ms": true,
	"repartition.purge.interval.ms": true, "max.poll.records": true,
	"enable.auto.commit": true, "isolation.level": true,
}

// clientKeys are settings of the Kafka client, which is the caller's *kgo.Client here.
var clientKeys = map[string]bool{
	"security.protocol": true, "client.dns.lookup": true, "reconnect.backoff.ms": true,
	"reconnect.backoff.max.ms": true, "socket.connection.setup.timeout.ms": true,
	"socket.connection.setup.timeout.max.ms": true, "connections.max.idle.ms": true, "metadata.max.age.ms": true,
	"send.buffer.bytes": true, "receive.buffer.bytes": true, "bootstrap.resolve.timeout.ms": true,
}

// replicationReason is why a replication.factor value is refused.
const replicationReason = "not a replication factor: -1 or 0 (the broker's default.replication.factor) or a whole number from 1 to 32767"

const userHint = `(keys for the application's own use start with "user.")`

// unknownKeyReason explains why key is not a key of this package and what to do instead.
func unknownKeyReason(key string) string {
	if g, ok := brokerSide[key]; ok {
		return fmt.Sprintf("is a broker-side group config in streams groups: set group.streams.%s on the broker "+
			"or streams.%s per group (kafka-configs.sh --alter --entity-type groups --entity-name <application.id> "+
			"--add-config streams.%s=…)", g, g, g)
	}
	for _, p := range []string{"group.streams.", "streams."} {
		if g, ok := strings.CutPrefix(key, p); ok && isBrokerGroupConfig(g) {
			return fmt.Sprintf("is a group config set on the broker, not in a member's config (kafka-configs.sh "+
				"--alter --entity-type groups --entity-name <application.id> --add-config streams.%s=…, or "+
				"group.streams.%s in the broker's properties)", g, g)
		}
	}
	switch {
	case key == "group.id":
		return "a streams group's ID is application.id: set that instead"
	case clientKeys[key] || strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl."):
		return "is a setting of the Kafka client that this config does not read (of the client keys it reads only " +
			"client.id, security.protocol, sasl.mechanism, sasl.jaas.config and ssl.truststore.*, ssl.keystore.*, ssl.key.password, " +
			"ssl.endpoint.identification.algorithm): configure it on the *kgo.Client (kgo.ClientID, kgo.DialTLSConfig, …)"
	case hasAnyPrefix(key, "consumer.", "producer.", "admin.", "main.consumer.", "restore.consumer.", "global.consumer."):
		return "Kafka Streams passes these keys to the clients it creates; here the clients are yours " +
			"(*kgo.Client): set the option there " + userHint
	case runtimeKeys[key]:
		return "is a Kafka Streams runtime setting that the stream runtime does not support (yet); see docs/configuration.md " +
			"for the keys it reads " + userHint
	}
	if s := suggest(key); s != "" {
		return "unknown key; " + s + " " + userHint
	}
	return "unknown key " + userHint
}

func isBrokerGroupConfig(name string) bool {
	for _, g := range brokerSide {
		if g == name {
			return true
		}
	}
	switch name {
	case "session.timeout.ms", "initial.rebalance.delay.ms", "assignment.interval.ms", "assignor.name", "task.offset.interval.ms",
		"assignor.offload.enable", "max.size", "assignors":
		return true
	}
	return false
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// suggest returns "did you mean …?" for a key that is a known key with invisible characters, in
// another case, or with a typo of at most two edits; or "".
func suggest(key string) string {
	var invisible []string
	clean := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) || unicode.IsControl(r) {
			invisible = append(invisible, fmt.Sprintf("U+%04X", r))
			return -1
		}
		return r
	}, key)
	if len(invisible) > 0 && clean != key && isKeyRead(clean) {
		return fmt.Sprintf("did you mean %q? the key holds invisible characters (%s); a byte order mark (U+FEFF) "+
			"at the start of the file is one: save the file without it", clean, strings.Join(dedupeStrings(invisible), ", "))
	}
	if lower := strings.ToLower(clean); lower != key && isKeyRead(lower) {
		return fmt.Sprintf("did you mean %q? keys are case-sensitive", lower)
	}
	if len(key) > 64 {
		return ""
	}
	best, bestDist := "", 3
	for _, k := range keysRead {
		if d := text.EditDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return ""
}

func isKeyRead(key string) bool {
	for _, k := range keysRead {
		if k == key {
			return true
		}
	}
	return strings.HasPrefix(key, PrefixClientTag) && len(key) > len(PrefixClientTag) || strings.HasPrefix(key, PrefixUser)
}

func dedupeStrings(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
