package streammachine

import (
	"testing"
	"time"
)

// The record choice across a task's input partitions, as Kafka Streams documents max.task.idle.ms
// and its PartitionGroup: the smallest head timestamp first; wait for records known to be on the
// brokers (or not known either way); wait max.task.idle.ms for a partition known to be empty; -1
// never waits.

func buffered(ts int64) Head { return Head{Buffered: true, Timestamp: ts} }
func empty(lag int64) Head   { return Head{Lag: lag} }

func orderMachine(idle time.Duration) *Machine {
	return New(Config{Guarantee: AtLeastOnce, CommitInterval: time.Second, MaxTaskIdle: idle})
}

func TestNextInputChoosesTheSmallestHead(t *testing.T) {
	m := orderMachine(0)
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		heads []Head
		want  int
	}{
		{[]Head{buffered(30), buffered(10), buffered(20)}, 1},
		{[]Head{buffered(10), buffered(10)}, 0}, // a tie: the partition listed first
		{[]Head{buffered(11), buffered(10), buffered(10)}, 1},
		{[]Head{buffered(-5), buffered(0)}, 0},
		{[]Head{buffered(7)}, 0},
	} {
		if i, ok := m.NextInput(id("0_0"), tc.heads, now); !ok || i != tc.want {
			t.Errorf("%+v: chose %d (ok %v), want %d", tc.heads, i, ok, tc.want)
		}
	}
	if i, ok := m.NextInput(id("0_0"), []Head{empty(0), empty(0)}, now); ok {
		t.Errorf("nothing buffered: chose %d", i)
	}
	if i, ok := m.NextInput(id("0_0"), nil, now); ok {
		t.Errorf("no partitions: chose %d", i)
	}
}

// With the default max.task.idle.ms=0 a task waits only for records it knows of (or may not know
// of yet), never for a partition known to be empty.
func TestNextInputWaitsForRecordsOnTheBrokers(t *testing.T) {
	m := orderMachine(0)
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		heads []Head
		want  int // -1: waits
	}{
		{[]Head{buffered(50), empty(3)}, -1},
		{[]Head{empty(LagUnknown), buffered(50)}, -1},
		{[]Head{buffered(50), empty(0)}, 0},
		{[]Head{empty(0), buffered(50), empty(0)}, 1},
		{[]Head{buffered(50), empty(0), empty(1)}, -1},
	} {
		i, ok := m.NextInput(id("0_0"), tc.heads, now)
		if tc.want < 0 && (ok || i != -1) || tc.want >= 0 && (!ok || i != tc.want) {
			t.Errorf("%+v: chose %d (ok %v), want %d", tc.heads, i, ok, tc.want)
		}
	}
}

func TestNextInputIdlesForMaxTaskIdle(t *testing.T) {
	m := orderMachine(100 * time.Millisecond)
	t0 := time.Unix(100, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d * time.Millisecond) }
	task := id("1_2")
	lagging := []Head{buffered(50), empty(0)}
	step := func(when time.Time, heads []Head, want bool) {
		t.Helper()
		if i, ok := m.NextInput(task, heads, when); ok != want || !ok && i != -1 {
			t.Fatalf("at +%v with %+v: chose %d, ready %v; want ready %v (-1 when waiting)", when.Sub(t0), heads, i, ok, want)
		}
	}
	step(at(0), lagging, false) // found empty: the wait starts
	step(at(99), lagging, false)
	step(at(100), lagging, true) // max.task.idle.ms passed
	step(at(150), lagging, true) // and stays passed while the partition is empty
	// The partition gets records: when it runs dry again, the wait starts again.
	step(at(160), []Head{buffered(50), buffered(60)}, true)
	step(at(200), lagging, false)
	step(at(299), lagging, false)
	step(at(300), lagging, true)

	// Records on the brokers end the wait; found empty again later, it starts afresh.
	step(at(310), []Head{buffered(50), empty(4)}, false)
	step(at(320), lagging, false)
	step(at(419), lagging, false)
	step(at(420), lagging, true)

	// Another task's wait is its own.
	if _, ok := m.NextInput(id("1_3"), lagging, at(420)); ok {
		t.Fatal("another task found its partition empty at +420: ready at once, want it to wait")
	}
	// A task that stops forgets its waits.
	m.ForgetInputs(task)
	step(at(500), lagging, false)
	step(at(600), lagging, true)
}

// max.task.idle.ms=-1: a task processes what it has, whatever is known of its empty partitions.
func TestNextInputNeverWaitsWhenDisabled(t *testing.T) {
	m := orderMachine(NeverIdle)
	now := time.Unix(100, 0)
	for _, heads := range [][]Head{
		{buffered(50), empty(3)},
		{empty(LagUnknown), buffered(50)},
		{buffered(50), empty(0)},
	} {
		if i, ok := m.NextInput(id("0_0"), heads, now); !ok || !heads[i].Buffered {
			t.Errorf("%+v: chose %d (ok %v), want the buffered one", heads, i, ok)
		}
	}
	if _, ok := m.NextInput(id("0_0"), []Head{empty(3), empty(0)}, now); ok {
		t.Error("nothing buffered: ready")
	}
}

func TestRunLength(t *testing.T) {
	tsOf := func(ts ...int64) (func(int) int64, int) { return func(i int) int64 { return ts[i] }, len(ts) }
	for _, tc := range []struct {
		name   string
		heads  []Head
		chosen int
		ts     []int64
		want   int
	}{
		{"older than the other head, then as old (listed first)", []Head{buffered(5), buffered(10)}, 0, []int64{5, 7, 10, 11}, 3},
		{"as old as a head listed first", []Head{buffered(10), buffered(5)}, 1, []int64{5, 10, 12}, 1},
		{"the smallest of the other heads bounds it", []Head{buffered(1), buffered(30), buffered(20)}, 0, []int64{1, 19, 20, 21}, 3},
		{"ties at the smallest: the first listed of them decides", []Head{buffered(9), buffered(2), buffered(9)}, 1, []int64{2, 9}, 1},
		{"an empty partition does not bound it", []Head{buffered(3), empty(0)}, 0, []int64{3, 100, 200}, 3},
		{"out-of-order timestamps in the partition stop at the first too new", []Head{buffered(1), buffered(10)}, 0, []int64{1, 12, 2}, 1},
		{"one record", []Head{buffered(1), buffered(10)}, 0, []int64{1}, 1},
	} {
		ts, n := tsOf(tc.ts...)
		if got := RunLength(tc.heads, tc.chosen, ts, n); got != tc.want {
			t.Errorf("%s: run %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A negative max.task.idle.ms other than -1 waits as 0 does: for records known on the brokers, not
// for a partition known to be empty.
func TestNextInputOtherNegativeIdleIsZero(t *testing.T) {
	m := orderMachine(-5 * time.Millisecond)
	now := time.Unix(100, 0)
	if _, ok := m.NextInput(id("0_0"), []Head{buffered(50), empty(3)}, now); ok {
		t.Error("records known on the brokers: ready, want a wait")
	}
	if i, ok := m.NextInput(id("0_0"), []Head{buffered(50), empty(0)}, now); !ok || i != 0 {
		t.Errorf("partition known empty: chose %d (ok %v), want 0 at once", i, ok)
	}
}

// The values the shell passes through unchanged are Kafka Streams': max.task.idle.ms=-1 disables
// the wait (config.MaxTaskIdleDisabled, read from the key as is), and an unknown lag is -1 (its
// fetchedLags), which the shell tells from a known count of records to list the partition's end.
func TestKafkaValues(t *testing.T) {
	if NeverIdle != -time.Millisecond {
		t.Errorf("NeverIdle is %v, want -1 ms (max.task.idle.ms=-1)", NeverIdle)
	}
	if LagUnknown != -1 {
		t.Errorf("LagUnknown is %d, want -1", LagUnknown)
	}
}
