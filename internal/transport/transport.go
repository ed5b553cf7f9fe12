// Package transport is the I/O half of a streams-group member: it sends a group's heartbeats (the
// leave heartbeat among them), describe, DescribeConfigs and ApiVersions requests over the user's
// *kgo.Client, to the group coordinator it finds and caches with internal/coordinator (kgo cannot
// route streams-group requests: its handleCoordinatorReq knows only the consumer and share group
// heartbeats).
//
// It decides nothing about the member. A heartbeat is sent once, with at most one coordinator
// look-up before it, and its raw result (the answer with its error code, or the error) goes back to
// the caller; the state machine classifies it (heartbeat.ClassifyInto) and paces retries, the
// leave's too. The only retries here are the describe's, bounded by the caller's context.
package transport

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/coordinator"
	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

// Transport sends one group's requests to its coordinator. It caches the coordinator, forgets it on
// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and failures to reach it, and keeps it on
// COORDINATOR_LOAD_IN_PROGRESS (the broker is the coordinator, only still loading). Safe for
// concurrent use.
type Transport struct {
	coord   *coordinator.Cache
	group   string
	backoff heartbeat.Backoff
}

// defaultBackoff paces the describe's retries when New is given no backoff (Min <= 0): the defaults
// of retry.backoff.ms and retry.backoff.max.ms, jittered like every other backoff of the member.
var defaultBackoff = heartbeat.Backoff{Min: config.DefaultRetryBackoff, Max: config.DefaultRetryBackoffMax, Rand: rand.Float64}

// New returns a transport for group over cl. Each request to the group's coordinator (a look-up, a
// heartbeat, a describe, a DescribeConfigs) is bounded by requestTimeout on top of the caller's
// context, an ApiVersions by the caller's context alone; backoff paces the retries of Describe
// (a backoff without a minimum is replaced by the defaults of retry.backoff.ms and
// retry.backoff.max.ms, so they never spin).
func New(cl *kgo.Client, group string, requestTimeout time.Duration, backoff heartbeat.Backoff) *Transport {
	if backoff.Min <= 0 {
		backoff = defaultBackoff
	}
	return &Transport{
		coord:   coordinator.NewCache(cl, coordinator.RequestTimeout(requestTimeout)),
		group:   group,
		backoff: backoff,
	}
}

// Heartbeat sends req once. When the coordinator is not cached it first looks it up, with one
// FindCoordinator request to one broker and no retries (a failed look-up is the call's error), so
// that after a network failure the next heartbeat goes as soon as the coordinator answers again, on
// the member's schedule rather than the client library's. It returns the answer as it is, error code
// included, or the error as it is: neither is classified here.
//
// The coordinator is forgotten on an answer with NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE and on
// any failure to send (the next call looks it up again), and kept on COORDINATOR_LOAD_IN_PROGRESS.
//
// The request goes at the version kgo negotiated with the coordinator (heartbeat.ForBroker): at v0,
// to a Kafka 4.2/4.3 coordinator, without task offsets, end offsets and warm-up tasks. The answer's
// Version says which one it was.
func (t *Transport) Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	resp, node, err := t.coord.Send(ctx, t.group, heartbeat.ForBroker(req)) // Send forgets the coordinator on a send failure
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.StreamsGroupHeartbeatResponse)
	if !ok {
		return nil, fmt.Errorf("streams group heartbeat: the client returned a %T", resp)
	}
	if neterr.IsCoordinatorMoved(r.ErrorCode) {
		t.coord.Invalidate(t.group, node)
	}
	return r, nil
}

// Describe describes the group at its coordinator (StreamsGroupDescribe), retrying with the backoff
// until ctx ends whatever may pass (coordinator.Describe, the one implementation admin shares). A
// per-group error code is a *heartbeat.Error.
func (t *Transport) Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	g, _, err := coordinator.Describe(ctx, t.coord, t.group, false, t.backoff.Delay)
	if de, ok := errors.AsType[*coordinator.DescribeError](err); ok {
		return nil, heartbeat.ErrorFor(de.Code, de.Message)
	}
	return g, err
}

// Capabilities asks one broker for its API versions and finalized features: one ApiVersions request,
// one attempt. The caller retries (a cluster that is still starting does not answer yet).
func (t *Transport) Capabilities(ctx context.Context) (heartbeat.Capabilities, error) {
	b := t.coord.AnyBroker()
	if b == nil {
		return heartbeat.Capabilities{}, fmt.Errorf("asking the cluster for its API versions: %w", coordinator.ErrNoBroker)
	}
	req := kmsg.NewPtrApiVersionsRequest()
	// Sent straight to a broker, the request does not get the names kgo fills in on Client.Request;
	// v3+ brokers refuse an ApiVersions without them.
	req.ClientSoftwareName, req.ClientSoftwareVersion = "streamsgroup", softwareVersion()
	resp, err := b.Request(ctx, req) // bounded by ctx: the machine's ProbeCapabilities.Timeout
	if err != nil {
		return heartbeat.Capabilities{}, fmt.Errorf("asking the cluster for its API versions: %w", err)
	}
	return heartbeat.CapabilitiesFrom(resp.(*kmsg.ApiVersionsResponse))
}

// GroupConfigs describes the group's dynamic configs named (DescribeConfigs of resource type GROUP)
// at the group's coordinator: one request, one attempt (a look-up first when the coordinator is not
// known), the answer as it is. Every broker could answer from the cluster's metadata, but the value
// of a config the group does not set is the answering broker's default, and the coordinator's is
// the one the group runs with (brokers of a cluster being reconfigured may differ).
func (t *Transport) GroupConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	r.ResourceName = t.group
	r.ConfigNames = names
	req.Resources = append(req.Resources, r)
	resp, _, err := t.coord.Send(ctx, t.group, req)
	if err != nil {
		return nil, fmt.Errorf("describing the group's configs: %w", err)
	}
	return resp.(*kmsg.DescribeConfigsResponse), nil
}

// CoordinatorConfigs describes the broker configs named of the group's coordinator (DescribeConfigs
// of resource type BROKER, sent to that broker): one request, one attempt (a look-up first when the
// coordinator is not known), the answer as it is. The coordinator's own configs are the ones it
// applies to the group.
func (t *Transport) CoordinatorConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeBroker
	r.ConfigNames = names
	node, err := t.coord.Node(ctx, t.group)
	if err != nil {
		return nil, fmt.Errorf("describing the coordinator's configs: %w", err)
	}
	r.ResourceName = strconv.Itoa(int(node))
	req.Resources = append(req.Resources, r)
	resp, _, err := t.coord.Send(ctx, t.group, req)
	if err != nil {
		return nil, fmt.Errorf("describing the coordinator's configs: %w", err)
	}
	return resp.(*kmsg.DescribeConfigsResponse), nil
}

// softwareVersion is this module's version as the build knows it, in the characters ApiVersions
// allows ([a-zA-Z0-9.-], starting and ending with a letter or digit).
func softwareVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(append([]*debug.Module{&bi.Main}, bi.Deps...))
}

// modulePath is the module whose version ApiVersions reports.
const modulePath = "github.com/streamsgroup/streamsgroup"

// versionOf is the version of this module among the build's modules (the main module, when it is
// this one, or a dependency), sanitized; "unknown" for a build from a work tree ("(devel)", or no
// version) or without this module.
func versionOf(mods []*debug.Module) string {
	v := "unknown"
	for _, m := range mods {
		if m.Path == modulePath && m.Version != "" && m.Version != "(devel)" {
			v = m.Version
		}
	}
	return sanitize(v)
}

func sanitize(v string) string {
	b := []byte(v)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	for len(b) > 0 && (b[0] == '.' || b[0] == '-') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == '.' || b[len(b)-1] == '-') {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "unknown"
	}
	return string(b)
}

// Coordinator returns the group's coordinator node as cached now, and whether one is known; the
// Manager's metrics count its changes.
func (t *Transport) Coordinator() (int32, bool) {
	b, ok := t.coord.Cached(t.group)
	return b.Node, ok
}
