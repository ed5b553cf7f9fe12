package windowed

import (
	"fmt"
	"time"
)

// JoinWindows are the windows of a stream-stream join (Kafka Streams' JoinWindows): two records of
// one key join when the other's timestamp is at most Before earlier and at most After later than
// this one's; a record is kept for joins for the windows' size (Before plus After) plus the grace.
//
// Build them with JoinOfTimeDifferenceWithNoGrace or JoinOfTimeDifferenceAndGrace (Before and After
// both the difference), then Before or After to make them asymmetric (a bound may be negative, as
// long as the size is not); an invalid definition (a negative size or grace) is refused when the
// program is built.
type JoinWindows struct {
	before, after, grace int64
}

// JoinOfTimeDifferenceWithNoGrace returns join windows of difference before and after
// (Kafka Streams' JoinWindows.ofTimeDifferenceWithNoGrace).
func JoinOfTimeDifferenceWithNoGrace(difference time.Duration) JoinWindows {
	return JoinWindows{before: difference.Milliseconds(), after: difference.Milliseconds()}
}

// JoinOfTimeDifferenceAndGrace returns join windows of difference before and after, and a grace
// period (Kafka Streams' JoinWindows.ofTimeDifferenceAndGrace).
func JoinOfTimeDifferenceAndGrace(difference, grace time.Duration) JoinWindows {
	return JoinWindows{before: difference.Milliseconds(), after: difference.Milliseconds(), grace: grace.Milliseconds()}
}

// Before returns the windows with the other record at most d earlier (Kafka Streams' before).
func (w JoinWindows) Before(d time.Duration) JoinWindows {
	w.before = d.Milliseconds()
	return w
}

// After returns the windows with the other record at most d later (Kafka Streams' after).
func (w JoinWindows) After(d time.Duration) JoinWindows {
	w.after = d.Milliseconds()
	return w
}

// BeforeMs and AfterMs are the bounds in milliseconds; Size is their sum; Grace the grace period.
func (w JoinWindows) BeforeMs() int64 { return w.before }

// AfterMs is how much later, in milliseconds, the other record may be.
func (w JoinWindows) AfterMs() int64 { return w.after }

// Size is Before plus After, in milliseconds.
func (w JoinWindows) Size() int64 { return w.before + w.after }

// Grace is the grace period in milliseconds.
func (w JoinWindows) Grace() int64 { return w.grace }

// Validate returns an error wrapping ErrWindows when the windows cannot be used, saying why, as
// Kafka Streams refuses them.
func (w JoinWindows) Validate() error {
	switch {
	case w.before+w.after < 0:
		return fmt.Errorf("%w: the join window's size (before %d ms + after %d ms) must not be negative", ErrWindows, w.before, w.after)
	case w.grace < 0:
		return fmt.Errorf("%w: the grace period must not be negative, not %d ms", ErrWindows, w.grace)
	}
	return nil
}

// String describes the windows.
func (w JoinWindows) String() string {
	return fmt.Sprintf("JoinWindows{before=%d ms, after=%d ms, grace=%d ms}", w.before, w.after, w.grace)
}
