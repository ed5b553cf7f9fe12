// Package config is the single source of truth for a member's configuration. It uses the key
// names of Kafka Streams where they exist (application.id, topology.epoch, …), parses them from a
// Java-style properties file or a map, fills defaults, and validates everything before any network
// I/O, returning one error that lists every bad key.
package config
