package heartbeat

import "github.com/twmb/franz-go/pkg/kmsg"

// ForBroker wraps req so that it is encoded for the version kgo negotiates with the broker it is sent
// to, as Kafka's StreamsGroupHeartbeatRequest.Builder builds each version: a v0 request (Kafka
// 4.2/4.3 coordinators) carries no task offsets, no task end offsets and no warm-up tasks, which
// those brokers refuse (INVALID_REQUEST "… are not supported yet"); a v1 request carries req as it
// is. kgo picks the version per broker from that broker's ApiVersions and sets it on the request
// just before encoding it, so during a rolling upgrade the decision follows the coordinator the
// request goes to, not a probe of another broker. kmsg itself encodes those fields at v0 as well,
// which is why the wrapper is needed.
//
// After the send, req.GetVersion() (and the answer's Version) is the version used. req itself is
// never changed but for its version. Everything else (static membership, the topology) goes as it
// is: the broker judges, and its answer is classified.
func ForBroker(req *kmsg.StreamsGroupHeartbeatRequest) kmsg.Request { return versioned{req} }

// versioned is a heartbeat request that encodes itself for its version.
type versioned struct {
	*kmsg.StreamsGroupHeartbeatRequest
}

// AppendTo encodes the request at its version (kgo set it), without the v1-only content at v0. It
// has no side effect, so kgo may call it more than once.
func (v versioned) AppendTo(dst []byte) []byte {
	return AtVersion(v.StreamsGroupHeartbeatRequest, v.Version).AppendTo(dst)
}

// AtVersion returns req as it goes at version: req itself at v1+, at v0 a shallow copy with
// TaskOffsets and TaskEndOffsets null and a non-empty WarmupTasks list empty (a v0 coordinator never
// assigns warm-up tasks, so a member reports none to it).
func AtVersion(req *kmsg.StreamsGroupHeartbeatRequest, version int16) *kmsg.StreamsGroupHeartbeatRequest {
	if version >= 1 || req.TaskOffsets == nil && req.TaskEndOffsets == nil && len(req.WarmupTasks) == 0 {
		return req
	}
	c := *req
	c.TaskOffsets, c.TaskEndOffsets = nil, nil
	if len(c.WarmupTasks) > 0 {
		c.WarmupTasks = []kmsg.TaskIDs{}
	}
	return &c
}
