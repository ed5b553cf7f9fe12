package membership

// Snapshot returns the member's state, identity, epoch and what the application holds, all from
// one moment: a commit that needs the member ID, the epoch and the owned tasks together (so that it
// never pairs a new epoch with an old assignment) reads them here.
func (m *Manager) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap
}
