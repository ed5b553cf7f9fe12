package windowed

import (
	"fmt"
	"time"
)

// SessionWindows are sessions of activity (Kafka Streams' SessionWindows): a key's records at most
// the inactivity gap apart belong to one session, [first record's time, last record's time], both
// ends included; a record that bridges two sessions merges them. A session takes records until the
// stream time passes its end plus the gap and the grace period.
//
// Build them with OfInactivityGapWithNoGrace or OfInactivityGapAndGrace; times are taken in whole
// milliseconds, and an invalid definition (a gap that is not positive, a negative grace) is refused
// when the program is built (Validate).
type SessionWindows struct {
	gap, grace int64
}

// OfInactivityGapWithNoGrace returns sessions that end after gap without records and close as soon
// as the stream time passes their end plus the gap (Kafka Streams'
// SessionWindows.ofInactivityGapWithNoGrace).
func OfInactivityGapWithNoGrace(gap time.Duration) SessionWindows {
	return SessionWindows{gap: gap.Milliseconds()}
}

// OfInactivityGapAndGrace returns sessions that end after gap without records and take records up
// to grace after they close (Kafka Streams' SessionWindows.ofInactivityGapAndGrace).
func OfInactivityGapAndGrace(gap, grace time.Duration) SessionWindows {
	return SessionWindows{gap: gap.Milliseconds(), grace: grace.Milliseconds()}
}

// Gap is the inactivity gap in milliseconds.
func (w SessionWindows) Gap() int64 { return w.gap }

// Grace is how long in milliseconds after a session closes, in stream time, it still takes records.
func (w SessionWindows) Grace() int64 { return w.grace }

// Validate returns an error wrapping ErrWindows when the sessions cannot be used, saying why, as
// Kafka Streams refuses them.
func (w SessionWindows) Validate() error {
	switch {
	case w.gap <= 0:
		return fmt.Errorf("%w: the inactivity gap must be at least 1 ms, not %d ms", ErrWindows, w.gap)
	case w.grace < 0:
		return fmt.Errorf("%w: the grace period must not be negative, not %d ms", ErrWindows, w.grace)
	}
	return nil
}

// String describes the sessions.
func (w SessionWindows) String() string {
	return fmt.Sprintf("SessionWindows{gap=%d ms, grace=%d ms}", w.gap, w.grace)
}

// SlidingWindows are windows of a fixed time difference that slide with the records (Kafka Streams'
// SlidingWindows): two records are in a common window when their timestamps are at most the
// difference apart; each window [start, start+difference] holds both ends, and a key's windows are
// those its records' timestamps define (one ending at each record, one starting just after it
// when a later record falls in it). A window takes records until the stream time passes its end
// plus the grace period.
//
// Build them with OfTimeDifferenceWithNoGrace or OfTimeDifferenceAndGrace; an invalid definition (a
// difference that is not positive, a negative grace) is refused when the program is built.
type SlidingWindows struct {
	difference, grace int64
}

// OfTimeDifferenceWithNoGrace returns sliding windows of difference that close as soon as the
// stream time passes their end (Kafka Streams' SlidingWindows.ofTimeDifferenceWithNoGrace).
func OfTimeDifferenceWithNoGrace(difference time.Duration) SlidingWindows {
	return SlidingWindows{difference: difference.Milliseconds()}
}

// OfTimeDifferenceAndGrace returns sliding windows of difference that take records up to grace
// after their end (Kafka Streams' SlidingWindows.ofTimeDifferenceAndGrace).
func OfTimeDifferenceAndGrace(difference, grace time.Duration) SlidingWindows {
	return SlidingWindows{difference: difference.Milliseconds(), grace: grace.Milliseconds()}
}

// TimeDifference is the windows' time difference (their size) in milliseconds.
func (w SlidingWindows) TimeDifference() int64 { return w.difference }

// Grace is how long in milliseconds after its end, in stream time, a window still takes records.
func (w SlidingWindows) Grace() int64 { return w.grace }

// Validate returns an error wrapping ErrWindows when the windows cannot be used, saying why, as
// Kafka Streams refuses them.
func (w SlidingWindows) Validate() error {
	switch {
	case w.difference <= 0:
		return fmt.Errorf("%w: the time difference must be at least 1 ms, not %d ms", ErrWindows, w.difference)
	case w.grace < 0:
		return fmt.Errorf("%w: the grace period must not be negative, not %d ms", ErrWindows, w.grace)
	}
	return nil
}

// String describes the windows.
func (w SlidingWindows) String() string {
	return fmt.Sprintf("SlidingWindows{timeDifference=%d ms, grace=%d ms}", w.difference, w.grace)
}

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
