package page

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/reqtrace/reqtrace/shared/page/pagetest"
)

// Builders of storage-format fragments (shared/page/pagetest), under the
// short names the tests use.
var (
	def    = pagetest.Def
	link   = pagetest.Link
	jira   = pagetest.Jira
	option = pagetest.Option
	table  = pagetest.Table
	th     = pagetest.TH
	tr     = pagetest.TR
)

// mustParse parses body and fails the test on error.
func mustParse(t *testing.T, body string) *Result {
	t.Helper()
	r, err := Parse(body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return r
}

// asJSON renders v for failure messages that show the whole value.
func asJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// allowedMarkup is what an excerpt may contain: elements and their attributes.
var allowedMarkup = map[string]map[string]bool{
	"p": {}, "br": {}, "b": {}, "strong": {}, "i": {}, "em": {}, "u": {}, "code": {}, "sub": {},
	"sup": {}, "span": {}, "a": {"href": true}, "img": {"src": true},
}

// unsafeMarkup returns why excerpt s is unsafe, "" when it holds only allowed
// elements and attributes and no URL with a scheme other than http(s). It
// tokenizes s instead of searching it for "javascript:" or " on...=": such
// words may appear in the text (escaped, harmless), but never in markup.
func unsafeMarkup(s string) string {
	if strings.Contains(strings.ToLower(s), "<script") {
		return "contains <script"
	}
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.CommentToken, html.DoctypeToken:
			return "comment or doctype"
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attrs, ok := allowedMarkup[tok.Data]
			if !ok {
				return "element <" + tok.Data + ">"
			}
			for _, a := range tok.Attr {
				if !attrs[a.Key] {
					return "attribute " + a.Key + " on <" + tok.Data + ">"
				}
				if unsafeURL(a.Val) {
					return "URL " + a.Val
				}
			}
		}
	}
}

// unsafeURL reports whether a URL has a scheme other than http or https,
// ignoring the white space and control characters browsers ignore.
func unsafeURL(v string) bool {
	v = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, v)
	u, err := url.Parse(v)
	if err != nil {
		return true
	}
	scheme := strings.ToLower(u.Scheme)
	return scheme != "" && scheme != "http" && scheme != "https"
}
