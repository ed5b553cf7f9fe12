package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRuntimeDefaultsAreKafkaStreams(t *testing.T) {
	r := Default("app").Runtime
	want := Runtime{Guarantee: AtLeastOnce, CommitInterval: 30 * time.Second, StateCleanupDelay: 10 * time.Minute}
	if r != want {
		t.Fatalf("defaults %+v, want %+v", r, want)
	}
}

func TestRuntimeHandlersBySimpleOrFullName(t *testing.T) {
	for val, want := range map[string]ErrorPolicy{
		"LogAndFailProcessingExceptionHandler":                                     LogAndFail,
		"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler": LogAndContinue,
		" LogAndContinueProcessingExceptionHandler ":                               LogAndContinue,
	} {
		c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyProcessingExceptionHandler: val})
		if err != nil || c.Runtime.OnProcessingError != want {
			t.Errorf("%q: %v, %v; want %v", val, c.Runtime.OnProcessingError, err, want)
		}
	}
	c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyDeserializationExceptionHandler: "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"})
	if err != nil || c.Runtime.OnDeserializationError != LogAndContinue || c.Runtime.OnProcessingError != LogAndFail {
		t.Fatalf("deserialization handler: %+v, %v", c.Runtime, err)
	}
}

func TestRuntimeRefusals(t *testing.T) {
	for _, tc := range []struct{ key, val, reason string }{
		{KeyProcessingGuarantee, "exactly_once", "removed in Kafka Streams 4.0"},
		{KeyProcessingGuarantee, "exactly_once_beta", "use exactly_once_v2"},
		{KeyProcessingGuarantee, "at-least-once", "must be at_least_once or exactly_once_v2"},
		{KeyCommitInterval, "-1", "must be >= 0"},
		{KeyCommitInterval, "1s", "LONG"},
		{KeyStateCleanupDelay, "-5", "must be >= 0"},
		{KeyProcessingExceptionHandler, "LogAndContinueExceptionHandler", "LogAndFailProcessingExceptionHandler or LogAndContinueProcessingExceptionHandler"},
		{KeyDeserializationExceptionHandler, "com.example.MyHandler", "LogAndFailExceptionHandler or LogAndContinueExceptionHandler"},
		{KeyDefaultDeserializationExceptionHandler, "x", "LogAndFailExceptionHandler"},
		{KeyAutoOffsetReset, "none", "earliest"},
	} {
		_, err := FromMap(map[string]string{KeyApplicationID: "a", tc.key: tc.val})
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Keys) != 1 || ce.Keys[0].Key != tc.key || !strings.Contains(ce.Keys[0].Reason, tc.reason) {
			t.Errorf("%s=%s: %v; want one problem on %s saying %q", tc.key, tc.val, err, tc.key, tc.reason)
		}
	}
	c := Default("a")
	c.Runtime.Guarantee = "exactly_once"
	c.Runtime.CommitInterval = -time.Second
	var ce *Error
	if err := c.Validate(); !errors.As(err, &ce) || len(ce.Keys) != 2 {
		t.Fatalf("Validate of exactly_once and a negative commit interval: %v", err)
	}
}

// TestExactlyOnceCommitsEvery100msUnlessTold: Kafka Streams' default commit interval under
// exactly_once_v2 is 100 ms; an explicit commit.interval.ms wins.
func TestExactlyOnceCommitsEvery100msUnlessTold(t *testing.T) {
	c, err := FromMap(map[string]string{KeyApplicationID: "a", KeyProcessingGuarantee: "exactly_once_v2"})
	if err != nil || c.Runtime.Guarantee != ExactlyOnceV2 || c.Runtime.CommitInterval != 100*time.Millisecond {
		t.Fatalf("exactly_once_v2 alone: %+v, %v", c.Runtime, err)
	}
	c, err = FromMap(map[string]string{KeyApplicationID: "a", KeyProcessingGuarantee: "exactly_once_v2", KeyCommitInterval: "2500"})
	if err != nil || c.Runtime.CommitInterval != 2500*time.Millisecond {
		t.Fatalf("exactly_once_v2 with commit.interval.ms=2500: %+v, %v", c.Runtime, err)
	}
	c, err = FromMap(map[string]string{KeyApplicationID: "a"})
	if err != nil || c.Runtime.CommitInterval != 30*time.Second {
		t.Fatalf("at_least_once: %+v, %v", c.Runtime, err)
	}
}
