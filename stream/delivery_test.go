package stream

import (
	"testing"
	"time"
)

// TestDeliveryContextBoundsEveryWrite: writes go out with a context whose deadline leaves each at
// least half of delivery.timeout.ms from the send (not from the record's timestamp, which is the
// input's and may be old), one context at a time, renewed when less than half is left, and the one
// before the previous released.
func TestDeliveryContextBoundsEveryWrite(t *testing.T) {
	const deliveryTimeout = 2 * time.Minute // Kafka's default
	a, _ := newTestApp(t, testConfig(), testProcs())
	before := time.Now()
	ctx := a.deliveryContext()
	dl, ok := ctx.Deadline()
	if !ok || dl.Before(before.Add(deliveryTimeout)) || dl.After(time.Now().Add(deliveryTimeout)) {
		t.Fatalf("deadline %v, want delivery.timeout.ms from now", dl)
	}
	if again := a.deliveryContext(); again != ctx {
		t.Fatal("a new context for every write")
	}
	// A look at the clock with more than half left keeps it.
	a.deliverBy = time.Now().Add(deliveryTimeout/2 + time.Minute/4)
	a.deliverWrites = deliveryLook - 1
	if a.deliveryContext() != ctx {
		t.Fatal("renewed with more than half of the timeout left")
	}
	a.deliverWrites = 1
	// Less than half left: a new one at the next look at the clock (every deliveryLook writes);
	// the first stays alive (its writes may be in flight).
	a.deliverBy = time.Now().Add(deliveryTimeout/2 - time.Second)
	for a.deliverWrites < deliveryLook-1 {
		if a.deliveryContext() != ctx {
			t.Fatalf("write %d renewed the context between two looks at the clock", a.deliverWrites)
		}
	}
	second := a.deliveryContext()
	if second == ctx || ctx.Err() != nil {
		t.Fatalf("renewal at write %d: same %v, first ended %v", deliveryLook, second == ctx, ctx.Err())
	}
	a.deliverBy = time.Now().Add(time.Second)
	a.deliverWrites = 2*deliveryLook - 1
	third := a.deliveryContext()
	if third == second || ctx.Err() == nil || second.Err() != nil {
		t.Fatalf("second renewal: the first is released (%v), the second kept (%v)", ctx.Err(), second.Err())
	}
	a.releaseDelivery()
	if second.Err() == nil || third.Err() == nil {
		t.Fatal("contexts left when Run returned")
	}
}

// delivery.timeout.ms sets the bound.
func TestDeliveryTimeoutIsConfigured(t *testing.T) {
	cfg := testConfig()
	cfg.Runtime.DeliveryTimeout = 7 * time.Second
	a, _ := newTestApp(t, cfg, testProcs())
	before := time.Now()
	dl, ok := a.deliveryContext().Deadline()
	if !ok || dl.Before(before.Add(7*time.Second)) || dl.After(time.Now().Add(7*time.Second)) {
		t.Fatalf("deadline %v, want delivery.timeout.ms=7000 from now", dl)
	}
	a.releaseDelivery()
}

// The contexts that place a record by its key's prefix are the delivery context's: one per prefix
// length while it lasts (no context per record), and new ones, with its deadline, once it is
// renewed, so a record sent after the renewal does not go out with a released context.
func TestKeyPrefixContextsFollowTheDeliveryContext(t *testing.T) {
	const deliveryTimeout = 2 * time.Minute // Kafka's default
	a, _ := newTestApp(t, testConfig(), testProcs())
	defer a.releaseDelivery()
	four := a.keyPrefixContext(4)
	if a.keyPrefixContext(4) != four || a.keyPrefixContext(3) == four {
		t.Fatal("want one context per prefix length")
	}
	if dl, _ := four.Deadline(); dl != a.deliverBy {
		t.Fatalf("deadline %v, want the delivery context's %v", dl, a.deliverBy)
	}
	// Renewed twice: the first delivery context is released.
	for range 2 {
		a.deliverBy = time.Now().Add(deliveryTimeout/2 - time.Second)
		a.deliverWrites = deliveryLook - 1
		a.deliveryContext()
	}
	if four.Err() == nil {
		t.Fatal("the first delivery context was not released: the test proves nothing")
	}
	renewed := a.keyPrefixContext(4)
	if renewed.Err() != nil {
		t.Fatalf("after the delivery context was renewed, a record went out with a released one: %v", renewed.Err())
	}
	if dl, _ := renewed.Deadline(); dl != a.deliverBy {
		t.Fatalf("deadline %v, want the renewed delivery context's %v", dl, a.deliverBy)
	}
	// A prefix too long to keep a context for gets one of its own, still the delivery context's.
	long := a.keyPrefixContext(maxKeyPrefix)
	if long == a.keyPrefixContext(maxKeyPrefix) || long.Err() != nil {
		t.Fatal("a long prefix's context was kept, or released")
	}
}
