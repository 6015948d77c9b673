package localstack_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
)

// TestExportsThroughRealBootstraps downloads a CSV export from the JSON
// API and from the coverage web page's link, both served by
// WikiRequirements (the link for WikiWeb's session cookie; the page's
// former address, on WikiWeb, answers 303 to the link), written to the
// export bucket by the function's bootstrap with the stack's environment
// (AWS_ENDPOINT_URL_S3 at moto) and fetched without credentials from the
// presigned URL of the 303.
func TestExportsThroughRealBootstraps(t *testing.T) {
	st := startStack(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(t *testing.T, location string) string {
		t.Helper()
		if !strings.Contains(location, "/exports/demo/") || !strings.Contains(location, "X-Amz-Signature=") {
			t.Fatalf("Location %q is not a presigned URL of an export", location)
		}
		resp, err := http.Get(location)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Disposition") == "" {
			t.Fatalf("GET the export: %d %q: %.300s", resp.StatusCode, resp.Header.Get("Content-Disposition"), b)
		}
		return string(b)
	}

	// download sends a request answered by a 303 to an export and fetches
	// the export.
	download := func(t *testing.T, req *http.Request) string {
		t.Helper()
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d: %.300s", resp.StatusCode, b)
		}
		return fetch(t, resp.Header.Get("Location"))
	}

	t.Run("API search as CSV", func(t *testing.T) {
		req, _ := http.NewRequest("GET", st.WikiURL+"/rest/reqs/1/requirement2/DEMO?format=csv", nil)
		req.Header.Set("Authorization", "Bearer demo-wiki-user")
		if csv := download(t, req); !strings.HasPrefix(csv, "spaceKey,key,") {
			t.Errorf("CSV %.200q", csv)
		}
	})

	t.Run("coverage page as CSV", func(t *testing.T) {
		form := url.Values{"token": {"demo-wiki-user"}, "next": {"/requirements"}}
		req, _ := http.NewRequest("POST", st.WikiURL+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", st.WikiURL)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == websession.CookieName && c.Value != "" {
				session = c
			}
		}
		if resp.StatusCode != http.StatusSeeOther || session == nil {
			t.Fatalf("login: status %d, cookies %v", resp.StatusCode, resp.Cookies())
		}
		req, _ = http.NewRequest("GET", st.WikiURL+"/coverage/DEMO?format=csv", nil)
		req.AddCookie(session)
		resp, err = noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		link := "/coverage/DEMO/csv?columns=jira%2Cto%2Cfrom"
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != link {
			t.Fatalf("the page's former CSV address: %d to %q, want 303 to %s", resp.StatusCode, resp.Header.Get("Location"), link)
		}
		req, _ = http.NewRequest("GET", st.WikiURL+link, nil)
		req.AddCookie(session)
		if csv := download(t, req); !strings.Contains(strings.SplitN(csv, "\n", 2)[0], "key") {
			t.Errorf("CSV %.200q", csv)
		}
	})
}
