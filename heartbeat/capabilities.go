package heartbeat

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Capabilities is what the cluster says it supports, from ApiVersions.
type Capabilities struct {
	HeartbeatMaxVersion int16 // -1 when the broker does not know StreamsGroupHeartbeat
	StreamsVersion      int16 // finalized feature streams.version; 0 when off
}

// StaticMembership reports whether the brokers accept group.instance.id (Kafka 4.4+, heartbeat v1).
func (c Capabilities) StaticMembership() bool { return c.HeartbeatMaxVersion >= 1 }

// TaskOffsets reports whether the brokers accept task offsets and warm-up tasks (Kafka 4.4+).
func (c Capabilities) TaskOffsets() bool { return c.HeartbeatMaxVersion >= 1 }

// Check returns a typed error when the cluster cannot run streams groups at all.
func (c Capabilities) Check() error {
	if c.HeartbeatMaxVersion < 0 {
		return fmt.Errorf("the brokers do not know StreamsGroupHeartbeat: %w: streams groups need Kafka 4.2+", ErrNotSupported)
	}
	if c.StreamsVersion < 1 {
		return fmt.Errorf("the finalized feature streams.version is %d: %w: enable it with "+
			"kafka-features.sh upgrade --feature streams.version=1 (Kafka 4.2+)", c.StreamsVersion, ErrNotSupported)
	}
	return nil
}

// CapabilitiesFrom reads an ApiVersions answer: the highest StreamsGroupHeartbeat version (key 88)
// and the finalized streams.version feature. An answer with an error code is an error.
func CapabilitiesFrom(resp *kmsg.ApiVersionsResponse) (Capabilities, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return Capabilities{}, fmt.Errorf("asking the cluster for its API versions: %w", err)
	}
	c := Capabilities{HeartbeatMaxVersion: -1}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.StreamsGroupHeartbeat) {
			c.HeartbeatMaxVersion = k.MaxVersion
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "streams.version" {
			c.StreamsVersion = f.MaxVersionLevel
		}
	}
	return c, nil
}
