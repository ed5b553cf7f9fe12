package machine

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// offsetState is what the member knows about task offsets (KIP-1071, Kafka 4.4;
// StreamsGroupHeartbeatRequestManager).
type offsetState struct {
	// supported is the one flag that says whether the broker takes task offsets: from the cluster's
	// capabilities at first, then from every answer (v1 with an acceptable recovery lag >= 0).
	supported     bool
	acceptableLag int64
	brokerEvery   time.Duration // TaskOffsetIntervalMs of the last answer
	lastAt        time.Time     // when offsets were last sent (the interval clock)
	// trigger is set when the owned assignment changed or after an error: the next heartbeat sends
	// offsets whatever the interval says.
	trigger bool
}

// offsetsInterval is the interval at which offsets go: the broker's, or the configured one if
// longer; 0 when neither is known.
func (m *Machine) offsetsInterval() time.Duration {
	return max(m.offsets.brokerEvery, m.cfg.TaskOffsetInterval)
}

func (m *Machine) offsetsIntervalDue(now time.Time) bool {
	every := m.offsetsInterval()
	return every > 0 && !now.Before(m.offsets.lastAt.Add(every))
}

// wantsOffsets reports whether the heartbeat due now may carry task offsets, so the application is
// asked for them only then. A warm-up task may be hot, which only the offsets can tell.
func (m *Machine) wantsOffsets(now time.Time) bool {
	if !m.cfg.ReportsOffsets || !m.offsets.supported {
		return false
	}
	switch m.state {
	case Joining, Reconciling, Acknowledging, Stable:
	default:
		return false
	}
	return m.state == Joining || m.offsets.trigger || !m.rec.current.Warmup.IsEmpty() || m.offsetsIntervalDue(now)
}

// offsetsMayGo reports whether the collected offsets go with the heartbeat now: on join, after an
// assignment change or an error, when the interval elapsed, or when a warm-up task is hot.
func (m *Machine) offsetsMayGo(now time.Time, offs, ends tasks.Offsets) bool {
	if !m.wantsOffsets(now) || (offs == nil && ends == nil) {
		return false
	}
	return m.state == Joining || m.offsets.trigger || m.offsetsIntervalDue(now) || m.hotWarmup(offs, ends)
}

// hotWarmup reports whether a warm-up task is within the acceptable recovery lag, in which case the
// broker wants offsets at once to move the active task (Kafka 4.4's
// StreamsGroupHeartbeatRequestManager).
func (m *Machine) hotWarmup(offsets, ends tasks.Offsets) bool {
	if m.offsets.acceptableLag < 0 || offsets == nil || ends == nil {
		return false
	}
	for id := range m.rec.current.Warmup.All() {
		o, ok1 := offsets[id]
		e, ok2 := ends[id]
		if !ok1 || !ok2 || o == tasks.UnknownOffset || e == tasks.UnknownOffset || o < 0 || e < 0 {
			continue
		}
		if e-o <= m.offsets.acceptableLag {
			return true
		}
	}
	return false
}

// offsetsSent records a built heartbeat: the trigger is used up when offsets were allowed to go,
// and the interval clock moves only when some were in the request.
func (m *Machine) offsetsSent(now time.Time, allowed bool, req *kmsg.StreamsGroupHeartbeatRequest) {
	m.hb.offsetsAtBefore = m.offsets.lastAt
	if allowed {
		m.offsets.trigger = false
	}
	if req.TaskOffsets != nil || req.TaskEndOffsets != nil {
		m.offsets.lastAt = now
	}
}

// offsetsFailed: the heartbeat failed, so its offsets did not count; the next one resends them all.
func (m *Machine) offsetsFailed() {
	m.offsets.lastAt = m.hb.offsetsAtBefore
	m.offsets.trigger = true
}

// offsetsAnswered learns from a successful answer whether and how the broker takes offsets.
// The answer's version is the one kgo negotiated with the coordinator that answered: a v0 request
// went without offsets (heartbeat.ForBroker), so the builder forgets any it thinks it sent, and when
// a v1 coordinator takes offsets again (a rolling upgrade, a coordinator move) they all go at once.
func (m *Machine) offsetsAnswered(r *heartbeat.Response) {
	was := m.offsets.supported
	if r.Version < 1 {
		m.b.ForgetOffsets()
	}
	m.offsets.supported = r.Version >= 1 && r.AcceptableRecoveryLag >= 0
	if m.offsets.supported && !was {
		m.offsets.trigger = true
	}
	m.offsets.acceptableLag = r.AcceptableRecoveryLag
	m.offsets.brokerEvery = r.TaskOffsetInterval
}
