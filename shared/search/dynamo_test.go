package search_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/bench"
	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// stack is a search service on DynamoDB Local with its write side and
// counters of calls and items.
type stack struct {
	svc      *search.Service
	store    *wikitable.SearchStore
	wiki     *wiki.Service
	reqs     *wikitable.RequirementStore
	settings *wikitable.SettingsStore
	calls    *dynamo.CallCounter
	items    *bench.Meter // items read, as make bench counts them
	table    string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	env := testenv.AWS(t)
	calls := dynamo.NewCallCounter()
	items := bench.NewMeter(dynamodb.NewFromConfig(env.Config, calls.Options))
	store := wikitable.NewSearchStore(items, env.WikiTable)
	return &stack{
		svc: search.New(search.Deps{Store: store, Settings: store}), store: store,
		wiki:     wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(items, env.WikiTable)}),
		reqs:     wikitable.NewRequirementStore(items, env.WikiTable),
		settings: wikitable.NewSettingsStore(items, env.WikiTable),
		calls:    calls, items: items, table: env.WikiTable,
	}
}

func (s *stack) reset() {
	s.calls.Reset()
	s.items.Reset()
}

// currentRows reads every current row (stubs included) of the vocabulary's
// spaces and keys with GetMany: the brute force's view of the table.
func (s *stack) currentRows(t *testing.T, tenant string) []*requirement.Requirement {
	t.Helper()
	var ids []requirement.ID
	for _, sp := range wLinkSpaces {
		for _, k := range wKeys {
			ids = append(ids, requirement.ID{SpaceKey: sp, Key: k})
		}
	}
	found, err := s.reqs.GetMany(context.Background(), tenant, ids)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*requirement.Requirement, 0, len(found))
	for _, r := range found {
		out = append(out, r)
	}
	// In a fixed order: the worlds draw random numbers per row, so a seed
	// must see the rows in the same order to build the same world.
	slices.SortFunc(out, func(a, b *requirement.Requirement) int {
		return cmp.Or(strings.Compare(a.SpaceKey, b.SpaceKey), strings.Compare(a.Key, b.Key))
	})
	return out
}

// TestPlansAgreeOnDynamoDB stores random worlds in DynamoDB Local through
// the real indexing write path and compares every plan of random searches
// with the brute-force evaluator over all the tenant's rows. The store
// holds the copies of an uncommitted baseline too; the brute force never
// sees them. A second tenant with the same vocabulary must never show up.
func TestPlansAgreeOnDynamoDB(t *testing.T) {
	t.Parallel()
	for _, seed := range seeds(t, 20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newStack(t)
			rnd := rand.New(rand.NewPCG(seed, 11))
			var archived []*requirement.Requirement
			bl := wikitable.NewBaselineStore(s.items, s.table)
			archive := func(tenant string) func([]*requirement.Requirement, int, bool) {
				return func(rows []*requirement.Requirement, n int, commit bool) {
					if err := s.reqs.Put(ctx, tenant, rows); err != nil {
						t.Fatal(err)
					}
					if !commit {
						return // invisible: never in the brute force's rows
					}
					for _, space := range wLinkSpaces {
						httpapitest.CommitBaseline(t, bl, tenant, space, n)
					}
					if tenant == "demo" {
						archived = append(archived, rows...)
					}
				}
			}
			// A page retitled by a baseline (its rows keep the title
			// they were saved with); numbers above the world's own.
			retitle := func(tenant string) func(string, string, string) {
				next := map[string]int{}
				return func(pageID, space, title string) {
					next[space]++
					job := &baseline.Job{Tenant: tenant, Owner: "test", Baseline: baseline.Baseline{
						SpaceKey: space, Number: 10 + next[space], Name: title, CEO: pageID, CreatedAt: time.Now()}}
					if err := bl.Begin(ctx, job); err != nil {
						t.Fatal(err)
					}
					if err := bl.Commit(ctx, job, true); err != nil {
						t.Fatal(err)
					}
				}
			}
			w := buildWorld(t, rnd, s.wiki, "demo", 14, func() []*requirement.Requirement { return s.currentRows(t, "demo") },
				archive("demo"), retitle("demo"))
			buildWorld(t, rand.New(rand.NewPCG(seed, 12)), s.wiki, "acme", 6,
				func() []*requirement.Requirement { return s.currentRows(t, "acme") }, archive("acme"), retitle("acme"))
			all := append(s.currentRows(t, "demo"), archived...)
			isolate := seed%2 == 0
			if err := s.settings.Put(ctx, "demo", integration.Settings{IsolateSpaces: isolate}); err != nil {
				t.Fatal(err)
			}
			withExt, extRows, extFound := 0, 0, 0
			suspectRows, withSuspect, suspectFound := 0, 0, 0
			for _, r := range all {
				if len(r.ExternalProperties()) > 0 {
					extRows++
				}
				if r.Baseline == 0 && r.Status == requirement.Active && r.IsSuspect() {
					suspectRows++
				}
			}
			// Every fourth search is exported too, by a service that cuts
			// key-order reads into segments at tiny sizes.
			segStore := &watchStore{Store: s.store}
			segSvc := search.New(search.Deps{Store: segStore, Settings: s.store})
			segSvc.PageSize, segSvc.Segments, segSvc.InFlight = 2, 8, 3
			var exports, exportsCut int
			var pageCases, titleCases, citedCases, pageMatched, withRange, rangeFound, withWord, wordFound int
			for i := range 300 {
				req, scope, desc := randomRequest(t, rnd, w, "demo", isolate)
				n := checkPlans(t, s.svc, all, w.titles, req, scope, desc)
				if i%4 == 0 {
					if ran, cut := checkEach(t, segSvc, segStore, all, w.titles, req, scope, desc); ran {
						exports++
						if cut {
							exportsCut++
						}
					}
				}
				if strings.Contains(desc, "suspect IS") {
					withSuspect++
					if n > 0 {
						suspectFound++
					}
				}
				if hasWord(req.Query) {
					withWord++
					if n > 0 {
						wordFound++
					}
				}
				if hasKeyRange(req.Query) {
					withRange++
					if n > 0 {
						rangeFound++
					}
				}
				if strings.Contains(desc, "ext@") {
					withExt++
					if n > 0 {
						extFound++
					}
				}
				lookups := query.PageLookups(req.Query)
				if len(lookups) == 0 {
					continue
				}
				pageCases++
				if slices.ContainsFunc(lookups, func(l query.PageLookup) bool { return !slices.Contains(w.pages, l.Value) && l.Value != "999" }) {
					titleCases++
				}
				if slices.ContainsFunc(lookups, func(l query.PageLookup) bool { return l.Cited }) {
					citedCases++
				}
				if n > 0 {
					pageMatched++
				}
			}
			if extRows == 0 || withExt == 0 {
				t.Fatalf("the world has %d rows with external properties and %d searches use ext@", extRows, withExt)
			}
			if withSuspect == 0 {
				t.Fatalf("no search of the 300 uses suspect IS")
			}
			// Word searches alone (a text pattern or a bare string, maybe
			// with a key range), so that many of them find something.
			for i := range 40 {
				req, scope, desc := randomRequest(t, rnd, w, "demo", isolate)
				text := "text ~ " + quoted(wordPattern(rnd, true))
				switch i % 4 {
				case 0:
					text = quoted(wordPattern(rnd, false))
				case 1:
					text += " AND " + keyRange(rnd)
				case 2:
					// Words of a stored text, in a row, from the first
					// match on: found unless out of scope.
					req.Offset, req.IncludeArchived = 0, false
					words := strings.Fields(pick(rnd, all).Text)
					if len(words) > 2 {
						j := rnd.IntN(len(words) - 2)
						text = "text ~ " + quoted("%"+likeEscaped(strings.Join(words[j:j+3], " "))+"%")
					}
				}
				e, err := query.Parse(text)
				if err != nil {
					t.Fatalf("generated query %q: %v", text, err)
				}
				req.Query = e
				n := checkPlans(t, s.svc, all, w.titles, req, scope, fmt.Sprintf("q=%q (%s)", text, desc))
				if hasWord(e) {
					withWord++
					if n > 0 {
						wordFound++
					}
				}
			}
			if wordFound == 0 {
				t.Fatalf("%d searches of the 340 are driven by a word, none finds anything", withWord)
			}
			if rangeFound == 0 {
				t.Fatalf("%d searches of the 300 are driven by a key range, none finds anything", withRange)
			}
			if exportsCut == 0 {
				t.Fatalf("%d exports checked, none read in segments", exports)
			}
			t.Logf("seed %d: %d exports (Each, page size 2, up to 8 segments) checked against the brute force, %d of them read in segments", seed, exports, exportsCut)
			t.Logf("seed %d: 300 searches checked against the brute force; %d with page predicates (%d naming a title, %d with page ~), %d of those with matches; %d use ext@ (%d of them find something); %d of %d rows have external properties; %d use suspect IS (%d find something) over %d suspect rows; %d have a key range (comparisons, prefixes; %d find something); of 40 more text searches and the 300, %d are driven by a word of a text pattern or bare string (%d find something)",
				seed, pageCases, titleCases, citedCases, pageMatched, withExt, extFound, extRows, len(all), withSuspect, suspectFound, suspectRows, withRange, rangeFound, withWord, wordFound)
		})
	}
}

// hasWord reports whether a word (query.AccessWord) can drive e, at its
// top or in an OR branch.
func hasWord(e query.Expr) bool {
	var walk func([]query.Access) bool
	walk = func(as []query.Access) bool {
		return slices.ContainsFunc(as, func(a query.Access) bool {
			return a.Kind == query.AccessWord || slices.ContainsFunc(a.Branches, walk)
		})
	}
	return walk(query.Drivers(e))
}

// hasKeyRange reports whether a key range (key comparisons or prefixes)
// can drive e, at its top or in an OR branch.
func hasKeyRange(e query.Expr) bool {
	var walk func([]query.Access) bool
	walk = func(as []query.Access) bool {
		return slices.ContainsFunc(as, func(a query.Access) bool {
			_, _, ok := a.KeyRange()
			return ok || slices.ContainsFunc(a.Branches, walk)
		})
	}
	return walk(query.Drivers(e))
}
