package tracker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func TestSearchNegotiatesVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                    string
		tracker, wiki, wikiMax  int
		accepts                 int // what the wiki answers to SetVersion
		wantSet                 int // version PUT to the wiki, 0 for none
		wantTracker             int
		versionErr              error
		wantNegotiationFailures bool
	}{
		{name: "both 2, wiki max 4", tracker: 2, wiki: 2, wikiMax: 4, accepts: 4, wantSet: 4, wantTracker: 4},
		{name: "wiki max 9", tracker: 2, wiki: 2, wikiMax: 9, accepts: 5, wantSet: 5, wantTracker: 5},
		{name: "wiki max 5", tracker: 4, wiki: 4, wikiMax: 5, accepts: 5, wantSet: 5, wantTracker: 5},
		{name: "wiki max 3", tracker: 2, wiki: 2, wikiMax: 3, accepts: 3, wantSet: 3, wantTracker: 3},
		{name: "wiki already 4", tracker: 2, wiki: 4, wikiMax: 4, wantTracker: 4},
		{name: "tracker already 4", tracker: 4, wiki: 2, wikiMax: 4, accepts: 4, wantSet: 4, wantTracker: 4},
		{name: "nothing to do", tracker: 4, wiki: 4, wikiMax: 4, wantTracker: 4},
		{name: "never down", tracker: 4, wiki: 1, wikiMax: 2, accepts: 2, wantSet: 2, wantTracker: 4},
		{name: "wiki accepts less", tracker: 2, wiki: 2, wikiMax: 4, accepts: 3, wantSet: 4, wantTracker: 3},
		{name: "old wiki", tracker: 2, versionErr: apperr.NotFoundf("no route"), wantTracker: 2},
		{name: "version endpoint broken", tracker: 2, versionErr: apperr.BadGatewayf("500"), wantTracker: 2, wantNegotiationFailures: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t)
			if _, err := f.svc.SetVersion(ctx, tenant, "wiki-1", tc.tracker); err != nil {
				t.Fatal(err)
			}
			f.wiki.version = func(w tracker.WikiEndpoint, serviceID string) (tracker.WikiVersion, error) {
				if w.Token != "wt" || serviceID != "wiki-1" {
					t.Errorf("Version(%+v, %s)", w, serviceID)
				}
				return tracker.WikiVersion{Version: tc.wiki, Max: tc.wikiMax}, tc.versionErr
			}
			set := 0
			f.wiki.setVersion = func(_ tracker.WikiEndpoint, _ string, v int) (int, error) {
				set = v
				return tc.accepts, nil
			}
			var asked tracker.WikiSearch
			f.wiki.search = func(_ tracker.WikiEndpoint, s tracker.WikiSearch) (json.RawMessage, error) {
				asked = s
				return json.RawMessage(`{"results":[],"offset":0,"limit":5,"count":0}`), nil
			}
			res, err := f.svc.SearchRequirements(ctx, tenant, "wiki-1", tracker.WikiSearch{Q: "key ~ 'REQ-%'", Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Results) != `{"count":0,"hasMore":false,"limit":5,"offset":0,"results":[]}` || asked.Q != "key ~ 'REQ-%'" || asked.Limit != 5 {
				t.Errorf("search passed %+v, answered %s", asked, res.Results)
			}
			if set != tc.wantSet {
				t.Errorf("SetVersion(%d), want %d", set, tc.wantSet)
			}
			a, _ := f.svc.Applink(ctx, tenant, "wiki-1")
			if a.Version != tc.wantTracker || res.Version != tc.wantTracker {
				t.Errorf("tracker version %d (answered %d), want %d", a.Version, res.Version, tc.wantTracker)
			}
			if (res.NegotiationErr != nil) != tc.wantNegotiationFailures {
				t.Errorf("negotiation error %v", res.NegotiationErr)
			}
		})
	}
}

func TestSearchRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.svc.SearchRequirements(ctx, "acme", "wiki-1", tracker.WikiSearch{}); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("another tenant: %v", err)
	}
	f.wiki.version = func(tracker.WikiEndpoint, string) (tracker.WikiVersion, error) {
		return tracker.WikiVersion{Version: 4, Max: 4}, nil
	}
	f.wiki.search = func(tracker.WikiEndpoint, tracker.WikiSearch) (json.RawMessage, error) {
		return nil, apperr.BadGatewayf("wiki answered 400: bad query")
	}
	_, err := f.svc.SearchRequirements(ctx, tenant, "wiki-1", tracker.WikiSearch{Q: "((("})
	if apperr.CodeOf(err) != apperr.BadGateway || apperr.As(err).Message == "" {
		t.Errorf("wiki failure: %v", err)
	}
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "DISABLED"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SearchRequirements(ctx, tenant, "wiki-1", tracker.WikiSearch{}); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("disabled: %v", err)
	}
}

// The wiki's answer reaches the tracker's users: the dialog answers only
// the documented fields of the wiki's search, each checked again, with
// excerpts sanitized like every excerpt the tracker stores.
func TestSearchAnswersOnlyCheckedFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.wiki.version = func(tracker.WikiEndpoint, string) (tracker.WikiVersion, error) {
		return tracker.WikiVersion{Version: 4, Max: 4}, nil
	}
	const head = `{"count":1,"hasMore":false,"limit":10,"offset":0,"results":[`
	for _, tc := range []struct{ name, answer, want string }{
		{"a whole requirement",
			`{"results":[{"spaceKey":"DEMO","key":"REQ-1","baseline":null,"status":"ACTIVE","text":"Log in.","htmlExcerpt":"<p>Log in.</p>",
			"htmlNeedsUpdating":false,"properties":[{"key":"Priority","value":"High"},{"key":"Cost","value":"12","type":"EXTERNAL"},{"key":"X","value":"1","type":"OTHER"}],"origin":{"pageId":"100","title":"Specs"},
			"dependencies":[{"spaceKey":"DEMO","key":"REQ-2","relationship":"refines"}],"reverseDependencies":[],
			"issues":[{"serviceId":"jira-1","issueKey":"PROJ-1","relationship":"implements","origin":"PAGE"},{"serviceId":null,"issueKey":"PROJ-2","relationship":"tests","origin":"TRACKER"}],
			"genericUrl":"/requirements/DEMO/REQ-1","references":[{"pageId":"101","title":"Design"}]}],"offset":0,"limit":10,"count":1}`,
			head + `{"baseline":null,"dependencies":[{"key":"REQ-2","relationship":"refines","spaceKey":"DEMO"}],"genericUrl":"/requirements/DEMO/REQ-1",` +
				`"htmlExcerpt":"<p>Log in.</p>","htmlNeedsUpdating":false,"issues":[{"issueKey":"PROJ-1","origin":"PAGE","relationship":"implements","serviceId":"jira-1"},` +
				`{"issueKey":"PROJ-2","origin":"TRACKER","relationship":"tests","serviceId":null}],"key":"REQ-1","origin":{"pageId":"100","title":"Specs"},` +
				`"properties":[{"key":"Priority","value":"High"},{"key":"Cost","type":"EXTERNAL","value":"12"},{"key":"X","value":"1"}],"references":[{"pageId":"101","title":"Design"}],"reverseDependencies":[],"spaceKey":"DEMO","status":"ACTIVE","text":"Log in."}]}`},
		{"hostile excerpt, unknown fields",
			`{"results":[{"spaceKey":"DEMO","key":"REQ-1","htmlExcerpt":"<p>x<img src=x onerror=alert(1)><script>alert(2)</script></p>","extra":[1],"__proto__":{"a":1}}],"count":1,"limit":10,"debug":"<script>"}`,
			head + `{"baseline":null,"htmlExcerpt":"<p>x<img src=\"x\"></p>","key":"REQ-1","spaceKey":"DEMO"}]}`},
		{"wrong types are dropped",
			`{"results":[{"spaceKey":"D","key":"R","htmlExcerpt":{"a":1},"text":7,"status":"GONE","htmlNeedsUpdating":"yes","properties":{"a":1},
			"origin":"100","issues":"PROJ-1","genericUrl":5,"newKey":"a/b","newSpaceKey":"D-1"}],"offset":0,"limit":10}`,
			head + `{"baseline":null,"key":"R","spaceKey":"D"}]}`},
		{"bad list items are dropped",
			`{"results":[{"spaceKey":"D","key":"R","properties":[1,{"key":"P","value":{"x":1}},{"key":"P","value":"v"}],
			"dependencies":[{"spaceKey":"D/E","key":"R2","relationship":"r"},{"spaceKey":"D","key":"R 2"},{"spaceKey":"D","key":"R3","relationship":"r"}],
			"issues":[{"issueKey":"not an issue","relationship":"r"},{"issueKey":"P-1","serviceId":"a#b","relationship":"r"},{"issueKey":"P-2","relationship":"r","origin":"BOTH"}],
			"references":[{"pageId":"1 2","title":"t"},{"pageId":"7","title":"T\u0000itle\u001b[31m"}]}],"limit":10}`,
			head + `{"baseline":null,"dependencies":[{"key":"R3","relationship":"r","spaceKey":"D"}],"issues":[{"issueKey":"P-2","relationship":"r","serviceId":null}],` +
				`"key":"R","properties":[{"key":"P","value":"v"}],"references":[{"pageId":"7","title":"Title[31m"}],"spaceKey":"D"}]}`},
		{"results without a valid identity are dropped",
			`{"results":[{"key":"REQ-1"},{"spaceKey":"DEMO","key":"REQ 1"},{"spaceKey":"DE/MO","key":"R"},{"spaceKey":"D","key":"R","baseline":"2"},
			{"spaceKey":"D","key":"R","baseline":-1},{"spaceKey":"D","key":"R","baseline":1.5},1,null,"x",{"spaceKey":"D","key":"R","baseline":3},
			{"spaceKey":"D","key":"R0","baseline":0}],"count":11,"offset":-4,"limit":"ten"}`,
			`{"count":2,"hasMore":true,"limit":10,"offset":0,"results":[{"baseline":3,"key":"R","spaceKey":"D"},{"baseline":null,"key":"R0","spaceKey":"D"}]}`},
		{"links: relative paths and http(s) only",
			`{"results":[{"spaceKey":"D","key":"A","genericUrl":"https://wiki.example.com/requirements/D/A"},{"spaceKey":"D","key":"B","genericUrl":"//evil.example.com/x"},
			{"spaceKey":"D","key":"C","genericUrl":"/\\evil.example.com"},{"spaceKey":"D","key":"E","genericUrl":"javascript:alert(1)"},
			{"spaceKey":"D","key":"F","genericUrl":"JaVaScRiPt:alert(1)"},{"spaceKey":"D","key":"G","genericUrl":"java\tscript:alert(1)"},
			{"spaceKey":"D","key":"H","genericUrl":"javascript&colon;alert(1)"},{"spaceKey":"D","key":"I","genericUrl":"&#106;avascript:alert(1)"},
			{"spaceKey":"D","key":"J","genericUrl":"/&#47;evil.example.com"},{"spaceKey":"D","key":"K","genericUrl":"%2F%2Fevil.example.com"},
			{"spaceKey":"D","key":"L","genericUrl":"%6Aavascript:alert(1)"},{"spaceKey":"D","key":"M","genericUrl":" javascript:alert(1)"},
			{"spaceKey":"D","key":"N","genericUrl":"https://user:pw@wiki.example.com/"},{"spaceKey":"D","key":"O","genericUrl":"data:text/html,<script>"},
			{"spaceKey":"D","key":"P","genericUrl":"/requirements/D/P%201"},{"spaceKey":"D","key":"Q","genericUrl":"\u0000javascript:alert(1)"},
			{"spaceKey":"D","key":"S","genericUrl":"/%5Cevil.example.com"},{"spaceKey":"D","key":"T","genericUrl":"https:evil.example.com"}],"limit":10}`,
			`{"count":18,"hasMore":true,"limit":10,"offset":0,"results":[{"baseline":null,"genericUrl":"https://wiki.example.com/requirements/D/A","key":"A","spaceKey":"D"},` +
				`{"baseline":null,"key":"B","spaceKey":"D"},{"baseline":null,"key":"C","spaceKey":"D"},{"baseline":null,"key":"E","spaceKey":"D"},` +
				`{"baseline":null,"key":"F","spaceKey":"D"},{"baseline":null,"key":"G","spaceKey":"D"},{"baseline":null,"key":"H","spaceKey":"D"},` +
				`{"baseline":null,"key":"I","spaceKey":"D"},{"baseline":null,"key":"J","spaceKey":"D"},{"baseline":null,"key":"K","spaceKey":"D"},` +
				`{"baseline":null,"key":"L","spaceKey":"D"},{"baseline":null,"key":"M","spaceKey":"D"},{"baseline":null,"key":"N","spaceKey":"D"},` +
				`{"baseline":null,"key":"O","spaceKey":"D"},{"baseline":null,"genericUrl":"/requirements/D/P%201","key":"P","spaceKey":"D"},` +
				`{"baseline":null,"key":"Q","spaceKey":"D"},{"baseline":null,"key":"S","spaceKey":"D"},{"baseline":null,"key":"T","spaceKey":"D"}]}`},
		// What another JSON reader could take: a member given twice (Go
		// keeps the last), members under another case.
		{"duplicate excerpt", `{"results":[{"spaceKey":"D","key":"R","htmlExcerpt":"<img src=x onerror=alert(1)>","htmlExcerpt":"ok"}],"limit":10}`,
			head + `{"baseline":null,"htmlExcerpt":"<p>ok</p>","key":"R","spaceKey":"D"}]}`},
		{"duplicate results", `{"results":[{"spaceKey":"D","key":"R","htmlExcerpt":"<img src=x onerror=alert(1)>"}],"results":[]}`,
			`{"count":0,"hasMore":false,"limit":10,"offset":0,"results":[]}`},
		{"excerpt in another case", `{"results":[{"spaceKey":"D","key":"R","HtmlExcerpt":"<img src=x onerror=alert(1)>"}]}`,
			head + `{"baseline":null,"key":"R","spaceKey":"D"}]}`},
		{"results in another case", `{"Results":[{"htmlExcerpt":"<script>x</script>"}],"results":[]}`,
			`{"count":0,"hasMore":false,"limit":10,"offset":0,"results":[]}`},
		// hasMore is the wiki's when it says; a wiki that does not (or not
		// as true or false) has more when its page was full.
		{"hasMore from the wiki", `{"results":[{"spaceKey":"D","key":"R"}],"offset":0,"limit":10,"count":1,"hasMore":true}`,
			`{"count":1,"hasMore":true,"limit":10,"offset":0,"results":[{"baseline":null,"key":"R","spaceKey":"D"}]}`},
		{"no more from the wiki", `{"results":[{"spaceKey":"D","key":"R"}],"offset":0,"limit":1,"count":1,"hasMore":false}`,
			`{"count":1,"hasMore":false,"limit":1,"offset":0,"results":[{"baseline":null,"key":"R","spaceKey":"D"}]}`},
		{"hasMore not a boolean, full page", `{"results":[{"spaceKey":"D","key":"R"}],"offset":0,"limit":1,"count":1,"hasMore":"no"}`,
			`{"count":1,"hasMore":true,"limit":1,"offset":0,"results":[{"baseline":null,"key":"R","spaceKey":"D"}]}`},
		{"hasMore null, page not full", `{"results":[{"spaceKey":"D","key":"R"}],"offset":0,"limit":2,"count":1,"hasMore":null}`,
			`{"count":1,"hasMore":false,"limit":2,"offset":0,"results":[{"baseline":null,"key":"R","spaceKey":"D"}]}`},
	} {
		f.wiki.search = func(tracker.WikiEndpoint, tracker.WikiSearch) (json.RawMessage, error) {
			return json.RawMessage(tc.answer), nil
		}
		res, err := f.svc.SearchRequirements(ctx, tenant, "wiki-1", tracker.WikiSearch{Limit: 10})
		if err != nil || string(res.Results) != tc.want {
			t.Errorf("%s: %s, %v\nwant %s", tc.name, res.Results, err, tc.want)
		}
	}
	// An answer without a results array is the wiki's failure (502).
	for _, bad := range []string{`[]`, `"x"`, `null`, `{}`, `{"results":null}`, `{"results":{"a":1}}`, `{"Results":[]}`, `{"count":0}`} {
		f.wiki.search = func(tracker.WikiEndpoint, tracker.WikiSearch) (json.RawMessage, error) {
			return json.RawMessage(bad), nil
		}
		if _, err := f.svc.SearchRequirements(ctx, tenant, "wiki-1", tracker.WikiSearch{}); apperr.CodeOf(err) != apperr.BadGateway {
			t.Errorf("answer %s: %v, want a 502", bad, err)
		}
	}
}
