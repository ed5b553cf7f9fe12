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
