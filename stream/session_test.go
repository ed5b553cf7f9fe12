package stream

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// 10 s after the newest end.
var sessionCounts = Session("counts", 10*time.Second, serde.String, serde.Int64)

func sess(start, end int64) windowed.Window { return windowed.Window{Start: start, End: end} }

type found struct {
	w windowed.Window
	v int64
}

func findAll(t *testing.T, c *Context, k string, earliestEnd, latestStart int64) string {
	t.Helper()
	var out []found
	mustNotErr(t, sessionCounts.FindSessions(c, k, earliestEnd, latestStart, func(w windowed.Window, v int64) bool {
		out = append(out, found{w, v})
		return true
	}))
	return fmt.Sprint(out)
}

// A session store writes Kafka Streams' session keys (key, end, start) to its changelog, reads a
// session back, finds a key's sessions that end at or after a time and start at or before another,
// in order of their end and start, across segments and apart from keys that extend it, and keeps
// them for the retention after the newest end.
func TestSessionStore(t *testing.T) {
	a, tk, prod := windowTask(t, sessionCounts)
	c := &tk.ctx
	mustNotErr(t, sessionCounts.Put(c, "k", sess(1000, 2000), 1))
	mustNotErr(t, sessionCounts.Put(c, "k", sess(500, 2000), 2))
	mustNotErr(t, sessionCounts.Put(c, "kk", sess(1000, 1500), 9)) // a key with k as its prefix
	mustNotErr(t, sessionCounts.Put(c, "k", sess(3000, 3000), 4))
	mustNotErr(t, sessionCounts.Put(c, "k", sess(10000, 11000), 3))
	flush(t, a)
	recs := prod.all()
	if len(recs) != 5 || !bytes.Equal(recs[0].rec.Key, windowed.AppendSessionKey(nil, []byte("k"), sess(1000, 2000))) || recs[0].rec.Topic != countsLog {
		t.Fatalf("changelog records %d, the first %s %x", len(recs), recs[0].rec.Topic, recs[0].rec.Key)
	}
	if v, ok, err := sessionCounts.Get(c, "k", sess(500, 2000)); !ok || v != 2 || err != nil {
		t.Fatalf("Get = %d %v %v", v, ok, err)
	}
	if got := findAll(t, c, "k", 0, 1<<62); got != "[{{500 2000} 2} {{1000 2000} 1} {{3000 3000} 4} {{10000 11000} 3}]" {
		t.Fatalf("FindSessions(k, all) = %s", got)
	}
	if got := findAll(t, c, "k", 2001, 3000); got != "[{{3000 3000} 4}]" {
		t.Fatalf("FindSessions(k, 2001, 3000) = %s: the bounds are inclusive", got)
	}
	if got := findAll(t, c, "k", 2000, 999); got != "[{{500 2000} 2}]" {
		t.Fatalf("FindSessions(k, 2000, 999) = %s", got)
	}
	if got := findAll(t, c, "kk", 0, 1<<62); got != "[{{1000 1500} 9}]" {
		t.Fatalf("FindSessions(kk) = %s", got)
	}
	mustNotErr(t, sessionCounts.Remove(c, "k", sess(1000, 2000)))
	if got := findAll(t, c, "k", 0, 2000); got != "[{{500 2000} 2}]" {
		t.Fatalf("after Remove: %s", got)
	}
	var stop int
	mustNotErr(t, sessionCounts.FindSessions(c, "k", 0, 1<<62, func(windowed.Window, int64) bool { stop++; return false }))
	if stop != 1 {
		t.Fatalf("fn returning false was called %d times", stop)
	}
	// A session ending in the next segment: the newest end is 61 000, and with 10 s of retention the
	// sessions ending at or before 51 000 are gone from reads, and writing one is skipped.
	mustNotErr(t, sessionCounts.Put(c, "k", sess(58000, 61000), 6))
	if got := findAll(t, c, "k", 0, 1<<62); got != "[{{58000 61000} 6}]" {
		t.Fatalf("after expiry: %s", got)
	}
	if _, ok, _ := sessionCounts.Get(c, "k", sess(500, 2000)); ok {
		t.Fatal("an expired session is read")
	}
	mustNotErr(t, sessionCounts.Put(c, "k", sess(100, 51000), 5))
	if _, ok, _ := sessionCounts.Get(c, "k", sess(100, 51000)); ok {
		t.Fatal("an expired session was written")
	}
}

func TestSessionStoreMisuse(t *testing.T) {
	_, tk, _ := windowTask(t, sessionCounts)
	c := &tk.ctx
	if err := sessionCounts.Put(c, "k", sess(5, 4), 1); err == nil {
		t.Error("a session ending before its start was written")
	}
	if err := sessionCounts.Put(c, "k", sess(-1, 4), 1); err == nil {
		t.Error("a session before the epoch was written")
	}
	if err := c.Store("counts").Put([]byte("short"), []byte{1}); !errors.Is(err, ErrSessionKey) {
		t.Errorf("a raw key too short: %v, want ErrSessionKey", err)
	}
	if err := windowCounts.Fetch(c, "k", 0, 1, func(int64, int64) bool { return true }); err == nil {
		t.Error("a session store was fetched as a window store")
	}
	_, wtk, _ := windowTask(t, windowCounts)
	if err := sessionCounts.FindSessions(&wtk.ctx, "k", 0, 1, func(windowed.Window, int64) bool { return true }); err == nil {
		t.Error("a window store was read as a session store")
	}
	if sessionCounts.Name() != "counts" || Session("x", 0, serde.String, serde.Int64).retention != 1 {
		t.Error("Name or the least retention")
	}
}

// A session's end decides its life at the edges: one ending exactly the retention before the newest
// end is gone, one ending a millisecond later is kept; a session may start at the epoch.
func TestSessionStoreEdges(t *testing.T) {
	_, tk, _ := windowTask(t, sessionCounts)
	c := &tk.ctx
	mustNotErr(t, sessionCounts.Put(c, "k", sess(0, 0), 1))
	if v, ok, err := sessionCounts.Get(c, "k", sess(0, 0)); !ok || v != 1 || err != nil {
		t.Fatalf("a session at the epoch: %d %v %v", v, ok, err)
	}
	mustNotErr(t, sessionCounts.Put(c, "k", sess(1000, 1000), 2))
	mustNotErr(t, sessionCounts.Put(c, "k", sess(1001, 1001), 3))
	mustNotErr(t, sessionCounts.Put(c, "k", sess(11000, 11000), 4)) // the newest end: 11 000
	if got := findAll(t, c, "k", 0, 1<<62); got != "[{{1001 1001} 3} {{11000 11000} 4}]" {
		t.Fatalf("FindSessions = %s: the session ending at 1 000 (10 s before) is gone, the one at 1 001 kept", got)
	}
}

// Sessions live in two segments are each found once, in order of their end.
func TestSessionStoreFindsAcrossSegments(t *testing.T) {
	_, tk, _ := windowTask(t, sessionCounts)
	c := &tk.ctx
	mustNotErr(t, sessionCounts.Put(c, "k", sess(59000, 59000), 1)) // segment 0
	mustNotErr(t, sessionCounts.Put(c, "k", sess(60000, 61000), 2)) // segment 1
	mustNotErr(t, sessionCounts.Put(c, "j", sess(58000, 59500), 3)) // another key in segment 0
	if got := findAll(t, c, "k", 0, 1<<62); got != "[{{59000 59000} 1} {{60000 61000} 2}]" {
		t.Fatalf("FindSessions = %s", got)
	}
}

// A time-ordered session store (Kafka Streams' RocksDbTimeOrderedSessionBytesStoreSupplier) keeps
// whole intervals of session ends — half the retention, at least a minute — while the newest end
// minus the retention is in them or after, and reads every session of them by end, then start, then
// key: what a session aggregation that emits final results finds to emit, sessions past their
// retention included until their interval expires. A key's FindSessions still reads only those
// within the retention. Expected sets are worked out from those rules.
func TestTimeOrderedSessionStoreKeepsWholeIntervals(t *testing.T) {
	ordered := Session("counts", 10*time.Millisecond, serde.String, serde.Int64).TimeOrdered()
	a, tk, _ := windowTask(t, ordered)
	c := &tk.ctx
	ending := func(from, to int64) string {
		t.Helper()
		var out []string
		mustNotErr(t, ordered.FindSessionsEnding(c, from, to, func(k string, w windowed.Window, v int64) bool {
			out = append(out, fmt.Sprintf("%s{%d %d}=%d", k, w.Start, w.End, v))
			return true
		}))
		return fmt.Sprint(out)
	}
	mustNotErr(t, ordered.Put(c, "b", sess(100, 200), 1))
	mustNotErr(t, ordered.Put(c, "a", sess(150, 200), 2))
	mustNotErr(t, ordered.Put(c, "a", sess(50, 200), 3))
	mustNotErr(t, ordered.Put(c, "c", sess(300, 300), 4))
	mustNotErr(t, ordered.Put(c, "b", sess(59_000, 59_990), 5))
	flush(t, a)
	// Newest end 59,990, retention 10: every end from 59,980 on is within the retention, and the
	// interval [0, 60,000) holds 59,980, so all of it is kept.
	if got := ending(0, 1<<62); got != "[a{50 200}=3 b{100 200}=1 a{150 200}=2 c{300 300}=4 b{59000 59990}=5]" {
		t.Fatalf("FindSessionsEnding(all) = %s", got)
	}
	if got := ending(200, 299); got != "[a{50 200}=3 b{100 200}=1 a{150 200}=2]" {
		t.Fatalf("FindSessionsEnding(200, 299) = %s: the bounds are inclusive", got)
	}
	if got := ending(201, 1<<62); got != "[c{300 300}=4 b{59000 59990}=5]" {
		t.Fatalf("FindSessionsEnding(201, …) = %s", got)
	}
	var byKey []string
	mustNotErr(t, ordered.FindSessions(c, "a", 0, 1<<62, func(w windowed.Window, v int64) bool {
		byKey = append(byKey, fmt.Sprint(w.Start, w.End))
		return true
	}))
	if len(byKey) != 0 {
		t.Fatalf("FindSessions(a) = %v: a's sessions ended more than the retention ago", byKey)
	}
	if v, ok, err := ordered.Get(c, "a", sess(50, 200)); ok || err != nil {
		t.Fatalf("Get(a, 50..200) = %d %v %v: it ended more than the retention ago", v, ok, err)
	}
	if v, ok, err := ordered.Get(c, "b", sess(59_000, 59_990)); !ok || v != 5 || err != nil {
		t.Fatalf("Get(b, 59000..59990) = %d %v %v, want 5", v, ok, err)
	}
	// Newest end 60,009: 59,999 is in [0, 60,000), still kept. Newest end 60,010: 60,000 is in the
	// next interval, and the first expires whole.
	mustNotErr(t, ordered.Put(c, "d", sess(60_009, 60_009), 6))
	flush(t, a)
	if got := ending(0, 1<<62); got != "[a{50 200}=3 b{100 200}=1 a{150 200}=2 c{300 300}=4 b{59000 59990}=5 d{60009 60009}=6]" {
		t.Fatalf("newest end 60,009: FindSessionsEnding(all) = %s", got)
	}
	mustNotErr(t, ordered.Put(c, "d", sess(60_010, 60_010), 7))
	flush(t, a)
	if got := ending(0, 1<<62); got != "[d{60009 60009}=6 d{60010 60010}=7]" {
		t.Fatalf("newest end 60,010: FindSessionsEnding(all) = %s", got)
	}
	// A session of an expired interval is not written; one at the live interval's start is.
	mustNotErr(t, ordered.Put(c, "e", sess(59_999, 59_999), 8))
	mustNotErr(t, ordered.Put(c, "f", sess(60_000, 60_000), 9))
	if got := ending(0, 1<<62); got != "[f{60000 60000}=9 d{60009 60009}=6 d{60010 60010}=7]" {
		t.Fatalf("after writes to an expired and a live interval: FindSessionsEnding(all) = %s", got)
	}
	// A longer retention: intervals of half of it.
	long := Session("counts", 200*time.Second, serde.String, serde.Int64).TimeOrdered()
	a2, tk2, _ := windowTask(t, long)
	c2 := &tk2.ctx
	for i, end := range []int64{10_000, 99_999, 100_000, 310_000} {
		mustNotErr(t, long.Put(c2, "k", sess(end, end), int64(i)))
	}
	flush(t, a2)
	// Newest end 310,000 minus 200,000 is 110,000, in [100,000, 200,000): the interval before it went.
	var ends []int64
	mustNotErr(t, long.FindSessionsEnding(c2, 0, 1<<62, func(_ string, w windowed.Window, _ int64) bool {
		ends = append(ends, w.End)
		return true
	}))
	if fmt.Sprint(ends) != "[100000 310000]" {
		t.Fatalf("retention 200 s: ends kept %v, want [100000 310000]", ends)
	}
}
