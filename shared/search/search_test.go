package search_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

func active(space, key string, props ...string) *requirement.Requirement {
	r := &requirement.Requirement{SpaceKey: space, Key: key, Status: requirement.Active, Text: "text of " + key,
		Origin: requirement.PageRef{PageID: "1"}}
	for i := 0; i+1 < len(props); i += 2 {
		r.Properties = append(r.Properties, requirement.Property{Key: props[i], Value: props[i+1]})
	}
	return r
}

// smallFake holds two spaces of demo and one of acme.
func smallFake() *fakeStore {
	f := newFakeStore()
	f.put("demo", active("A", "REQ-1", "Priority", "High"), active("A", "REQ-2"), active("B", "REQ-1", "Priority", "High"),
		active("B", "OTHER-1"))
	deleted := active("A", "REQ-3", "Priority", "High")
	deleted.Status = requirement.Deleted
	archived := active("A", "REQ-1", "Priority", "High")
	archived.Baseline, archived.Status = 1, requirement.Archived
	f.put("demo", deleted, archived)
	f.commit("demo", "A", 1)
	f.put("acme", active("A", "REQ-1", "Priority", "High"))
	f.putPage("demo", &wiki.Page{ID: "1", SpaceKey: "A", Keys: []string{"REQ-1", "REQ-2"}})
	return f
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := smallFake()
			f.setIsolate("demo", tt.isolate)
			svc := search.NewService(f, f)
			res, err := svc.Search(context.Background(), search.Request{Tenant: "demo", PathSpace: tt.path, Space: tt.space,
				Query: mustParse(t, "key ~ 'REQ-%'")})
			calls, _ := f.counts()
			if (calls["GetItem"] == 1) != tt.settingsRead {
				t.Errorf("settings read %d times", calls["GetItem"])
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
	svc := search.NewService(smallFake(), smallFake())
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
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s archived=%v space=%s", tt.q, tt.archived, tt.space), func(t *testing.T) {
			t.Parallel()
			f := smallFake()
			order, err := query.ParseOrder(tt.order)
			if err != nil {
				t.Fatal(err)
			}
			res, err := search.NewService(f, f).Search(context.Background(), search.Request{Tenant: "demo", Space: tt.space,
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
	f := newFakeStore()
	hub := active("A", "HUB")
	for i := range search.MaxClosureNodes + 1 {
		hub.ReverseDependencies = append(hub.ReverseDependencies, requirement.Dependency{SpaceKey: "A", Key: fmt.Sprintf("R-%05d", i), Relationship: "refines"})
	}
	f.put("demo", hub)
	svc := search.NewService(f, f)
	_, err := svc.Search(context.Background(), search.Request{Tenant: "demo", Query: mustParse(t, `parent = 'A/HUB'`)})
	if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), "query too broad") {
		t.Fatalf("error %v, want query too broad", err)
	}
	// A relationship that no link has keeps it narrow.
	if _, err := svc.Search(context.Background(), search.Request{Tenant: "demo", Query: mustParse(t, `parent@verifies = 'A/HUB'`)}); err != nil {
		t.Fatal(err)
	}
}

// TestHostileValues: values of any shape reach the store only as values
// and match nothing rather than failing.
func TestHostileValues(t *testing.T) {
	t.Parallel()
	f := smallFake()
	svc := search.NewService(f, f)
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
