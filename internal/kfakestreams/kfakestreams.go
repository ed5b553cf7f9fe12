// Package kfakestreams makes a kfake cluster look like a broker that knows the streams-group APIs, so
// that unit tests can script StreamsGroupHeartbeat and StreamsGroupDescribe answers with
// Cluster.ControlKey: kfake has no handlers for keys 88 and 89 and leaves them out of
// its ApiVersions answer, and kgo refuses to send a request the broker does not advertise.
package kfakestreams

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Advertise installs, for every ApiVersions request c receives from now on, an answer that is the
// cluster's own plus StreamsGroupHeartbeat (key 88) up to heartbeatMax, StreamsGroupDescribe (key 89)
// up to describeMax (a negative max leaves the key out), and the feature streams.version finalized at
// streamsVersion (0 leaves it out, whatever kfake itself advertises). The cluster's own answer is read once, before the control is
// installed, so the other keys keep the versions kfake serves.
func Advertise(ctx context.Context, c *kfake.Cluster, heartbeatMax, describeMax, streamsVersion int16) error {
	return AdvertiseBy(ctx, c, func(int32) int16 { return heartbeatMax }, describeMax, streamsVersion)
}

// AdvertiseBy is Advertise with StreamsGroupHeartbeat's max version chosen per node (the node the
// ApiVersions request reached): a cluster in the middle of a rolling upgrade, with 4.3 (v0) and 4.4
// (v1) brokers side by side.
func AdvertiseBy(ctx context.Context, c *kfake.Cluster, heartbeatMax func(node int32) int16, describeMax, streamsVersion int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		return err
	}
	base, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	cl.Close()
	if err != nil {
		return fmt.Errorf("reading the fake cluster's own API versions: %w", err)
	}
	c.ControlKey(int16(kmsg.ApiVersions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = append([]kmsg.ApiVersionsResponseApiKey(nil), base.ApiKeys...)
		for _, k := range []struct{ key, max int16 }{{int16(kmsg.StreamsGroupHeartbeat), heartbeatMax(c.CurrentNode())}, {int16(kmsg.StreamsGroupDescribe), describeMax}} {
			if k.max >= 0 {
				resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.key, MaxVersion: k.max})
			}
		}
		for _, f := range base.SupportedFeatures {
			if f.Name != "streams.version" {
				resp.SupportedFeatures = append(resp.SupportedFeatures, f)
			}
		}
		for _, f := range base.FinalizedFeatures {
			if f.Name != "streams.version" {
				resp.FinalizedFeatures = append(resp.FinalizedFeatures, f)
			}
		}
		resp.FinalizedFeaturesEpoch = base.FinalizedFeaturesEpoch
		if streamsVersion > 0 {
			resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: "streams.version", MaxVersion: streamsVersion})
			resp.FinalizedFeatures = append(resp.FinalizedFeatures,
				kmsg.ApiVersionsResponseFinalizedFeature{Name: "streams.version", MaxVersionLevel: streamsVersion, MinVersionLevel: streamsVersion})
		}
		return resp, nil, true
	})
	return nil
}
