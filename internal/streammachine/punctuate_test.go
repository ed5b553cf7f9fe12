package streammachine

import (
	"slices"
	"testing"
	"time"
)

// The punctuation schedule is Kafka Streams': wall-clock one interval after scheduling; stream-time
// on the interval's grid from 0 (due at the first record); one call however many intervals were
// missed, the next time the first grid point after now.
func TestPunctuationSchedule(t *testing.T) {
	m := New(Config{})
	a, b := id("0_0"), id("0_1")
	wall := m.Schedule(a, false, 100*time.Millisecond, 1_000)
	stream := m.Schedule(a, true, 50*time.Millisecond, 1_000)
	other := m.Schedule(b, true, 10*time.Millisecond, 1_000)
	if wall == stream || stream == other || wall == 0 {
		t.Fatalf("IDs %d %d %d; want distinct, not 0", wall, stream, other)
	}
	if due := m.Due(a, false, 1_099); due != nil {
		t.Errorf("wall-clock due %v before its interval", due)
	}
	if due := m.Due(a, false, 1_100); !slices.Equal(due, []uint64{wall}) {
		t.Errorf("wall-clock due %v at its interval", due)
	}
	if got := m.Schedules(a)[0].Next; got != 1_200 {
		t.Errorf("next %d; want 1200", got)
	}
	// Missed intervals: one call, next on the grid after now.
	if due := m.Due(a, false, 1_555); !slices.Equal(due, []uint64{wall}) || m.Schedules(a)[0].Next != 1_600 {
		t.Errorf("after missed intervals: due %v, next %d; want one call and next 1600", due, m.Schedules(a)[0].Next)
	}
	// Stream time: due at the first record, whatever its time, then on the grid of 50 from 0.
	if due := m.Due(a, true, 7); !slices.Equal(due, []uint64{stream}) || m.Schedules(a)[1].Next != 50 {
		t.Errorf("stream time 7: due %v, next %d; want it due and next 50", due, m.Schedules(a)[1].Next)
	}
	if due := m.Due(a, true, 49); due != nil {
		t.Errorf("stream time 49: due %v", due)
	}
	if due := m.Due(a, true, 50); !slices.Equal(due, []uint64{stream}) || m.Schedules(a)[1].Next != 100 {
		t.Errorf("stream time 50: due %v, next %d", due, m.Schedules(a)[1].Next)
	}
	// Tasks are apart.
	if due := m.Due(b, false, 5_000); due != nil {
		t.Errorf("task b has no wall-clock punctuation: %v", due)
	}
	// Cancelled: reported at once, never due, dropped from the schedule at the next round.
	m.Cancel(a, stream)
	if !m.Cancelled(a, stream) || m.Cancelled(a, wall) || !m.Cancelled(a, 999) || !m.Cancelled(b, wall) {
		t.Error("Cancelled answers wrong")
	}
	if due := m.Due(a, true, 1_000); due != nil || len(m.Schedules(a)) != 1 {
		t.Errorf("after a cancel: due %v, %d scheduled; want nothing due and it dropped", due, len(m.Schedules(a)))
	}
	m.Cancel(a, 999) // not scheduled: nothing happens
	if len(m.Schedules(a)) != 1 {
		t.Error("cancelling an unknown ID changed the schedule")
	}
	// Unschedule: the task's punctuations go, the others stay.
	m.Unschedule(a)
	if len(m.Schedules(a)) != 0 || m.Due(a, false, 99_999) != nil || len(m.Schedules(b)) != 1 {
		t.Errorf("after Unschedule: %v %v", m.Schedules(a), m.Schedules(b))
	}
	// Due in scheduling order.
	x := m.Schedule(b, true, 20*time.Millisecond, 0)
	if due := m.Due(b, true, 100); !slices.Equal(due, []uint64{other, x}) {
		t.Errorf("due %v; want both, in the order scheduled", due)
	}
	if p := m.Schedules(b)[1]; p.ID != x || p.Task != b || !p.StreamTime || p.Every != 20 || p.Next != 120 || p.Cancelled {
		t.Errorf("schedule %+v", p)
	}
}
