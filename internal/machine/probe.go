package machine

import (
	"log/slog"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
)

// probeState tracks the capability probe that comes before the first heartbeat.
type probeState struct {
	started  bool
	inFlight bool
	done     bool // the cluster answered; the member joined or failed
	failures int
	at       time.Time // next probe; zero while one is in flight or after done
}

func (m *Machine) probeAt() time.Time {
	if !m.probe.started || m.probe.done || m.probe.inFlight {
		return time.Time{}
	}
	return m.probe.at
}

func (m *Machine) sendProbe() []Action {
	m.probe.inFlight = true
	return []Action{ProbeCapabilities{Timeout: m.cfg.RequestTimeout}}
}

// capabilitiesKnown joins when the cluster can run this member, fails when it cannot or refuses this
// client's login or certificate (heartbeat.AuthErrorOf), and retries after backoff when it did not
// answer. The first failure to reach the cluster is logged, so an
// unreachable cluster does not go unnoticed, and so is the recovery.
func (m *Machine) capabilitiesKnown(now time.Time, in CapabilitiesKnown) []Action {
	if !m.probe.inFlight || m.probe.done {
		return nil
	}
	m.probe.inFlight = false
	if ae := heartbeat.AuthErrorOf(in.Err); ae != nil {
		// A refused login or an untrusted certificate does not pass by waiting: retrying after
		// backoff would only hide a configuration mistake behind a warning (and hammer the broker's
		// authenticator). Stop with the typed error instead, as a fatal heartbeat error does.
		m.probe.done = true
		return m.fail(ae)
	}
	if in.Err != nil {
		m.probe.failures++
		m.probe.at = now.Add(m.cfg.Backoff.Delay(m.probe.failures - 1))
		if m.probe.failures == 1 {
			return []Action{Log{Level: slog.LevelWarn, Msg: "cannot reach the cluster yet; retrying", Attrs: []any{"err", in.Err}}}
		}
		return nil
	}
	m.probe.done = true
	var out []Action
	if m.probe.failures > 0 {
		out = append(out, Log{Level: slog.LevelInfo, Msg: "the cluster answers now"})
	}
	if err := m.checkCapabilities(in.Caps); err != nil {
		return append(out, m.fail(err)...)
	}
	m.offsets.supported = in.Caps.TaskOffsets()
	m.epoch = heartbeat.EpochJoin
	m.hb.at = now
	return append(out, m.transition(Joining)...)
}

// checkCapabilities says why the cluster cannot run this member, or nil.
func (m *Machine) checkCapabilities(c heartbeat.Capabilities) error {
	// Static membership is not checked here: the probe asks one broker, and during a rolling upgrade
	// the group's coordinator may be a 4.4 broker while that one is not (or the other way round).
	// The coordinator judges; a 4.2/4.3 one answers INVALID_REQUEST "Static membership is not yet
	// supported.", which is fatal with heartbeat.ErrNotSupported.
	return c.Check()
}
