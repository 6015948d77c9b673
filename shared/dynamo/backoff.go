package dynamo

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff sleeps before retry attempt n (1-based): exponential from 20 ms,
// capped at 1 s, with full jitter.
func Backoff(ctx context.Context, n int) error {
	d := min(20*time.Millisecond<<min(n-1, 6), time.Second)
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
