// Package scheduler is the local stand-in for an EventBridge schedule rule:
// it calls a function on a fixed interval, never two runs at once, and
// builds the "Scheduled Event" that EventBridge would deliver.
//
// Locally the sync function's rate(3 minutes) becomes
//
//	go scheduler.Every(ctx, interval, func(ctx context.Context) error {
//		_, err := runner.Invoke(ctx, scheduler.ScheduledEvent("reqtrace-sync", time.Now()))
//		return err
//	}, logger)
//
// with the interval overridable for tests.
package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Account and Region fill the account, region and rule ARN of the events
// ScheduledEvent builds; reqtrace's functions do not read them.
const (
	Account = "000000000000"
	Region  = "us-east-1"
)

// Every calls fire every interval until ctx is done, then waits for a run in
// progress to return and returns. The first call comes one interval after
// the start, as with a rate() rule. A tick that comes while the previous run
// is still going is skipped and logged: runs never overlap, unlike
// EventBridge, which would start another invocation. Errors from fire are
// logged, and the schedule goes on. fire gets ctx, so canceling ctx asks the
// running call to stop. A nil logger discards the logs. Every panics if
// interval is not positive, as time.NewTicker does.
func Every(ctx context.Context, interval time.Duration, fire func(ctx context.Context) error, logger *slog.Logger) {
	if interval <= 0 {
		panic("scheduler: non-positive interval")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var running atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case tick := <-ticker.C:
			if !running.CompareAndSwap(false, true) {
				logger.WarnContext(ctx, "scheduled run skipped: previous run still going",
					slog.Time("tick", tick), slog.Duration("interval", interval))
				continue
			}
			wg.Go(func() {
				defer running.Store(false)
				start := time.Now()
				if err := fire(ctx); err != nil {
					logger.ErrorContext(ctx, "scheduled run failed",
						slog.Time("tick", tick), slog.Duration("duration", time.Since(start)), slog.String("err", err.Error()))
					return
				}
				logger.DebugContext(ctx, "scheduled run done",
					slog.Time("tick", tick), slog.Duration("duration", time.Since(start)))
			})
		}
	}
}

// ScheduledEvent returns the JSON of the event EventBridge delivers for the
// schedule rule ruleName firing at now: version "0", a random id,
// detail-type "Scheduled Event", source "aws.events", the account, the time
// (UTC, whole seconds), the region, the rule's ARN in resources and an empty
// detail.
func ScheduledEvent(ruleName string, now time.Time) []byte {
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	h := hex.EncodeToString(id[:])
	ev := events.EventBridgeEvent{
		Version:    "0",
		ID:         h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32],
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		AccountID:  Account,
		Time:       now.UTC().Truncate(time.Second),
		Region:     Region,
		Resources:  []string{"arn:aws:events:" + Region + ":" + Account + ":rule/" + ruleName},
		Detail:     json.RawMessage("{}"),
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic("scheduler: encode scheduled event: " + err.Error()) // a fixed shape cannot fail
	}
	return b
}
