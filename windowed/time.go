package windowed

import (
	"fmt"
	"time"
)

// TimeWindows are windows of a fixed size, each starting Advance after the one before (Kafka
// Streams' TimeWindows): tumbling when Advance equals the size (the default), hopping (overlapping)
// when it is smaller. Windows are aligned to the epoch: they start at multiples of Advance. A record
// belongs to every window whose [start, start+size) holds its timestamp; a window takes records
// until the stream time passes its end plus the grace period, later ones are dropped.
//
// Build them with OfSizeWithNoGrace or OfSizeAndGrace, then AdvanceBy for hopping windows. Times are
// taken in whole milliseconds, as Kafka Streams takes them; an invalid definition (a size or advance
// that is not positive, an advance larger than the size, a negative grace) is refused when the
// program is built (Validate).
type TimeWindows struct {
	size, advance, grace int64
}

// OfSizeWithNoGrace returns tumbling windows of size that close as soon as the stream time passes
// their end (Kafka Streams' TimeWindows.ofSizeWithNoGrace).
func OfSizeWithNoGrace(size time.Duration) TimeWindows {
	return TimeWindows{size: size.Milliseconds(), advance: size.Milliseconds()}
}

// OfSizeAndGrace returns tumbling windows of size that take records up to grace after their end in
// stream time (Kafka Streams' TimeWindows.ofSizeAndGrace).
func OfSizeAndGrace(size, grace time.Duration) TimeWindows {
	return TimeWindows{size: size.Milliseconds(), advance: size.Milliseconds(), grace: grace.Milliseconds()}
}

// AdvanceBy returns the windows starting every advance (hopping windows when advance is smaller
// than the size; Kafka Streams' advanceBy).
func (w TimeWindows) AdvanceBy(advance time.Duration) TimeWindows {
	w.advance = advance.Milliseconds()
	return w
}

// Size is the windows' size in milliseconds.
func (w TimeWindows) Size() int64 { return w.size }

// Advance is the time in milliseconds between the starts of two windows.
func (w TimeWindows) Advance() int64 { return w.advance }

// Grace is how long in milliseconds after its end, in stream time, a window still takes records.
func (w TimeWindows) Grace() int64 { return w.grace }

// Validate returns an error wrapping ErrWindows when the windows cannot be used, saying why, as
// Kafka Streams refuses them.
func (w TimeWindows) Validate() error {
	switch {
	case w.size <= 0:
		return fmt.Errorf("%w: the window size must be at least 1 ms, not %d ms", ErrWindows, w.size)
	case w.advance <= 0 || w.advance > w.size:
		return fmt.Errorf("%w: the advance must be at least 1 ms and at most the window size (%d ms), not %d ms", ErrWindows, w.size, w.advance)
	case w.grace < 0:
		return fmt.Errorf("%w: the grace period must not be negative, not %d ms", ErrWindows, w.grace)
	}
	return nil
}

// WindowsFor returns the windows a record of timestamp ts belongs to, in order of their start: with
// tumbling windows one, with hopping windows size/advance or fewer near the epoch (no window starts
// before 0), as Kafka Streams' windowsFor; none for a time before the epoch. Invalid windows (see
// Validate) hold no record.
func (w TimeWindows) WindowsFor(ts int64) []Window {
	if ts < 0 || w.advance <= 0 || w.size <= 0 {
		return nil // no window holds a time before the epoch, and invalid windows hold nothing
	}
	start := max(0, ts-w.size+w.advance) / w.advance * w.advance
	var out []Window
	for start <= ts {
		out = append(out, Window{Start: start, End: endOf(start, w.size)})
		if start > ts-w.advance {
			break // the next would start after ts (and adding could overflow near the largest time)
		}
		start += w.advance
	}
	return out
}

// String describes the windows.
func (w TimeWindows) String() string {
	return fmt.Sprintf("TimeWindows{size=%d ms, advance=%d ms, grace=%d ms}", w.size, w.advance, w.grace)
}
