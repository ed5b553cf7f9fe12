package machine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The poll timer (Kafka's onPollTimerExpired): a member whose application does not poll within
// max.poll.interval.ms leaves the group with its tasks lost (OnAllTasksLost, then a leave heartbeat
// at epoch -1, or -2 for a static member, as Java's leaveGroupEpoch), waits in STALE, and rejoins at
// epoch 0 on the next poll. A hung processing loop therefore stops holding its tasks, where before
// it held them for as long as the heartbeat goroutine ran.
//
// The timer runs only once the application polled at least once (Polled): a hand-written
// application that never calls Manager.Poll keeps the behaviour it had, with only the broker's
// rebalance timeout on revocations. The machine has no clock, so it does not see every poll: when
// the deadline from the last poll it knows comes, it asks (AskPoll) for the time of the latest one
// and expires only if that is still too old.

// Polled says the application polled at At (the latest poll it knows of); the answer to AskPoll too.
type Polled struct{ At time.Time }

// AskPoll asks for the time of the application's latest poll; answer with Polled.
type AskPoll struct{}

func (Polled) isInput()   {}
func (AskPoll) isAction() {}

// PollTimeoutError is the error of an EventPollTimerExpired: the application did not poll for
// Since, more than MaxPollInterval.
type PollTimeoutError struct {
	Since, MaxPollInterval time.Duration
}

func (e *PollTimeoutError) Error() string {
	return fmt.Sprintf("the application did not poll for %v (max.poll.interval.ms %v): the member left the group and "+
		"its tasks were lost; it rejoins on the next poll. Processing takes too long: do less per loop, or raise "+
		"max.poll.interval.ms", e.Since, e.MaxPollInterval)
}

// pollState is what the machine knows of the application's polls.
type pollState struct {
	enabled bool      // the application polled at least once
	last    time.Time // the latest poll known
	asking  bool      // an AskPoll is out
	stale   bool      // left because of the timer; the next poll rejoins
}

// maxPoll is max.poll.interval.ms (the rebalance timeout the member joins with).
func (m *Machine) maxPoll() time.Duration {
	return time.Duration(m.cfg.Join.RebalanceTimeout) * time.Millisecond
}

// pollAt is when the poll timer expires unless a later poll is known (zero: off).
func (m *Machine) pollAt() time.Time {
	p := &m.poll
	if !p.enabled || p.asking || p.stale || m.maxPoll() <= 0 || !m.heartbeating() || m.state == PrepareLeaving {
		return time.Time{}
	}
	return p.last.Add(m.maxPoll())
}

func (m *Machine) askPoll() []Action {
	m.poll.asking = true
	return []Action{AskPoll{}}
}

// polled takes a poll time: the first one enables the timer, a stale member rejoins, and the answer
// to AskPoll expires the timer when even the latest poll is too old.
func (m *Machine) polled(now time.Time, in Polled) []Action {
	p := &m.poll
	asked := p.asking
	p.asking = false
	p.enabled = true
	if in.At.After(p.last) {
		p.last = in.At
	}
	if p.stale {
		if m.state != Stale {
			return nil // still leaving: the poll that comes after rejoins
		}
		p.stale = false
		p.last = now
		m.epoch = heartbeat.EpochJoin
		m.hb.at, m.hb.failures, m.hb.rejoinDelay = now, 0, 0
		m.offsets.trigger = true
		m.rec.hasTarget, m.rec.target = false, tasks.Assignment{}
		m.b.Reset()
		m.session.rejoined()
		return append([]Action{Log{Level: slog.LevelInfo, Msg: "the application polls again; rejoining"}}, m.transition(Joining)...)
	}
	if !asked || !m.heartbeating() || m.state == PrepareLeaving {
		return nil
	}
	if since := now.Sub(p.last); since >= m.maxPoll() {
		return m.pollExpired(since)
	}
	return nil
}

// pollExpired leaves the group with the tasks lost, as Java's onPollTimerExpired.
func (m *Machine) pollExpired(since time.Duration) []Action {
	epoch := heartbeat.EpochLeave
	if m.cfg.Join.InstanceID != "" {
		epoch = heartbeat.EpochLeaveStatic
	}
	m.poll.stale = true
	m.leave = &leaveIntent{epoch: epoch, poll: true}
	m.abortReconciliation()
	m.hb.collecting = nil
	m.hb.at = later(m.hb.at, m.hb.regular)
	out := m.transition(PrepareLeaving)
	out = append(out, m.emit(Event{Kind: EventPollTimerExpired, Err: &PollTimeoutError{Since: since, MaxPollInterval: m.maxPoll()}}))
	return append(out, m.enqueue(job{op: opLeave})...)
}
