// Package baselinebench measures the freeze of a large baseline against a
// DynamoDB endpoint, for `make bench` (the performance targets: a baseline of 100,000
// requirements completes, with ⌈N/25⌉ BatchWriteItem calls). It writes
// test data under the tenant it is given; run it against a scratch table.
package baselinebench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// Space is the space the benchmark fills.
const Space = "BLBENCH"

// Result is one measured freeze of N requirements.
type Result struct {
	// Requirements is the number of ACTIVE requirements seeded and frozen.
	Requirements int
	// Seed is the time taken to write them (RequirementStore.Put).
	Seed time.Duration
	// Freeze is the time of baseline.Service.Create, end to end; Read,
	// Write and Commit are its phases: reading the space, writing the
	// copies, writing the record with the page title.
	Freeze, Read, Write, Commit time.Duration
	// BatchWrites is the number of BatchWriteItem calls of the freeze
	// (⌈N/25⌉ unless DynamoDB returned unprocessed items).
	BatchWrites int
	// Calls counts every DynamoDB call of the freeze by operation.
	Calls map[string]int
	// Delete is the time taken to delete the baseline and its copies.
	Delete time.Duration
}

// String summarises r on one line.
func (r *Result) String() string {
	return fmt.Sprintf("baseline of %d requirements: freeze %v (read %v, write %v, commit %v), %d BatchWriteItem calls (⌈N/25⌉ = %d); seed %v, delete %v",
		r.Requirements, r.Freeze.Round(time.Millisecond), r.Read.Round(time.Millisecond), r.Write.Round(time.Millisecond),
		r.Commit.Round(time.Millisecond), r.BatchWrites, (r.Requirements+24)/25, r.Seed.Round(time.Millisecond), r.Delete.Round(time.Millisecond))
}

// Freeze seeds n ACTIVE requirements (about 600 bytes each, 100 per page,
// each refining the next) in space Space of tenant, freezes them all into
// one baseline with the production service and store, checks the count,
// and deletes the baseline again. The seeded requirements are left in
// place.
func Freeze(ctx context.Context, db dynamo.API, table, tenant string, n int) (*Result, error) {
	res := &Result{Requirements: n, Calls: map[string]int{}}
	if _, err := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, table)}).SavePage(ctx, tenant, "bench",
		wiki.PageInput{ID: "1", SpaceKey: Space, Title: "Baselines", Body: "<p>baseline page</p>"}); err != nil {
		return nil, fmt.Errorf("seed the baseline page: %w", err)
	}
	text := strings.Repeat("The system shall record every change of a requirement. ", 4)
	reqs := make([]*requirement.Requirement, 0, n)
	for i := range n {
		reqs = append(reqs, &requirement.Requirement{
			SpaceKey: Space, Key: fmt.Sprintf("REQ-%07d", i), Status: requirement.Active,
			Text: text, HTMLExcerpt: "<p>" + text + "</p>",
			Properties:   []requirement.Property{{Key: "Priority", Value: "High"}, {Key: "Category", Value: "Functional"}},
			Origin:       requirement.PageRef{PageID: fmt.Sprint(1000 + i/100), Title: fmt.Sprintf("Specs %d", i/100)},
			Dependencies: []requirement.Dependency{{SpaceKey: Space, Key: fmt.Sprintf("REQ-%07d", (i+1)%n), Relationship: "refines"}},
		})
	}
	start := time.Now()
	if err := wikitable.NewRequirementStore(db, table).Put(ctx, tenant, reqs); err != nil {
		return nil, fmt.Errorf("seed %d requirements: %w", n, err)
	}
	res.Seed = time.Since(start)

	counted := &counter{API: db, calls: map[string]*atomic.Int64{}}
	for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "BatchWriteItem", "TransactWriteItems"} {
		counted.calls[op] = &atomic.Int64{}
	}
	store := wikitable.NewBaselineStore(counted, table)
	timed := &timer{BaselineStore: store}
	svc := baseline.New(baseline.Deps{Store: timed, Source: timed})
	// The whole freeze in process, as one request without a deadline
	// would do it: the inline budget never runs out.
	svc.InlineBudget = time.Hour
	start = time.Now()
	b, err := svc.Create(ctx, tenant, "bench", Space, baseline.CreateInput{Name: fmt.Sprintf("Bench %d", n), CEO: "1"})
	res.Freeze = time.Since(start)
	if err != nil {
		return res, fmt.Errorf("freeze %d requirements: %w", n, err)
	}
	res.Read, res.Write, res.Commit = timed.read, timed.write, timed.commit
	for op, c := range counted.calls {
		if v := int(c.Load()); v > 0 {
			res.Calls[op] = v
		}
	}
	res.BatchWrites = res.Calls["BatchWriteItem"]
	if b.Count != n {
		return res, fmt.Errorf("froze %d requirements, want %d", b.Count, n)
	}
	start = time.Now()
	if err := svc.Delete(ctx, tenant, Space, b.Number); err != nil {
		return res, fmt.Errorf("delete the baseline: %w", err)
	}
	res.Delete = time.Since(start)
	return res, nil
}

// counter counts DynamoDB calls by operation.
type counter struct {
	dynamo.API
	calls map[string]*atomic.Int64
}

func (c *counter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.calls["GetItem"].Add(1)
	return c.API.GetItem(ctx, in, o...)
}

func (c *counter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.calls["UpdateItem"].Add(1)
	return c.API.UpdateItem(ctx, in, o...)
}

func (c *counter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.calls["Query"].Add(1)
	return c.API.Query(ctx, in, o...)
}

func (c *counter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.calls["BatchGetItem"].Add(1)
	return c.API.BatchGetItem(ctx, in, o...)
}

func (c *counter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.calls["BatchWriteItem"].Add(1)
	return c.API.BatchWriteItem(ctx, in, o...)
}

func (c *counter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.calls["TransactWriteItems"].Add(1)
	return c.API.TransactWriteItems(ctx, in, o...)
}

func (c *counter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.calls["PutItem"].Add(1)
	return c.API.PutItem(ctx, in, o...)
}

func (c *counter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.calls["DeleteItem"].Add(1)
	return c.API.DeleteItem(ctx, in, o...)
}

// timer times the phases of a freeze (one freeze at a time).
type timer struct {
	*wikitable.BaselineStore
	read, write, commit time.Duration
}

func (t *timer) SpaceRequirements(ctx context.Context, tenant, space string, fn func(*requirement.Requirement) bool) error {
	start := time.Now()
	defer func() { t.read += time.Since(start) }()
	return t.BaselineStore.SpaceRequirements(ctx, tenant, space, fn)
}

func (t *timer) PutCopies(ctx context.Context, tenant string, copies []*requirement.Requirement) error {
	start := time.Now()
	defer func() { t.write += time.Since(start) }()
	return t.BaselineStore.PutCopies(ctx, tenant, copies)
}

func (t *timer) Commit(ctx context.Context, job *baseline.Job, retitle bool) error {
	start := time.Now()
	defer func() { t.commit += time.Since(start) }()
	return t.BaselineStore.Commit(ctx, job, retitle)
}
