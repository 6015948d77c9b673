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
			if string(res.Results) != `{"count":0,"limit":5,"offset":0,"results":[]}` || asked.Q != "key ~ 'REQ-%'" || asked.Limit != 5 {
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

// The wiki's excerpts reach the tracker's users: the dialog sanitizes them
// like every excerpt the tracker stores, and keeps everything else.
func TestSearchSanitizesExcerpts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.wiki.version = func(tracker.WikiEndpoint, string) (tracker.WikiVersion, error) {
		return tracker.WikiVersion{Version: 4, Max: 4}, nil
	}
	for _, tc := range []struct{ name, answer, want string }{
		{"hostile excerpt",
			`{"results":[{"key":"REQ-1","htmlExcerpt":"<p>x<img src=x onerror=alert(1)><script>alert(2)</script></p>","extra":[1]}],"count":1}`,
			`{"count":1,"results":[{"extra":[1],"htmlExcerpt":"<p>x<img src=\"x\"></p>","key":"REQ-1"}]}`},
		{"not a string", `{"results":[{"key":"REQ-1","htmlExcerpt":{"a":1}}],"count":1}`,
			`{"count":1,"results":[{"key":"REQ-1"}]}`},
		{"clean answers are re-encoded", `{"results":[{"key":"REQ-1","htmlExcerpt":"<p>ok &amp; fine</p>"}], "count":1}`,
			`{"count":1,"results":[{"htmlExcerpt":"<p>ok &amp; fine</p>","key":"REQ-1"}]}`},
		// What another JSON reader could take: a member given twice (Go
		// keeps the last), the excerpt or the results under another case.
		{"duplicate excerpt", `{"results":[{"key":"R","htmlExcerpt":"<img src=x onerror=alert(1)>","htmlExcerpt":"ok"}]}`,
			`{"results":[{"htmlExcerpt":"<p>ok</p>","key":"R"}]}`},
		{"duplicate results", `{"results":[{"key":"R","htmlExcerpt":"<img src=x onerror=alert(1)>"}],"results":[]}`,
			`{"results":[]}`},
		{"excerpt in another case", `{"results":[{"key":"R","HtmlExcerpt":"<img src=x onerror=alert(1)>"}]}`,
			`{"results":[{"HtmlExcerpt":"<p><img src=\"x\"></p>","key":"R"}]}`},
		{"results in another case", `{"Results":[{"htmlExcerpt":"<script>x</script>"}],"results":[]}`,
			`{"results":[]}`},
	} {
		f.wiki.search = func(tracker.WikiEndpoint, tracker.WikiSearch) (json.RawMessage, error) {
			return json.RawMessage(tc.answer), nil
		}
		res, err := f.svc.SearchRequirements(ctx, tenant, "wiki-1", tracker.WikiSearch{})
		if err != nil || string(res.Results) != tc.want {
			t.Errorf("%s: %s, %v\nwant %s", tc.name, res.Results, err, tc.want)
		}
	}
	for _, bad := range []string{`[]`, `"x"`, `{"results":{"a":1}}`, `{"results":[1]}`} {
		f.wiki.search = func(tracker.WikiEndpoint, tracker.WikiSearch) (json.RawMessage, error) {
			return json.RawMessage(bad), nil
		}
		if _, err := f.svc.SearchRequirements(ctx, tenant, "wiki-1", tracker.WikiSearch{}); apperr.CodeOf(err) != apperr.BadGateway {
			t.Errorf("answer %s: %v, want a 502", bad, err)
		}
	}
}
