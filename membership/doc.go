// Package membership makes a process a member of a streams group. A Manager runs the member's state
// machine (a plain, deterministic value with no goroutines, clocks or I/O, kept internal) on one
// background goroutine, sends heartbeats, invokes the application's listener and publishes events.
package membership
