package heartbeat

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/topology"
)

// parse is ParseInto into a fresh Response, for tests that read one answer.
func parse(resp *kmsg.StreamsGroupHeartbeatResponse, topo *topology.Topology) (*Response, error) {
	r := new(Response)
	if err := ParseInto(r, resp, topo); err != nil {
		return nil, err
	}
	return r, nil
}

// classify is ClassifyInto into a fresh Response.
func classify(resp *kmsg.StreamsGroupHeartbeatResponse, err error, topo *topology.Topology) (*Response, error) {
	r := new(Response)
	if err := ClassifyInto(r, resp, err, topo); err != nil {
		return nil, err
	}
	return r, nil
}
