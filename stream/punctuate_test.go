package stream

import (
	"errors"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// punctTask is an active, running task of subtopology 0 with no stores, and its Context.
func punctTask(a *App) (*task, *Context) {
	t := &task{id: tid("0", 0), active: true, streamTime: -1}
	startFrom(&testing.T{}, a, t.id, nil)
	startRunning(&testing.T{}, a, t.id)
	return t, &Context{app: a, task: t}
}

// fired collects a punctuator's calls.
type fired struct {
	at  []int64
	err error
}

func (f *fired) fn(c *Context, at time.Time) error {
	f.at = append(f.at, at.UnixMilli())
	if c.Timestamp() != at {
		return errors.New("the punctuation's Context has another timestamp than its time")
	}
	return f.err
}

func (f *fired) want(t *testing.T, what string, at ...int64) {
	t.Helper()
	if len(f.at) != len(at) {
		t.Fatalf("%s: fired at %v, want %v", what, f.at, at)
	}
	for i := range at {
		if f.at[i] != at[i] {
			t.Fatalf("%s: fired at %v, want %v", what, f.at, at)
		}
	}
}

func TestWallClockPunctuation(t *testing.T) {
	a, clk := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var f fired
	start := clk.t.UnixMilli()
	if _, err := c.Schedule(100*time.Millisecond, WallClock, f.fn); err != nil {
		t.Fatal(err)
	}
	mustNotErr(t, a.punctuate(tk, WallClock, start+99))
	f.want(t, "before the interval")
	mustNotErr(t, a.punctuate(tk, StreamTime, start+500))
	f.want(t, "stream time does not fire a wall-clock punctuation")
	mustNotErr(t, a.punctuate(tk, WallClock, start+100))
	f.want(t, "at the interval", start+100)
	mustNotErr(t, a.punctuate(tk, WallClock, start+199))
	f.want(t, "before the next", start+100)
	// Missed intervals: one call at the clock's time, then the next due time after it.
	mustNotErr(t, a.punctuate(tk, WallClock, start+550))
	f.want(t, "after missed intervals", start+100, start+550)
	mustNotErr(t, a.punctuate(tk, WallClock, start+599))
	f.want(t, "the next due time is after now", start+100, start+550)
	mustNotErr(t, a.punctuate(tk, WallClock, start+600))
	f.want(t, "on the grid again", start+100, start+550, start+600)
}

// Stream-time punctuations are Kafka Streams' (StreamTask.schedule aligns them to 0 and
// PunctuationSchedule.next skips missed intervals on that grid): the first fires at the task's
// first record after the schedule, the next ones at each multiple of the interval the stream time
// reaches, once however many were missed.
func TestStreamTimePunctuation(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var f fired
	if _, err := c.Schedule(100*time.Millisecond, StreamTime, f.fn); err != nil {
		t.Fatal(err)
	}
	mustNotErr(t, a.punctuate(tk, StreamTime, -1))
	f.want(t, "no stream time yet")
	mustNotErr(t, a.punctuate(tk, StreamTime, 500))
	f.want(t, "the first record", 500)
	mustNotErr(t, a.punctuate(tk, WallClock, 10_000))
	f.want(t, "wall clock does not fire a stream-time punctuation", 500)
	mustNotErr(t, a.punctuate(tk, StreamTime, 599))
	f.want(t, "before the next multiple", 500)
	mustNotErr(t, a.punctuate(tk, StreamTime, 600))
	f.want(t, "at the next multiple", 500, 600)
	mustNotErr(t, a.punctuate(tk, StreamTime, 950))
	if len(f.at) != 3 || a.mach.Schedules(tk.id)[0].Next != 1000 {
		t.Fatalf("after missed intervals: fired %v, next %d; want one more call and next 1000", f.at, a.mach.Schedules(tk.id)[0].Next)
	}
	mustNotErr(t, a.punctuate(tk, StreamTime, 999))
	f.want(t, "next after now", 500, 600, 950)
	mustNotErr(t, a.punctuate(tk, StreamTime, 1000))
	f.want(t, "next", 500, 600, 950, 1000)
}

func TestStreamTimePunctuationStartsAtStreamTimeZero(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var f fired
	_, err := c.Schedule(100*time.Millisecond, StreamTime, f.fn)
	mustNotErr(t, err)
	mustNotErr(t, a.punctuate(tk, StreamTime, 0)) // a first record at the epoch
	f.want(t, "a record with timestamp 0 is a stream time", 0)
	if a.mach.Schedules(tk.id)[0].Next != 100 {
		t.Fatalf("next %d, want 100", a.mach.Schedules(tk.id)[0].Next)
	}
}

// A punctuation scheduled once the task has a stream time fires at its next record all the same,
// and then on the grid.
func TestStreamTimePunctuationScheduledAfterRecords(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	tk.streamTime = 250
	var f fired
	_, err := c.Schedule(100*time.Millisecond, StreamTime, f.fn)
	mustNotErr(t, err)
	mustNotErr(t, a.punctuate(tk, StreamTime, 260))
	f.want(t, "the next record", 260)
	if a.mach.Schedules(tk.id)[0].Next != 300 {
		t.Fatalf("next %d, want 300 (the grid of 100 ms from 0)", a.mach.Schedules(tk.id)[0].Next)
	}
}

func TestPunctuationsOnlyForProcessingTasks(t *testing.T) {
	a, clk := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var f fired
	_, err := c.Schedule(time.Millisecond, WallClock, f.fn)
	mustNotErr(t, err)
	later := clk.t.UnixMilli() + 10
	tk.active = false
	mustNotErr(t, a.punctuate(tk, WallClock, later))
	tk.active = true
	startFrom(t, a, tk.id, map[tasks.TopicPartition]string{}) // started again from its commit: restoring
	mustNotErr(t, a.punctuate(tk, WallClock, later))
	f.want(t, "standby or not running")
	if len(a.mach.Schedules(tk.id)) != 0 {
		t.Fatal("a stopped task keeps its punctuations")
	}
	startRunning(t, a, tk.id)
	clear(tk.punctuators) // as the shell's stopTask does
	_, err = c.Schedule(time.Millisecond, WallClock, f.fn)
	mustNotErr(t, err)
	mustNotErr(t, a.punctuate(tk, WallClock, later))
	f.want(t, "processing", later)
}

func TestPunctuationCancel(t *testing.T) {
	a, clk := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var f, g fired
	cancel, err := c.Schedule(10*time.Millisecond, WallClock, f.fn)
	mustNotErr(t, err)
	_, err = c.Schedule(10*time.Millisecond, WallClock, g.fn)
	mustNotErr(t, err)
	cancel()
	now := clk.t.UnixMilli() + 10
	mustNotErr(t, a.punctuate(tk, WallClock, now))
	f.want(t, "cancelled")
	g.want(t, "the other one", now)
	if scheduled(a, tk) != 1 {
		t.Errorf("%d punctuations left, want the cancelled one dropped", scheduled(a, tk))
	}
}

func TestPunctuationErrors(t *testing.T) {
	a, clk := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	f, g := fired{err: errBoom}, fired{}
	_, err := c.Schedule(10*time.Millisecond, WallClock, f.fn)
	mustNotErr(t, err)
	_, err = c.Schedule(10*time.Millisecond, WallClock, g.fn)
	mustNotErr(t, err)
	now := clk.t.UnixMilli() + 10
	err = a.punctuate(tk, WallClock, now)
	var pe *ProcessingError
	if !errors.As(err, &pe) || pe.Task != tk.id || pe.Topic != "" || !errors.Is(err, errBoom) {
		t.Fatalf("LogAndFail: %v", err)
	}
	g.want(t, "after a failed punctuation, the others of the round wait")
	if scheduled(a, tk) != 2 {
		t.Fatal("a failed round keeps its punctuations")
	}

	a.cfg.Runtime.OnProcessingError = config.LogAndContinue
	mustNotErr(t, a.punctuate(tk, WallClock, now+10))
	f.want(t, "LogAndContinue", now, now+10)
	g.want(t, "LogAndContinue goes on", now+10)
}

func TestScheduleValidation(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var f fired
	if _, err := c.Schedule(999*time.Microsecond, WallClock, f.fn); err == nil ||
		err.Error() != "stream: a punctuation interval must be at least 1 ms, not 999µs" {
		t.Errorf("short interval: %v", err)
	}
	for _, typ := range []PunctuationType{0, 3} {
		if _, err := c.Schedule(time.Second, typ, f.fn); err == nil || err.Error() != "stream: unknown punctuation type "+string(rune('0'+typ)) {
			t.Errorf("type %d: %v", typ, err)
		}
	}
	if _, err := c.Schedule(time.Second, WallClock, nil); err == nil || err.Error() != "stream: Schedule needs a function" {
		t.Errorf("nil fn: %v", err)
	}
	if scheduled(a, tk) != 0 {
		t.Fatal("a refused Schedule scheduled something")
	}
	cancel, err := c.Schedule(time.Millisecond, StreamTime, f.fn)
	if err != nil || cancel == nil || scheduled(a, tk) != 1 {
		t.Fatalf("1 ms: %v", err)
	}
}

// Kafka Streams lets a punctuator schedule another punctuation (ProcessorContext.schedule is
// allowed in punctuate); here it is accepted (no error) and must then fire.
func TestScheduleFromAPunctuationIsKept(t *testing.T) {
	a, clk := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var inner fired
	did := false
	_, err := c.Schedule(10*time.Millisecond, WallClock, func(pc *Context, _ time.Time) error {
		if did {
			return nil
		}
		did = true
		_, err := pc.Schedule(10*time.Millisecond, WallClock, inner.fn)
		return err
	})
	mustNotErr(t, err)
	start := clk.t.UnixMilli()
	clk.t = clk.t.Add(10 * time.Millisecond)
	mustNotErr(t, a.punctuate(tk, WallClock, start+10))
	if scheduled(a, tk) != 2 {
		t.Fatalf("BUG (stream/loop.go punctuate): a punctuation scheduled from a punctuator is accepted, then dropped: "+
			"%d punctuations left, want 2", scheduled(a, tk))
	}
	mustNotErr(t, a.punctuate(tk, WallClock, start+20))
	inner.want(t, "the inner punctuation", start+20)
}

// Punctuator's doc: it is called "with the time it fired at (the clock's time, or the stream
// time)"; Kafka Streams (PunctuationQueue.maybePunctuate) passes the current stream time too.
func TestStreamTimePunctuationIsGivenTheStreamTime(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	tk, c := punctTask(a)
	var f fired
	_, err := c.Schedule(100*time.Millisecond, StreamTime, f.fn)
	mustNotErr(t, err)
	mustNotErr(t, a.punctuate(tk, StreamTime, 500))
	mustNotErr(t, a.punctuate(tk, StreamTime, 950)) // due at 600; the stream time is 950
	if len(f.at) != 2 || f.at[1] != 950 {
		t.Fatalf("BUG (stream/loop.go punctuate): a stream-time punctuation due at 600 and fired by stream time 950 was "+
			"given %v, not the stream time 950: punctuate passes p.next (at = time.UnixMilli(p.next)) for StreamTime", f.at)
	}
}
