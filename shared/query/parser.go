package query

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Parse reads a query of the query language (docs/query-language.md):
//
//	query     := expr | STRING
//	expr      := term ( OR term )*
//	term      := factor ( AND factor )*
//	factor    := NOT factor | '(' expr ')' | predicate
//	predicate := field op value | field [NOT] IN '(' value (',' value)* ')'
//	           | field IS [NOT] NULL
//	           | suspect IS [NOT] (TRUE | FALSE)
//
// An empty or white-space-only query returns a nil Expr and no error: it
// matches everything. Every error is an *apperr.Error of code Invalid whose
// Position is the 0-based byte offset of the problem and whose message names
// it, e.g. "unexpected ')' at position 12". Queries longer than
// MaxQueryLength bytes or nesting deeper than MaxDepth are rejected.
func Parse(q string) (Expr, error) {
	if len(q) > MaxQueryLength {
		return nil, apperr.InvalidAt(MaxQueryLength, "query is longer than %d bytes", MaxQueryLength)
	}
	return parse(q)
}

// parse is Parse without the length limit (String of a long tree may be a
// little longer than the query it came from).
func parse(q string) (Expr, error) {
	toks, err := lex(q)
	if err != nil {
		return nil, err
	}
	p := parser{toks: toks}
	return p.query()
}

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) advance() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func isKeyword(t token, kw string) bool {
	return t.kind == tokWord && !t.hasRel && strings.EqualFold(t.val, kw)
}

func (p *parser) query() (Expr, error) {
	first := p.peek()
	switch first.kind {
	case tokEOF:
		return nil, nil
	case tokString:
		p.advance()
		if t := p.peek(); t.kind != tokEOF {
			return nil, apperr.InvalidAt(t.pos,
				"unexpected %s at position %d: a quoted string is a full-text search and must be the whole query",
				describe(t), t.pos)
		}
		return &FullText{Text: first.val}, nil
	}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, unexpected(t)
	}
	return e, nil
}

func (p *parser) or() (Expr, error) {
	left, err := p.and()
	for err == nil && isKeyword(p.peek(), "OR") {
		p.advance()
		var right Expr
		if right, err = p.and(); err == nil {
			left = &Or{Left: left, Right: right}
		}
	}
	return left, err
}

func (p *parser) and() (Expr, error) {
	left, err := p.factor()
	for err == nil && isKeyword(p.peek(), "AND") {
		p.advance()
		var right Expr
		if right, err = p.factor(); err == nil {
			left = &And{Left: left, Right: right}
		}
	}
	return left, err
}

func (p *parser) factor() (Expr, error) {
	t := p.peek()
	switch {
	case isKeyword(t, "NOT"):
		return p.not(t)
	case t.kind == tokLParen:
		return p.group(t)
	case t.kind == tokProp || (t.kind == tokWord && !isReserved(t)):
		return p.predicate()
	case t.kind == tokWord:
		return nil, unexpected(t)
	}
	return nil, apperr.InvalidAt(t.pos, "expected a field, NOT or '(' at position %d, found %s", t.pos, describe(t))
}

func isReserved(t token) bool {
	for _, kw := range []string{"AND", "OR", "NOT", "IN", "IS", "NULL"} {
		if isKeyword(t, kw) {
			return true
		}
	}
	return false
}

// enter counts one level of nesting at t and refuses to go past MaxDepth.
func (p *parser) enter(t token) error {
	if p.depth++; p.depth > MaxDepth {
		return apperr.InvalidAt(t.pos, "query nests deeper than %d levels at position %d", MaxDepth, t.pos)
	}
	return nil
}

func (p *parser) not(t token) (Expr, error) {
	p.advance()
	if err := p.enter(t); err != nil {
		return nil, err
	}
	x, err := p.factor()
	p.depth--
	if err != nil {
		return nil, err
	}
	return &Not{X: x}, nil
}

func (p *parser) group(open token) (Expr, error) {
	p.advance()
	if err := p.enter(open); err != nil {
		return nil, err
	}
	e, err := p.or()
	p.depth--
	if err != nil {
		return nil, err
	}
	if t := p.advance(); t.kind != tokRParen {
		return nil, apperr.InvalidAt(t.pos, "expected ')' to close the '(' at position %d, found %s at position %d",
			open.pos, describe(t), t.pos)
	}
	return e, nil
}

func (p *parser) predicate() (Expr, error) {
	if t := p.peek(); isKeyword(t, "suspect") {
		return p.isSuspect()
	}
	f, err := p.field()
	if err != nil {
		return nil, err
	}
	t := p.advance()
	switch {
	case t.kind == tokOp:
		return p.compare(f, t)
	case isKeyword(t, "IN"):
		return p.in(f, false)
	case isKeyword(t, "NOT"):
		if in := p.advance(); !isKeyword(in, "IN") {
			return nil, apperr.InvalidAt(in.pos, "expected IN after NOT at position %d, found %s", in.pos, describe(in))
		}
		return p.in(f, true)
	case isKeyword(t, "IS"):
		return p.isNull(f)
	}
	return nil, apperr.InvalidAt(t.pos, "expected an operator, IN or IS after %s at position %d, found %s",
		show(f.String()), t.pos, describe(t))
}

func (p *parser) field() (Field, error) {
	t := p.advance()
	if t.kind == tokProp {
		return Field{Kind: FieldProperty, Name: t.val}, nil
	}
	kind, ok := fieldKinds[strings.ToLower(t.val)]
	if !ok {
		return Field{}, apperr.InvalidAt(t.pos, "unknown field %s at position %d", show(t.val), t.pos)
	}
	if kind == FieldExternal {
		// ext@Name: the name of an external property, as a property's
		// after '@' (the lexer unescaped it; it is never empty).
		if !t.hasRel {
			return Field{}, apperr.InvalidAt(t.pos+len(t.text), "field 'ext' needs a property name: ext@Name (at position %d)",
				t.pos+len(t.text))
		}
		return Field{Kind: FieldExternal, Name: t.rel}, nil
	}
	if !t.hasRel {
		return Field{Kind: kind}, nil
	}
	if !kind.TakesRel() {
		return Field{}, apperr.InvalidAt(t.relPos, "field '%s' takes no relationship (at position %d)", kind, t.relPos)
	}
	rel := requirement.NormalizeRelationship(t.rel)
	if rel == "" {
		return Field{}, apperr.InvalidAt(t.relPos+1, "empty relationship after '%s@' at position %d", kind, t.relPos+1)
	}
	return Field{Kind: kind, Name: rel}, nil
}

func (p *parser) compare(f Field, opTok token) (Expr, error) {
	op := opsByText[opTok.val]
	if !f.Kind.Allows(op) {
		return nil, apperr.InvalidAt(opTok.pos, "operator '%s' cannot be used with field '%s' (at position %d)",
			opTok.val, f.Kind, opTok.pos)
	}
	vt := p.peek()
	v, err := p.value(opTok)
	if err != nil {
		return nil, err
	}
	if _, literal := likeLiteral(v.Text); f.Kind == FieldPage && op == OpLike && !literal {
		// `page ~` names one page (the original's "defined on or
		// referenced by"): a wildcard would ask for every page whose id
		// matches, which no index serves and nobody means.
		return nil, apperr.InvalidAt(vt.pos, "'page ~' finds the requirements defined on or referenced by one page and takes its id or title, "+
			"not a pattern: the value at position %d holds the wildcard '%%' (write \\\\%% for a literal %%; page IS NOT NULL finds requirements on any page)", vt.pos)
	}
	return &Compare{Field: f, Op: op, Value: v}, nil
}

func (p *parser) in(f Field, not bool) (Expr, error) {
	open := p.advance()
	if open.kind != tokLParen {
		return nil, apperr.InvalidAt(open.pos, "expected '(' after IN at position %d, found %s", open.pos, describe(open))
	}
	n := &In{Field: f, Not: not}
	for after := open; ; {
		v, err := p.value(after)
		if err != nil {
			return nil, err
		}
		n.Values = append(n.Values, v)
		after = p.advance()
		if after.kind == tokRParen {
			return n, nil
		}
		if after.kind != tokComma {
			return nil, apperr.InvalidAt(after.pos, "expected ',' or ')' in the IN list at position %d, found %s",
				after.pos, describe(after))
		}
	}
}

func (p *parser) isNull(f Field) (Expr, error) {
	t := p.advance()
	n := &IsNull{Field: f}
	if isKeyword(t, "NOT") {
		n.Not = true
		t = p.advance()
	}
	if !isKeyword(t, "NULL") {
		return nil, apperr.InvalidAt(t.pos, "expected NULL at position %d, found %s", t.pos, describe(t))
	}
	return n, nil
}

// isSuspect reads `suspect IS [NOT] TRUE|FALSE`.
func (p *parser) isSuspect() (Expr, error) {
	p.advance()
	if t := p.advance(); !isKeyword(t, "IS") {
		return nil, apperr.InvalidAt(t.pos, "expected IS after suspect at position %d, found %s", t.pos, describe(t))
	}
	t := p.advance()
	n := &IsSuspect{}
	if isKeyword(t, "NOT") {
		n.Not = true
		t = p.advance()
	}
	switch {
	case isKeyword(t, "TRUE"):
		n.Value = true
	case isKeyword(t, "FALSE"):
	default:
		return nil, apperr.InvalidAt(t.pos, "expected TRUE or FALSE at position %d, found %s", t.pos, describe(t))
	}
	return n, nil
}

// value reads a STRING or NUMBER after the token after.
func (p *parser) value(after token) (Value, error) {
	t := p.advance()
	switch t.kind {
	case tokString:
		return Value{Text: t.val}, nil
	case tokNumber:
		return Value{Text: t.val, Number: true}, nil
	}
	hint := ""
	if t.kind == tokWord {
		// @Priority = High: a word where a value goes is almost always a
		// string without its quotes.
		hint = ": values are quoted strings, such as 'High', or numbers"
	}
	return Value{}, apperr.InvalidAt(t.pos, "expected a value after %s at position %d, found %s%s",
		show(after.text), t.pos, describe(t), hint)
}

func unexpected(t token) error {
	return apperr.InvalidAt(t.pos, "unexpected %s at position %d", describe(t), t.pos)
}

// describe names a token for an error message.
func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of query"
	case tokString:
		if len(t.text) <= 32 && utf8.ValidString(t.text) && printable(t.text) {
			return "string " + t.text
		}
		return "string " + show(t.val)
	case tokNumber:
		return "number " + t.text
	}
	return show(t.text)
}

func printable(s string) bool {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}
