package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// The data set of the search, GET and page-save measurements: tenant
// "demo" (a development tenant, so that the local stack's dev tokens reach
// it), space BENCH.
const (
	Tenant = "demo"
	Space  = "BENCH"
	// seedPerPage is the number of requirements per seeded page.
	seedPerPage = 400
	// seedParallel is the number of pages committed at once; each commit
	// already runs 8 BatchWriteItem calls in parallel.
	seedParallel = 2
	// SmallSpace holds every SmallStep-th requirement of the data set
	// again (same keys, same properties): a space whose keys interleave
	// with a much larger one's, as in a tenant of many spaces.
	SmallSpace = "SMALL"
	SmallStep  = 50
)

// seedKey is the key of seeded requirement i.
func seedKey(i int) string { return fmt.Sprintf("REQ-%06d", i) }

// seedPriority is the Priority of seeded requirement i: High for one in
// four, then Medium and Low.
func seedPriority(i int) string {
	switch i % 4 {
	case 0:
		return "High"
	case 1, 2:
		return "Medium"
	}
	return "Low"
}

// seedDeleted reports whether seeded requirement i is DELETED (one in 50):
// searches then meet rows they must skip, as in a real space.
func seedDeleted(i int) bool { return i%50 == 49 }

var seedCategories = []string{"Functional", "Security", "Performance", "Usability", "Legal"}

// seedTier is the external property Tier of seeded requirement i: Gold for
// one in four (not the same ones as Priority High), then Silver.
func seedTier(i int) string {
	if i%4 == 1 {
		return "Gold"
	}
	return "Silver"
}

// seedRequirement returns seeded requirement i, about 600 bytes, defined by
// page p (in p's space).
func seedRequirement(i int, p *wiki.Page) *requirement.Requirement {
	text := fmt.Sprintf("Requirement %d: the system shall record every change of a requirement, with its author, "+
		"its time and the previous value, and keep it for ten years. ", i)
	r := &requirement.Requirement{
		SpaceKey: p.SpaceKey, Key: seedKey(i), Status: requirement.Active,
		Text: text, HTMLExcerpt: "<p>" + text + "</p>",
		Properties: []requirement.Property{
			{Key: "Priority", Value: seedPriority(i)},
			{Key: "Category", Value: seedCategories[i%len(seedCategories)]},
			// An external property (set through the API, not on the
			// page): Tier Gold for one in four, as Priority High.
			{Key: "Tier", Value: seedTier(i), Type: requirement.External},
		},
		Origin: p.Ref(),
	}
	if seedDeleted(i) {
		r.Status = requirement.Deleted
	}
	return r
}

// seedPageID is the id of the page defining seeded requirement i.
func seedPageID(i int) string { return fmt.Sprint(1_000_000 + i/seedPerPage) }

// Seed stores requirements [from, to) of the data set in space Space of
// tenant Tenant through the indexing write path (wiki.Store.Commit of
// shared/dynamo: rows, search index items, page items with their key
// lists), without parsing page bodies: what saving the pages would write,
// at a fraction of the cost. from and to must be multiples of
// seedPerPage.
func Seed(ctx context.Context, store *wikitable.WikiStore, from, to int) error {
	if from%seedPerPage != 0 || to%seedPerPage != 0 {
		return fmt.Errorf("seed [%d, %d): bounds must be multiples of %d", from, to, seedPerPage)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, seedParallel)
	)
	for start := from; start < to; start += seedPerPage {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := seedPage(ctx, store, Space, seedPageID(start), seedRange(start, start+seedPerPage, 1), start == 0); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
		mu.Lock()
		failed := len(errs) > 0
		mu.Unlock()
		if failed {
			break
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("seed requirements [%d, %d): %w", from, to, errs[0])
	}
	return nil
}

// seedRange returns from, from+step, … below to.
func seedRange(from, to, step int) []int {
	var out []int
	for i := from; i < to; i += step {
		out = append(out, i)
	}
	return out
}

// seedPage commits page id of space, defining seeded requirements nums.
func seedPage(ctx context.Context, store *wikitable.WikiStore, space, id string, nums []int, register bool) error {
	pg := &wiki.Page{
		ID: id, SpaceKey: space, Title: "Specification " + id,
		Version: 1, Body: "<p>seeded by make bench</p>", UpdatedAt: time.Now().UTC(), UpdatedBy: "bench",
	}
	c := &wiki.Change{PutPage: pg}
	if register {
		c.RegisterSpace = space
	}
	for _, i := range nums {
		r := seedRequirement(i, pg)
		if r.Status == requirement.Active {
			pg.Keys = append(pg.Keys, r.Key)
		}
		c.Writes = append(c.Writes, wiki.Write{New: r})
	}
	if err := store.Commit(ctx, Tenant, c); err != nil {
		return fmt.Errorf("page %s: %w", pg.ID, err)
	}
	return nil
}

// SeedSmall stores, in space SmallSpace, requirement i of the data set for
// every i below n that SmallStep divides, seedPerPage per page, one page
// at a time.
func SeedSmall(ctx context.Context, store *wikitable.WikiStore, n int) error {
	nums := seedRange(0, n, SmallStep)
	for p := 0; p*seedPerPage < len(nums); p++ {
		page := nums[p*seedPerPage : min((p+1)*seedPerPage, len(nums))]
		if err := seedPage(ctx, store, SmallSpace, fmt.Sprint(4_000_000+p), page, p == 0); err != nil {
			return fmt.Errorf("seed space %s: %w", SmallSpace, err)
		}
	}
	return nil
}

// seedSummary describes the data set of n requirements for the report.
func seedSummary(n int) string {
	return fmt.Sprintf("%d requirements in space %s of tenant %s, %d per page, about 600 bytes each, "+
		"properties Priority (High 1 in 4) and Category (5 values), external property Tier (Gold 1 in 4), 1 in 50 DELETED; "+
		"written through the indexing write path (rows, search index items, page key lists)",
		n, Space, Tenant, seedPerPage)
}

// smallSummary describes space SmallSpace seeded for n requirements.
func smallSummary(n int) string {
	return fmt.Sprintf("space %s holds every %dth of them again (%d requirements, same keys and properties, "+
		"none DELETED), interleaved in key order with %s's", SmallSpace, SmallStep, len(seedRange(0, n, SmallStep)), Space)
}
