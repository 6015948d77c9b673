package page

import (
	"slices"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// policy is the sanitizer of every excerpt, built once (a bluemonday policy
// is safe for concurrent use). It allows exactly what the renderer writes:
// one <p>, line breaks, inline formatting, links and images with http(s) or
// relative URLs. Everything else (scripts, styles, event handlers, other
// attributes, javascript: and data: URLs) is removed.
var policy = newPolicy()

func newPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "b", "strong", "i", "em", "u", "code", "sub", "sup", "span")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("src").OnElements("img")
	p.AllowURLSchemes("http", "https")
	p.AllowRelativeURLs(true)
	p.RequireParseableURLs(true)
	return p
}

// bodyContext is the element an HTML fragment is parsed in.
var bodyContext = &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}

// Sanitize returns s as an excerpt: the same simplified, sanitized HTML that
// Parse gives a requirement description, wrapped in one <p> ("" when nothing
// visible remains). Block elements become line breaks, scripts, styles and
// unsafe attributes and URLs are removed, and requirement and jira macros
// show their keys. s is read as HTML (not as strict storage format), so any
// stored excerpt can be passed; Sanitize(Sanitize(s)) == Sanitize(s).
func Sanitize(s string) string {
	nodes, err := html.ParseFragment(strings.NewReader(strings.ToValidUTF8(s, "\uFFFD")), bodyContext)
	if err != nil {
		return ""
	}
	sc := &scope{macros: fragmentMacros(nodes), w: newWriter(true), macroText: true}
	for _, n := range nodes {
		_ = sc.visit(n) // a scope without a definition never fails
	}
	return sc.w.excerpt()
}

// fragmentMacros reads the macros of an HTML fragment, skipping faulty ones:
// Sanitize renders whatever it is given.
func fragmentMacros(nodes []*html.Node) map[*html.Node]*macro {
	macros := make(map[*html.Node]*macro)
	stack := slices.Clone(nodes)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type == html.ElementNode && n.Data == "ac:structured-macro" {
			if m, err := readMacro(n); err == nil && m != nil {
				macros[n] = m
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, c)
		}
	}
	return macros
}
