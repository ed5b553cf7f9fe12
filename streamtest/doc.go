// Package streamtest runs a stream application in-process, without a broker, as Kafka Streams'
// TopologyTestDriver does: pipe typed records into its input topics, read typed records from its
// output topics, read its stores. It runs the application on the runtime itself (stream.App, its
// machine, its stores, its commits), against an in-process fake Kafka cluster that answers the
// streams-group protocol for one member holding every task; so what a test sees is what the
// runtime does, not a second implementation of it.
//
// Every topic has one partition (as in TopologyTestDriver, so every subtopology has one task,
// <subtopology>_0). Reading an output topic first waits until the application processed every record
// piped so far, through its repartition topics too, and committed (commit.interval.ms is 10 ms here
// unless set): so outputs are read in the order they were written, once each. The DSL's record
// cache is off unless statestore.cache.max.bytes is set (StateStoreCacheMaxBytes): every update is
// written, as TopologyTestDriver writes them for records piped one at a time.
//
// Time: stream time advances with the timestamps of the records piped; the wall clock is the real
// one, moved ahead by AdvanceWallClock (TopologyTestDriver's advanceWallClockTime), which returns
// once the wall-clock punctuations due by then fired and their writes are committed. Unlike
// TopologyTestDriver's, the clock also goes on by itself, so wall-clock punctuations also fire in
// real time.
package streamtest
