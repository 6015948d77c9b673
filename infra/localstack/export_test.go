package localstack_test

import (
	"io"
	"net/http"
	"net/url"
	"os/exec"
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

	// The diff of docs/change-analysis.md's "Try it", fetched by the
	// clients it names, curl -L and Python requests, each following the
	// 303 to the presigned URL in moto: byte for byte the CSV the page shows.
	t.Run("diff as CSV with curl -L and Python requests", func(t *testing.T) {
		row := func(key, text, priority string) string {
			return `<tr><td><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">` + key +
				`</ac:parameter></ac:structured-macro></td><td>` + text + `</td><td>` + priority + `</td></tr>`
		}
		page := func(rows ...string) string {
			body := `<table><tr><th>Key</th><th>Description</th><th>Priority</th></tr>` + strings.Join(rows, "") + `</table>`
			return `{"spaceKey":"DEMO","title":"Specs","body":` + jsonString(body) + `}`
		}
		W := st.WikiURL
		mustStatus(t, call(t, "PUT", W+"/rest/reqs/1/content/100", "demo-wiki-user",
			page(row("REQ-001", "The system shall log in users.", "High"), row("REQ-002", "The system shall log out users.", "Low"))), 200)
		mustStatus(t, call(t, "POST", W+"/rest/reqs/1/baseline/DEMO/1/create-instant", "demo-wiki-user",
			`{"name":"Release 1","fromCeo":"100"}`), 200)
		mustStatus(t, call(t, "PUT", W+"/rest/reqs/1/content/100", "demo-wiki-user",
			page(row("REQ-001", "The system shall log in users with a password.", "High"), row("REQ-003", `=HYPERLINK("http://x")`, "-1"))), 200)
		a := mustStatus(t, call(t, "GET", W+"/rest/reqs/1/diff/DEMO?from=1&to=current", "demo-wiki-user", ""), 200)
		if !strings.Contains(a.body, `"summary":{"added":1,"removed":0,"modified":2,"unchanged":0}`) {
			t.Fatalf("diff: %s", a.body)
		}
		want := strings.Join([]string{
			"spaceKey,key,change,field,from,to",
			"DEMO,REQ-001,MODIFIED,text,The system shall log in users.,The system shall log in users with a password.",
			"DEMO,REQ-002,MODIFIED,status,ACTIVE,DELETED",
			`DEMO,REQ-003,ADDED,text,,"'=HYPERLINK(""http://x"")"`,
			"DEMO,REQ-003,ADDED,status,,ACTIVE",
			"DEMO,REQ-003,ADDED,origin,,Specs (100)",
			"DEMO,REQ-003,ADDED,'@Priority,,'-1",
		}, "\r\n") + "\r\n"

		t.Run("curl -L", func(t *testing.T) {
			if _, err := exec.LookPath("curl"); err != nil {
				t.Skip("no curl on this machine")
			}
			for _, args := range [][]string{
				{W + "/rest/reqs/1/diff/DEMO?from=1&to=current&format=csv"},
				{"-H", "Accept: text/csv", W + "/rest/reqs/1/diff/DEMO?from=1&to=current"},
			} {
				cmd := exec.Command("curl", append([]string{"-sS", "-L", "--fail", "-H", "Authorization: Bearer demo-wiki-user"}, args...)...)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("curl %q: %v", args, err)
				}
				if string(out) != want {
					t.Errorf("curl -L %q:\n%q\nwant\n%q", args, out, want)
				}
			}
		})

		t.Run("Python requests", func(t *testing.T) {
			if err := exec.Command("python3", "-c", "import requests").Run(); err != nil {
				t.Skipf("no python3 with requests on this machine: %v", err)
			}
			// As in docs/change-analysis.md; besides, the answer came
			// through one 303, and the request to the download carried no
			// Authorization (requests drops it for another host or port).
			const program = `import sys, requests
r = requests.get(sys.argv[1] + "/rest/reqs/1/diff/DEMO",
                 params={"from": "1", "to": "current", "format": "csv"},
                 headers={"Authorization": "Bearer demo-wiki-user"})
r.raise_for_status()
assert [h.status_code for h in r.history] == [303], r.history
assert "Authorization" not in r.request.headers, r.request.headers
sys.stdout.buffer.write(r.content)`
			out, err := exec.Command("python3", "-c", program, W).Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("python3 requests: %v %s", err, stderr)
			}
			if string(out) != want {
				t.Errorf("Python requests:\n%q\nwant\n%q", out, want)
			}
		})
	})
}
