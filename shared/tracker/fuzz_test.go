package tracker_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/page"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// FuzzSearchAnswer feeds the link dialog arbitrary wiki answers: it never
// panics, refuses what is not an object with a results array (502), and
// otherwise answers JSON whose every htmlExcerpt string is what the
// stored-excerpt policy makes of it (sanitizing it again changes nothing).
func FuzzSearchAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"results":[],"offset":0,"limit":5,"count":0}`,
		`{"results":[{"key":"REQ-1","htmlExcerpt":"<p>x<img src=x onerror=alert(1)><script>alert(2)</script></p>"}],"count":1}`,
		`{"results":[{"htmlExcerpt":{"a":1}}]}`,
		`{"results":[{"htmlExcerpt":"<a href=\"javascript:alert(1)\">x</a> &amp; <b>ok</b>"}]}`,
		`{"results":[1]}`, `[]`, `null`, `"x"`, `{"results":null}`, `{}`, `{"results":[{"htmlExcerpt":"\u0000<"}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		fx := newFixture(t)
		fx.wiki.version = func(tracker.WikiEndpoint, string) (tracker.WikiVersion, error) {
			return tracker.WikiVersion{Version: 4, Max: 4}, nil
		}
		fx.wiki.search = func(tracker.WikiEndpoint, tracker.WikiSearch) (json.RawMessage, error) {
			return json.RawMessage(answer), nil
		}
		res, err := fx.svc.SearchRequirements(context.Background(), tenant, "wiki-1", tracker.WikiSearch{})
		if err != nil {
			if apperr.CodeOf(err) != apperr.BadGateway {
				t.Fatalf("answer %q: %v, want a 502", answer, err)
			}
			return
		}
		var top struct {
			Results []map[string]json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal(res.Results, &top); err != nil {
			t.Fatalf("answer %q passed on as %q: %v", answer, res.Results, err)
		}
		for _, r := range top.Results {
			ex, ok := r["htmlExcerpt"]
			if !ok {
				continue
			}
			var html string
			if err := json.Unmarshal(ex, &html); err != nil {
				t.Fatalf("answer %q: htmlExcerpt %s is not a string", answer, ex)
			}
			if page.Sanitize(html) != html {
				t.Fatalf("answer %q: htmlExcerpt %q passed unsanitized", answer, html)
			}
		}
	})
}
