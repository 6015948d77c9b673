package search_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// The vocabulary of random worlds and queries: small, so that random
// queries hit random data. Keys differ in case on purpose ("REQ-1" and
// "req-1" are one key in a space), "Z" is a space only links name.
var (
	wSpaces     = []string{"A", "B", "C"}
	wLinkSpaces = []string{"A", "B", "C", "Z"}
	wKeys       = []string{"REQ-1", "req-1", "REQ-2", "Req-3", "REQ-10", "REQ-11", "A", "a.b", "B_2", "X-1", "x-2", "ZED"}
	wProps      = []string{"Priority", "priority", "Category", "Main Category"}
	wValues     = []string{"High", "high", "Low", "Functional", "UI"}
	// External properties: names and values that overlap the page's on
	// purpose (@Priority and ext@Priority are different fields).
	wExtProps  = []string{"Cost", "cost", "Owner", "Priority", "Main Owner"}
	wExtValues = []string{"12", "9.5", "bob", "High", ""}
	wIssues    = []string{"PROJ-1", "PROJ-2", "proj-2", "OTHER-10"}
	wWords     = []string{"login", "logout", "user", "Admin", "report", "100%"}
	wLinkCols  = []string{"Refines", "Verifies"}
	wIssueCols = []string{"Implements", "Tests"}
	wStatuses  = []string{"ACTIVE", "deleted", "Moved", "ARCHIVED", "bogus"}
	wOrders    = []string{"", "REQKEY ASC, BASELINE DESC", "REQKEY DESC", "key", "SPACEKEY, REQKEY", "STATUS DESC",
		"BASELINE", "TEXT", "PAGE DESC, KEY", "REQKEY, SPACE DESC", "reqkey desc, baseline asc"}
	// Page titles: equal ignoring case, ids of other pages (ids are 100
	// and up), a '%' (a literal for `page ~`), non-ASCII.
	wTitles = []string{"Specs", "specs", "SPECS", "Design", "Design notes", "101", "105", "100% done", "Ärger"}
)

func pick[T any](rnd *rand.Rand, xs []T) T { return xs[rnd.IntN(len(xs))] }

// world is what a random world stored, as the test knows it.
type world struct {
	pages     []string // page ids ever used
	baselines []int
	// titles are the current titles of the pages that exist.
	titles map[string]string
}

// pageBody returns a random page: a table of 1 to 5 definitions with
// property, link and issue columns.
func pageBody(rnd *rand.Rand) string {
	props := []string{pick(rnd, wProps)}
	if rnd.IntN(2) == 0 {
		props = append(props, pick(rnd, wProps))
	}
	linkCol, issueCol := pick(rnd, wLinkCols), pick(rnd, wIssueCols)
	header := append(append([]string{"Key", "Description"}, props...), linkCol, issueCol)
	rows := []string{wt.TH(header...)}
	for range 1 + rnd.IntN(5) {
		key := pick(rnd, wKeys)
		desc := "<p>The " + pick(rnd, wWords) + " " + pick(rnd, wWords)
		if rnd.IntN(4) == 0 {
			desc += " " + wt.Link(maybe(rnd, wLinkSpaces), pick(rnd, wKeys))
		}
		desc += "</p>"
		cells := []string{wt.Def(key), desc}
		for range props {
			var vals []string
			for range rnd.IntN(3) {
				vals = append(vals, "<p>"+pick(rnd, wValues)+"</p>")
			}
			cells = append(cells, strings.Join(vals, ""))
		}
		var links, issues string
		for range rnd.IntN(3) {
			links += wt.Link(maybe(rnd, wLinkSpaces), pick(rnd, wKeys))
		}
		for range rnd.IntN(3) {
			issues += wt.Jira(pick(rnd, wIssues), "")
		}
		rows = append(rows, wt.TR(append(cells, links, issues)...))
	}
	return wt.Table(rows...)
}

// maybe returns "" (no space: the page's own) or an element of xs.
func maybe(rnd *rand.Rand, xs []string) string {
	if rnd.IntN(2) == 0 {
		return ""
	}
	return pick(rnd, xs)
}

// buildWorld stores a random world for tenant through the real indexing
// write path (svc): pages created, re-saved (retitled or not), moved and
// deleted, so that requirements are ACTIVE, DELETED and MOVED, with
// properties, issues and dependencies (and stubs for undefined targets),
// and external properties set, changed and removed through svc.SetExternal
// before and after those page operations (so that saves, moves and
// deletions carry or drop them); some pages then retitled by retitle (a
// baseline's title: their rows keep the title they were saved with); then
// baselines: archive stores archived copies of some ACTIVE rows, read with
// current, and commits baselines 1 and 2 in every space, never 3.
func buildWorld(t *testing.T, rnd *rand.Rand, svc *wiki.Service, tenant string, nPages int,
	current func() []*requirement.Requirement, archive func(copies []*requirement.Requirement, n int, commit bool),
	retitle func(pageID, space, title string)) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{titles: map[string]string{}}
	space := map[string]string{}
	put := func(id string) {
		w.titles[id] = pick(rnd, wTitles)
		save(t, svc, tenant, id, space[id], w.titles[id], pageBody(rnd))
	}
	for i := range nPages {
		id := fmt.Sprint(100 + i)
		space[id] = pick(rnd, wSpaces)
		put(id)
		w.pages = append(w.pages, id)
	}
	setExternal(t, rnd, svc, tenant, current(), 2*nPages)
	for range nPages / 2 {
		id := pick(rnd, w.pages)
		if space[id] == "" {
			continue
		}
		switch rnd.IntN(4) {
		case 0: // moved to another space, defining the same or other keys
			space[id] = pick(rnd, wSpaces)
			put(id)
		case 1:
			if err := svc.DeletePage(ctx, tenant, "bob", id); err != nil {
				t.Fatal(err)
			}
			space[id] = ""
			delete(w.titles, id)
		default:
			put(id)
		}
	}
	for range nPages / 4 {
		if id := pick(rnd, w.pages); space[id] != "" {
			w.titles[id] = pick(rnd, wTitles)
			retitle(id, space[id], w.titles[id])
		}
	}
	setExternal(t, rnd, svc, tenant, current(), nPages)
	rows := current()
	for n := 1; n <= 3; n++ {
		var copies []*requirement.Requirement
		for _, r := range rows {
			if r.Status == requirement.Active && rnd.IntN(2) == 0 {
				c := *r
				c.Baseline, c.Status = n, requirement.Archived
				copies = append(copies, &c)
			}
		}
		// Baseline 3 is never committed (still freezing, or the leftovers
		// of a failed freeze): its copies must never appear.
		archive(copies, n, n < 3)
		w.baselines = append(w.baselines, n)
	}
	return w
}

// setExternal makes n random external property changes (sets, and
// removals one time in four) on random ACTIVE rows among rows.
func setExternal(t *testing.T, rnd *rand.Rand, svc *wiki.Service, tenant string, rows []*requirement.Requirement, n int) {
	t.Helper()
	var active []*requirement.Requirement
	for _, r := range rows {
		if r.Status == requirement.Active {
			active = append(active, r)
		}
	}
	slices.SortFunc(active, func(a, b *requirement.Requirement) int {
		return strings.Compare(a.SpaceKey+"/"+a.Key, b.SpaceKey+"/"+b.Key) // rows come in no order: fix it for the seed
	})
	if len(active) == 0 {
		return
	}
	for range n {
		r := pick(rnd, active)
		var changes []requirement.ExternalChange
		for range 1 + rnd.IntN(2) {
			c := requirement.ExternalChange{Name: pick(rnd, wExtProps)}
			if rnd.IntN(4) > 0 {
				v := pick(rnd, wExtValues)
				c.Value = &v
			}
			if !slices.ContainsFunc(changes, func(o requirement.ExternalChange) bool { return strings.EqualFold(o.Name, c.Name) }) {
				changes = append(changes, c)
			}
		}
		if _, err := svc.SetExternal(context.Background(), tenant, r.SpaceKey, r.Key, changes); err != nil {
			t.Fatal(err)
		}
	}
}

func save(t *testing.T, svc *wiki.Service, tenant, id, space, title, body string) {
	t.Helper()
	if _, err := svc.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: id, SpaceKey: space, Title: title, Body: body}); err != nil {
		t.Fatal(err)
	}
}

// randomQuery returns a random query of the language over the world's
// vocabulary, up to depth levels of AND, OR and NOT.
func randomQuery(rnd *rand.Rand, w *world, depth int) string {
	if depth == 0 || rnd.IntN(3) == 0 {
		if depth == 2 && rnd.IntN(15) == 0 {
			if rnd.IntN(2) == 0 {
				return quoted(wordPattern(rnd, false))
			}
			return "'" + pick(rnd, append(slices.Clone(wWords), "req-1", "a.")) + "'"
		}
		return randomPredicate(rnd, w)
	}
	a, b := randomQuery(rnd, w, depth-1), randomQuery(rnd, w, depth-1)
	switch rnd.IntN(5) {
	case 0, 1:
		return a + " AND " + b
	case 2:
		return "(" + a + " OR " + b + ")"
	case 3:
		return a + " OR " + b
	}
	return "NOT (" + a + ")"
}

func quoted(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

func ref(rnd *rand.Rand) string {
	k := pick(rnd, wKeys)
	if s := maybe(rnd, wLinkSpaces); s != "" {
		return s + "/" + k
	}
	return k
}

func rel(rnd *rand.Rand, cols []string) string {
	if rnd.IntN(2) == 0 {
		return ""
	}
	return "@" + strings.ToLower(pick(rnd, cols))
}

func in(rnd *rand.Rand, field string, gen func() string) string {
	vals := []string{gen()}
	for range rnd.IntN(3) {
		vals = append(vals, gen())
	}
	not := ""
	if rnd.IntN(4) == 0 {
		not = "NOT "
	}
	return field + " " + not + "IN (" + strings.Join(vals, ", ") + ")"
}

// randomDriver returns a predicate that query.Drivers can drive a search
// with.
func randomDriver(rnd *rand.Rand, w *world) string {
	for {
		p := randomPredicate(rnd, w)
		if e, err := query.Parse(p); err == nil && len(query.Drivers(e)) > 0 {
			return p
		}
	}
}

// pageValue returns a value naming pages: an id (maybe of no page), or a
// title in any case.
func pageValue(rnd *rand.Rand, w *world) string {
	if rnd.IntN(2) == 0 {
		return pick(rnd, append(slices.Clone(w.pages), "999"))
	}
	return pick(rnd, []func(string) string{strings.ToUpper, strings.ToLower, strings.Clone})(pick(rnd, wTitles))
}

// likeEscaped escapes a text for a `~` pattern: '%' and '\' literal.
func likeEscaped(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "%", `\%`)
}

func randomPredicate(rnd *rand.Rand, w *world) string {
	q := func(xs []string) func() string { return func() string { return quoted(pick(rnd, xs)) } }
	prop := func() string { return "@" + strings.ReplaceAll(pick(rnd, wProps), " ", `\ `) }
	ext := func() string { return "ext@" + strings.ReplaceAll(pick(rnd, wExtProps), " ", `\ `) }
	switch rnd.IntN(41) {
	case 0:
		return "key = " + q(wKeys)()
	case 1:
		return in(rnd, "key", q(wKeys))
	case 2:
		k := pick(rnd, wKeys)
		return "key ~ " + quoted(k[:1+rnd.IntN(len(k))]+"%")
	case 3:
		return "key " + pick(rnd, []string{"!=", "<", ">=", "~"}) + " " + quoted(pick(rnd, []string{"REQ-10", "%-1%", "b", "REQ%"}))
	case 35, 36, 37:
		return keyRange(rnd)
	case 38, 39, 40:
		return "text ~ " + quoted(wordPattern(rnd, true))
	case 4:
		return "text ~ " + quoted("%"+pick(rnd, wWords)+"%")
	case 5:
		return "space " + pick(rnd, []string{"=", "!=", "="}) + " " + q(wLinkSpaces)()
	case 6:
		return in(rnd, "space", q(wSpaces))
	case 7:
		return "status = " + q(wStatuses)()
	case 8:
		return in(rnd, "status", q(wStatuses))
	case 9:
		return "page = " + pick(rnd, append(slices.Clone(w.pages), "999"))
	case 10:
		return in(rnd, "page", func() string { return quoted(pick(rnd, w.pages)) })
	case 11:
		return "baseline " + pick(rnd, []string{"=", "=", ">", "<="}) + " " + fmt.Sprint(1+rnd.IntN(3))
	case 12:
		return "baseline IS " + pick(rnd, []string{"", "NOT "}) + "NULL"
	case 13:
		return "jira" + rel(rnd, wIssueCols) + " = " + q(wIssues)()
	case 14:
		return in(rnd, "jira"+rel(rnd, wIssueCols), q(wIssues))
	case 15:
		return "to" + rel(rnd, append(slices.Clone(wLinkCols), "dependency")) + " = " + quoted(ref(rnd))
	case 16:
		return "from" + rel(rnd, append(slices.Clone(wLinkCols), "dependency")) + " " + pick(rnd, []string{"=", "=", "!=", "~"}) + " " + quoted(ref(rnd))
	case 17:
		return in(rnd, pick(rnd, []string{"to", "from"}), func() string { return quoted(ref(rnd)) })
	case 18:
		return pick(rnd, []string{"parent", "child"}) + rel(rnd, wLinkCols) + " " + pick(rnd, []string{"=", "=", "!="}) + " " + quoted(ref(rnd))
	case 19:
		return in(rnd, pick(rnd, []string{"parent", "child"}), func() string { return quoted(ref(rnd)) })
	case 20, 21:
		return prop() + " = " + q(wValues)()
	case 22:
		return in(rnd, prop(), q(wValues))
	case 23, 24:
		return ext() + " = " + q(wExtValues)()
	case 25:
		return in(rnd, ext(), q(wExtValues))
	case 26:
		return ext() + " " + pick(rnd, []string{"IS NULL", "IS NOT NULL", "~ '1%'", "!= 'bob'", "< 10", ">= '12'", "== 12"})
	case 27:
		// The same name as a page property or an external one.
		return pick(rnd, []string{"@", "ext@"}) + "Priority = " + q(wValues)()
	case 28:
		return "page " + pick(rnd, []string{"=", "=", "!="}) + " " + quoted(pageValue(rnd, w))
	case 29:
		return "page ~ " + quoted(likeEscaped(pageValue(rnd, w)))
	case 30:
		return in(rnd, "page", func() string { return quoted(pageValue(rnd, w)) })
	case 31, 32:
		// suspect IS TRUE and IS NOT FALSE drive through the suspect
		// index; the others are evaluated on the rows read.
		return "suspect IS " + pick(rnd, []string{"", "NOT "}) + pick(rnd, []string{"TRUE", "FALSE", "true"})
	}
	return prop() + " " + pick(rnd, []string{"IS NULL", "IS NOT NULL", "~ 'h%'", "!= 'High'"})
}

// wordPattern returns a text a page's descriptions may hold ("The login
// user", keys "REQ-1 …"), cut and with '%' in it (when like): whole words
// drive through the word index, parts of words and '%' inside words do not.
func wordPattern(rnd *rand.Rand, like bool) string {
	words := append([]string{"The", "the", "REQ", "1", "x"}, wWords...)
	if rnd.IntN(2) == 0 {
		// A run of the words a description holds: "The w1 w2".
		words = []string{"The", pick(rnd, wWords), pick(rnd, wWords)}
		i := rnd.IntN(len(words))
		words = words[i : i+1+rnd.IntN(len(words)-i)]
	}
	var parts []string
	for j := range 1 + rnd.IntN(3) {
		w := words[j%len(words)]
		if like {
			w = likeEscaped(w)
		}
		if like && rnd.IntN(4) == 0 {
			i := rnd.IntN(len(w) + 1)
			w = w[:i] + "%" + w[i:]
		} else if rnd.IntN(5) == 0 {
			w = w[:1+rnd.IntN(len(w))]
		}
		parts = append(parts, w)
	}
	p := strings.Join(parts, pick(rnd, []string{" ", " ", " ", "-", "  "}))
	if !like {
		return strings.ReplaceAll(p, "%", "")
	}
	return pick(rnd, []string{"%", "", "%"}) + p + pick(rnd, []string{"%", "", "%", " %"})
}

// keyRange returns an AND chain of one to three key comparisons and
// prefixes (one key-order range read): bounds that are keys in any case,
// prefixes of keys, texts between keys, texts holding bytes below every
// key byte ('!', ' ', '#') or above them (non-ASCII), and numbers (which
// compare numerically and drive nothing).
func keyRange(rnd *rand.Rand) string {
	bound := func() string {
		k := pick(rnd, wKeys)
		switch rnd.IntN(6) {
		case 0:
			return k[:1+rnd.IntN(len(k))]
		case 1:
			return k + pick(rnd, []string{"!", " x", "#", "é", "-", "0"})
		case 2:
			return pick(rnd, []string{"", "REQ-1#A", "Q", "REQ-", "r", "ZZZ", "10", "9", "-1"})
		}
		return k
	}
	var parts []string
	for range 1 + rnd.IntN(3) {
		op := pick(rnd, []string{"<", "<=", ">", ">=", "~"})
		v := bound()
		if op == "~" {
			v = likeEscaped(v) + "%"
		}
		parts = append(parts, "key "+op+" "+quoted(v))
	}
	return strings.Join(parts, " AND ")
}

// randomRequest returns a random request over the world, its query and
// order parsed, and the scope the brute force applies.
func randomRequest(t *testing.T, rnd *rand.Rand, w *world, tenant string, isolate bool) (search.Request, []string, string) {
	t.Helper()
	text := randomQuery(rnd, w, 2)
	switch rnd.IntN(20) {
	case 0:
		text = ""
	case 1, 2, 3, 4, 5, 6:
		// An indexable predicate with a status or baseline condition and
		// a filter: the combinations that decide which plans are usable.
		text = randomDriver(rnd, w) + " AND " + pick(rnd, []string{"status = 'ACTIVE'", "status IN ('active', 'deleted')",
			"status = 'MOVED'", "status != 'ACTIVE'", "baseline IS NULL", "baseline IS NOT NULL", "baseline = 1", "key ~ '%'"}) +
			" AND " + randomQuery(rnd, w, 1)
	}
	e, err := query.Parse(text)
	if err != nil {
		t.Fatalf("generated query %q: %v", text, err)
	}
	orderText := pick(rnd, wOrders)
	order, err := query.ParseOrder(orderText)
	if err != nil {
		t.Fatalf("order %q: %v", orderText, err)
	}
	req := search.Request{Tenant: tenant, PathSpace: pick(rnd, wSpaces), Query: e, Order: order,
		Offset: pick(rnd, []int{0, 0, 0, 1, 3, 10}), Limit: pick(rnd, []int{0, 1, 2, 5, 50}),
		IncludeArchived: rnd.IntN(2) == 0}
	var scope []string
	switch {
	case rnd.IntN(3) == 0:
		req.Space = pick(rnd, wSpaces)
		scope = []string{req.Space}
	case isolate:
		scope = []string{req.PathSpace}
	}
	desc := fmt.Sprintf("q=%q order=%q offset=%d limit=%d includeArchived=%v space=%q path=%q isolate=%v",
		text, orderText, req.Offset, req.Limit, req.IncludeArchived, req.Space, req.PathSpace, isolate)
	return req, scope, desc
}
