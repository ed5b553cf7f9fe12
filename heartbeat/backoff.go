package heartbeat

import "time"

// Backoff is exponential backoff with jitter between a minimum and a maximum (retry.backoff.ms and
// retry.backoff.max.ms): attempt n waits about min·2ⁿ, capped at max, spread by ±20% so that members
// that failed together do not retry together. It is a plain value: the jitter comes from Rand, so
// tests and the state machine stay deterministic.
type Backoff struct {
	Min, Max time.Duration
	// Rand returns a number in [0, 1); nil means no jitter.
	Rand func() float64
}

// jitter is the spread around the exponential value, as a fraction.
const jitter = 0.2

// Delay returns the wait before retry number attempt (0 for the first retry).
func (b Backoff) Delay(attempt int) time.Duration {
	if b.Min <= 0 {
		return 0
	}
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if b.Rand != nil {
		f := 1 - jitter + 2*jitter*b.Rand()
		d = time.Duration(float64(d) * f)
		if b.Max > 0 && d > b.Max {
			d = b.Max
		}
	}
	return d
}
