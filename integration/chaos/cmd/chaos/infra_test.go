package main

import (
	"net"
	"testing"
)

// countConns counts the server side of established connections on the given ports only.
func TestCountConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	before := countConns(map[int]bool{port: true})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := countConns(map[int]bool{port: true}); got != before+1 {
		t.Fatalf("%d connections on the port, want %d", got, before+1)
	}
	if got := countConns(map[int]bool{}); got != 0 {
		t.Fatalf("%d connections on no port", got)
	}
}
