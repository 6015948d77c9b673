package wikirequirements_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// download asks for an export through a real HTTP server with a client
// that follows redirects, as curl -L and Python requests do (the bearer
// token sent to the API only), and returns the CSV records, the final
// answer's headers and the Location of the redirect.
func download(t *testing.T, h http.Handler, path string, accept string) ([][]string, http.Header, string) {
	t.Helper()
	return fetchExport(t, h, path, func(req *http.Request) {
		req.Header.Set("Authorization", "Bearer demo-wiki-user")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
	})
}

// fetchExport is download with the credentials that prepare puts on the
// request (a bearer token, a session cookie), which the redirect to the
// export store does not carry.
func fetchExport(t *testing.T, h http.Handler, path string, prepare func(*http.Request)) ([][]string, http.Header, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	prepare(req)
	location := ""
	client := &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) > 1 {
			return fmt.Errorf("more than one redirect")
		}
		if r.Response == nil || r.Response.StatusCode != http.StatusSeeOther {
			return fmt.Errorf("redirect %v, want 303", r.Response)
		}
		location = r.URL.String()
		r.Header.Del("Authorization") // as curl and requests do for another host or port
		r.Header.Del("Cookie")        // as a browser does: the cookie is the wiki's origin's
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || location == "" {
		t.Fatalf("GET %s: %d (location %q) %s", path, resp.StatusCode, location, body)
	}
	if !strings.Contains(string(body), "\r\n") {
		t.Fatalf("GET %s: lines do not end with CRLF: %q", path, body)
	}
	r := csv.NewReader(strings.NewReader(string(body)))
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("GET %s: %v in %q", path, err, body)
	}
	return records, resp.Header, location
}

// unguard undoes the formula guard of a cell: the value a reader gets
// back.
func unguard(cell string) string {
	if len(cell) >= 2 && cell[0] == '\'' && strings.ContainsRune("=+-@\t\r", rune(cell[1])) {
		return cell[1:]
	}
	return cell
}

// TestDiffCSVMatchesJSON exports the diff of every kind of change as CSV,
// reads it back with encoding/csv and compares each row with the JSON
// answer's fields.
func TestDiffCSVMatchesJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedChanges(t, s)
	code, raw := getDiff(t, s, "demo-wiki-user", "DEMO", params("from", "1", "to", "current"))
	if code != http.StatusOK {
		t.Fatalf("diff: %d %s", code, raw)
	}
	var answer struct {
		Changes []struct {
			SpaceKey, Key, Change string
			Fields                []struct {
				Field    string
				From, To any
			}
		}
	}
	if err := json.Unmarshal([]byte(raw), &answer); err != nil {
		t.Fatal(err)
	}
	// The JSON answer, one row per field, as the CSV writes values.
	cell := func(v any) string {
		switch x := v.(type) {
		case nil:
			return ""
		case string:
			return x
		case map[string]any: // a page
			return fmt.Sprintf("%v (%v)", x["title"], x["pageId"])
		case []any:
			var lines []string
			for _, e := range x {
				switch l := e.(type) {
				case string:
					lines = append(lines, l)
				case map[string]any:
					if _, ok := l["issueKey"]; ok {
						s := fmt.Sprintf("%v (%v", l["issueKey"], l["relationship"])
						if l["serviceId"] != nil {
							s += fmt.Sprintf(", %v", l["serviceId"])
						}
						lines = append(lines, s+")")
					} else {
						lines = append(lines, fmt.Sprintf("%v/%v (%v)", l["spaceKey"], l["key"], l["relationship"]))
					}
				}
			}
			return strings.Join(lines, "\n")
		}
		t.Fatalf("unexpected JSON value %#v", v)
		return ""
	}
	want := [][]string{{"spaceKey", "key", "change", "field", "from", "to"}}
	for _, c := range answer.Changes {
		for _, f := range c.Fields {
			want = append(want, []string{c.SpaceKey, c.Key, c.Change, f.Field, cell(f.From), cell(f.To)})
		}
	}
	for _, how := range []struct{ path, accept string }{
		{"/rest/reqs/1/diff/DEMO?from=1&to=current&format=csv", ""},
		{"/rest/reqs/1/diff/DEMO?from=1&to=current", "text/csv"},
		{"/rest/reqs/1/diff/DEMO?from=1&to=current&limit=1&offset=3", "text/csv, application/json;q=0.5"},
	} {
		records, header, location := download(t, s, how.path, how.accept)
		for _, row := range records {
			for i := range row {
				row[i] = unguard(row[i])
			}
		}
		if !slices.EqualFunc(records, want, slices.Equal) {
			t.Errorf("%s (Accept %q): CSV\n%q\nwant\n%q", how.path, how.accept, records, want)
		}
		if ct := header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Errorf("%s: content type %q", how.path, ct)
		}
		if cd := header.Get("Content-Disposition"); cd != `attachment; filename=diff-DEMO-1-current.csv` {
			t.Errorf("%s: content disposition %q", how.path, cd)
		}
		if !strings.Contains(location, "/exports/demo/") || !strings.Contains(location, "X-Amz-Signature=") {
			t.Errorf("%s: location %s", how.path, location)
		}
	}
	// An export that fails before its first row answers the error, and
	// stores nothing.
	req := httptest.NewRequest(http.MethodGet, "/rest/reqs/1/diff/DEMO?from=7&to=current&format=csv", nil)
	req.Header.Set("Authorization", "Bearer demo-wiki-user")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound || rec.Header().Get("Location") != "" {
		t.Fatalf("export of an unknown baseline: %d %s", rec.Code, rec.Body)
	}
	objects, err := s.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket)})
	if err != nil || len(objects.Contents) != 3 {
		t.Fatalf("exports stored: %d (%v), want the 3 downloads", len(objects.Contents), err)
	}
}

// TestSearchCSV exports a search as CSV and compares it with the JSON
// answer of the same search; cells that a spreadsheet would read as a
// formula come back prefixed with '.
func TestSearchCSV(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "1", "DEMO", specs(
		wt.TR(wt.Def("REQ-1"), "<p>=HYPERLINK(\"http://evil\",\"x\")</p>", "+1", wt.Link("", "REQ-2"), wt.Jira("PROJ-1", "jira-1")),
		wt.TR(wt.Def("REQ-2"), "<p>-2, with a comma and \"quotes\"</p>", "@SUM(A1)", "", ""),
		wt.TR(wt.Def("REQ-3"), "<p>Plain.</p>", "High", "", ""),
	))
	texts := map[int]string{4: "+1 from the review.", 5: "@team: log every login."}
	for i := 4; i <= 60; i++ { // more than one page of the JSON search
		text := "More."
		if x, ok := texts[i]; ok {
			text = x
		}
		s.save(t, "demo", strconv.Itoa(100+i), "DEMO", specs(wt.TR(wt.Def(fmt.Sprintf("REQ-%d", i)), "<p>"+text+"</p>", "", "", "")))
	}
	records, _, _ := download(t, s, "/rest/reqs/1/requirement2/DEMO?spaceKey=DEMO&format=csv", "")
	if len(records) != 61 {
		t.Fatalf("%d records, want the header and 60 rows", len(records))
	}
	// Accept: text/csv without format is the same download.
	if again, _, _ := download(t, s, "/rest/reqs/1/requirement2/DEMO?spaceKey=DEMO", "text/csv"); !slices.EqualFunc(again, records, slices.Equal) {
		t.Fatalf("Accept: text/csv gave %d records unlike format=csv's", len(again))
	}
	header := records[0]
	if !slices.Equal(header, []string{"spaceKey", "key", "baseline", "status", "text", "pageId", "pageTitle", "properties",
		"externalProperties", "dependencies", "issues", "newSpaceKey", "newKey"}) {
		t.Fatalf("header %q", header)
	}
	// The guard: exactly the cells starting with = + - @ are prefixed.
	byKey := map[string][]string{}
	for _, row := range records[1:] {
		byKey[row[1]] = row
	}
	if got := byKey["REQ-1"][4]; got != `'=HYPERLINK("http://evil","x")` {
		t.Errorf("REQ-1 text cell %q", got)
	}
	if got := byKey["REQ-2"][4]; got != `'-2, with a comma and "quotes"` {
		t.Errorf("REQ-2 text cell %q", got)
	}
	if got := byKey["REQ-4"][4]; got != "'+1 from the review." {
		t.Errorf("REQ-4 text cell %q", got)
	}
	if got := byKey["REQ-5"][4]; got != "'@team: log every login." {
		t.Errorf("REQ-5 text cell %q", got)
	}
	if got := byKey["REQ-3"][4]; got != "Plain." {
		t.Errorf("REQ-3 text cell %q", got)
	}
	if got := byKey["REQ-1"][9]; got != "DEMO/REQ-2 (refines)" {
		t.Errorf("REQ-1 dependencies cell %q", got)
	}
	if got := byKey["REQ-1"][10]; got != "PROJ-1 (implements, jira-1)" {
		t.Errorf("REQ-1 issues cell %q", got)
	}

	// Every row against the JSON search, page by page.
	var rows [][]string
	for offset := 0; ; offset += 50 {
		a := search2(t, s, "demo-wiki-user", "DEMO", params("spaceKey", "DEMO", "offset", strconv.Itoa(offset)))
		var full struct {
			Results []struct {
				SpaceKey   string `json:"spaceKey"`
				Key        string `json:"key"`
				Status     string `json:"status"`
				Text       string `json:"text"`
				Origin     struct{ PageID, Title string }
				Properties []struct{ Key, Value, Type string }
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(a.raw), &full); err != nil {
			t.Fatal(err)
		}
		for _, r := range full.Results {
			var props []string
			for _, p := range r.Properties {
				if p.Type == "INLINE" {
					props = append(props, p.Key+": "+p.Value)
				}
			}
			rows = append(rows, []string{r.SpaceKey, r.Key, "", r.Status, r.Text, r.Origin.PageID, r.Origin.Title, strings.Join(props, "\n")})
		}
		if !*a.body.HasMore {
			break
		}
	}
	if len(rows) != len(records)-1 {
		t.Fatalf("JSON has %d results, CSV %d rows", len(rows), len(records)-1)
	}
	for i, want := range rows {
		got := records[i+1][:8]
		for j := range got {
			got[j] = unguard(got[j])
		}
		if !slices.Equal(got, want) {
			t.Errorf("row %d: CSV %q, JSON %q", i+1, got, want)
		}
	}

	// A streaming export needs the key order.
	req := httptest.NewRequest(http.MethodGet, "/rest/reqs/1/requirement2/DEMO?spaceKey=DEMO&format=csv&order=TEXT%20ASC", nil)
	req.Header.Set("Authorization", "Bearer demo-wiki-user")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"order"`) {
		t.Fatalf("export ordered by text: %d %s", rec.Code, rec.Body)
	}
}
