package wikiweb_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// TestCoveragePage: the matrix of a space as a page: per-column counts,
// one row per requirement with links, gaps and suspect items marked,
// hostile text escaped, the CSV download, the refusals as error pages,
// 303 without a session, and another tenant seeing none of it.
func TestCoveragePage(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "100", "DEMO", hostileTitle, specs())
	// REQ-0's text changes: REQ-1's dependency on it becomes suspect.
	s.save(t, "demo", "100", "DEMO", hostileTitle, strings.Replace(specs(), "Users exist.", "Users exist, &lt;b&gt;all&lt;/b&gt;.", 1))
	if rec := s.request("GET", "/coverage/DEMO", "", nil, nil); rec.Code != http.StatusSeeOther ||
		!strings.HasPrefix(rec.Header().Get("Location"), "/login?next=") {
		t.Fatalf("without a session: %d %v", rec.Code, rec.Header())
	}
	c := s.login(t, "demo-wiki-user")
	doc := page(t, s.request("GET", "/coverage/DEMO", c.Value, nil, nil), http.StatusOK)
	summary := one(t, doc, "p.summary", func(n *html.Node) bool { return n.Data == "p" && hasClass(n, "summary") })
	if got := text(summary); got != "4 requirements · jira: 1/4 covered (25%) · to: 3/4 covered (75%) · from: 3/4 covered (75%)" {
		t.Errorf("summary %q", got)
	}
	table := one(t, doc, "table.coverage", func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "coverage") })
	var rows []string
	for _, tr := range findAll(table, element("tr")) {
		var cells []string
		for _, td := range findAll(tr, func(n *html.Node) bool { return n.Data == "td" || n.Data == "th" }) {
			cell := text(td)
			if hasClass(td, "gap") {
				cell = "[gap]"
			}
			cells = append(cells, cell)
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	want := []string{
		"Requirement | Text | jira 1/4 | to 3/4 | from 3/4",
		"REQ-0 | Users exist, <b>all</b>. | [gap] | DEMO/REQ-00 | DEMO/REQ-1",
		"REQ-00 | A directory. | [gap] | [gap] | DEMO/REQ-0",
		"REQ-1 | Log in <script>alert(1)</script> now x | PROJ-1 | DEMO/REQ-0 suspect | DEMO/REQ-2",
		"REQ-2 | Sessions expire. | [gap] | DEMO/REQ-1 | [gap]",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	suspect := findAll(table, func(n *html.Node) bool { return n.Data == "span" && hasClass(n, "suspect") })
	if len(suspect) != 1 || text(suspect[0]) != "DEMO/REQ-0 suspect" {
		t.Errorf("suspect items %d", len(suspect))
	}
	for _, href := range []string{"/requirements/DEMO/REQ-0", "/requirements/DEMO/REQ-00", "/requirements/DEMO/REQ-1", "/requirements/DEMO/REQ-2"} {
		if !slices.Contains(links(table), href) {
			t.Errorf("no link to %s in %v", href, links(table))
		}
	}
	nav := one(t, doc, "the space's navigation", func(n *html.Node) bool { return n.Data == "nav" && attr(n, "aria-label") == "space" })
	if cur := findAll(nav, func(n *html.Node) bool { return attr(n, "aria-current") == "page" }); len(cur) != 1 || text(cur[0]) != "Coverage" ||
		!slices.Contains(links(nav), "/coverage/DEMO") {
		t.Errorf("navigation %q %v", text(nav), links(nav))
	}

	// The CSV link: 303 to the download of the whole matrix.
	records := s.csvLink(t, doc, c.Value, "/coverage/DEMO/csv?columns=jira%2Cto%2Cfrom")
	if len(records) != 5 ||
		!slices.Equal(records[0], []string{"spaceKey", "key", "text", "jira", "to", "from"}) ||
		!slices.Equal(records[3], []string{"DEMO", "REQ-1", "Log in <script>alert(1)</script> now x", "PROJ-1", "DEMO/REQ-0 (suspect)", "DEMO/REQ-2"}) {
		t.Fatalf("CSV download: %q", records)
	}

	// Columns and q of the address (paging keeps them: TestCoverageAndDiffPagesArePaged).
	doc = page(t, s.request("GET", "/coverage/DEMO?columns=to@depends_on&q="+url.QueryEscape("key ~ 'REQ-0%'"), c.Value, nil, nil), http.StatusOK)
	if got := text(one(t, doc, "p.summary", func(n *html.Node) bool { return n.Data == "p" && hasClass(n, "summary") })); got != "2 requirements · to@depends_on: 1/2 covered (50%)" {
		t.Errorf("summary with columns and q: %q", got)
	}

	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/coverage/DEMO?columns=parent", http.StatusBadRequest},
		{"/coverage/DEMO?q=" + url.QueryEscape("key = "), http.StatusBadRequest},
		{"/coverage/DEMO?offset=-1", http.StatusBadRequest},
		{"/coverage/DEMO?format=xml", http.StatusBadRequest},
		{"/coverage/D-1", http.StatusBadRequest},
	} {
		page(t, s.request("GET", tc.path, c.Value, nil, nil), tc.status)
	}
	// Another tenant: its own DEMO, here without requirements, none of demo's.
	doc = page(t, s.request("GET", "/coverage/DEMO", s.login(t, "acme-wiki-user").Value, nil, nil), http.StatusOK)
	if len(findAll(doc, element("table"))) != 0 || strings.Contains(text(doc), "REQ-") {
		t.Errorf("acme sees %q", text(doc))
	}
}

// csvLink follows a page's CSV link (a.csv, want: WikiRequirements'
// download route) with the session cookie: 303 to the download, which it
// fetches and parses. The link's former address (format=csv on the page's
// own) answers 303 to the link.
func (s *server) csvLink(t *testing.T, doc *html.Node, cookie, want string) [][]string {
	t.Helper()
	link := one(t, doc, "the CSV link", func(n *html.Node) bool { return n.Data == "a" && hasClass(n, "csv") })
	if attr(link, "href") != want {
		t.Fatalf("CSV link %q, want %q", attr(link, "href"), want)
	}
	former := strings.Replace(want, websession.DownloadSuffix+"?", "?format=csv&", 1)
	if rec := s.request("GET", former, cookie, nil, nil); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
		t.Fatalf("former CSV address %s: %d to %q, want 303 to %s", former, rec.Code, rec.Header().Get("Location"), want)
	}
	rec := s.request("GET", attr(link, "href"), cookie, nil, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("CSV link %s: %d %s", attr(link, "href"), rec.Code, rec.Body)
	}
	checkSecurityHeaders(t, rec.Header())
	resp, err := http.Get(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CSV download %s: %d %v", attr(link, "href"), resp.StatusCode, err)
	}
	return records
}

// TestCoverageAndDiffPagesArePaged: 105 requirements fill two pages of
// 100 on the coverage and the diff pages. The first page links to the
// next (keeping columns, q, from and to), the second back to the first;
// the CSV link is the whole result's on either page.
func TestCoverageAndDiffPagesArePaged(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	specs := func(text string) string {
		rows := []string{wt.TH("Key", "Description")}
		for i := range 105 {
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("REQ-%03d", i)), "<p>"+text+"</p>"))
		}
		return wt.Table(rows...)
	}
	s.save(t, "demo", "100", "DEMO", "Specs", specs("Before."))
	if _, err := baseline.New(baseline.Deps{Store: s.bl, Source: s.bl}).CreateInstant(context.Background(), "demo", "alice", "DEMO",
		baseline.InstantInput{Name: "Release 1", FromCEO: "100"}); err != nil {
		t.Fatal(err)
	}
	s.save(t, "demo", "100", "DEMO", "Specs", specs("After."))
	c := s.login(t, "demo-wiki-user")

	pager := func(doc *html.Node) []string {
		return links(one(t, doc, "p.pager", func(n *html.Node) bool { return n.Data == "p" && hasClass(n, "pager") }))
	}
	firstKey := func(doc *html.Node, table string) string {
		t.Helper()
		tbl := one(t, doc, "table."+table, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, table) })
		return text(findAll(tbl, element("tbody"))[0].FirstChild.FirstChild)
	}
	rowsOf := func(doc *html.Node, table string) int {
		tbl := one(t, doc, "table."+table, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, table) })
		return len(findAll(tbl, element("tr"))) - 1
	}
	for _, tc := range []struct {
		name, first, table, next, csv string
	}{
		{"coverage", "/coverage/DEMO?columns=jira&q=" + url.QueryEscape("key ~ 'REQ-%'"), "coverage",
			"/coverage/DEMO?columns=jira&offset=100&q=key+~+%27REQ-%25%27", "/coverage/DEMO/csv?columns=jira&q=key+~+%27REQ-%25%27"},
		{"diff", "/diff/DEMO?from=1&to=current", "diff",
			"/diff/DEMO?from=1&offset=100&to=current", "/diff/DEMO/csv?from=1&to=current"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := page(t, s.request("GET", tc.first, c.Value, nil, nil), http.StatusOK)
			if n, key := rowsOf(doc, tc.table), firstKey(doc, tc.table); n != 100 || key != "REQ-000" {
				t.Errorf("first page: %d rows from %s, want 100 from REQ-000", n, key)
			}
			if got := pager(doc); !slices.Equal(got, []string{tc.next}) {
				t.Fatalf("first page's pager %q, want only Next %q", got, tc.next)
			}
			csv := one(t, doc, "the CSV link", func(n *html.Node) bool { return n.Data == "a" && hasClass(n, "csv") })
			if attr(csv, "href") != tc.csv {
				t.Errorf("CSV link %q, want %q", attr(csv, "href"), tc.csv)
			}
			doc = page(t, s.request("GET", tc.next, c.Value, nil, nil), http.StatusOK)
			if n, key := rowsOf(doc, tc.table), firstKey(doc, tc.table); n != 5 || key != "REQ-100" {
				t.Errorf("second page: %d rows from %s, want 5 from REQ-100", n, key)
			}
			if got, want := pager(doc), strings.Replace(tc.next, "offset=100", "offset=0", 1); !slices.Equal(got, []string{want}) {
				t.Errorf("second page's pager %q, want only Previous %q", got, want)
			}
			csv = one(t, doc, "the CSV link", func(n *html.Node) bool { return n.Data == "a" && hasClass(n, "csv") })
			if attr(csv, "href") != tc.csv {
				t.Errorf("second page's CSV link %q, want %q", attr(csv, "href"), tc.csv)
			}
		})
	}
}
