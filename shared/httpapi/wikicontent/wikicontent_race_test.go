package wikicontent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/requirement"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// The tester's reproduction (docs/architecture.md, "Requests"): parallel PUTs of one page
// with different texts. Whichever succeed, the page and the requirement
// row agree afterwards, and every refusal is a 409 naming the concurrent
// save.
func TestContentParallelSavesAgree(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const n = 4
	body := func(i int) string {
		return specs(wt.TR(wt.Def("RACE-2"), fmt.Sprintf("<p>Text %d</p>", i), "High"))
	}
	put := func(i int) (int, string) {
		rec := httpapitest.Do(s, "PUT", "/rest/reqs/1/content/952", "demo-wiki-user", "application/json",
			pageJSON(t, map[string]any{"spaceKey": "DEMO", "title": "Race", "body": body(i)}))
		return rec.Code, rec.Body.String()
	}
	if code, raw := put(0); code != 200 {
		t.Fatalf("first put: %d %s", code, raw)
	}
	for round := range 5 {
		codes := make([]int, n)
		raws := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { codes[i], raws[i] = put(round*n + i + 1) })
		}
		wg.Wait()
		ok := 0
		for i, c := range codes {
			switch {
			case c == 200:
				ok++
			case c == 409 && (strings.Contains(raws[i], "being saved by another request; retry") || strings.Contains(raws[i], "changed by another request")):
			default:
				t.Fatalf("round %d put %d: %d %s", round, i, c, raws[i])
			}
		}
		if ok == 0 {
			t.Fatalf("round %d: no put succeeded: %v", round, codes)
		}
		a := do(t, s, "GET", "/rest/reqs/1/content/952", "demo-wiki-user", "")
		r, err := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "RACE-2"})
		if err != nil {
			t.Fatal(err)
		}
		if stored, _ := a.body["body"].(string); stored != body(mustText(t, r.Text)) {
			t.Fatalf("round %d (%v): page body %q, but RACE-2 says %q", round, codes, stored, r.Text)
		}
	}
}

// mustText returns i of "Text i".
func mustText(t *testing.T, text string) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(text, "Text %d", &i); err != nil {
		t.Fatalf("RACE-2 text %q", text)
	}
	return i
}
