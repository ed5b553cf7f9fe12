// Package admin describes, lists and deletes streams groups, routing each request to the group
// coordinator, compares a group's topology (epoch and topology ID) with a local one, and manages an
// empty group's offsets and internal topics: reset offsets (PlanReset, ResetOffsets), delete offsets
// (DeleteOffsets) and delete the group's repartition and changelog topics (DeleteInternalTopics,
// DeleteWithInternalTopics). Each of these refuses a group with members (ErrGroupNotEmpty).
package admin
