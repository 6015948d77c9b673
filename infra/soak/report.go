package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is what a run measured and found; soak-report.json holds it.
type Report struct {
	// Seed replays the run's operations and faults (SOAK_SEED).
	Seed       uint64  `json:"seed"`
	TargetRate float64 `json:"targetRate"`
	Duration   string  `json:"duration"`
	// Requests counts the HTTP requests of the load (not the final checks);
	// RateReached is Requests per second of load; Dropped counts operations
	// due while every worker was busy.
	Requests    int     `json:"requests"`
	RateReached float64 `json:"rateReached"`
	Dropped     int     `json:"dropped"`
	// Kinds has, per kind of request or invocation, its count, latency
	// percentiles (ms) and answers by status.
	Kinds map[string]*KindStats `json:"kinds"`
	// Errors counts the answers that were not 2xx, by status ("transport"
	// for a connection error, "invocation" for a failed scheduled run).
	Errors map[string]int `json:"errors"`
	// Faults counts the faults injected, by kind; AsyncRetries the
	// scheduled invocations retried after a function error.
	Faults       map[string]int `json:"faults"`
	AsyncRetries int            `json:"asyncRetries"`
	// ThrottledCalls counts the DynamoDB calls answered with
	// ProvisionedThroughputExceededException.
	ThrottledCalls int64 `json:"throttledCalls"`
	// SyncRoundsToConverge is how many rounds of the scheduled functions
	// the final checks needed until the two sides agreed.
	SyncRoundsToConverge int `json:"syncRoundsToConverge"`
	// BaselineGaps counts baseline numbers skipped (each a violation: numbers are dense)
	// after taking their number (docs/baselines.md, "Numbering").
	BaselineGaps int          `json:"baselineGaps"`
	Invariants   []*Invariant `json:"invariants"`
	// Violations sums the invariants' violations; it must be 0.
	Violations int        `json:"violations"`
	FDs        []FDSample `json:"openFiles,omitempty"`
	// Goroutines lists each idle function process at the end.
	Goroutines []GoroutineSample `json:"goroutines,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
}

// KindStats describes one kind of request.
type KindStats struct {
	Count    int            `json:"count"`
	P50ms    float64        `json:"p50ms"`
	P99ms    float64        `json:"p99ms"`
	Statuses map[string]int `json:"statuses"`
}

// Invariant is one invariant: how many things it checked, how many broke
// it, and the first examples (with the history that shows them).
type Invariant struct {
	Name     string   `json:"name"`
	Checked  int      `json:"checked"`
	Violated int      `json:"violated"`
	Examples []string `json:"examples,omitempty"`
}

// FDSample is a function process's open files after the warm-up and at the end.
// GoroutineSample is one idle function process at the end of the run: the
// goroutines it listed, and the most an idle process of its function
// listed before the load.
type GoroutineSample struct {
	Function    string `json:"function"`
	PID         int    `json:"pid"`
	Invocations int    `json:"invocations"`
	Fresh       int    `json:"fresh"`
	End         int    `json:"end"`
}

type FDSample struct {
	PID    int `json:"pid"`
	Before int `json:"before"`
	After  int `json:"after"`
}

// report summarizes the load's records (before the final checks add theirs).
func (h *harness) report() *Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	rep := &Report{Seed: h.cfg.Seed, TargetRate: h.cfg.Rate, Duration: h.cfg.Duration.String(), Dropped: h.dropped,
		Kinds: map[string]*KindStats{}, Errors: map[string]int{}, Faults: maps.Clone(h.faults),
		AsyncRetries: h.retries, ThrottledCalls: h.throttle.Injected()}
	lat := map[string][]time.Duration{}
	for _, r := range h.records {
		k := rep.Kinds[r.kind]
		if k == nil {
			k = &KindStats{Statuses: map[string]int{}}
			rep.Kinds[r.kind] = k
		}
		k.Count++
		status := strconv.Itoa(r.status)
		switch {
		case r.status == 0:
			status = "transport"
		case r.status == -1:
			status = "invocation"
		}
		k.Statuses[status]++
		if r.status < 200 || r.status > 299 {
			rep.Errors[status]++
		}
		lat[r.kind] = append(lat[r.kind], r.end.Sub(r.start))
		if !strings.HasPrefix(r.kind, "invoke:") {
			rep.Requests++
		}
	}
	for kind, ds := range lat {
		slices.Sort(ds)
		rep.Kinds[kind].P50ms = ms(percentile(ds, 0.50))
		rep.Kinds[kind].P99ms = ms(percentile(ds, 0.99))
	}
	if d := h.loadEnd.Sub(h.loadStart).Seconds(); d > 0 {
		rep.RateReached = float64(int(float64(rep.Requests)/d*10)) / 10
	}
	return rep
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()/100) / 10 }

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "soak: seed %d (replay with SOAK_SEED=%d), %s at a target of %.1f req/s\n", r.Seed, r.Seed, r.Duration, r.TargetRate)
	fmt.Fprintf(w, "requests: %d, rate reached %.1f req/s, %d operations dropped (every worker busy)\n\n", r.Requests, r.RateReached, r.Dropped)
	fmt.Fprintf(w, "%-26s %7s %9s %9s  %s\n", "kind", "count", "p50 ms", "p99 ms", "answers")
	for _, k := range slices.Sorted(maps.Keys(r.Kinds)) {
		s := r.Kinds[k]
		fmt.Fprintf(w, "%-26s %7d %9.1f %9.1f  %s\n", k, s.Count, s.P50ms, s.P99ms, counts(s.Statuses))
	}
	fmt.Fprintf(w, "\nerrors by status: %s\n", counts(r.Errors))
	fmt.Fprintf(w, "faults injected: %s; DynamoDB calls throttled: %d; scheduled invocations retried: %d\n", counts(r.Faults), r.ThrottledCalls, r.AsyncRetries)
	fmt.Fprintf(w, "sync rounds until both sides agreed: %d; baseline numbers skipped: %d\n\ninvariants:\n", r.SyncRoundsToConverge, r.BaselineGaps)
	for _, inv := range r.Invariants {
		mark := "ok  "
		if inv.Violated > 0 {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %s: %d checked, %d violated\n", mark, inv.Name, inv.Checked, inv.Violated)
		for _, e := range inv.Examples {
			fmt.Fprintf(w, "       - %s\n", e)
		}
	}
	if len(r.Goroutines) > 0 {
		parts := make([]string, len(r.Goroutines))
		for i, g := range r.Goroutines {
			parts[i] = fmt.Sprintf("%s %d→%d after %d", g.Function, g.Fresh, g.End, g.Invocations)
		}
		fmt.Fprintf(w, "goroutines of idle processes (before the load → at the end, after N invocations): %s\n", strings.Join(parts, "; "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "violations: %d\n", r.Violations)
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
