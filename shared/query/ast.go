package query

import "strings"

// Expr is a node of a parsed query: *Or, *And, *Not, *FullText, *Compare,
// *In, *IsNull or *IsSuspect. Parse returns a nil Expr for an empty query, and a nil Expr
// matches every requirement.
//
// Trees built by Parse are well formed: no nil children, FullText only as the
// whole query, operators allowed for their field, relationships normalised.
// String renders a well-formed tree as canonical query text that Parse turns
// back into an equal tree.
type Expr interface {
	// String renders the node as canonical query text.
	String() string
	expr()
}

// Or matches when either side matches. `a OR b OR c` parses left-associative:
// Or{Or{a, b}, c}.
type Or struct{ Left, Right Expr }

// And matches when both sides match. `a AND b AND c` parses left-associative.
type And struct{ Left, Right Expr }

// Not matches when X does not match.
type Not struct{ X Expr }

// FullText is a query that is a bare string: it matches requirements whose
// key or text contains Text, case-insensitively ('%' is not a wildcard here).
// It only appears as the whole query.
type FullText struct{ Text string }

// Compare is the predicate `Field Op Value`.
type Compare struct {
	Field Field
	Op    Op
	Value Value
}

// In is the predicate `Field IN (Values...)`, or `Field NOT IN (...)` when
// Not is set. Values is never empty.
type In struct {
	Field  Field
	Not    bool
	Values []Value
}

// IsNull is the predicate `Field IS NULL`, or `Field IS NOT NULL` when Not is
// set.
type IsNull struct {
	Field Field
	Not   bool
}

// IsSuspect is the predicate `suspect IS [NOT] TRUE|FALSE`:
// a requirement is suspect when one of its dependencies or issue links is.
// It matches the requirements whose suspect state is Value, or is not when
// Not is set; it is never NULL.
type IsSuspect struct {
	Not   bool
	Value bool
}

// Wants reports whether the predicate matches suspect requirements.
func (n *IsSuspect) Wants() bool { return n.Value != n.Not }

func (*IsSuspect) expr() {}

func (*Or) expr()       {}
func (*And) expr()      {}
func (*Not) expr()      {}
func (*FullText) expr() {}
func (*Compare) expr()  {}
func (*In) expr()       {}
func (*IsNull) expr()   {}

// FieldKind says which attribute of a requirement a predicate reads.
type FieldKind int

// The fields of the language. The zero FieldKind is not a field.
const (
	FieldKey      FieldKind = iota + 1 // Key
	FieldText                          // Text
	FieldSpace                         // SpaceKey
	FieldStatus                        // Status
	FieldPage                          // Origin.PageID; titles and citations through Env.Page
	FieldBaseline                      // Baseline (0 = NULL)
	FieldJira                          // Issues[].IssueKey
	FieldTo                            // Dependencies: what the requirement references
	FieldFrom                          // ReverseDependencies: what references the requirement
	FieldParent                        // transitive to
	FieldChild                         // transitive from
	FieldProperty                      // Properties named Field.Name (page properties)
	FieldExternal                      // external Properties named Field.Name (ext@Name)
)

var fieldKinds = map[string]FieldKind{
	"key": FieldKey, "text": FieldText, "space": FieldSpace, "status": FieldStatus,
	"page": FieldPage, "baseline": FieldBaseline, "jira": FieldJira, "to": FieldTo,
	"from": FieldFrom, "parent": FieldParent, "child": FieldChild, "ext": FieldExternal,
}

var fieldNames = map[FieldKind]string{
	FieldKey: "key", FieldText: "text", FieldSpace: "space", FieldStatus: "status",
	FieldPage: "page", FieldBaseline: "baseline", FieldJira: "jira", FieldTo: "to",
	FieldFrom: "from", FieldParent: "parent", FieldChild: "child", FieldProperty: "@",
	FieldExternal: "ext",
}

// String returns the field's name in the language ("@" for properties,
// "ext" for external properties).
func (k FieldKind) String() string {
	if name, ok := fieldNames[k]; ok {
		return name
	}
	return "?"
}

// TakesRel reports whether the field accepts a relationship (`jira@rel`).
func (k FieldKind) TakesRel() bool {
	switch k {
	case FieldJira, FieldTo, FieldFrom, FieldParent, FieldChild:
		return true
	}
	return false
}

// Allows reports whether op may be used with the field. The graph fields
// name requirements, so they take only equality (to and from also `~`);
// every other field takes every operator.
func (k FieldKind) Allows(op Op) bool {
	switch k {
	case FieldTo, FieldFrom:
		return op == OpEq || op == OpNe || op == OpLike
	case FieldParent, FieldChild:
		return op == OpEq || op == OpNe
	}
	return true
}

// Field is the left side of a predicate. Name is the property name of a
// FieldProperty or FieldExternal (as written, unescaped; matched
// case-insensitively) or the
// relationship of a field that TakesRel (normalised with
// requirement.NormalizeRelationship; "" = any relationship).
type Field struct {
	Kind FieldKind
	Name string
}

// String renders the field as query text: `key`, `jira@implements`,
// `@Main\ Category`, `ext@Cost`.
func (f Field) String() string {
	switch {
	case f.Kind == FieldProperty:
		return "@" + escapeName(f.Name)
	case f.Kind == FieldExternal:
		return "ext@" + escapeName(f.Name)
	case f.Name != "":
		return f.Kind.String() + "@" + escapeName(f.Name)
	}
	return f.Kind.String()
}

// Op is a comparison operator. `==` parses as OpEq and `<>` as OpNe.
type Op int

// The operators of a Compare.
const (
	OpEq   Op = iota + 1 // = and ==
	OpNe                 // != and <>
	OpLike               // ~
	OpLt                 // <
	OpLe                 // <=
	OpGt                 // >
	OpGe                 // >=
)

var opNames = map[Op]string{OpEq: "=", OpNe: "!=", OpLike: "~", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">="}

var opsByText = map[string]Op{
	"=": OpEq, "==": OpEq, "!=": OpNe, "<>": OpNe, "~": OpLike,
	"<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe,
}

// String returns the canonical spelling of the operator.
func (o Op) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return "?"
}

// Value is the right side of a predicate: the text of a STRING (unescaped)
// or of a NUMBER (as written, e.g. "3", "-1.50"). Number only records how it
// was written; evaluation compares numerically whenever both sides look like
// numbers, whichever way they were written.
type Value struct {
	Text   string
	Number bool
}

// String renders the value as query text: a NUMBER as written, a STRING
// single-quoted with ' and \ escaped.
func (v Value) String() string {
	if v.Number {
		return v.Text
	}
	return quote(v.Text)
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// escapeName escapes the bytes that would end a property or relationship
// name (white space, delimiters, the backslash itself).
func escapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Precedence levels for rendering: a child is parenthesised when it binds
// more loosely than its position requires.
const (
	precOr = iota + 1
	precAnd
	precFactor
)

func prec(e Expr) int {
	switch e.(type) {
	case *Or:
		return precOr
	case *And:
		return precAnd
	}
	return precFactor
}

func wrap(e Expr, min int) string {
	if prec(e) < min {
		return "(" + e.String() + ")"
	}
	return e.String()
}

// String renders `Left OR Right`, parenthesising a right-hand OR.
func (e *Or) String() string { return wrap(e.Left, precOr) + " OR " + wrap(e.Right, precAnd) }

// String renders `Left AND Right`, parenthesising ORs and a right-hand AND.
func (e *And) String() string {
	return wrap(e.Left, precAnd) + " AND " + wrap(e.Right, precFactor)
}

// String renders `NOT X`, parenthesising an AND or OR.
func (e *Not) String() string { return "NOT " + wrap(e.X, precFactor) }

// String renders the quoted string.
func (e *FullText) String() string { return quote(e.Text) }

// String renders `field op value`.
func (e *Compare) String() string {
	return e.Field.String() + " " + e.Op.String() + " " + e.Value.String()
}

// String renders `field [NOT] IN (v, ...)`.
func (e *In) String() string {
	var b strings.Builder
	b.WriteString(e.Field.String())
	if e.Not {
		b.WriteString(" NOT")
	}
	b.WriteString(" IN (")
	for i, v := range e.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.String())
	}
	b.WriteByte(')')
	return b.String()
}

// String renders `field IS [NOT] NULL`.
func (e *IsNull) String() string {
	if e.Not {
		return e.Field.String() + " IS NOT NULL"
	}
	return e.Field.String() + " IS NULL"
}

// String renders `suspect IS [NOT] TRUE|FALSE`.
func (e *IsSuspect) String() string {
	s := "suspect IS "
	if e.Not {
		s += "NOT "
	}
	if e.Value {
		return s + "TRUE"
	}
	return s + "FALSE"
}
