package membership

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
)

// defaultTransport is the network behind a *kgo.Client.
func defaultTransport(cl *kgo.Client, group string, requestTimeout time.Duration, backoff heartbeat.Backoff) Transport {
	return legacyTransport{t: heartbeat.NewTransport(cl, group, requestTimeout), backoff: backoff}
}

type legacyTransport struct {
	t       *heartbeat.Transport
	backoff heartbeat.Backoff
}

func (l legacyTransport) Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	resp, err := l.t.Heartbeat(ctx, req)
	if te, ok := err.(*heartbeat.TransportError); ok {
		return nil, te.Err
	}
	return resp, err
}

func (l legacyTransport) Leave(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) error {
	return l.t.Leave(ctx, req, l.backoff)
}

func (l legacyTransport) Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	return l.t.Describe(ctx)
}

func (l legacyTransport) Capabilities(ctx context.Context) (heartbeat.Capabilities, error) {
	return l.t.Capabilities(ctx)
}
