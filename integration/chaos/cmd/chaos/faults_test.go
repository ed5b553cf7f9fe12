//go:build unix

package main

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// A seed must give the same schedule: the draws do not depend on timing.
func TestDrawIsDeterministic(t *testing.T) {
	types, _ := pickTypes("", 1)
	procs := []string{"p01", "p02", "p03", "p04"}
	run := func() []plan {
		rng := rand.New(rand.NewPCG(42, 0x5eed))
		var out []plan
		for range 200 {
			out = append(out, draw(rng, types, procs, 3, 6, 6*time.Second))
		}
		return out
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the same seed drew two schedules")
	}
	seen := map[string]bool{}
	for _, p := range a {
		seen[p.typ] = true
		switch p.typ {
		case "net-cut-long", "pause-long":
			if p.d <= 6*time.Second {
				t.Errorf("%s of %v is not past the session", p.typ, p.d)
			}
		case "net-cut-short", "pause-short":
			if p.d > 6*time.Second/2 || p.d < time.Second {
				t.Errorf("%s of %v is not well within the session", p.typ, p.d)
			}
		case "net-latency":
			if p.amount < 200 || p.amount > 800 {
				t.Errorf("latency %d ms", p.amount)
			}
		}
	}
	for _, typ := range types {
		if !seen[typ] {
			t.Errorf("200 draws never drew %s", typ)
		}
	}
}

func TestDrawKeepsTheMemberCountInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		if p := draw(rng, []string{"add"}, []string{"a", "b", "c"}, 2, 3, time.Second); p.typ != "remove" {
			t.Fatalf("an add at the upper bound stayed %s", p.typ)
		}
		if p := draw(rng, []string{"remove"}, []string{"a", "b"}, 2, 3, time.Second); p.typ != "add" {
			t.Fatalf("a remove at the lower bound stayed %s", p.typ)
		}
	}
}

func TestPickTypes(t *testing.T) {
	if _, err := pickTypes("kill9,nope", 1); err == nil {
		t.Fatal("an unknown type was accepted")
	}
	if _, err := pickTypes("coord-stop", 1); err == nil {
		t.Fatal("a cluster fault was accepted on one broker")
	}
	if got, err := pickTypes(" kill9 ,pause-long", 3); err != nil || !reflect.DeepEqual(got, []string{"kill9", "pause-long"}) {
		t.Fatalf("%v %v", got, err)
	}
}

// groupPartition must match the broker's choice (Java's String.hashCode: "test" hashes to 3556498).
func TestGroupPartition(t *testing.T) {
	if got := groupPartition("test", 50); got != 3556498%50 {
		t.Fatalf("test -> %d", got)
	}
	// A negative hash is made positive ("polygenelubricants" hashes to Integer.MIN_VALUE → 0).
	if got := groupPartition("polygenelubricants", 3); got != 0 {
		t.Fatalf("MIN_VALUE hash -> %d", got)
	}
}

// On the 3-node cluster the schedule has the node faults and restarts node by node, never all at
// once; each node fault names a node, drawn from the seed.
func TestClusterTypes(t *testing.T) {
	types, err := pickTypes("", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"broker-crash", "rolling-restart", "broker-pause", "broker-cut", "txn-coord-elect", "coord-stop", "coord-elect", "kill9"} {
		if !slices.Contains(types, want) {
			t.Errorf("the cluster's fault types %v lack %s", types, want)
		}
	}
	if slices.Contains(types, "broker-restart") {
		t.Errorf("the cluster restarts every node at once: %v", types)
	}
	rng := rand.New(rand.NewPCG(9, 0x5eed))
	nodes := map[int]bool{}
	for range 300 {
		p := draw(rng, []string{"broker-crash", "broker-pause"}, []string{"a", "b"}, 2, 3, 6*time.Second)
		nodes[p.node%3] = true
		if p.typ == "broker-pause" && (p.d <= 3*time.Second || p.d > 8*time.Second) {
			t.Errorf("broker-pause of %v is not past the brokers' session of 3 s", p.d)
		}
	}
	if len(nodes) != 3 {
		t.Errorf("300 node faults hit nodes %v, want all three", nodes)
	}
}
