package integration

import (
	"net"
	"sync"
	"testing"
)

// tcpProxy is what the tests' proxies in front of the broker share: a loopback listener whose
// connections a pipe function handles, each on a goroutine of its own, and a cleanup that closes
// them all and waits for the pipes when the test ends.
type tcpProxy struct {
	ln      net.Listener
	wg      sync.WaitGroup
	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
}

// listen starts the proxy; pipe handles each accepted connection and closes it.
func (p *tcpProxy) listen(t *testing.T, pipe func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ln, p.conns = ln, map[net.Conn]struct{}{}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				pipe(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.connsMu.Lock()
		for c := range p.conns {
			_ = c.Close()
		}
		p.connsMu.Unlock()
		p.wg.Wait()
	})
}

// Addr is where clients connect.
func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

// track has c closed when the test ends.
func (p *tcpProxy) track(c net.Conn) {
	p.connsMu.Lock()
	p.conns[c] = struct{}{}
	p.connsMu.Unlock()
}
