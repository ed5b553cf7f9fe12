// Package tasks holds the units of work a streams group assigns: task IDs (subtopology and
// partition), sorted immutable task sets, the Active/Standby/Warmup assignment, the diff between
// two assignments, the mapping from a task to its input partitions, and task offsets.
package tasks
