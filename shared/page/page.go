// Package page reads the requirements a wiki page defines from its Confluence
// storage format (XHTML with ac: and ri: elements): definitions in tables and
// paragraphs, links between requirements, links to issues, properties, and a
// sanitized HTML excerpt of each requirement. docs/storage-format.md describes
// the accepted format; this package is its implementation.
//
// Parse is pure (no I/O) and safe for concurrent use.
package page

import (
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"golang.org/x/net/html"
)

// Result is what one page defines.
type Result struct {
	// Definitions are the requirements the page defines, in page order. A key
	// defined more than once appears once: the first definition wins.
	Definitions []Definition
	// Duplicates lists, in page order, the keys of the definitions that were
	// dropped because an earlier definition on the page has the same key
	// (compared ignoring case). Each spelling is listed once.
	Duplicates []string
	// Links lists every issue macro of the page that names an issue, in page
	// order, including those that belong to no definition.
	Links []IssueRef
}

// Definition is one requirement as the page defines it.
type Definition struct {
	Key string
	// Text is the plain text of the description, white space collapsed.
	Text string
	// HTMLExcerpt is the description as sanitized, simplified HTML wrapped in
	// a single <p> element, or "" when the description is empty.
	HTMLExcerpt string
	// Properties are the values of the property columns of the
	// requirement's row, in column order; a multi-valued cell gives several
	// properties with the same Key.
	Properties []requirement.Property
	// Dependencies are the requirement links of the definition, without
	// duplicates. SpaceKey is "" for a requirement of the page's own space.
	Dependencies []requirement.Dependency
	// Issues are the issue macros of the definition, without duplicates.
	Issues []requirement.IssueLink
}

// IssueRef is one issue macro of a page.
type IssueRef struct {
	// RequirementKey is the definition the macro belongs to, "" when it
	// belongs to none (outside requirements, in an ignored column, or in a
	// dropped duplicate).
	RequirementKey string
	// ServiceID is the macro's serverId parameter, "" when absent.
	ServiceID string
	IssueKey  string
	// Relationship is the relationship of the issue link, "" when the macro
	// belongs to no definition.
	Relationship string
}

// Parse extracts the requirements defined by a page body in storage format.
// A body that is not acceptable storage format (see docs/storage-format.md:
// invalid UTF-8, NUL bytes, unbalanced elements, a requirement macro without
// a key, an invalid key...) gives an apperr Invalid error whose message says
// what is wrong and where.
func Parse(body string) (*Result, error) {
	t, err := parseTree(body)
	if err != nil {
		return nil, err
	}
	macros, err := readMacros(t)
	if err != nil {
		return nil, err
	}
	p := &parser{
		body:   body,
		macros: macros,
		seen:   make(map[string]bool),
		listed: make(map[string]bool),
		owners: make(map[*html.Node]issueOwner),
	}
	if err := p.walk(t.root); err != nil {
		return nil, err
	}
	p.result.Links = p.issueRefs(t.macros)
	return &p.result, nil
}

// parser holds the state of one Parse call.
type parser struct {
	body   string
	macros map[*html.Node]*macro
	result Result
	seen   map[string]bool // upper-cased keys defined so far
	listed map[string]bool // spellings already in result.Duplicates
	owners map[*html.Node]issueOwner
}

// issueOwner is the definition an issue macro was attached to.
type issueOwner struct {
	key          string
	relationship string
}

// claim reports whether key is defined for the first time on the page, and
// records it as a duplicate otherwise.
func (p *parser) claim(key string) bool {
	folded := requirement.FoldKey(key)
	if !p.seen[folded] {
		p.seen[folded] = true
		return true
	}
	if !p.listed[key] {
		p.listed[key] = true
		p.result.Duplicates = append(p.result.Duplicates, key)
	}
	return false
}

// walk looks for tables and paragraph definitions below n, in page order.
func (p *parser) walk(n *html.Node) error {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if err := p.node(c); err != nil {
			return err
		}
	}
	return nil
}

// node looks for tables and paragraph definitions in n and below.
func (p *parser) node(n *html.Node) error {
	if n.Type != html.ElementNode {
		return nil
	}
	switch m := p.macros[n]; {
	case m != nil && m.kind == definitionMacro:
		return p.paragraph(n, m)
	case m != nil:
		// Link, issue, property and status macros outside definitions
		// index nothing, and their parameters hold no content.
		return nil
	case n.Data == "table":
		return p.table(n)
	case kindOf(n) == skipped:
		return nil
	}
	return p.walk(n)
}

// paragraph indexes a definition macro found outside a requirement row: the
// requirement's text is the rest of its paragraph, up to the next definition
// or table.
func (p *parser) paragraph(n *html.Node, m *macro) error {
	def := &Definition{Key: m.key}
	keep := p.claim(m.key)
	s := p.newScope(def, keep, newWriter(true))
	s.self = n
	s.paragraph = true
	s.linkRel = relDependency
	s.issueRel = relRelates
	if err := s.after(n, blockOf(n)); err != nil {
		return err
	}
	def.Text = s.w.plainText()
	def.HTMLExcerpt = s.w.excerpt()
	if keep {
		p.add(def)
	}
	return nil
}

// add appends a complete definition to the result, without repeated links.
func (p *parser) add(def *Definition) {
	def.Dependencies = unique(def.Dependencies)
	def.Issues = unique(def.Issues)
	p.result.Definitions = append(p.result.Definitions, *def)
}

// unique removes repeated values from s, keeping the first of each.
func unique[T comparable](s []T) []T {
	if len(s) < 2 {
		return s
	}
	seen := make(map[T]bool, len(s))
	kept := s[:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			kept = append(kept, v)
		}
	}
	return kept
}

// issueRefs lists the issue macros of the page with their owners.
func (p *parser) issueRefs(all []macroNode) []IssueRef {
	var refs []IssueRef
	for _, mn := range all {
		m := p.macros[mn.node]
		if m == nil || m.kind != issueMacro {
			continue
		}
		o := p.owners[mn.node]
		refs = append(refs, IssueRef{
			RequirementKey: o.key,
			ServiceID:      m.serverID,
			IssueKey:       m.key,
			Relationship:   o.relationship,
		})
	}
	return refs
}

// invalidAt returns an Invalid error that ends with the line of offset in
// body, so that an author can find the fault.
func invalidAt(body string, offset int, format string, args ...any) *apperr.Error {
	line := 1 + strings.Count(body[:offset], "\n")
	return apperr.Invalidf(format+" (line %d)", append(args, line)...)
}
