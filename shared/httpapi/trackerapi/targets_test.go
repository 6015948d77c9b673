package trackerapi_test

// The outbound policy and the link dialog's checks through the HTTP API
// (docs/operations.md, "Security model"; docs/tracker.md, §7).

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/trackertest"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerapi"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// newStrictHarness serves the tracker API as deployed
// (ALLOW_PRIVATE_TARGETS off); its wiki-1 names the loopback fake wiki by
// a host name resolving to 127.0.0.1.
func newStrictHarness(t *testing.T) *trackertest.Harness {
	t.Helper()
	return trackertest.NewHarnessWith(t, trackertest.Options{StrictTargets: true}, func(rt *httpapi.Router, svc *tracker.Service) {
		(&trackerapi.Handler{Tracker: svc}).Register(rt)
	})
}

// Applink urls: link-local and the like are refused whatever the setting,
// loopback and private ones unless the operator allows them; 400 naming
// the field.
func TestApplinkURLRefusedAtSave(t *testing.T) {
	t.Parallel()
	strict, open := newStrictHarness(t), newHarness(t)
	never := []string{"http://169.254.169.254", "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:3000", "http://[::ffff:a9fe:a9fe]/",
		"http://0.0.0.0:3000", "http://239.1.1.1", "http://255.255.255.255", "http://0251.0376.0251.0376", "http://wiki.example.com:65536"}
	private := []string{open.Wiki.URL, "http://localhost:3000", "http://10.0.0.1", "http://172.20.1.1", "http://192.168.0.10", "http://100.100.100.100", "http://[::1]:3000"}
	for _, u := range never {
		for _, h := range []*trackertest.Harness{strict, open} {
			h.Expect("PUT", "/rest/reqs/1/api/other", demoAdmin, `{"url":"`+u+`"}`, 400, `"errors":{"url":`, "is refused")
		}
	}
	for _, u := range private {
		strict.Expect("PUT", "/rest/reqs/1/api/other", demoAdmin, `{"url":"`+u+`"}`, 400, "url", "ALLOW_PRIVATE_TARGETS=true")
		open.Expect("PUT", "/rest/reqs/1/api/other", demoAdmin, `{"url":"`+u+`"}`, 200)
	}
	// Changing wiki-1's url is checked too; other changes of an applink
	// whose url is stored are not (it can still be set DISABLED).
	strict.Expect("PUT", "/rest/reqs/1/api/wiki-1", demoAdmin, `{"url":"http://169.254.169.254"}`, 400, "url", "never called")
	strict.Expect("PUT", "/rest/reqs/1/api/wiki-1", demoAdmin, `{"url":"`+strict.WikiURL+`","mode":"DISABLED"}`, 200)
}

// At connect time: the link dialog of an applink whose name resolves to
// loopback is refused while private targets are off; the wiki is never
// called, and the 502 names the refusal without the address.
func TestApplinkURLRefusedAtConnect(t *testing.T) {
	t.Parallel()
	h := newStrictHarness(t)
	h.Wiki.SetRequirement("DEMO", "REQ-1", "<p>one</p>")
	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements", demoUser, "", 502, "refused: loopback and private addresses")
	h.ExpectWithout("GET", "/rest/reqs/1/api/wiki-1/requirements", demoUser, "", 502, "127.0.0.1")
	if s := h.Wiki.Searches(); len(s) != 0 {
		t.Errorf("the wiki was searched: %q", s)
	}
	// The same name is called when private targets are allowed.
	open := newHarness(t)
	open.Wiki.SetRequirement("DEMO", "REQ-1", "<p>one</p>")
	open.JSON("PUT", "/rest/reqs/1/api/named", demoAdmin,
		`{"url":"`+strings.Replace(open.Wiki.URL, "127.0.0.1", trackertest.WikiHost, 1)+`","serviceId":"jira-1","token":"`+wikiToken+`"}`, 200, nil)
	open.Expect("GET", "/rest/reqs/1/api/named/requirements", demoUser, "", 200, `"key":"REQ-1"`)
}

// The link dialog answers only the documented Requirement fields, each
// checked: unknown fields are dropped, bad values are dropped (or the
// result, without a valid identity), excerpts are sanitized, links are
// relative or http(s); an answer without results is a 502, and a wiki's
// error body is never repeated.
func TestLinkDialogChecksTheWikisAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := "/rest/reqs/1/api/wiki-1/requirements?limit=10"
	h.Wiki.SetSearchAnswer(200, "application/json", `{"results":[
		{"spaceKey":"DEMO","key":"REQ-1","status":"active","htmlExcerpt":"<p onclick=\"steal()\">one<script>alert(1)</script></p>",
		 "genericUrl":"javascript:alert(document.cookie)","secret":"s3","token":"wiki-token","issues":[{"issueKey":"PROJ-1","relationship":"implements","origin":"PAGE","debug":"x"}]},
		{"spaceKey":"DEMO","key":"REQ-2","genericUrl":"//evil.example.com/login","text":"two\u0007","properties":[{"key":"P","value":"v","x":"y"}]},
		{"spaceKey":"DEMO","key":"<img src=x onerror=alert(1)>"},
		{"spaceKey":"DEMO","key":"REQ-3","genericUrl":"/requirements/DEMO/REQ-3","baseline":2}
	],"offset":0,"limit":10,"count":4,"internal":{"host":"10.0.0.5"}}`)
	rec := h.Do("GET", path, demoUser, "")
	if rec.Code != 200 {
		t.Fatalf("dialog = %d %s", rec.Code, rec.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"count":3,"hasMore":false,"limit":10,"offset":0,"results":[` +
		`{"baseline":null,"htmlExcerpt":"<p>one</p>","issues":[{"issueKey":"PROJ-1","origin":"PAGE","relationship":"implements","serviceId":null}],"key":"REQ-1","spaceKey":"DEMO","status":"ACTIVE"},` +
		`{"baseline":null,"key":"REQ-2","properties":[{"key":"P","value":"v"}],"spaceKey":"DEMO","text":"two"},` +
		`{"baseline":2,"genericUrl":"/requirements/DEMO/REQ-3","key":"REQ-3","spaceKey":"DEMO"}]}`
	if strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("dialog answer\n%s\nwant\n%s", rec.Body, want)
	}
	for _, absent := range []string{"secret", "wiki-token", "internal", "10.0.0.5", "debug", "javascript", "evil", "onclick", "<script", "onerror"} {
		if strings.Contains(rec.Body.String(), absent) {
			t.Errorf("the answer carries %q", absent)
		}
	}

	// The wiki's hasMore is answered as it said it.
	h.Wiki.SetSearchAnswer(200, "application/json", `{"results":[{"spaceKey":"DEMO","key":"REQ-1"}],"offset":0,"limit":1,"count":1,"hasMore":true}`)
	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements?limit=1", demoUser, "", 200, `"hasMore":true`)

	// No results array: the wiki failed.
	for _, body := range []string{`{"count":0}`, `{"results":null}`, `{"Results":[]}`, `[]`, `<html>login</html>`} {
		h.Wiki.SetSearchAnswer(200, "application/json", body)
		h.Expect("GET", path, demoUser, "", 502)
	}
	// A wiki's error answer is named by its status only.
	h.Wiki.SetSearchAnswer(500, "application/json", `{"status":500,"message":"stack trace: db password=hunter2"}`)
	h.Expect("GET", path, demoUser, "", 502, "with 500")
	h.ExpectWithout("GET", path, demoUser, "", 502, "hunter2", "stack trace")
	h.Wiki.SetSearchAnswer(502, "text/html", `<html>proxy error at 10.1.2.3</html>`)
	h.ExpectWithout("GET", path, demoUser, "", 502, "proxy error", "10.1.2.3", "<html>")
	// A 404 to the search too.
	h.Wiki.SetSearchAnswer(404, "application/json", `{"status":404,"message":"no such thing at /internal/admin"}`)
	h.ExpectWithout("GET", path, demoUser, "", 502, "no such thing", "/internal/admin")
}
