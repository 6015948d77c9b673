package search_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// smallStack stores, through the real write path on DynamoDB Local, two
// spaces of demo and one of acme: A/REQ-1 (Priority High), A/REQ-2 on
// page 1, A/REQ-3 (Priority High) deleted from it, B/REQ-1 (Priority High)
// and B/OTHER-1 on page 2, A/REQ-1's copy in committed baseline 1 of A,
// and acme's A/REQ-1 (Priority High).
func smallStack(t *testing.T) *stack {
	t.Helper()
	s := newStack(t)
	ctx := context.Background()
	body := func(rows ...[2]string) string {
		out := []string{wt.TH("Key", "Description", "Priority")}
		for _, r := range rows {
			out = append(out, wt.TR(wt.Def(r[0]), "<p>text of "+r[0]+"</p>", r[1]))
		}
		return wt.Table(out...)
	}
	save(t, s.wiki, "demo", "1", "A", "Page 1", body([2]string{"REQ-1", "High"}, [2]string{"REQ-2", ""}, [2]string{"REQ-3", "High"}))
	save(t, s.wiki, "demo", "1", "A", "Page 1", body([2]string{"REQ-1", "High"}, [2]string{"REQ-2", ""}))
	save(t, s.wiki, "demo", "2", "B", "Page 2", body([2]string{"REQ-1", "High"}, [2]string{"OTHER-1", ""}))
	save(t, s.wiki, "acme", "1", "A", "Page 1", body([2]string{"REQ-1", "High"}))
	id := requirement.ID{SpaceKey: "A", Key: "REQ-1"}
	rows, err := s.reqs.GetMany(ctx, "demo", []requirement.ID{id})
	if err != nil || rows[id] == nil {
		t.Fatalf("A/REQ-1: %v, %v", rows, err)
	}
	archived := *rows[id]
	archived.Baseline, archived.Status = 1, requirement.Archived
	if err := s.reqs.Put(ctx, "demo", []*requirement.Requirement{&archived}); err != nil {
		t.Fatal(err)
	}
	httpapitest.CommitBaseline(t, wikitable.NewBaselineStore(s.items, s.table), "demo", "A", 1)
	return s
}

// isolate sets the tenant's IsolateSpaces setting.
func (s *stack) isolate(t *testing.T, tenant string, on bool) {
	t.Helper()
	if err := s.settings.Put(context.Background(), tenant, integration.Settings{IsolateSpaces: on}); err != nil {
		t.Fatal(err)
	}
}

func mustParse(t *testing.T, q string) query.Expr {
	t.Helper()
	e, err := query.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestScopeRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		isolate         bool
		path, space     string
		want            []string
		settingsRead    bool
		wantErr         string
		includeArchived bool
	}{
		{name: "tenant-wide by default", path: "A", want: []string{"A/REQ-1@0", "B/REQ-1@0", "A/REQ-2@0"}, settingsRead: true},
		{name: "isolated to the path's space", isolate: true, path: "B", want: []string{"B/REQ-1@0"}, settingsRead: true},
		{name: "spaceKey parameter wins", isolate: true, path: "B", space: "A", want: []string{"A/REQ-1@0", "A/REQ-2@0"}},
		{name: "spaceKey parameter without isolation", path: "B", space: "A", want: []string{"A/REQ-1@0", "A/REQ-2@0"}},
		{name: "the path does not matter without isolation", path: "not a space!", want: []string{"A/REQ-1@0", "B/REQ-1@0", "A/REQ-2@0"}, settingsRead: true},
		{name: "invalid spaceKey", space: "A B", wantErr: `invalid spaceKey "A B"`},
		{name: "invalid path space when isolated", isolate: true, path: "A/B", wantErr: `invalid spaceKey "A/B" in the path`, settingsRead: true},
	}
	s := smallStack(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.isolate(t, "demo", tt.isolate)
			s.reset()
			res, err := s.svc.Search(context.Background(), search.Request{Tenant: "demo", PathSpace: tt.path, Space: tt.space,
				Query: mustParse(t, "key ~ 'REQ-%'")})
			if got := s.calls.Count("GetItem"); (got == 1) != tt.settingsRead {
				t.Errorf("settings read %d times", got)
			}
			if tt.wantErr != "" {
				if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(names(res.Requirements)); got != fmt.Sprint(tt.want) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPaging(t *testing.T) {
	t.Parallel()
	svc := smallStack(t).svc
	ctx := context.Background()
	res, err := svc.Search(ctx, search.Request{Tenant: "demo", Limit: 501})
	if err != nil || res.Limit != search.MaxLimit || res.Offset != 0 || len(res.Requirements) != 4 {
		t.Fatalf("limit 501: %+v, %v", res, err)
	}
	if res, err = svc.Search(ctx, search.Request{Tenant: "demo"}); err != nil || res.Limit != search.DefaultLimit {
		t.Fatalf("default limit: %+v, %v", res, err)
	}
	if res, err = svc.Search(ctx, search.Request{Tenant: "demo", Offset: 3, Limit: 2}); err != nil || fmt.Sprint(names(res.Requirements)) != "[A/REQ-2@0]" {
		t.Fatalf("offset 3: %v, %v", names(res.Requirements), err)
	}
	if res, err = svc.Search(ctx, search.Request{Tenant: "demo", Offset: 30}); err != nil || res.Requirements == nil || len(res.Requirements) != 0 {
		t.Fatalf("offset past the end: %#v, %v", res, err)
	}
	for _, req := range []search.Request{{Tenant: "demo", Offset: -1}, {Tenant: "demo", Limit: -5}} {
		if _, err := svc.Search(ctx, req); !errors.Is(err, apperr.ErrInvalid) {
			t.Fatalf("%+v: %v, want invalid", req, err)
		}
	}
}

// TestPlanChoice pins which plan drives typical searches, and when the
// indexes (current ACTIVE rows only) must not be used.
func TestPlanChoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		q        string
		archived bool
		space    string
		order    string
		plan     string
	}{
		{q: `key = 'REQ-1'`, space: "A", plan: "key IN ('REQ-1') by GetItem/GetMany, key order"},
		{q: `key = 'REQ-1'`, plan: "key IN ('REQ-1') by Query of the key-order index"},
		{q: `@Priority = 'High' AND key = 'REQ-1'`, plan: "key IN"},
		{q: `@Priority = 'High' AND key ~ 'REQ%'`, plan: "key prefix 'REQ'"},
		{q: `@Priority = 'High'`, plan: "property[PRIORITY] IN ('High') via index, key order"},
		{q: `@Priority = 'High'`, order: "TEXT", plan: "property[PRIORITY] IN ('High') via index, sorted in memory"},
		{q: `@Priority = 'High'`, archived: true, plan: "scan of the tenant with archived copies"},
		{q: `@Priority = 'High' AND status = 'active'`, archived: true, plan: "property[PRIORITY]"},
		{q: `@Priority = 'High' AND status = 'deleted'`, archived: true, plan: "scan of the tenant, key order"},
		{q: `@Priority = 'High' AND baseline IS NULL`, archived: true, plan: "scan of the tenant, key order"},
		{q: `jira@implements = 'PROJ-1' AND @Priority = 'High'`, plan: "issue@implements IN ('PROJ-1') via index"},
		{q: `page = 1 AND @Priority = 'High'`, plan: "page IN ('1')"},
		{q: `page = 1`, archived: true, plan: "scan of the tenant"},
		{q: `to = 'A/REQ-2' AND page = 1`, plan: "to IN ('A/REQ-2')"},
		{q: `to = 'A/REQ-2'`, archived: true, plan: "scan"},
		{q: `from = 'REQ-2'`, archived: true, plan: "scan"},
		{q: `from = 'REQ-2' AND status IN ('ACTIVE', 'DELETED')`, archived: true, plan: "from IN ('REQ-2')"},
		{q: `baseline = 1`, archived: true, plan: "baseline IN (1) by baseline partitions"},
		{q: `baseline = 1`, plan: "empty"},
		{q: `status = 'ARCHIVED'`, plan: "empty"},
		{q: `space = 'B'`, plan: "scan of space B, key order"},
		{q: `space = 'B'`, space: "A", plan: "empty"},
		{q: `space IN ('A', 'B') AND text ~ '%x%'`, plan: "scan of space A, B"},
		{q: `key = 'REQ-1' OR @Priority = 'High'`, plan: "union(key IN ('REQ-1') by Query of the key-order index; property[PRIORITY]"},
		{q: `key = 'REQ-1' OR text ~ '%x%'`, plan: "scan of the tenant"},
		{q: `'full text'`, plan: "scan of the tenant"},
		{q: `NOT key = 'REQ-1'`, plan: "scan of the tenant"},
		{q: ``, order: "REQKEY DESC", plan: "scan of the tenant, key order"},
		{q: ``, order: "SPACEKEY", plan: "scan of the tenant, sorted in memory"},
	}
	s := smallStack(t)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s archived=%v space=%s", tt.q, tt.archived, tt.space), func(t *testing.T) {
			t.Parallel()
			order, err := query.ParseOrder(tt.order)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.svc.Search(context.Background(), search.Request{Tenant: "demo", Space: tt.space,
				Query: mustParse(t, tt.q), Order: order, IncludeArchived: tt.archived})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Plan, tt.plan) {
				t.Fatalf("plan %q, want %q…", res.Plan, tt.plan)
			}
		})
	}
}

func TestClosureTooBroad(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	// HUB is refined by 100 requirements, each refined by 100 others:
	// MaxClosureNodes + 100 parents in two levels.
	hub := &requirement.Requirement{SpaceKey: "A", Key: "HUB", Status: requirement.Active}
	rows := []*requirement.Requirement{hub}
	for i := range 100 {
		mid := &requirement.Requirement{SpaceKey: "A", Key: fmt.Sprintf("R-%03d", i), Status: requirement.Active}
		hub.ReverseDependencies = append(hub.ReverseDependencies, requirement.Dependency{SpaceKey: "A", Key: mid.Key, Relationship: "refines"})
		for j := range search.MaxClosureNodes / 100 {
			mid.ReverseDependencies = append(mid.ReverseDependencies, requirement.Dependency{SpaceKey: "A", Key: fmt.Sprintf("R-%03d-%03d", i, j), Relationship: "refines"})
		}
		rows = append(rows, mid)
	}
	if err := s.reqs.Put(context.Background(), "demo", rows); err != nil {
		t.Fatal(err)
	}
	_, err := s.svc.Search(context.Background(), search.Request{Tenant: "demo", Query: mustParse(t, `parent = 'A/HUB'`)})
	if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), "query too broad") {
		t.Fatalf("error %v, want query too broad", err)
	}
	// A relationship that no link has keeps it narrow.
	if _, err := s.svc.Search(context.Background(), search.Request{Tenant: "demo", Query: mustParse(t, `parent@verifies = 'A/HUB'`)}); err != nil {
		t.Fatal(err)
	}
}

// TestHostileValues: values of any shape reach the store only as values
// and match nothing rather than failing.
func TestHostileValues(t *testing.T) {
	t.Parallel()
	svc := smallStack(t).svc
	long := strings.Repeat("é", 1500)
	for _, q := range []string{
		`key = 'x'' OR 1=1'`, `key = '; DROP TABLE requirements'`, `key ~ 'REQ#A%'`, `key = 'REQ-1#A'`,
		`key = '` + long + `'`, `key ~ '` + long + `%'`, `@` + "Prio\\ rité" + ` = '` + long + `'`, `jira = '` + long + `'`,
		`page = '` + long + `'`, `page = '../1'`, `space = '` + long + `'`, `to = '/'`, `from = 'A/B/C'`,
		`parent = 'A/` + long + `'`, `baseline = 123456789012`, `baseline = -1`, `status = '\u0000'`,
	} {
		e, err := query.Parse(q)
		if err != nil {
			continue // the parser's 400: tested in shared/query
		}
		res, err := svc.Search(context.Background(), search.Request{Tenant: "demo", Query: e, IncludeArchived: true})
		if err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
		if len(res.Requirements) != 0 {
			t.Fatalf("%.80s: %v", q, names(res.Requirements))
		}
	}
}

// TestWordSearchInASpaceOlderThanTheWordIndex: a space whose registry item
// does not vouch for the word index (registered before it) is scanned, so
// a row without word items is found; the word index's first page, read
// while the registry is, is dropped. With the space vouched for, the
// index drives (and, the row having no item, does not find it).
func TestWordSearchInASpaceOlderThanTheWordIndex(t *testing.T) {
	t.Parallel()
	s := smallStack(t)
	ctx := context.Background()
	// A/REQ-9 as an older write path stored it: a row, no index items.
	old := &requirement.Requirement{SpaceKey: "A", Key: "REQ-9", Status: requirement.Active, Text: "text of REQ-9 zebra",
		Origin: requirement.PageRef{PageID: "1", Title: "Page 1"}}
	if err := s.reqs.Put(ctx, "demo", []*requirement.Requirement{old}); err != nil {
		t.Fatal(err)
	}
	register := func(words bool) {
		t.Helper()
		item := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: dynamo.TenantPrefix("demo") + "SPACES"}, "sk": &types.AttributeValueMemberS{Value: "A"},
			"spaceKey": &types.AttributeValueMemberS{Value: "A"}, "createdAt": &types.AttributeValueMemberS{Value: "2020-01-01T00:00:00Z"},
		}
		if words {
			item["words"] = &types.AttributeValueMemberBOOL{Value: true}
		}
		if _, err := s.items.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		words bool
		space string
		want  string
	}{
		{false, "A", "[A/REQ-9@0]"}, {false, "", "[A/REQ-9@0]"}, {true, "A", "[]"}, {true, "", "[]"},
	} {
		register(tt.words)
		for _, limit := range []int{1, 50} {
			res, err := s.svc.Search(ctx, search.Request{Tenant: "demo", PathSpace: "A", Space: tt.space, Query: mustParse(t, "text ~ '% zebra'"), Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(names(res.Requirements)); got != tt.want || !strings.Contains(res.Plan, "word 'ZEBRA'") {
				t.Errorf("words %v, space %q, limit %d: %s (%s), want %s", tt.words, tt.space, limit, got, res.Plan, tt.want)
			}
		}
		// The export too.
		var exported []*requirement.Requirement
		err := s.svc.Each(ctx, search.Request{Tenant: "demo", PathSpace: "A", Space: tt.space, Query: mustParse(t, "text ~ '% zebra'")},
			func(r *requirement.Requirement) error { exported = append(exported, r); return nil })
		if got := fmt.Sprint(names(exported)); err != nil || got != tt.want {
			t.Errorf("export, words %v, space %q: %s %v, want %s", tt.words, tt.space, got, err, tt.want)
		}
	}
}
