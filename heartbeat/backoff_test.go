package heartbeat

import (
	"math"
	"math/big"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// maxRetryBackoff is the largest retry.backoff.max.ms Kafka accepts that still fits a time.Duration
// in milliseconds (Long.MAX_VALUE nanoseconds, as milliseconds).
const maxRetryBackoff = 9223372036854 * time.Millisecond

func TestBackoff(t *testing.T) {
	cases := []struct {
		name    string
		b       Backoff
		attempt int
		want    time.Duration
	}{
		{"first", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 0, 100 * time.Millisecond},
		{"doubles", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 1, 200 * time.Millisecond},
		{"doubles twice", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 2, 400 * time.Millisecond},
		{"doubles thrice", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 3, 800 * time.Millisecond},
		{"capped", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 4, time.Second},
		{"stays capped", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 40, time.Second},
		{"huge attempt", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, math.MaxInt, time.Second},
		{"negative attempt", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, -3, 100 * time.Millisecond},
		{"exactly the max", Backoff{Min: 250 * time.Millisecond, Max: time.Second}, 2, time.Second},
		{"max not a power of two of min", Backoff{Min: 300 * time.Millisecond, Max: time.Second}, 2, time.Second},
		{"just below half the max", Backoff{Min: 499 * time.Millisecond, Max: time.Second}, 1, 998 * time.Millisecond},
		{"half the max", Backoff{Min: 500 * time.Millisecond, Max: time.Second}, 1, time.Second},
		{"just above half the max", Backoff{Min: 501 * time.Millisecond, Max: time.Second}, 1, time.Second},
		{"min = max = the largest setting", Backoff{Min: maxRetryBackoff, Max: maxRetryBackoff}, 0, maxRetryBackoff},
		{"largest setting, later attempt", Backoff{Min: maxRetryBackoff, Max: maxRetryBackoff}, 38, maxRetryBackoff},
		{"largest setting, huge attempt", Backoff{Min: maxRetryBackoff, Max: maxRetryBackoff}, math.MaxInt, maxRetryBackoff},
		{"min 1ns to the largest duration", Backoff{Min: 1, Max: math.MaxInt64}, 62, 1 << 62},
		{"min 1ns, past the largest duration", Backoff{Min: 1, Max: math.MaxInt64}, 63, math.MaxInt64},
		{"min 1ns, far past", Backoff{Min: 1, Max: math.MaxInt64}, 1000, math.MaxInt64},
		{"min above max: max", Backoff{Min: time.Second, Max: 100 * time.Millisecond}, 0, 100 * time.Millisecond},
		{"min above max, later: max", Backoff{Min: time.Second, Max: 100 * time.Millisecond}, 5, 100 * time.Millisecond},
		{"no max: no growth", Backoff{Min: 100 * time.Millisecond}, 5, 100 * time.Millisecond},
		{"negative max: no growth", Backoff{Min: 100 * time.Millisecond, Max: -1}, 5, 100 * time.Millisecond},
		{"no max, largest min", Backoff{Min: math.MaxInt64}, math.MaxInt, math.MaxInt64},
		{"no min", Backoff{Max: time.Second}, 3, 0},
		{"no min, huge attempt", Backoff{Max: time.Second}, math.MaxInt, 0},
		{"1ns min", Backoff{Min: 1, Max: time.Second}, 0, 1},
		{"odd max: no rounding up", Backoff{Min: 3, Max: 7}, 1, 6},
		{"odd max: capped", Backoff{Min: 3, Max: 7}, 2, 7},
		{"attempt 63 from 1ns", Backoff{Min: 1, Max: math.MaxInt64}, 64, math.MaxInt64},
		{"attempt 65 from 1ns", Backoff{Min: 1, Max: math.MaxInt64}, 65, math.MaxInt64},
		{"negative min", Backoff{Min: -time.Second, Max: time.Second}, 3, 0},
		{"nothing", Backoff{}, 3, 0},
	}
	for _, c := range cases {
		if got := c.b.Delay(c.attempt); got != c.want {
			t.Errorf("%s: Delay(%d) = %v, want %v", c.name, c.attempt, got, c.want)
		}
	}
}

func TestBackoffJitter(t *testing.T) {
	r := func(v float64) func() float64 { return func() float64 { return v } }
	cases := []struct {
		name    string
		b       Backoff
		attempt int
		want    time.Duration
	}{
		{"low end: -20%", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(0)}, 0, 80 * time.Millisecond},
		{"middle: unchanged", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(0.5)}, 0, 100 * time.Millisecond},
		{"high end: +20%", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(0.75)}, 1, 220 * time.Millisecond},
		{"never above the max", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(0.999)}, 10, time.Second},
		{"below the max at the max", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(0)}, 10, 800 * time.Millisecond},
		{"largest setting, high end", Backoff{Min: maxRetryBackoff, Max: maxRetryBackoff, Rand: r(0.999)}, 0, maxRetryBackoff},
		{"largest duration, high end", Backoff{Min: math.MaxInt64, Max: math.MaxInt64, Rand: r(0.999)}, 0, math.MaxInt64},
		{"no max: jitter both ways", Backoff{Min: 100 * time.Millisecond, Rand: r(0.75)}, 3, 110 * time.Millisecond},
		{"no max, largest min: saturates", Backoff{Min: math.MaxInt64, Rand: r(0.999)}, 0, math.MaxInt64},
		{"a Rand above 1 counts as 1", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(1e9)}, 0, 120 * time.Millisecond},
		{"a Rand far below 0 counts as 0", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(-1e9)}, 0, 80 * time.Millisecond},
		{"a Rand of -2 counts as 0", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(-2)}, 0, 80 * time.Millisecond},
		{"a NaN Rand counts as 0", Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: r(math.NaN())}, 1, 160 * time.Millisecond},
		{"jitter lands exactly on the largest duration", Backoff{Min: math.MaxInt64, Max: math.MaxInt64, Rand: r(0.5)}, 0, math.MaxInt64},
		{"jitter lands exactly on the max", Backoff{Min: time.Second, Max: time.Second, Rand: r(0.5)}, 0, time.Second},
		{"1ns with jitter", Backoff{Min: 1, Max: time.Second, Rand: r(0)}, 0, 0},
		{"no min, no wait", Backoff{Rand: r(0.5)}, 0, 0},
	}
	for _, c := range cases {
		if got := c.b.Delay(c.attempt); got != c.want {
			t.Errorf("%s: Delay(%d) = %v, want %v", c.name, c.attempt, got, c.want)
		}
	}
}

// expected is Delay without jitter, computed independently with big integers: min·2ⁿ capped at max.
func expected(minD, maxD time.Duration, attempt int) time.Duration {
	if minD <= 0 {
		return 0
	}
	if maxD <= 0 {
		return minD
	}
	n := max(attempt, 0)
	if n > 200 {
		n = 200 // far past any cap
	}
	v := new(big.Int).Lsh(big.NewInt(int64(minD)), uint(n))
	if v.Cmp(big.NewInt(int64(maxD))) > 0 {
		return maxD
	}
	return time.Duration(v.Int64())
}

func TestBackoffProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Min: time.Duration(rapid.OneOf(rapid.Int64Range(1, 1<<40), rapid.Int64Range(1, math.MaxInt64)).Draw(t, "min")),
			Max: time.Duration(rapid.OneOf(rapid.Int64Range(1, 1<<40), rapid.Int64Range(1, math.MaxInt64)).Draw(t, "max")),
		}
		n := rapid.OneOf(rapid.IntRange(-2, 70), rapid.IntRange(0, math.MaxInt)).Draw(t, "attempt")
		d := b.Delay(n)
		if d < 0 || d > b.Max {
			t.Fatalf("Delay(%d) = %v outside [0, %v]", n, d, b.Max)
		}
		if want := expected(b.Min, b.Max, n); d != want {
			t.Fatalf("Delay(%d) = %v, want min·2ⁿ capped = %v", n, d, want)
		}
		if n < math.MaxInt && b.Delay(n+1) < d {
			t.Fatalf("Delay(%d) = %v > Delay(%d) = %v: not monotone", n, d, n+1, b.Delay(n+1))
		}
		// With jitter: within ±20% of the plain value, and never above Max.
		r := rapid.Float64Range(0, 0.9999999).Draw(t, "rand")
		b.Rand = func() float64 { return r }
		j := b.Delay(n)
		if j < 0 || j > b.Max {
			t.Fatalf("with jitter Delay(%d) = %v outside [0, %v]", n, j, b.Max)
		}
		lo, hi := 0.8*float64(d)*(1-1e-9), min(1.2*float64(d)*(1+1e-9), float64(b.Max))
		if float64(j) < lo-1 || float64(j) > hi+1 {
			t.Fatalf("with jitter %v Delay(%d) = %v, want within [%v, %v]", r, n, j, time.Duration(lo), time.Duration(hi))
		}
	})
}

func FuzzBackoffDelay(f *testing.F) {
	f.Add(int64(maxRetryBackoff), int64(maxRetryBackoff), 40, 0.5)
	f.Add(int64(50*time.Millisecond), int64(time.Second), 38, 0.999)
	f.Add(int64(1), int64(math.MaxInt64), 64, 0.0)
	f.Fuzz(func(t *testing.T, minD, maxD int64, attempt int, r float64) {
		b := Backoff{Min: time.Duration(minD), Max: time.Duration(maxD)}
		d := b.Delay(attempt)
		if d < 0 || (maxD > 0 && d > b.Max) || d != expected(b.Min, b.Max, attempt) {
			t.Fatalf("%+v Delay(%d) = %v, want %v", b, attempt, d, expected(b.Min, b.Max, attempt))
		}
		b.Rand = func() float64 { return r }
		if j := b.Delay(attempt); j < 0 || (maxD > 0 && j > b.Max) {
			t.Fatalf("%+v with rand %v: Delay(%d) = %v", b, r, attempt, j)
		}
	})
}
