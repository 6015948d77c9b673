package wikitable_test

// Tests of SearchStore (search.Store on the WikiTable) on DynamoDB Local:
// the key orders, begins_with and exact ranges, the space filter of the
// archived index, paging tokens and descending reads. The planner on top
// of it is tested in shared/search.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func searchRow(space, key string, baseline int) *requirement.Requirement {
	st := requirement.Active
	if baseline > 0 {
		st = requirement.Archived
	}
	return &requirement.Requirement{SpaceKey: space, Key: key, Baseline: baseline, Status: st, Text: key}
}

func searchNames(rows []*requirement.Requirement) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s/%s@%d", r.SpaceKey, r.Key, r.Baseline))
	}
	return out
}

// searchReadAll pages through a range limit items at a time.
func searchReadAll(t *testing.T, s *wikitable.SearchStore, tenant string, r search.Range, limit int) []string {
	t.Helper()
	var rows []*requirement.Requirement
	var after search.Token
	for range 100 {
		page, next, err := s.Rows(context.Background(), tenant, r, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if limit > 0 && len(page) > limit {
			t.Fatalf("%d rows for limit %d", len(page), limit)
		}
		rows = append(rows, page...)
		if next == "" {
			return searchNames(rows)
		}
		after = next
	}
	t.Fatal("no end")
	return nil
}

func TestSearchStoreRanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testenv.AWS(t)
	db := dynamodb.NewFromConfig(env.Config)
	reqs := wikitable.NewRequirementStore(db, env.WikiTable)
	s := wikitable.NewSearchStore(db, env.WikiTable)
	rows := []*requirement.Requirement{
		searchRow("A", "REQ-1", 0), searchRow("A", "req-2", 0), searchRow("A", "REQ-10", 0), searchRow("A", "X-1", 0),
		searchRow("B", "REQ-1", 0), searchRow("B", "REQ-3", 0), searchRow("AB", "REQ-1", 0),
		searchRow("A", "REQ-1", 1), searchRow("A", "REQ-1", 2), searchRow("A", "req-2", 2), searchRow("B", "REQ-1", 1), searchRow("AB", "REQ-1", 2),
	}
	if err := reqs.Put(ctx, "demo", rows); err != nil {
		t.Fatal(err)
	}
	if err := reqs.Put(ctx, "acme", []*requirement.Requirement{searchRow("A", "REQ-1", 0), searchRow("A", "REQ-1", 1)}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		r    search.Range
		want []string
	}{
		{"space, prefix", search.Range{Space: "A", Prefix: "REQ-"},
			[]string{"A/REQ-1@0", "A/REQ-10@0", "A/req-2@0"}},
		{"space, descending", search.Range{Space: "A", Desc: true},
			[]string{"A/X-1@0", "A/req-2@0", "A/REQ-10@0", "A/REQ-1@0"}},
		{"space, exact", search.Range{Space: "A", Prefix: "REQ-1", Exact: true}, []string{"A/REQ-1@0"}},
		{"tenant, key order then space", search.Range{Prefix: "REQ-1"},
			[]string{"A/REQ-1@0", "AB/REQ-1@0", "B/REQ-1@0", "A/REQ-10@0"}},
		{"tenant, exact", search.Range{Prefix: "REQ-1", Exact: true},
			[]string{"A/REQ-1@0", "AB/REQ-1@0", "B/REQ-1@0"}},
		{"archived, key, space, newest first", search.Range{Archived: true},
			[]string{"A/REQ-1@2", "A/REQ-1@1", "AB/REQ-1@2", "B/REQ-1@1", "A/req-2@2"}},
		{"archived, descending", search.Range{Archived: true, Desc: true},
			[]string{"A/req-2@2", "B/REQ-1@1", "AB/REQ-1@2", "A/REQ-1@1", "A/REQ-1@2"}},
		{"archived in a space: filtered", search.Range{Archived: true, Space: "A"},
			[]string{"A/REQ-1@2", "A/REQ-1@1", "A/req-2@2"}},
		{"archived in a space, exact: not AB", search.Range{Archived: true, Space: "A", Prefix: "req-1", Exact: true},
			[]string{"A/REQ-1@2", "A/REQ-1@1"}},
		{"baseline partition", search.Range{Space: "A", Baseline: 2},
			[]string{"A/REQ-1@2", "A/req-2@2"}},
		{"baseline partition, prefix", search.Range{Space: "A", Baseline: 2, Prefix: "REQ-2"}, []string{"A/req-2@2"}},
		{"no match", search.Range{Space: "C"}, []string{}},
		{"space, key range: From kept, the row at Before left to the next range", search.Range{Space: "A", From: "REQ-10", Before: "X-1"},
			[]string{"A/REQ-10@0", "A/req-2@0"}},
		{"space, key range open at the end", search.Range{Space: "A", From: "REQ-2"}, []string{"A/req-2@0", "A/X-1@0"}},
		{"space, key range open at the start", search.Range{Space: "A", Before: "REQ-10"}, []string{"A/REQ-1@0"}},
		{"baseline partition, key range with bounds between keys", search.Range{Space: "A", Baseline: 2, From: "REQ-1\x01", Before: "REQ-3"},
			[]string{"A/req-2@2"}},
		// Key ranges anywhere: tenant-wide, archived, descending, with a
		// prefix (the key comparisons of a search).
		{"tenant, key range open at the end", search.Range{From: "A"},
			[]string{"A/REQ-1@0", "AB/REQ-1@0", "B/REQ-1@0", "A/REQ-10@0", "A/req-2@0", "B/REQ-3@0", "A/X-1@0"}},
		{"tenant, key range: the rows at Before left out", search.Range{From: "REQ-10", Before: "REQ-3"},
			[]string{"A/REQ-10@0", "A/req-2@0"}},
		{"tenant, key range open at the start, descending", search.Range{Before: "REQ-2", Desc: true},
			[]string{"A/REQ-10@0", "B/REQ-1@0", "AB/REQ-1@0", "A/REQ-1@0"}},
		{"archived in a space, key range", search.Range{Archived: true, Space: "A", Before: "X"},
			[]string{"A/REQ-1@2", "A/REQ-1@1", "A/req-2@2"}},
		{"archived, key range", search.Range{Archived: true, From: "REQ-1-", Before: "REQ-3"},
			[]string{"A/req-2@2"}},
		{"space, key range, descending", search.Range{Space: "A", From: "A", Desc: true},
			[]string{"A/X-1@0", "A/req-2@0", "A/REQ-10@0", "A/REQ-1@0"}},
		{"space, key range and prefix intersected", search.Range{Space: "A", Before: "REQ-2", Prefix: "R"},
			[]string{"A/REQ-1@0", "A/REQ-10@0"}},
		{"tenant, prefix: exactly the keys starting with it", search.Range{Prefix: "REQ-1"},
			[]string{"A/REQ-1@0", "AB/REQ-1@0", "B/REQ-1@0", "A/REQ-10@0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, limit := range []int{0, 1, 2, 100} {
				if got := searchReadAll(t, s, "demo", tt.r, limit); !slices.Equal(got, tt.want) {
					t.Fatalf("limit %d: %v, want %v", limit, got, tt.want)
				}
			}
		})
	}
	// An exact key has no range.
	for _, r := range []search.Range{{Prefix: "REQ-1", Exact: true, From: "A"}, {Space: "A", Prefix: "REQ-1", Exact: true, Before: "X"}} {
		if _, _, err := s.Rows(ctx, "demo", r, "", 0); err == nil {
			t.Errorf("Rows(%+v) read a key range with an exact key", r)
		}
	}
	// acme's rows never appear in demo's ranges, and the reverse.
	if got := searchReadAll(t, s, "acme", search.Range{}, 0); !slices.Equal(got, []string{"A/REQ-1@0"}) {
		t.Fatalf("acme: %v", got)
	}

	got, err := s.Get(ctx, "demo", []requirement.ID{{SpaceKey: "A", Key: "req-1"}, {SpaceKey: "A", Key: "REQ-1", Baseline: 2}, {SpaceKey: "C", Key: "REQ-1"}})
	if err != nil {
		t.Fatal(err)
	}
	names := searchNames(got)
	slices.Sort(names)
	if !slices.Equal(names, []string{"A/REQ-1@0", "A/REQ-1@2"}) {
		t.Fatalf("Get: %v", names)
	}
}

func TestSearchStoreIndexPagesSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testenv.AWS(t)
	db := dynamodb.NewFromConfig(env.Config)
	s := wikitable.NewSearchStore(db, env.WikiTable)
	svc := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, env.WikiTable)})
	body := wt.Table(wt.TH("Key", "Description", "Priority", "Implements"),
		wt.TR(wt.Def("REQ-2"), "Two", "High", wt.Jira("PROJ-1", "")),
		wt.TR(wt.Def("REQ-1"), "One", "high", ""),
		wt.TR(wt.Def("REQ-3"), "Three", "Low", wt.Jira("proj-1", "")))
	for _, p := range []struct{ id, space string }{{"1", "A"}, {"2", "B"}} {
		if _, err := svc.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: p.id, SpaceKey: p.space, Title: "P", Body: body}); err != nil {
			t.Fatal(err)
		}
	}

	// The index is case-insensitive on values (a superset: the evaluator
	// checks), in key order then space, paged by tokens.
	for _, limit := range []int{0, 1, 3} {
		for _, desc := range []bool{false, true} {
			ids := indexIDs(t, s, search.IndexRef{Kind: search.IndexProperty, Name: "PRIORITY", Value: "HIGH"}, desc, limit)
			want := []string{"A/REQ-1", "B/REQ-1", "A/REQ-2", "B/REQ-2"}
			if desc {
				slices.Reverse(want)
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("limit %d desc %v: %v, want %v", limit, desc, ids, want)
			}
		}
	}
	page, _, err := s.Index(ctx, "demo", search.IndexRef{Kind: search.IndexIssue, Value: "Proj-1"}, false, "", 0)
	if err != nil || len(page) != 4 {
		t.Fatalf("issue index: %v, %v", page, err)
	}

	// One space's view of a partition (gsi1) holds that space's items
	// only, in the same order, paged the same way; another tenant's
	// space of the same name is never read.
	if _, err := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, env.WikiTable)}).SavePage(ctx, "acme", "alice",
		wiki.PageInput{ID: "77", SpaceKey: "B", Title: "P", Body: body}); err != nil {
		t.Fatal(err)
	}
	for _, ix := range []search.IndexRef{
		{Kind: search.IndexProperty, Name: "priority", Value: "High", Space: "B"},
		{Kind: search.IndexIssue, Value: "PROJ-1", Space: "B"},
	} {
		for _, desc := range []bool{false, true} {
			ids := indexIDs(t, s, ix, desc, 1)
			want := []string{"B/REQ-1", "B/REQ-2"}
			if ix.Kind == search.IndexIssue {
				want = []string{"B/REQ-2", "B/REQ-3"}
			}
			if desc {
				slices.Reverse(want)
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("%+v desc %v: %v, want %v", ix, desc, ids, want)
			}
		}
	}
	if page, _, err := s.Index(ctx, "demo", search.IndexRef{Kind: search.IndexProperty, Name: "Priority", Value: "high", Space: "C"}, false, "", 0); err != nil || len(page) != 0 {
		t.Fatalf("a space without pages: %v, %v", page, err)
	}

	space, keys, err := s.PageKeys(ctx, "demo", "2")
	if err != nil || space != "B" || !slices.Equal(keys, []string{"REQ-2", "REQ-1", "REQ-3"}) {
		t.Fatalf("PageKeys: %s %v %v", space, keys, err)
	}
	if _, _, err := s.PageKeys(ctx, "demo", "3"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("unknown page: %v", err)
	}
	if _, _, err := s.PageKeys(ctx, "acme", "1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("another tenant's page: %v", err)
	}
	if spaces, err := s.Spaces(ctx, "demo"); err != nil || !slices.Equal(spaces, []string{"A", "B"}) {
		t.Fatalf("Spaces: %v %v", spaces, err)
	}

	if on, err := s.IsolateSpaces(ctx, "demo"); err != nil || on {
		t.Fatalf("default isolateSpaces: %v %v", on, err)
	}
	if err := wikitable.NewSettingsStore(db, env.WikiTable).Put(ctx, "demo", integration.Settings{IsolateSpaces: true}); err != nil {
		t.Fatal(err)
	}
	if on, err := s.IsolateSpaces(ctx, "demo"); err != nil || !on {
		t.Fatalf("isolateSpaces: %v %v", on, err)
	}
	if on, _ := s.IsolateSpaces(ctx, "acme"); on {
		t.Fatal("acme isolates spaces")
	}
	// The view follows the index as rows change: REQ-2 loses its
	// property on page 2 (space B) and leaves B's view only.
	if _, err := svc.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "2", SpaceKey: "B", Title: "P", Body: wt.Table(
		wt.TH("Key", "Description", "Priority"), wt.TR(wt.Def("REQ-2"), "Two", ""), wt.TR(wt.Def("REQ-1"), "One", "High"))}); err != nil {
		t.Fatal(err)
	}
	for space, want := range map[string]int{"A": 2, "B": 1} {
		page, _, err := s.Index(ctx, "demo", search.IndexRef{Kind: search.IndexProperty, Name: "PRIORITY", Value: "HIGH", Space: space}, false, "", 0)
		if err != nil || len(page) != want {
			t.Fatalf("space %s after the change: %v, %v, want %d ids", space, page, err, want)
		}
	}
}

// indexIDs reads a whole index partition of tenant demo, limit ids per
// page, and returns its ids as "SPACE/KEY".
func indexIDs(t *testing.T, s *wikitable.SearchStore, ix search.IndexRef, desc bool, limit int) []string {
	t.Helper()
	var ids []string
	var after search.Token
	for {
		page, next, err := s.Index(context.Background(), "demo", ix, desc, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range page {
			ids = append(ids, id.SpaceKey+"/"+id.Key)
		}
		if next == "" {
			return ids
		}
		after = next
	}
}

// A property whose name or value changes length in bytes when folded
// ('ı' is 2 bytes, 'I' 1) and whose index partition key must be cut lands
// in the partition the search reads: both sides fold, then cut.
func TestSearchIndexLongFoldedValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	s := wikitable.NewSearchStore(e.db, e.env.WikiTable)
	value := strings.Repeat("ı", 600) // 1,200 bytes; 600 once folded
	e.save(t, "demo", "1", "A", wt.Table(wt.TH("Key", "Description", "Açıklama"), wt.TR(wt.Def("REQ-1"), "One", value), wt.TR(wt.Def("REQ-2"), "Two", "short")))
	svcSearch := search.New(search.Deps{Store: s, Settings: s})
	for _, space := range []string{"", "A"} {
		q, err := query.Parse("@Açıklama = '" + value + "'")
		if err != nil {
			t.Fatal(err)
		}
		res, err := svcSearch.Search(ctx, search.Request{Tenant: "demo", PathSpace: "A", Space: space, Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Requirements) != 1 || res.Requirements[0].Key != "REQ-1" || !strings.Contains(res.Plan, "via index") {
			t.Fatalf("spaceKey %q: %d results, plan %s", space, len(res.Requirements), res.Plan)
		}
	}
}
