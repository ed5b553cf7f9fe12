package dsl

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/windowed"
)

// A windowed aggregation's table is queried by key and window start from the local stores (Kafka
// Streams' ReadOnlyWindowStore.fetch(key, from, to)), a session aggregation's by key (its
// ReadOnlySessionStore.fetch(key)); another table is refused. The counts below follow the windows
// definitions: 10 s tumbling windows, 2 s sliding windows, sessions of a 5 s gap, all kept a minute.
func TestQueryWindows(t *testing.T) {
	var tumbling, sliding, sessions *KTable[windowed.Key[string], int64]
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		tumbling = WindowedBy(g, windowed.OfSizeWithNoGrace(10*time.Second)).Count(Materialized[string, int64]{Name: "tumbling", Retention: time.Minute})
		sliding = SlidingWindowedBy(g, windowed.OfTimeDifferenceWithNoGrace(2*time.Second)).Count(Materialized[string, int64]{Name: "sliding", Retention: time.Minute})
		sessions = SessionWindowedBy(g, windowed.OfInactivityGapWithNoGrace(5*time.Second)).Count(Materialized[string, int64]{Name: "sessions", Retention: time.Minute})
	})
	for _, ts := range []int64{1000, 3000, 12000, 25000} {
		pipeRaw(t, d, "in", []byte("k"), []byte("v"), ts)
	}
	pipeRaw(t, d, "in", []byte("other"), []byte("v"), 2000)
	query := func(table *KTable[windowed.Key[string], int64], from, to int64) string {
		var got []string
		err := QueryWindows(d.App(), table, "k", time.UnixMilli(from), time.UnixMilli(to), func(w windowed.Window, n int64) bool {
			got = append(got, fmt.Sprintf("[%d,%d]=%d", w.Start, w.End, n))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(got)
	}
	if got, want := query(tumbling, 0, 30000), "[[0,10000]=2 [10000,20000]=1 [20000,30000]=1]"; got != want {
		t.Errorf("tumbling = %s, want %s", got, want)
	}
	if got, want := query(tumbling, 5000, 15000), "[[10000,20000]=1]"; got != want {
		t.Errorf("tumbling from 5 s to 15 s = %s, want %s", got, want)
	}
	// Sliding windows of 2 s: the record at 1 s, earlier than the difference, is in [0 s, 2 s]; the
	// one at 3 s ends the window [1 s, 3 s], which holds both.
	if got := query(sliding, 0, 1000); got != "[[0,2000]=1 [1000,3000]=2]" {
		t.Errorf("sliding from 0 to 1 s = %s", got)
	}
	// Sessions: 1 s and 3 s merge into [1 s, 3 s]; 12 s and 25 s are sessions of their own.
	if got, want := query(sessions, 0, 30000), "[[1000,3000]=2 [12000,12000]=1 [25000,25000]=1]"; got != want {
		t.Errorf("sessions = %s, want %s", got, want)
	}
	if got, want := query(sessions, 10000, 20000), "[[12000,12000]=1]"; got != want {
		t.Errorf("sessions starting from 10 s to 20 s = %s, want %s", got, want)
	}
	if err := QueryWindows(d.App(), (*KTable[windowed.Key[string], int64])(nil), "k", time.Time{}, time.Time{}, nil); !errors.Is(err, ErrNotWindowed) {
		t.Errorf("a nil table: %v", err)
	}
}
