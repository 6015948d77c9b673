// Package query implements reqtrace's search language (docs/query-language.md).
//
// Parse turns a query string into an AST with a hand-written lexer and
// recursive-descent parser; every syntax error is an apperr.InvalidAt that
// carries the 0-based byte position of the problem. Match evaluates an AST
// against one requirement with two-valued logic. ParseOrder reads the `order`
// parameter against a whitelist of columns, and Order.Less sorts results.
// Drivers lists the index accesses a planner may use to fetch candidates
// before filtering them with Match.
//
// The package is pure Go, with no AWS types and no I/O: the transitive
// predicates (parent, child) and what a page predicate's value names (the
// current pages of that title, the requirements those pages cite) are
// precomputed sets read through Env.
// docs/query-language.md is the user-facing description of the language.
package query

import "strings"

// Limits that keep hostile input cheap: the parser is recursive, so nesting
// is bounded, and everything else is bounded by the length.
const (
	// MaxQueryLength is the longest query Parse accepts, in bytes.
	MaxQueryLength = 4096
	// MaxDepth is the deepest nesting of parentheses and NOT Parse accepts.
	MaxDepth = 100
	// MaxOrderLength is the longest order parameter ParseOrder accepts, in bytes.
	MaxOrderLength = 256
)

// Fold is the case folding behind every case-insensitive comparison of the
// language: keys, statuses, property names, `~` patterns, full text and the
// keys of references. An index that serves a case-insensitive Access must
// hold Fold of the stored attribute.
func Fold(s string) string { return strings.ToUpper(s) }

// Ref names a requirement in the graph predicates (to, from, parent, child)
// and in closure sets. Key is folded with Fold because key comparisons are
// case-insensitive; SpaceKey is compared exactly. In a query value an empty
// SpaceKey means "in any space"; in a closure set it is always filled.
type Ref struct {
	SpaceKey string
	Key      string
}

// NewRef returns the Ref of the requirement key in space spaceKey, with the
// key folded. Use it for every Ref put in a closure set.
func NewRef(spaceKey, key string) Ref { return Ref{SpaceKey: spaceKey, Key: Fold(key)} }

// ParseRef reads a query value naming a requirement: 'KEY' (any space) or
// 'SPACE/KEY'. It reports false when v cannot name a requirement (empty
// parts, or more than one '/': keys cannot contain '/'); such a value matches
// nothing.
func ParseRef(v string) (Ref, bool) {
	space, key, found := strings.Cut(v, "/")
	if !found {
		space, key = "", v
	}
	if key == "" || (found && space == "") || strings.Contains(key, "/") {
		return Ref{}, false
	}
	return NewRef(space, key), true
}

// String renders r as a query value: "SPACE/KEY", or "KEY" when the space
// is empty.
func (r Ref) String() string {
	if r.SpaceKey == "" {
		return r.Key
	}
	return r.SpaceKey + "/" + r.Key
}

// matches reports whether r names the requirement key in space: the keys
// are equal after folding and r's space is empty or equal.
func (r Ref) matches(space, key string) bool {
	return Fold(key) == r.Key && (r.SpaceKey == "" || r.SpaceKey == space)
}
