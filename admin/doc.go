// Package admin describes, lists and deletes streams groups, routing each request to the group
// coordinator, and compares a group's topology (epoch and topology ID) with a local one.
package admin
