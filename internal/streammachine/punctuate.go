package streammachine

import (
	"slices"
	"time"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// The punctuation schedule, as Kafka Streams keeps it (StreamTask.schedule, PunctuationQueue): a
// wall-clock punctuation first falls due one interval after it was scheduled; a stream-time one on
// the interval's grid from time 0, so it fires at the task's next record and then at every
// multiple of the interval the stream time reaches. A due punctuation fires once, however many
// intervals were missed, and its next time is the first on its grid after now. The functions are
// the shell's; the schedule is data here.
//
// Like the open transaction it is fed by methods rather than Step: a stream-time punctuation is
// checked at every record.

// Punctuation is one scheduled punctuation (a copy, for reading).
type Punctuation struct {
	ID   uint64
	Task tasks.ID
	// StreamTime: on the task's stream time; else on the wall clock.
	StreamTime bool
	// Every and Next are unix milliseconds (stream time for StreamTime).
	Every, Next int64
	Cancelled   bool
}

// Schedule schedules a punctuation of task every interval (at least 1 ms; the shell checks) at
// nowMs (the wall clock, unix ms) and returns its ID.
func (m *Machine) Schedule(task tasks.ID, streamTime bool, every time.Duration, nowMs int64) uint64 {
	m.lastPunctuation++
	p := &Punctuation{ID: m.lastPunctuation, Task: task, StreamTime: streamTime, Every: every.Milliseconds()}
	if !streamTime {
		p.Next = nowMs + p.Every
	}
	if m.schedules == nil {
		m.schedules = map[tasks.ID][]*Punctuation{}
	}
	m.schedules[task] = append(m.schedules[task], p)
	return p.ID
}

// Cancel cancels punctuation id: it does not fire again, also when a round of Due already returned
// it (the shell checks Cancelled before firing each).
func (m *Machine) Cancel(task tasks.ID, id uint64) {
	for _, p := range m.schedules[task] {
		if p.ID == id {
			p.Cancelled = true
		}
	}
}

// Cancelled reports whether punctuation id of task was cancelled (or is not scheduled).
func (m *Machine) Cancelled(task tasks.ID, id uint64) bool {
	for _, p := range m.schedules[task] {
		if p.ID == id {
			return p.Cancelled
		}
	}
	return true
}

// Due returns the punctuations of task of the given type due at now (unix ms: the wall clock, or
// the task's stream time), in the order they were scheduled, and moves each to its next time on
// its grid after now. Cancelled punctuations are dropped first. nil when none is due.
func (m *Machine) Due(task tasks.ID, streamTime bool, now int64) []uint64 {
	ps := m.schedules[task]
	if len(ps) == 0 {
		return nil
	}
	ps = slices.DeleteFunc(ps, func(p *Punctuation) bool { return p.Cancelled })
	m.schedules[task] = ps
	var due []uint64
	for _, p := range ps {
		if p.StreamTime != streamTime || now < p.Next {
			continue
		}
		p.Next += ((now-p.Next)/p.Every + 1) * p.Every
		due = append(due, p.ID)
	}
	return due
}

// Unschedule drops every punctuation of task: it stopped (revoked, demoted, rewound), and its Init
// schedules anew when it processes again.
func (m *Machine) Unschedule(task tasks.ID) { delete(m.schedules, task) }

// Schedules returns task's punctuations (copies), in the order they were scheduled.
func (m *Machine) Schedules(task tasks.ID) []Punctuation {
	out := make([]Punctuation, 0, len(m.schedules[task]))
	for _, p := range m.schedules[task] {
		out = append(out, *p)
	}
	return out
}
