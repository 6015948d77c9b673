package page

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// Builders of storage-format fragments, so that test bodies stay readable.

// def is a definition macro without a type parameter (the default).
func def(key string) string {
	return `<ac:structured-macro ac:name="requirement" ac:schema-version="1">` +
		`<ac:parameter ac:name="key">` + key + `</ac:parameter></ac:structured-macro>`
}

// link is a LINK macro; space "" leaves out the spaceKey parameter.
func link(space, key string) string {
	s := `<ac:structured-macro ac:name="requirement">`
	if space != "" {
		s += `<ac:parameter ac:name="spaceKey">` + space + `</ac:parameter>`
	}
	return s + `<ac:parameter ac:name="type">LINK</ac:parameter>` +
		`<ac:parameter ac:name="key">` + key + `</ac:parameter></ac:structured-macro>`
}

// jira is an issue macro; server "" leaves out the serverId parameter.
func jira(key, server string) string {
	s := `<ac:structured-macro ac:name="jira">`
	if server != "" {
		s += `<ac:parameter ac:name="serverId">` + server + `</ac:parameter>`
	}
	return s + `<ac:parameter ac:name="key">` + key + `</ac:parameter></ac:structured-macro>`
}

// option is a requirement-property macro with option=true (title, ignore).
func option(name string) string {
	return `<ac:structured-macro ac:name="requirement-property">` +
		`<ac:parameter ac:name="` + name + `">true</ac:parameter></ac:structured-macro>`
}

// table wraps rows in a table.
func table(rows ...string) string {
	return "<table><tbody>" + strings.Join(rows, "") + "</tbody></table>"
}

// th is a header row.
func th(cells ...string) string { return cellRow("th", cells) }

// tr is a row of td cells.
func tr(cells ...string) string { return cellRow("td", cells) }

func cellRow(tag string, cells []string) string {
	var b strings.Builder
	b.WriteString("<tr>")
	for _, c := range cells {
		b.WriteString("<" + tag + ">" + c + "</" + tag + ">")
	}
	b.WriteString("</tr>")
	return b.String()
}

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
