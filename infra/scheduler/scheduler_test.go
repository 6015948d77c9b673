package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// runEvery runs Every in the background and returns a function that cancels
// it and waits for it to return.
func runEvery(t *testing.T, interval time.Duration, fire func(context.Context) error, logger *slog.Logger) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		Every(ctx, interval, fire, logger)
	}()
	return func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("Every did not return after cancel")
		}
	}
}

func TestEveryFiresUntilCanceled(t *testing.T) {
	t.Parallel()
	const want = 5
	var runs atomic.Int32
	reached := make(chan struct{})
	stop := runEvery(t, 10*time.Millisecond, func(ctx context.Context) error {
		if runs.Add(1) == want {
			close(reached)
		}
		return nil
	}, nil)
	select {
	case <-reached:
	case <-time.After(5 * time.Second):
		t.Fatalf("%d runs after 5s, want %d", runs.Load(), want)
	}
	stop()
	after := runs.Load()
	time.Sleep(50 * time.Millisecond)
	if got := runs.Load(); got != after {
		t.Errorf("%d runs after Every returned", got-after)
	}
}

func TestEveryNeverOverlaps(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var active, maxActive, runs atomic.Int32
	stop := runEvery(t, 5*time.Millisecond, func(ctx context.Context) error {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		runs.Add(1)
		time.Sleep(40 * time.Millisecond) // eight ticks long
		return nil
	}, slog.New(slog.NewJSONHandler(&logs, nil)))
	for runs.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if m := maxActive.Load(); m != 1 {
		t.Errorf("%d runs at once, want 1", m)
	}
	if !strings.Contains(logs.String(), "scheduled run skipped") {
		t.Errorf("no skipped tick logged; logs:\n%s", logs.String())
	}
}

func TestEveryWaitsForTheRunningCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var finished atomic.Bool
	stop := runEvery(t, 5*time.Millisecond, func(ctx context.Context) error {
		select {
		case <-started:
			return nil
		default:
			close(started)
		}
		<-ctx.Done() // the run sees the cancellation...
		time.Sleep(30 * time.Millisecond)
		finished.Store(true) // ...and Every waits for it to end
		return ctx.Err()
	}, nil)
	<-started
	stop()
	if !finished.Load() {
		t.Error("Every returned while a run was still going")
	}
}

func TestEveryLogsErrors(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var runs atomic.Int32
	done := make(chan struct{})
	stop := runEvery(t, 5*time.Millisecond, func(ctx context.Context) error {
		if runs.Add(1) == 2 {
			close(done)
		}
		return errors.New("deliver batch: tracker down")
	}, slog.New(slog.NewJSONHandler(&logs, nil)))
	<-done // a second run shows the schedule survives the first error
	stop()
	var line map[string]any
	first, _, _ := strings.Cut(logs.String(), "\n")
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("log %q: %v", first, err)
	}
	if line["level"] != "ERROR" || line["msg"] != "scheduled run failed" || line["err"] != "deliver batch: tracker down" {
		t.Errorf("log line = %v", line)
	}
}

func TestEveryRejectsNonPositiveInterval(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Every(%v) did not panic", d)
				}
			}()
			Every(t.Context(), d, func(context.Context) error { return nil }, nil)
		}()
	}
}

func TestScheduledEvent(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CEST", 2*3600)
	now := time.Date(2025, 6, 1, 14, 3, 9, 987654321, paris)
	raw := ScheduledEvent("reqtrace-sync", now)

	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	wantRaw := map[string]string{
		"version":     `"0"`,
		"detail-type": `"Scheduled Event"`,
		"source":      `"aws.events"`,
		"account":     `"000000000000"`,
		"time":        `"2025-06-01T12:03:09Z"`,
		"region":      `"us-east-1"`,
		"resources":   `["arn:aws:events:us-east-1:000000000000:rule/reqtrace-sync"]`,
		"detail":      `{}`,
	}
	for k, want := range wantRaw {
		if got := string(fields[k]); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	if len(fields) != len(wantRaw)+1 {
		t.Errorf("fields = %d, want %d (the documented ones and id)", len(fields), len(wantRaw)+1)
	}

	var ev events.EventBridgeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(ev.ID) {
		t.Errorf("id = %q, want a UUID", ev.ID)
	}
	var other events.EventBridgeEvent
	if err := json.Unmarshal(ScheduledEvent("reqtrace-sync", now), &other); err != nil || other.ID == ev.ID {
		t.Errorf("two events share id %q (err %v)", ev.ID, err)
	}
}
