package membership

// Snapshot returns the member's state, identity, epoch and what the application holds, all from
// one moment: a commit that needs the member ID, the epoch and the owned tasks together (so that it
// never pairs a new epoch with an old assignment) reads them here.
func (m *Manager) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap
}

// Changed returns a channel that is closed when the member's ID, epoch or state next changes: a
// caller that waits for the epoch to move (a commit refused with STALE_MEMBER_EPOCH) takes the
// channel, reads Snapshot, and waits on the channel instead of polling.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.changed
}
