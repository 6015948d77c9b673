package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Durations is a sample of measured times.
type Durations []time.Duration

// Percentile returns the p-th percentile (0 < p ≤ 100) by the
// nearest-rank method: the smallest value with at least p% of the sample
// at or below it. It is 0 for an empty sample.
func (d Durations) Percentile(p float64) time.Duration { return percentile(d, p) }

// Median returns the median (the mean of the middle two for an even
// sample).
func (d Durations) Median() time.Duration { return median(d) }

// percentile is the p-th percentile (0 < p ≤ 100) of v by nearest rank, 0
// for an empty sample.
func percentile[T ~int64 | ~float64](v []T, p float64) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// median is the median of v (the mean of the middle two for an even
// sample), 0 for an empty one.
func median[T ~int64 | ~float64](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Max returns the largest value.
func (d Durations) Max() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return slices.Max(d)
}

// ms formats a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}

// secs formats a long duration in seconds.
func secs(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// whole formats a configured duration in whole seconds ("29 s").
func whole(d time.Duration) string {
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}

// ceilDiv is ⌈a/b⌉.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// mb formats a byte count in MB (10^6 bytes).
func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
