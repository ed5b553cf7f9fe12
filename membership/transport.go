package membership

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/transport"
)

// defaultTransport is the network behind the user's *kgo.Client.
func defaultTransport(cl *kgo.Client, group string, requestTimeout time.Duration, backoff heartbeat.Backoff) Transport {
	return transport.New(cl, group, requestTimeout, backoff)
}
