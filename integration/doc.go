// Package integration runs the library against a real Apache Kafka broker (started from Maven
// Central jars by kafka/broker.sh) and, for interoperability, a real Kafka Streams peer. The
// helpers here find or start the broker, create topics and clean groups between tests.
package integration
