package windowed

import (
	"fmt"
	"time"
)

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
