package page

import (
	"slices"

	"github.com/reqtrace/reqtrace/shared/requirement"
	"golang.org/x/net/html"
)

// Relationships used where no column header names one.
const (
	relDependency = "dependency" // a requirement link in a key or description cell
	relRelates    = "relates"    // an issue macro where no column header names a relationship
)

// scope walks the content of a definition (one cell of its row, or the rest
// of its paragraph): it renders it and attaches the requirement links and
// issue macros it meets to the definition. A scope without a definition only
// renders (table headers, Sanitize).
type scope struct {
	p      *parser // nil when rendering only
	macros map[*html.Node]*macro
	def    *Definition
	keep   bool       // def is kept (not a duplicate): it owns its issue macros
	self   *html.Node // the definition macro of def
	w      *writer
	// linkRel and issueRel are the relationships of the links met.
	linkRel, issueRel string
	// macroText writes link and issue macros as their keys; property cells
	// leave them out, since there they are links, not values.
	macroText bool
	// paragraph ends the scope at the next definition or table; otherwise
	// another definition in the scope is an error.
	paragraph bool
	stopped   bool
	depth     int
}

// newScope returns a scope that renders with w and collects into def.
func (p *parser) newScope(def *Definition, keep bool, w *writer) *scope {
	return &scope{p: p, macros: p.macros, def: def, keep: keep, w: w, macroText: true}
}

// children visits the children of n.
func (s *scope) children(n *html.Node) error {
	for c := n.FirstChild; c != nil && !s.stopped; c = c.NextSibling {
		if err := s.visit(c); err != nil {
			return err
		}
	}
	return nil
}

// visit renders n and collects the macros below it.
func (s *scope) visit(n *html.Node) error {
	switch {
	case n.Type == html.TextNode:
		s.w.words(n.Data)
		return nil
	case n.Type != html.ElementNode || s.depth >= maxDepth:
		return nil
	}
	s.depth++
	defer func() { s.depth-- }()
	if m := s.macros[n]; m != nil {
		return s.macro(n, m)
	}
	switch kindOf(n) {
	case skipped:
	case lineBreak:
		s.w.lineBreak()
	case image, confluenceImage:
		s.w.image(imageSource(n))
	case confluenceLink:
		if hasLinkBody(n) {
			return s.children(n)
		}
		s.w.words(linkLabel(n))
	case block:
		return s.block(n)
	case inline:
		return s.inline(n)
	default:
		return s.children(n)
	}
	return nil
}

// block renders a block element on its own lines.
func (s *scope) block(n *html.Node) error {
	if s.paragraph && n.Data == "table" {
		s.stopped = true
		return nil
	}
	s.w.lineBreak()
	err := s.children(n)
	s.w.lineBreak()
	return err
}

// inline renders an inline element inside its tag.
func (s *scope) inline(n *html.Node) error {
	tag := startTag(n)
	if tag == "" {
		return s.children(n)
	}
	s.w.start(n.Data, tag)
	err := s.children(n)
	s.w.end()
	return err
}

// macro handles a macro the parser knows.
func (s *scope) macro(n *html.Node, m *macro) error {
	switch m.kind {
	case definitionMacro:
		return s.definition(n, m)
	case linkMacro:
		s.addDependency(m)
		s.macroWord(m.key)
	case issueMacro:
		s.addIssue(n, m)
		s.macroWord(m.key)
	case statusMacro:
		s.w.words(m.key)
	}
	return nil
}

// definition handles a definition macro met in the scope.
func (s *scope) definition(n *html.Node, m *macro) error {
	switch {
	case n == s.self:
	case s.paragraph:
		s.stopped = true
	case s.def != nil:
		return invalidAt(s.p.body, m.offset,
			"requirement %q is defined in the row of %q: a table row defines one requirement", m.key, s.def.Key)
	default:
		s.w.word(m.key)
	}
	return nil
}

// macroWord writes the key of a link or issue macro where it is text.
func (s *scope) macroWord(key string) {
	if s.macroText {
		s.w.word(key)
	}
}

// addDependency attaches a requirement link to the definition; add removes
// repeated links once the definition is complete.
func (s *scope) addDependency(m *macro) {
	if s.def == nil {
		return
	}
	d := requirement.Dependency{SpaceKey: m.spaceKey, Key: m.key, Relationship: s.linkRel}
	s.def.Dependencies = append(s.def.Dependencies, d)
}

// addIssue attaches an issue macro to the definition.
func (s *scope) addIssue(n *html.Node, m *macro) {
	if s.def == nil {
		return
	}
	l := requirement.IssueLink{ServiceID: m.serverID, IssueKey: m.key, Relationship: s.issueRel}
	s.def.Issues = append(s.def.Issues, l)
	if s.keep {
		s.p.owners[n] = issueOwner{key: s.def.Key, relationship: s.issueRel}
	}
}

// after visits what follows start inside block, in page order: the rest of a
// paragraph. The inline elements start is nested in still apply, so their
// tags are opened first.
func (s *scope) after(start, block *html.Node) error {
	var chain []*html.Node
	for a := start.Parent; a != block; a = a.Parent {
		chain = append(chain, a)
	}
	for _, a := range slices.Backward(chain) {
		if kindOf(a) == inline && startTag(a) != "" {
			s.w.start(a.Data, startTag(a))
		}
	}
	for n := start; n != block && !s.stopped; n = n.Parent {
		for c := n.NextSibling; c != nil && !s.stopped; c = c.NextSibling {
			if err := s.visit(c); err != nil {
				return err
			}
		}
		if a := n.Parent; a != block && kindOf(a) == inline && startTag(a) != "" {
			s.w.end()
		}
	}
	s.w.finish()
	return nil
}
