//go:build unix

package main

import (
	"net"
	"os"
	"path/filepath"
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

// The driver runs inside the chaos module (a module of its own) and finds the repository root, with
// broker.sh, two levels up; the member program builds from the chaos module's directory.
func TestModuleRootFindsTheRepository(t *testing.T) {
	chaosDir, root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(chaosDir) != "chaos" || filepath.Base(filepath.Dir(chaosDir)) != "integration" {
		t.Fatalf("chaos module directory %s, want …/integration/chaos", chaosDir)
	}
	if _, err := os.Stat(filepath.Join(root, "integration", "kafka", "broker.sh")); err != nil {
		t.Fatalf("no broker.sh under the repository root %s: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(chaosDir, "cmd", "chaosmember")); err != nil {
		t.Fatalf("the member program is not where the driver builds it from: %v", err)
	}
}
