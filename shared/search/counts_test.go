package search_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// bigKey is the key of requirement i of the large space.
func bigKey(i int) string { return fmt.Sprintf("REQ-%04d", i) }

// storeBig stores, through the indexing write path, 2,000 requirements in
// space BIG (pages "1" to "10", 200 each): Category Security for every
// 20th (100), Functional otherwise; Priority High for every 3rd (667);
// REQ-i refines REQ-(i/2) (a binary tree 11 levels deep). Space OTHER holds
// REQ-0000 to REQ-0199 again (page "11", Security for every 20th: 10), and
// space DEEP a chain D-00 → D-01 → … → D-25 (page "12").
func storeBig(t *testing.T, s *stack) {
	t.Helper()
	row := func(i int, space string) string {
		cat, prio, refines := "Functional", "Low", ""
		if i%20 == 0 {
			cat = "Security"
		}
		if i%3 == 0 {
			prio = "High"
		}
		if i > 0 && space == "BIG" {
			refines = wt.Link("", bigKey(i/2))
		}
		return wt.TR(wt.Def(bigKey(i)), "<p>Requirement "+bigKey(i)+" of "+space+"</p>", cat, prio, refines)
	}
	header := wt.TH("Key", "Description", "Category", "Priority", "Refines")
	for p := range 10 {
		rows := []string{header}
		for i := p * 200; i < (p+1)*200; i++ {
			rows = append(rows, row(i, "BIG"))
		}
		save(t, s.wiki, "demo", fmt.Sprint(p+1), "BIG", fmt.Sprintf("Part %d", p+1), wt.Table(rows...))
	}
	rows := []string{header}
	for i := range 200 {
		rows = append(rows, row(i, "OTHER"))
	}
	save(t, s.wiki, "demo", "11", "OTHER", "Other part", wt.Table(rows...))
	rows = []string{header}
	for i := range 26 {
		link := ""
		if i < 25 {
			link = wt.Link("", fmt.Sprintf("D-%02d", i+1))
		}
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("D-%02d", i)), "<p>Deep</p>", "", "", link))
	}
	save(t, s.wiki, "demo", "12", "DEEP", "Deep chain", wt.Table(rows...))
}

// TestCallCounts asserts the DynamoDB calls and the items read (Query items
// evaluated + BatchGetItem items + GetItem items) of typical searches over
// a space of 2,000 requirements. The numbers are deterministic: they depend
// on the data and the plan only.
func TestCallCounts(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	storeBig(t, s)
	ctx := context.Background()
	// External property Tier Gold on the Security requirements (100 in
	// BIG, 10 in OTHER), set through the API's write path.
	gold := "Gold"
	for _, space := range []string{"BIG", "OTHER"} {
		for i := 0; i < 2000 && (space == "BIG" || i < 200); i += 20 {
			if _, err := s.wiki.SetExternal(ctx, "demo", space, bigKey(i), []requirement.ExternalChange{{Name: "Tier", Value: &gold}}); err != nil {
				t.Fatal(err)
			}
		}
	}

	tests := []struct {
		name     string
		q, order string
		space    string
		limit    int
		archived bool
		results  int
		// ratio, when set, bounds items read / (offset + results).
		ratio float64
		calls map[string]int
		items int
		plan  string
	}{
		// The index holds the tenant's matches (110: 100 in BIG, 10 in
		// OTHER, among the first keys); a search of one space reads that
		// space's view of it (gsi1): 100 index items + 100 rows. A page
		// that is not the last also reads the first match of the next page
		// (its index item and row, in the same calls): hasMore.
		{name: "property equality, whole answer", q: `@Category = 'Security'`, space: "BIG", limit: 500,
			results: 100, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 200, ratio: 2, plan: "property[CATEGORY]"},
		{name: "property equality, first page", q: `@Category = 'Security'`, space: "BIG",
			results: 50, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 102, ratio: 2, plan: "property[CATEGORY]"},
		{name: "property equality, second page", q: `@Category = 'Security'`, space: "BIG", limit: 25,
			results: 25, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 102, ratio: 2, plan: "property[CATEGORY]"},
		// Several spaces read the tenant's partition and drop the other
		// spaces' items unread: 51 index items (the page and the next
		// page's first), 10 of them OTHER's (among the first keys), then
		// 13 more (the 10 missing scaled by 51/41): 64 + 51 rows.
		{name: "property equality, two spaces", q: `@Category = 'Security' AND space IN ('BIG', 'DEEP')`,
			results: 50, calls: map[string]int{"GetItem": 1, "Query": 2, "BatchGetItem": 1}, items: 115, ratio: 2.3, plan: "property[CATEGORY]"},
		{name: "property equality, tenant-wide first page", q: `@category = 'Security'`,
			// The index order (key, then space) is the answer's, so the
			// first 51 index items are the page and the next page's first
			// match: 51 + 51 rows, no other look-ahead; the GetItem of the
			// settings finds no item.
			results: 50, calls: map[string]int{"GetItem": 1, "Query": 1, "BatchGetItem": 1}, items: 102, ratio: 2, plan: "property[CATEGORY]"},
		// REQKEY DESC reverses the index, key and space alike: the same.
		{name: "property equality, tenant-wide, descending", q: `@category = 'Security'`, order: "REQKEY DESC",
			results: 50, calls: map[string]int{"GetItem": 1, "Query": 1, "BatchGetItem": 1}, items: 102, ratio: 2, plan: "property[CATEGORY]"},
		// Another column after REQKEY must sort each key's rows (BIG and
		// OTHER): one index item past the next page's first match
		// (REQ-0820, its row not read) shows REQ-0800's group complete.
		{name: "property equality, tenant-wide, key then status", q: `@category = 'Security'`, order: "REQKEY, STATUS",
			results: 50, calls: map[string]int{"GetItem": 1, "Query": 1, "BatchGetItem": 1}, items: 103, ratio: 2.02, plan: "property[CATEGORY]"},
		// Another order reads every match (100 index items, 100 rows).
		{name: "property equality, other order", q: `@Category = 'Security'`, order: "STATUS, TEXT DESC", space: "BIG",
			results: 50, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 200, plan: "sorted in memory"},
		// External properties have an index of their own, read the same
		// way: 100 index items + 100 rows for the whole answer, 50 + 50
		// for the first page.
		{name: "external property equality, whole answer", q: `ext@Tier = 'Gold'`, space: "BIG", limit: 500,
			results: 100, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 200, ratio: 2, plan: "external[TIER]"},
		// As for page properties: the next page's first match (index item
		// and row) is read for hasMore.
		{name: "external property equality, first page", q: `ext@tier = 'Gold'`, space: "BIG",
			results: 50, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 102, ratio: 2, plan: "external[TIER]"},
		{name: "external property equality, tenant-wide first page", q: `ext@Tier IN ('Gold', 'Silver')`,
			results: 50, calls: map[string]int{"GetItem": 1, "Query": 2, "BatchGetItem": 1}, items: 102, ratio: 2, plan: "external[TIER]"},
		// A page property of that name is another field: nothing.
		{name: "page property of an external name", q: `@Tier = 'Gold'`, space: "BIG",
			results: 0, calls: map[string]int{"Query": 1}, items: 0, plan: "property[TIER]"},
		// 667 index items (one Query: index items are small), 667 rows in
		// one batch of 7 BatchGetItem calls.
		{name: "broad property, other order", q: `@Priority = 'High'`, order: "TEXT", space: "BIG", limit: 500,
			results: 500, calls: map[string]int{"Query": 1, "BatchGetItem": 7}, items: 667 + 667, plan: "property[PRIORITY]"},
		{name: "key prefix, first page", q: `key ~ 'REQ-1%'`, space: "BIG",
			results: 50, calls: map[string]int{"Query": 1}, items: 51, ratio: 1, plan: "key prefix"},
		{name: "key prefix, tenant-wide first page", q: `key ~ 'req-1%'`,
			results: 50, calls: map[string]int{"GetItem": 1, "Query": 1}, items: 51, ratio: 1, plan: "key prefix"},
		// Key comparisons: one Query bounded by the range (BETWEEN), not
		// a scan of the space. The whole answer also reads the row at the
		// upper bound (BETWEEN is inclusive; REQ-1100 is dropped).
		{name: "key range, first page", q: `key >= 'REQ-1000' AND key < 'req-1100'`, space: "BIG",
			results: 50, calls: map[string]int{"Query": 1}, items: 51, ratio: 1, plan: "key range"},
		{name: "key range, whole answer", q: `key >= 'REQ-1000' AND key < 'REQ-1100'`, space: "BIG", limit: 500,
			results: 100, calls: map[string]int{"Query": 1}, items: 101, ratio: 1.01, plan: "key range"},
		// Tenant-wide: the key-order index gsi1 (sort keys KEY#SPACE), BIG
		// and OTHER both hold REQ-0151 … REQ-0160.
		{name: "key range, tenant-wide", q: `key > 'req-0150' AND key <= 'REQ-0160'`, limit: 500,
			results: 20, calls: map[string]int{"GetItem": 1, "Query": 1}, items: 20, ratio: 1, plan: "key range"},
		{name: "key range and prefix, descending", q: `key ~ 'REQ-19%' AND key <= 'REQ-1949'`, order: "REQKEY DESC", space: "BIG",
			results: 50, calls: map[string]int{"Query": 1}, items: 50, ratio: 1, plan: "key range"},
		{name: "key range, one-sided, first page", q: `key < 'REQ-0050'`, space: "BIG",
			results: 50, calls: map[string]int{"Query": 1}, items: 51, ratio: 1.02, plan: "key range"},
		{name: "key range, empty: nothing read", q: `key > 'REQ-5' AND key < 'REQ-1'`, space: "BIG",
			results: 0, calls: map[string]int{}, items: 0, plan: "key range"},
		{name: "key prefix and property", q: `@Priority = 'High' AND key ~ 'REQ-00%' AND text ~ '%BIG%'`, space: "BIG",
			results: 34, calls: map[string]int{"Query": 2}, items: 50 + 50, plan: "key prefix"},
		{name: "exact key", q: `key = 'req-0042'`, space: "BIG",
			results: 1, calls: map[string]int{"BatchGetItem": 1}, items: 1, plan: "key IN"},
		{name: "exact key, tenant-wide", q: `key = 'req-0042'`,
			results: 2, calls: map[string]int{"GetItem": 1, "Query": 1}, items: 2, plan: "key IN"},
		{name: "keys", q: `key IN ('REQ-0001', 'REQ-0002', 'NOPE') OR key = 'REQ-1999'`, space: "BIG",
			results: 3, calls: map[string]int{"BatchGetItem": 1}, items: 3, plan: "union"},
		// The page item (its 200 keys), then the 50 rows returned and the
		// next page's first; the
		// title index has no page titled '3' (one Query reading nothing).
		{name: "page, first page", q: `page = 3`,
			results: 50, calls: map[string]int{"GetItem": 2, "Query": 1, "BatchGetItem": 1}, items: 1 + 51, plan: "page IN"},
		// By title, in any case: the title index (one item), the page
		// item, the 50 rows.
		{name: "page by title, first page", q: `page = 'PART 3'`,
			results: 50, calls: map[string]int{"GetItem": 2, "Query": 1, "BatchGetItem": 1}, items: 1 + 1 + 51, ratio: 1.06, plan: "page IN"},
		// Three titles (one names no page): 2 + 2 page items, 400 rows.
		{name: "pages by title, whole answer", q: `page IN ('part 3', 'Part 4', 'Part 40')`, limit: 500,
			results: 400, calls: map[string]int{"GetItem": 3, "Query": 3, "BatchGetItem": 4}, items: 2 + 2 + 400, ratio: 1.01, plan: "page IN"},
		// page ~ reads all the page's rows (what they cite), then, in key
		// order, the first 50 candidates: REQ-0200…0249, on page 2, which
		// page 3's REQ-0400…0499 refine.
		{name: "page cited, first page", q: `page ~ 3`,
			results: 50, calls: map[string]int{"GetItem": 2, "Query": 1, "BatchGetItem": 3}, items: 1 + 200 + 51, plan: "page ~"},
		// The whole answer: the 200 rows of the page and the 100 it cites.
		{name: "page cited by title, whole answer", q: `page ~ 'part 3'`, limit: 500,
			results: 300, calls: map[string]int{"GetItem": 2, "Query": 1, "BatchGetItem": 3}, items: 1 + 1 + 200 + 100, ratio: 1.01, plan: "page ~"},
		{name: "to", q: `to = 'BIG/REQ-0010'`, space: "BIG",
			results: 2, calls: map[string]int{"BatchGetItem": 2}, items: 3, plan: "to IN"},
		// REQ-0021 in every space (BIG and OTHER: one Query of the
		// key-order index), then what they refine (BIG/REQ-0010 only: the
		// OTHER rows have no links).
		{name: "from", q: `from@refines = 'REQ-0021'`, space: "BIG",
			results: 1, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 2 + 1, plan: "from@refines IN"},
		// Nothing matches: pages of 50, 100, 300, 900 (twice what was
		// seen) and the rest. One word, '%' on both sides: it may be
		// part of a longer word, so no word drives.
		{name: "unindexed predicate scans the space", q: `text ~ '%nothing%'`, space: "BIG",
			results: 0, calls: map[string]int{"Query": 5}, items: 2000, plan: "scan of space BIG"},
		// Whole words drive through the word index (LIKE, the longest
		// whole word: NOTHING and THIS may be parts of longer words):
		// one Query of the space registry (3 spaces) and one of the
		// word's partition in BIG, empty.
		{name: "word search finding nothing", q: `text ~ '%nothing like this%'`, space: "BIG",
			results: 0, calls: map[string]int{"Query": 2}, items: 3, plan: "word 'LIKE'"},
		{name: "bare string finding nothing", q: `'nothing like this'`,
			results: 0, calls: map[string]int{"GetItem": 1, "Query": 2}, items: 3, plan: "word 'LIKE'"},
		// "Requirement REQ-1234 of BIG": the word 1234 (of the key and of
		// the text) is one row's in BIG: its index item and its row.
		{name: "word search, one match", q: `text ~ '%REQ-1234 of%'`, space: "BIG",
			results: 1, calls: map[string]int{"Query": 2, "BatchGetItem": 1}, items: 3 + 1 + 1, plan: "word '1234'"},
		// BIG ends every text of BIG (OF is whole too, but shorter): the
		// first page reads the registry, 51 index items and 51 rows (the
		// 51st for hasMore), as a property equality.
		{name: "word search, first page of a common word", q: `text ~ '% of BIG'`, space: "BIG",
			results: 50, calls: map[string]int{"Query": 2, "BatchGetItem": 1}, items: 3 + 51 + 51, ratio: 2.1, plan: "word 'BIG'"},
		// The index has no DELETED or archived rows: the space is read in
		// key order (and the tenant's archived copies: none here) until 51
		// matches, REQ-1000, are seen; pages sized by the matches so far.
		{name: "includeArchived cannot use the property index", q: `@Category = 'Security'`, space: "BIG", archived: true,
			results: 50, calls: map[string]int{"Query": 4}, items: 1005, plan: "scan of space BIG with archived copies"},
		{name: "baseline without includeArchived is empty", q: `baseline = 1 AND @Category = 'Security'`, space: "BIG",
			results: 0, calls: map[string]int{}, items: 0, plan: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := query.Parse(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			order, err := query.ParseOrder(tt.order)
			if err != nil {
				t.Fatal(err)
			}
			offset := 0
			if tt.name == "property equality, second page" {
				offset = 25
			}
			s.reset()
			res, err := s.svc.Search(ctx, search.Request{Tenant: "demo", PathSpace: "X", Space: tt.space, Query: e, Order: order,
				Offset: offset, Limit: tt.limit, IncludeArchived: tt.archived})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Requirements) != tt.results {
				t.Errorf("%d results, want %d", len(res.Requirements), tt.results)
			}
			if !strings.Contains(res.Plan, tt.plan) {
				t.Errorf("plan %q, want %q", res.Plan, tt.plan)
			}
			if got := s.calls.Counts(); !maps.Equal(got, tt.calls) {
				t.Errorf("calls %v, want %v (plan %s)", got, tt.calls, res.Plan)
			}
			if got := s.items.Items(); got != tt.items {
				t.Errorf("items read %d, want %d (plan %s)", got, tt.items, res.Plan)
			}
			// Paging through offset+limit matches costs reading them; a
			// page with a next one also read that page's first match
			// (hasMore).
			matches := offset + len(res.Requirements)
			if res.HasMore {
				matches++
			}
			if r := float64(s.items.Items()) / float64(matches); tt.ratio > 0 && r > tt.ratio {
				t.Errorf("%.2f items read per match up to this page, want at most %.2f", r, tt.ratio)
			}
			t.Logf("%s: %d results, calls %v, items read %d", res.Plan, len(res.Requirements), s.calls.Counts(), s.items.Items())
		})
	}
}

// TestSuspectCallCounts asserts that `suspect IS TRUE` (and IS NOT FALSE)
// is driven by the suspect index, not a scan: space SUS holds 100 targets
// (page "1") and 1,000 requirements refining them (page "2", R-i refines
// T-(i mod 100)); a save of page "1" changing the text of T-000 … T-009
// marks the 100 requirements refining those suspect. A search reads their
// index items and rows only, never the space's 1,100 rows.
func TestSuspectCallCounts(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	targets := func(changed int) string {
		rows := []string{wt.TH("Key", "Description", "Refines")}
		for i := range 100 {
			text := fmt.Sprintf("<p>Target %d.</p>", i)
			if i < changed {
				text = fmt.Sprintf("<p>Target %d, changed.</p>", i)
			}
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("T-%03d", i)), text, ""))
		}
		return wt.Table(rows...)
	}
	save(t, s.wiki, "demo", "1", "SUS", "Targets", targets(0))
	rows := []string{wt.TH("Key", "Description", "Refines")}
	for i := range 1000 {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("R-%04d", i)), "<p>Refines.</p>", wt.Link("", fmt.Sprintf("T-%03d", i%100))))
	}
	save(t, s.wiki, "demo", "2", "SUS", "Refining", wt.Table(rows...))
	save(t, s.wiki, "demo", "1", "SUS", "Targets", targets(10))

	for _, tt := range []struct {
		name    string
		q       string
		space   string
		limit   int
		results int
		calls   map[string]int
		items   int
	}{
		// The space's view of the index (gsi1): 100 index items, then
		// their 100 rows in one BatchGetItem.
		{name: "whole answer", q: `suspect IS TRUE`, space: "SUS", limit: 500,
			results: 100, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 200},
		// The first page and the next page's first match (hasMore): 51
		// index items and 51 rows.
		{name: "IS NOT FALSE, first page", q: `suspect IS NOT FALSE`, space: "SUS",
			results: 50, calls: map[string]int{"Query": 1, "BatchGetItem": 1}, items: 102},
		// Tenant-wide: the settings' GetItem (finding nothing), then the
		// tenant's partition of the index.
		{name: "tenant-wide, first page", q: `suspect IS TRUE`,
			results: 50, calls: map[string]int{"GetItem": 1, "Query": 1, "BatchGetItem": 1}, items: 102},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := query.Parse(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			s.reset()
			res, err := s.svc.Search(ctx, search.Request{Tenant: "demo", PathSpace: "SUS", Space: tt.space, Query: e, Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Requirements) != tt.results {
				t.Errorf("%d results, want %d", len(res.Requirements), tt.results)
			}
			for _, r := range res.Requirements {
				if !r.IsSuspect() || !strings.HasPrefix(r.Key, "R-") {
					t.Fatalf("%s/%s is not one of the suspect requirements", r.SpaceKey, r.Key)
				}
			}
			if !strings.Contains(res.Plan, "suspect via index") {
				t.Errorf("plan %q, want the suspect index", res.Plan)
			}
			if got := s.calls.Counts(); !maps.Equal(got, tt.calls) {
				t.Errorf("calls %v, want %v (plan %s)", got, tt.calls, res.Plan)
			}
			if got := s.items.Items(); got != tt.items {
				t.Errorf("items read %d, want %d (plan %s)", got, tt.items, res.Plan)
			}
			t.Logf("%s: %d results, calls %v, items read %d", res.Plan, len(res.Requirements), s.calls.Counts(), s.items.Items())
		})
	}
}

// TestClosureCounts asserts the reads of parent/child closures (one
// BatchGetItem per level and per 100 requirements) and their bounds.
func TestClosureCounts(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	storeBig(t, s)
	ctx := context.Background()
	run := func(q string) (*search.Result, error) {
		e, err := query.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		s.reset()
		return s.svc.Search(ctx, search.Request{Tenant: "demo", Space: "DEEP", Query: e, Limit: 500})
	}

	// D-05 references D-06 … D-25: 20 levels, the most a closure follows.
	res, err := run(`child = 'DEEP/D-05'`)
	if err != nil {
		t.Fatal(err)
	}
	// child matches the rows that something references: D-06 … D-25.
	if len(res.Requirements) != 20 || res.Requirements[0].Key != "D-06" {
		t.Fatalf("%d results from %s", len(res.Requirements), names(res.Requirements))
	}
	// 21 levels read (D-05 … D-25), then the scan of DEEP.
	if got := s.calls.Counts(); got["BatchGetItem"] != 21 || got["Query"] != 1 || len(got) != 2 {
		t.Fatalf("calls %v", got)
	}

	// D-04 is one level deeper: refused, never truncated.
	_, err = run(`child = 'DEEP/D-04' OR key = 'D-00'`)
	if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), "query too broad") {
		t.Fatalf("error %v, want query too broad", err)
	}

	// parent of the root of BIG's tree: all 1,999 others, 11 levels of
	// one BatchGetItem per 100 requirements of the level.
	res, err = run(`parent@refines = 'BIG/REQ-0000' AND key ~ 'REQ-19%'`)
	if err != nil {
		t.Fatal(err)
	}
	wantGets := 0
	for lo := 1; lo < 2000; lo *= 2 {
		wantGets += (min(2*lo, 2000) - lo + 99) / 100
	}
	if got := s.calls.Count("BatchGetItem"); got != wantGets+1 { // +1: the root
		t.Fatalf("BatchGetItem %d, want %d", got, wantGets+1)
	}
	if len(res.Requirements) != 0 { // the scope is DEEP
		t.Fatalf("results %v", names(res.Requirements))
	}
}

// TestKeyOrderIsIndexOrder guards the planner's early stop: it reads in the
// indexes' key order and stops at offset+limit, which is right only while
// query.Order sorts REQKEY by the folded key.
func TestKeyOrderIsIndexOrder(t *testing.T) {
	t.Parallel()
	o := query.DefaultOrder()
	a := &requirement.Requirement{SpaceKey: "S", Key: "a-2"}
	b := &requirement.Requirement{SpaceKey: "S", Key: "A-10"}
	c := &requirement.Requirement{SpaceKey: "S", Key: "B-1"}
	// The index orders by the upper-cased key: A-10 < A-2 < B-1.
	if !o.Less(b, a) || !o.Less(a, c) {
		t.Fatal("query.Order no longer compares REQKEY by the folded key: the planner's early stop would be wrong")
	}
}

// TestReadBudget checks Service.MaxRead on searches no index narrows and on
// one it does: a search that reads exactly MaxRead rows and index items is
// answered, one that needs one more is refused as too broad (400 on q),
// whatever its plan; the bound counts what DynamoDB returned, as the item
// meter does.
func TestReadBudget(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	storeBig(t, s)
	ctx := context.Background()
	tests := []struct {
		name, q, order string
		results        int
	}{
		// No whole word: a scan of BIG (2,000 rows) that finds nothing.
		{name: "pattern without a whole word", q: `text ~ '%zzz%'`},
		// An order sorted in memory reads every candidate.
		{name: "order sorted in memory", order: "STATUS, TEXT DESC", results: 50},
		// An index-driven first page: 51 index items and 51 rows.
		{name: "property equality", q: `@Category = 'Security'`, results: 50},
		// A deep offset in key order reads the rows it skips.
		{name: "deep offset", q: `key ~ 'REQ-1%'`, results: 50},
	}
	run := func(q, order string, maxRead int) (*search.Result, error) {
		req := search.Request{Tenant: "demo", Space: "BIG", Limit: 50}
		if q != "" {
			e, err := query.Parse(q)
			if err != nil {
				t.Fatal(err)
			}
			req.Query = e
		}
		if order != "" {
			o, err := query.ParseOrder(order)
			if err != nil {
				t.Fatal(err)
			}
			req.Order = o
		}
		if strings.HasPrefix(q, "key") {
			req.Offset = 900
		}
		s.svc.MaxRead = maxRead
		s.reset()
		return s.svc.Search(ctx, req)
	}
	for _, tc := range tests {
		// Unbounded: what the search reads.
		res, err := run(tc.q, tc.order, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		read := int(s.items.Items())
		if len(res.Requirements) != tc.results || read == 0 {
			t.Fatalf("%s: %d results, %d items read", tc.name, len(res.Requirements), read)
		}
		if res, err = run(tc.q, tc.order, read); err != nil || len(res.Requirements) != tc.results {
			t.Fatalf("%s: with MaxRead %d (what it reads): %v", tc.name, read, err)
		}
		_, err = run(tc.q, tc.order, read-1)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.Invalid || ae.Field != "q" || !strings.Contains(err.Error(), "query too broad") {
			t.Fatalf("%s: with MaxRead %d: error %v, want query too broad on q", tc.name, read-1, err)
		}
		t.Logf("%s: %d items read, refused at MaxRead %d", tc.name, read, read-1)
	}
	// The default bound is far above a space of 2,000.
	if got := search.New(search.Deps{}).MaxRead; got != search.DefaultMaxRead {
		t.Fatalf("default MaxRead %d", got)
	}
}
