// Package membership makes a process a member of a streams group. Its state machine is a plain,
// deterministic value (no goroutines, clocks or I/O); the Manager runs it on one background
// goroutine, sends heartbeats, invokes the application's listener and publishes events.
package membership
