package heartbeat

import (
	"math"
	"time"
)

// Backoff is exponential backoff with jitter between a minimum and a maximum (retry.backoff.ms and
// retry.backoff.max.ms): attempt n waits about min·2ⁿ, capped at max, spread by ±20% so that members
// that failed together do not retry together. It is a plain value: the jitter comes from Rand, so
// tests and the state machine stay deterministic.
//
// Delay saturates: whatever Min, Max and attempt are (Kafka accepts retry.backoff.max.ms up to
// Long.MAX_VALUE), it never overflows and never returns a negative duration. With Max > 0 it never
// exceeds Max (not even with jitter, and not when Max < Min); with Max <= 0 it does not grow (every
// attempt waits about Min).
type Backoff struct {
	Min, Max time.Duration
	// Rand returns a number in [0, 1); nil means no jitter.
	Rand func() float64
}

// jitter is the spread around the exponential value, as a fraction.
const jitter = 0.2

// Delay returns the wait before retry number attempt (0 for the first retry; a negative attempt
// counts as 0). It is 0 when Min < 1ns. A Rand that leaves [0, 1] is clamped into it (NaN counts as 0).
func (b Backoff) Delay(attempt int) time.Duration {
	if b.Min < 1 {
		return 0
	}
	// grow is where doubling stops; ceiling is what even jitter may not pass.
	grow, ceiling := b.Max, b.Max
	if b.Max <= 0 {
		grow, ceiling = b.Min, math.MaxInt64
	}
	d := min(b.Min, grow)
	// d·2ⁿ passes grow exactly when d > grow/2ⁿ (rounded down); shifting by 64 or more gives 0.
	if n := uint(max(attempt, 0)); d > grow>>n {
		d = grow
	} else {
		d <<= n
	}
	if b.Rand != nil {
		r := b.Rand()
		if math.IsNaN(r) {
			r = 0
		}
		f := float64(d) * (1 - jitter + 2*jitter*min(max(r, 0), 1))
		if f >= float64(ceiling) { // also catches values past MaxInt64, where a conversion is undefined
			d = ceiling
		} else {
			d = time.Duration(f)
		}
	}
	return d
}
