package topology

import "strconv"

// Names applies Kafka Streams' naming rules for internal topics of one application, so a Go
// application declares the same topology a Java application with the same application.id would send.
type Names struct {
	// AppID is the application.id, which is also the group ID.
	AppID string
	// ReplicationFactor of internal topics (Kafka Streams' replication.factor); 0 means -1, the
	// broker's default.
	ReplicationFactor int16
}

// Kafka Streams' default for windowstore.changelog.additional.retention.ms: one day.
const defaultAdditionalRetentionMs = 86_400_000

// ChangelogTopic is the changelog topic of a state store: <application.id>-<store>-changelog.
func (n Names) ChangelogTopic(store string) string { return n.AppID + "-" + store + "-changelog" }

// RepartitionTopic is a repartition topic: <application.id>-<name>-repartition. name is the
// repartition operation's name, e.g. "KSTREAM-AGGREGATE-STATE-STORE-0000000003" for an unnamed one.
func (n Names) RepartitionTopic(name string) string { return n.AppID + "-" + name + "-repartition" }

func (n Names) rf() int16 {
	if n.ReplicationFactor == 0 {
		return -1
	}
	return n.ReplicationFactor
}

// Repartition returns the TopicInfo Kafka Streams sends for a repartition topic: cleanup.policy=delete,
// segment.bytes=52428800, retention.ms=-1 and message.timestamp.type=CreateTime. partitions is 0
// unless the application fixes the count.
func (n Names) Repartition(name string, partitions int32) TopicInfo {
	return TopicInfo{
		Name:              n.RepartitionTopic(name),
		Partitions:        partitions,
		ReplicationFactor: n.rf(),
		Configs: map[string]string{
			"cleanup.policy":         "delete",
			"segment.bytes":          "52428800",
			"retention.ms":           "-1",
			"message.timestamp.type": "CreateTime",
		},
	}
}

// KeyValueChangelog returns the TopicInfo Kafka Streams sends for the changelog of a key-value store:
// cleanup.policy=compact and message.timestamp.type=CreateTime.
func (n Names) KeyValueChangelog(store string) TopicInfo {
	return n.changelog(store, "cleanup.policy", "compact")
}

// WindowedChangelog returns the TopicInfo Kafka Streams sends for the changelog of a window or session
// store of an aggregation with the given retention: cleanup.policy=compact,delete and retention.ms =
// retention plus one day (windowstore.changelog.additional.retention.ms). For a windowed aggregation
// without Materialized.withRetention, Kafka Streams' retention is the window size plus the grace
// period (TimeWindowRetention, SessionWindowRetention). Not for the window stores of a stream-stream
// join: those keep duplicates and Kafka Streams sends cleanup.policy=delete (JoinWindowChangelog,
// StreamStreamJoin).
func (n Names) WindowedChangelog(store string, retentionMs int64) TopicInfo {
	return n.changelog(store, "cleanup.policy", "compact,delete",
		"retention.ms", strconv.FormatInt(retentionMs+defaultAdditionalRetentionMs, 10))
}

// VersionedChangelog returns the TopicInfo Kafka Streams sends for the changelog of a versioned
// key-value store with the given history retention: cleanup.policy=compact and
// min.compaction.lag.ms = history retention plus one day.
func (n Names) VersionedChangelog(store string, historyRetentionMs int64) TopicInfo {
	return n.changelog(store, "cleanup.policy", "compact",
		"min.compaction.lag.ms", strconv.FormatInt(historyRetentionMs+defaultAdditionalRetentionMs, 10))
}

// changelog is a changelog TopicInfo with message.timestamp.type=CreateTime (every internal topic
// has it) and the given key/value configs.
func (n Names) changelog(store string, configs ...string) TopicInfo {
	ti := TopicInfo{
		Name:              n.ChangelogTopic(store),
		ReplicationFactor: n.rf(),
		Configs:           map[string]string{"message.timestamp.type": "CreateTime"},
	}
	for i := 0; i+1 < len(configs); i += 2 {
		ti.Configs[configs[i]] = configs[i+1]
	}
	return ti
}
