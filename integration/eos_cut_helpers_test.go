package integration

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// endTxnCutProxy is a TCP proxy in front of the broker that, once armed, lets the next EndTxn
// request (API key 26) through to the broker and then resets the client's connection without its
// answer: the broker ends the transaction, and the client cannot know how (kgo reports the
// outcome as unconfirmed).
type endTxnCutProxy struct {
	tcpProxy
	target string
	armed  atomic.Bool
	cuts   atomic.Int64 // EndTxn requests cut off
	// answered counts the answers dropped after a cut (the EndTxn's among them).
	answered atomic.Int64
	mu       sync.Mutex
	// awayFor, when set before arming, refuses every new connection for that long after the cut:
	// the broker seems gone, so kgo's own retries of the EndTxn fail too.
	awayFor   time.Duration
	awayUntil time.Time // under mu
	refused   atomic.Int64
}

// away reports whether new connections are refused now.
func (p *endTxnCutProxy) away() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.awayUntil)
}

const apiKeyEndTxn = 26

func newEndTxnCutProxy(t *testing.T, target string) *endTxnCutProxy {
	t.Helper()
	p := &endTxnCutProxy{target: target}
	p.listen(t, p.pipe)
	return p
}

func (p *endTxnCutProxy) pipe(client net.Conn) {
	defer client.Close()
	if p.away() {
		p.refused.Add(1)
		resetConn(client)
		return
	}
	broker, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		resetConn(client)
		return
	}
	defer broker.Close()
	p.track(client)
	p.track(broker)
	var cut atomic.Bool // the client was cut off: answers are read and dropped
	done := make(chan struct{})
	go func() { // broker → client, answer by answer
		defer close(done)
		for {
			frame, err := readFrame(broker)
			if err != nil {
				_ = client.Close()
				return
			}
			if cut.Load() {
				// Every answer after the cut is dropped, the EndTxn's among them; the connection
				// to the broker stays open a while so that the broker reads and handles the EndTxn
				// (it reads a connection's requests one at a time).
				p.answered.Add(1)
				_ = broker.SetReadDeadline(time.Now().Add(10 * time.Second))
				continue
			}
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()
	for { // client → broker, request by request
		frame, err := readFrame(client)
		if err != nil {
			_ = broker.Close()
			break
		}
		if len(frame) >= 6 && int16(binary.BigEndian.Uint16(frame[4:6])) == apiKeyEndTxn && p.armed.CompareAndSwap(true, false) {
			cut.Store(true)
			p.mu.Lock()
			p.awayUntil = time.Now().Add(p.awayFor)
			p.mu.Unlock()
			_, _ = broker.Write(frame)
			p.cuts.Add(1)
			resetConn(client) // the broker has the request; the client never hears the answer
			break
		}
		if _, err := broker.Write(frame); err != nil {
			break
		}
	}
	<-done
}

// readFrame reads one size-prefixed Kafka frame (the 4-byte size included).
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}
