// Package bench measures reqtrace against its performance targets and
// writes the figures as docs/benchmarks.json, from which it renders
// docs/benchmarks.md; `make bench` runs it through infra/cmd/bench.
//
// Absolute times on a shared machine are mostly DynamoDB Local's own CPU
// and swing with the load, so every timed row is also set against its
// floor (floor.go), measured in the same run, interleaved with the
// service's rounds: DynamoDB Local's time for the minimum calls any
// implementation needs for the same result, replayed from the items the
// service's own calls wrote or returned (Recorder). The rows of
// docs/benchmarks.json (Result, named in RowNames) give medians, p25–p75
// spreads, the median of the per-pair ratios, items and calls against the
// floor's, the bench process's CPU per requirement and the load around
// them.
//
// Every measurement runs on this machine against DynamoDB Local and moto
// (started by the command through infra/localaws) with the production
// services and stores, or with the real bootstraps behind the local
// gateway and Lambda Runtime API shim (infra/localstack). DynamoDB calls
// are counted with infra/testenv's SDK middleware and items read with
// Meter, so counts hold on any machine; times depend on it and are
// reported, never asserted.
//
// A measurement that fails (a colleague's package not there yet, a route
// not wired, a stand-in that died) marks its row "not measured" with the
// reason instead of stopping the others.
package bench

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/infra/samtemplate"
	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// Env is the AWS environment the measurements share: the stand-ins and the
// tables and queue of template.yaml created for this run.
type Env struct {
	// Template is template.yaml.
	Template *samtemplate.Template
	// Config reaches the stand-ins.
	Config aws.Config
	// DynamoDBEndpoint and SQSEndpoint are the stand-ins' base URLs, for
	// the local stack.
	DynamoDBEndpoint, SQSEndpoint string
	// Prefix names the tables and queues ("<prefix>-<LogicalId>").
	Prefix string
	// WikiTable, AuthTable and QueueURL are the resources the
	// measurements write to.
	WikiTable, AuthTable, QueueURL string
	// Root is the module root; BuildDir holds <LogicalId>/bootstrap.
	Root, BuildDir string
	// DynamoDBPID is the DynamoDB Local JVM's pid (0: unknown), to read
	// its CPU time.
	DynamoDBPID int
	// ProfileDir, when set, receives a CPU profile of each measured
	// section (<name>.cpu.pprof).
	ProfileDir string
}

// Counted is a DynamoDB client whose calls are counted and measured.
type Counted struct {
	// API is the client to hand to stores: it measures items and
	// latencies and, through the middleware of Calls, counts every call.
	API   *Meter
	Calls *dynamo.CallCounter
}

// NewCounted returns a fresh client on env with its own counters.
func (e *Env) NewCounted() *Counted {
	calls := dynamo.NewCallCounter()
	return &Counted{
		API:   NewMeter(dynamodb.NewFromConfig(e.Config, calls.Options)),
		Calls: calls,
	}
}

// Reset forgets the calls and items counted so far.
func (c *Counted) Reset() {
	c.Calls.Reset()
	c.API.Reset()
}

// DynamoDB returns an uncounted client, for seeding.
func (e *Env) DynamoDB() *dynamodb.Client { return dynamodb.NewFromConfig(e.Config) }

// SQS returns an SQS client.
func (e *Env) SQS() *sqs.Client { return sqs.NewFromConfig(e.Config) }

// Verdict compares a measured value with its target.
type Verdict string

// The verdicts.
const (
	Meets       Verdict = "meets"
	Misses      Verdict = "misses"
	Info        Verdict = "—" // reported, no target of its own
	NotMeasured Verdict = "not measured"
)

// verdict is Meets when ok, else Misses.
func verdict(ok bool) Verdict {
	if ok {
		return Meets
	}
	return Misses
}

// Metric is one measured figure of a row.
type Metric struct {
	Name     string  `json:"name"`
	Target   string  `json:"target"`
	Measured string  `json:"measured"`
	Verdict  Verdict `json:"verdict"`
}

// Row is the measurement of one line of the performance targets.
type Row struct {
	// ID names the row in logs and profiles ("page-save").
	ID string `json:"id"`
	// What, Target and Anchor are the columns of the performance targets.
	What   string `json:"what"`
	Target string `json:"target"`
	Anchor string `json:"anchor"`
	// Method says how it was measured, in a sentence or two.
	Method string `json:"method,omitempty"`
	// Headline, when set, is the summary's measured value; by default
	// the summary lists the metrics that have a target.
	Headline string   `json:"headline,omitempty"`
	Metrics  []Metric `json:"metrics,omitempty"`
	// Notes explain what was done to meet the targets, or why one is
	// missed.
	Notes []string `json:"notes,omitempty"`
	// Err, when set, is why the row was not (fully) measured; Measure
	// copies its text to Error, which the report shows.
	Err   error  `json:"-"`
	Error string `json:"error,omitempty"`
	// Elapsed is the wall time of the measurement, seeding included.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Results are the row's figures against their floors, the rows of
	// docs/benchmarks.json.
	Results []*Result `json:"-"`
}

// add appends a metric.
func (r *Row) add(name, target, measured string, v Verdict) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Target: target, Measured: measured, Verdict: v})
}

// note appends a note.
func (r *Row) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Verdict is the row's overall verdict: NotMeasured when it failed or
// measured nothing with a target, Misses when any metric misses.
func (r *Row) Verdict() Verdict {
	vs := make([]Verdict, len(r.Metrics))
	for i, m := range r.Metrics {
		vs[i] = m.Verdict
	}
	return overall(vs, r.Err != nil || r.Error != "")
}

// overall is NotMeasured when failed or when no verdict has a target,
// Misses when any misses, else Meets.
func overall(vs []Verdict, failed bool) Verdict {
	if failed {
		return NotMeasured
	}
	out := NotMeasured
	for _, v := range vs {
		switch v {
		case Misses:
			return Misses
		case Meets:
			out = Meets
		}
	}
	return out
}

// Measure fills row by calling fn, within limit, recovering from a panic so
// that one broken measurement does not stop the others.
func Measure(ctx context.Context, row *Row, limit time.Duration, fn func(ctx context.Context, row *Row) error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	defer func() {
		row.Elapsed = time.Since(start)
		if p := recover(); p != nil {
			row.Err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
		if row.Err != nil {
			row.Error = row.Err.Error()
			for _, r := range row.Results {
				if r.Rounds == 0 && r.Error == "" {
					r.Error = firstLine(row.Error)
				}
			}
		}
	}()
	if err := fn(ctx, row); err != nil {
		row.Err = err
	}
}

// cpu returns a meter of this process's and DynamoDB Local's CPU time.
func (e *Env) cpu() cpuMeter { return cpuMeter{dynamoPID: e.DynamoDBPID} }

// result starts a floor row of row named name (see Result).
func (r *Row) result(name, what, floor string) *Result {
	res := newResult(name, what, floor)
	r.Results = append(r.Results, res)
	return res
}
