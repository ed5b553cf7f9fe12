// Package machine is a streams group member's state machine (KIP-1071's client side, as Kafka's
// StreamsMembershipManager and StreamsGroupHeartbeatRequestManager do it): a plain, deterministic
// value that takes Inputs and returns Actions, with no goroutines, clock or I/O.
//
// It is internal because applications never drive it: membership.Manager runs it and carries out
// its actions, and membership re-exports the vocabulary an application reads (State, Event,
// Snapshot, CloseMode and the errors). Keeping the Input and Action types here, as etcd raft keeps
// its messages in raftpb and franz-go keeps its group state machine unexported, leaves
// membership's documentation to the application's API.
package machine
