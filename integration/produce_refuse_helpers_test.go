package integration

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceRefusingProxy is a TCP proxy in front of the broker that, while refusing, rewrites the
// broker's answers to Produce requests for one topic: every partition's error becomes
// NOT_ENOUGH_REPLICAS, a retriable error after which a client knows the write did not count (it
// may have been written: a retry is de-duplicated by the idempotent producer, or counts twice, as
// at-least-once allows). Everything else passes as it is.
type produceRefusingProxy struct {
	tcpProxy
	target   string
	topic    string
	topicID  [16]byte // Produce v13+ names topics by ID
	refusing atomic.Bool
	refused  atomic.Int64 // partition answers rewritten
}

func newProduceRefusingProxy(t *testing.T, b *Broker, topic string) *produceRefusingProxy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, err := b.Admin(t).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("the ID of topic %s: %v %v", topic, err, td[topic].Err)
	}
	p := &produceRefusingProxy{target: b.Bootstrap, topic: topic, topicID: td[topic].ID}
	p.listen(t, p.pipe)
	return p
}

func (p *produceRefusingProxy) pipe(client net.Conn) {
	defer client.Close()
	broker, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer broker.Close()
	p.track(client)
	p.track(broker)
	var mu sync.Mutex
	produces := map[int32]int16{} // correlation ID → version of the Produce requests in flight
	done := make(chan struct{})
	go func() { // broker → client
		defer close(done)
		for {
			frame, err := readFrame(broker)
			if err != nil {
				_ = client.Close()
				return
			}
			if len(frame) >= 8 {
				corr := int32(binary.BigEndian.Uint32(frame[4:8]))
				mu.Lock()
				v, ok := produces[corr]
				delete(produces, corr)
				mu.Unlock()
				if ok && p.refusing.Load() {
					frame = p.refuse(frame, v)
				}
			}
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()
	for { // client → broker
		frame, err := readFrame(client)
		if err != nil {
			_ = broker.Close()
			break
		}
		if len(frame) >= 12 && binary.BigEndian.Uint16(frame[4:6]) == 0 { // Produce
			mu.Lock()
			produces[int32(binary.BigEndian.Uint32(frame[8:12]))] = int16(binary.BigEndian.Uint16(frame[6:8]))
			mu.Unlock()
		}
		if _, err := broker.Write(frame); err != nil {
			break
		}
	}
	<-done
}

// refuse rewrites a Produce answer of the given version: the topic's partitions answer
// NOT_ENOUGH_REPLICAS. An answer it cannot read goes through as it is.
func (p *produceRefusingProxy) refuse(frame []byte, version int16) []byte {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = version
	header := 8 // size and correlation ID
	if resp.IsFlexible() {
		if len(frame) < 9 || frame[8] != 0 { // tagged fields in the header: not expected
			return frame
		}
		header = 9
	}
	if err := resp.ReadFrom(frame[header:]); err != nil {
		return frame
	}
	for i := range resp.Topics {
		if resp.Topics[i].Topic != p.topic && resp.Topics[i].TopicID != p.topicID {
			continue
		}
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = kerr.NotEnoughReplicas.Code
			resp.Topics[i].Partitions[j].BaseOffset = -1
			p.refused.Add(1)
		}
	}
	out := append([]byte(nil), frame[:header]...)
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out[0:4], uint32(len(out)-4))
	return out
}
