package bench

import (
	"fmt"
	"math"
	"time"
)

// Goals of the floor rows.
const (
	// MaxRatio is the most a row's service time may be of its floor.
	MaxRatio = 1.5
	// MaxSaveCPU is the most service CPU a page save may spend per
	// requirement, in milliseconds.
	MaxSaveCPU = 0.1
)

// Pairs are the interleaved rounds of one row: Service[i] and Floor[i]
// were measured back to back (service round, floor round, service round,
// …), so both meet the same load of the machine.
type Pairs struct {
	Service, Floor Durations
}

// Add appends one service round and the floor round measured after it.
func (p *Pairs) Add(service, floor time.Duration) {
	p.Service = append(p.Service, service)
	p.Floor = append(p.Floor, floor)
}

// Ratios are the service time over the floor time of each pair (pairs
// whose floor is 0 are left out).
func (p Pairs) Ratios() []float64 {
	var out []float64
	for i := range min(len(p.Service), len(p.Floor)) {
		if p.Floor[i] > 0 {
			out = append(out, float64(p.Service[i])/float64(p.Floor[i]))
		}
	}
	return out
}

// Spread is the interquartile range of a sample: its 25th and 75th
// percentiles by nearest rank (for one value, that value twice).
type Spread struct {
	P25 float64 `json:"p25"`
	P75 float64 `json:"p75"`
}

// spreadOf is the interquartile range of v.
func spreadOf(v []float64) Spread {
	return Spread{P25: round3(percentile(v, 25)), P75: round3(percentile(v, 75))}
}

// millis converts a sample of durations to milliseconds.
func millis(d Durations) []float64 {
	out := make([]float64, len(d))
	for i, x := range d {
		out[i] = float64(x) / float64(time.Millisecond)
	}
	return out
}

// round3 rounds to three decimals, so that the JSON stays readable.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// ptr returns a pointer to v rounded to three decimals.
func ptr(v float64) *float64 {
	r := round3(v)
	return &r
}

// Calls compares the DynamoDB (and SQS) calls of the service with the
// floor's, per round (medians).
type Calls struct {
	Service float64 `json:"service"`
	Floor   float64 `json:"floor"`
	// ServiceByOp is the service's calls of one round by operation.
	ServiceByOp map[string]int `json:"service_by_op,omitempty"`
}

// Goal is one target of a floor row with its verdict.
type Goal struct {
	Name     string  `json:"name"`
	Target   string  `json:"target"`
	Measured string  `json:"measured"`
	Verdict  Verdict `json:"verdict"`
}

// Result is one row of docs/benchmarks.json: a timed figure of the service
// set against its floor, measured in the same run.
type Result struct {
	// Name is the row's stable name ("page_save", "search_property").
	Name string `json:"name"`
	// What says what was timed, Floor what the floor is.
	What  string `json:"what"`
	Floor string `json:"floor"`
	// Rounds is the number of interleaved pairs.
	Rounds int `json:"rounds"`
	// ServiceMS and FloorMS are medians over the rounds (nil: not
	// measured); Ratio is the median of the per-pair ratios.
	ServiceMS *float64 `json:"service_ms"`
	FloorMS   *float64 `json:"floor_ms"`
	Ratio     *float64 `json:"ratio"`
	// Spread is the interquartile range (p25–p75, nearest rank) of the
	// service times, the floor times and the per-pair ratios.
	Spread struct {
		Kind      string  `json:"kind"`
		ServiceMS *Spread `json:"service_ms,omitempty"`
		FloorMS   *Spread `json:"floor_ms,omitempty"`
		Ratio     *Spread `json:"ratio,omitempty"`
	} `json:"spread"`
	// Per is the unit of the per-result figures: "requirement" or
	// "result".
	Per string `json:"per,omitempty"`
	// ItemsReadPerResult and ItemsWrittenPerRequirement compare the
	// service's items with the floor's minimum.
	ItemsReadPerResult         *Amplification `json:"items_read_per_result,omitempty"`
	ItemsWrittenPerRequirement *Amplification `json:"items_written_per_requirement,omitempty"`
	Calls                      *Calls         `json:"calls,omitempty"`
	// CPUMSPerRequirement is the bench process's CPU (the service, the SDK
	// and the bench's own client wrappers; DynamoDB Local excluded) per
	// requirement, median over the rounds.
	CPUMSPerRequirement *float64 `json:"cpu_ms_per_requirement,omitempty"`
	// FloorCPUMSPerRequirement is the bench process's CPU per requirement
	// for the floor round alone (the SDK sending exactly the items the
	// service wrote, in BatchWriteItem calls), median over the rounds: how
	// much of the service's CPU any implementation on the SDK pays.
	FloorCPUMSPerRequirement *float64 `json:"floor_cpu_ms_per_requirement,omitempty"`
	// SDKFloorMS (cold_start) is the median init of the floor with the AWS
	// configuration and a DynamoDB client (infra/bench/coldfloorsdk),
	// measured in the same rounds: the part of a function's init that is
	// the SDK's, not reqtrace's.
	SDKFloorMS *float64 `json:"sdk_floor_ms,omitempty"`
	// LoadBefore and LoadAfter are the machine's load averages (1, 5, 15
	// min) around the row's rounds.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	Goals      []Goal `json:"goals"`
	// Error, when set, is why the row was not (fully) measured.
	Error string `json:"error,omitempty"`
}

// Amplification is items of the service against the floor's minimum, per
// result or requirement.
type Amplification struct {
	Service float64 `json:"service"`
	Floor   float64 `json:"floor"`
}

// spreadKind names the spread the results report.
const spreadKind = "p25–p75 (nearest rank) over the interleaved rounds"

// newResult starts a row named name, reading the load now.
func newResult(name, what, floor string) *Result {
	r := &Result{Name: name, What: what, Floor: floor, LoadBefore: LoadAverage()}
	r.Spread.Kind = spreadKind
	return r
}

// setPairs fills the times, spreads and ratio from p, reads the load
// after, and adds the ratio goal.
func (r *Result) setPairs(p Pairs) {
	r.LoadAfter = LoadAverage()
	r.Rounds = min(len(p.Service), len(p.Floor))
	if r.Rounds == 0 {
		r.Goals = append(r.Goals, Goal{Name: "service / floor", Target: fmt.Sprintf("≤ %.1f", MaxRatio), Measured: "not measured", Verdict: NotMeasured})
		return
	}
	svc, fl, ratios := millis(p.Service), millis(p.Floor), p.Ratios()
	r.ServiceMS, r.FloorMS = ptr(median(svc)), ptr(median(fl))
	s, f := spreadOf(svc), spreadOf(fl)
	r.Spread.ServiceMS, r.Spread.FloorMS = &s, &f
	if len(ratios) == 0 {
		r.Goals = append(r.Goals, Goal{Name: "service / floor", Target: fmt.Sprintf("≤ %.1f", MaxRatio), Measured: "floor of 0", Verdict: NotMeasured})
		return
	}
	ratio, rs := median(ratios), spreadOf(ratios)
	r.Ratio, r.Spread.Ratio = ptr(ratio), &rs
	r.Goals = append(r.Goals, Goal{Name: "service / floor (median of the per-pair ratios)", Target: fmt.Sprintf("≤ %.1f", MaxRatio),
		Measured: fmt.Sprintf("%.2f (p25–p75 %.2f–%.2f, %d pairs)", ratio, rs.P25, rs.P75, r.Rounds), Verdict: verdict(ratio <= MaxRatio)})
}

// Verdict is the row's overall verdict, as Row.Verdict.
func (r *Result) Verdict() Verdict {
	vs := make([]Verdict, len(r.Goals))
	for i, g := range r.Goals {
		vs[i] = g.Verdict
	}
	return overall(vs, r.Error != "")
}

// oneRound fills r from a measurement of one round (a run that takes
// minutes): its service time, its floor, what it wrote against the
// floor's items, its calls and its CPU, per requirement of n.
func (r *Result) oneRound(service time.Duration, floor FloorRound, written int, rec Recorded, calls map[string]int, cpu time.Duration, n int) {
	var p Pairs
	p.Add(service, floor.Took)
	r.setPairs(p)
	r.Per = "requirement"
	r.ItemsWrittenPerRequirement = &Amplification{Service: round3(float64(written) / float64(n)), Floor: round3(float64(rec.Written()) / float64(n))}
	r.Calls = &Calls{Service: float64(sum(calls)), Floor: float64(floor.Calls), ServiceByOp: calls}
	r.CPUMSPerRequirement = ptr(float64(cpu) / float64(time.Millisecond) / float64(n))
}

// RowNames are the rows docs/benchmarks.json always has, measured or not
// (sizes in the names are those of a full run; -quick runs smaller ones
// under the same names, their What says so). A measurement adds a row with
// Row.result.
var RowNames = []string{"page_save", "search_key_prefix", "search_property", "search_fulltext", "get_requirement",
	"baseline_100k", "sync_10k", "reconcile_10k", "diff_100k", "export_100k", "coverage_100k", "cold_start"}

// Results collects the floor rows of rows in order, adding every name of
// RowNames that no measurement produced as not measured.
func Results(rows []*Row) []*Result {
	var out []*Result
	have := map[string]bool{}
	for _, row := range rows {
		for _, r := range row.Results {
			out = append(out, r)
			have[r.Name] = true
		}
	}
	for _, name := range RowNames {
		if !have[name] {
			out = append(out, &Result{Name: name, Error: "no measurement produced this row", Goals: []Goal{}})
		}
	}
	return out
}
