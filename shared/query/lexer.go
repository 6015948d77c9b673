package query

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

type tokKind int

const (
	tokEOF    tokKind = iota
	tokWord           // keyword or field name, maybe with @rel
	tokProp           // @Name
	tokString         // 'text'
	tokNumber         // -12.5
	tokOp             // = == != <> ~ < <= > >=
	tokLParen
	tokRParen
	tokComma
)

// token is one lexeme. text is the source text; val is the word as written,
// the unescaped property name or string, the number or the operator.
type token struct {
	kind   tokKind
	pos    int
	text   string
	val    string
	rel    string // unescaped relationship of word@rel
	hasRel bool
	relPos int // position of the '@' of word@rel
}

type lexer struct {
	src string
	pos int
}

// lex splits src into tokens ending with a tokEOF.
func lex(src string) ([]token, error) {
	l := lexer{src: src}
	var toks []token
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		if t.kind == tokEOF {
			return toks, nil
		}
	}
}

func (l *lexer) next() (token, error) {
	for l.pos < len(l.src) && isSpace(l.src[l.pos]) {
		l.pos++
	}
	start := l.pos
	if start == len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	switch c := l.src[start]; {
	case c == '(':
		return l.single(tokLParen), nil
	case c == ')':
		return l.single(tokRParen), nil
	case c == ',':
		return l.single(tokComma), nil
	case c == '\'':
		return l.str()
	case c == '@':
		return l.prop()
	case isDigit(c) || (c == '-' && start+1 < len(l.src) && isDigit(l.src[start+1])):
		return l.number(), nil
	case isWordStart(c):
		return l.word()
	case strings.IndexByte("=!<>~", c) >= 0:
		return l.op()
	}
	return token{}, unexpectedChar(l.src, start)
}

func (l *lexer) single(k tokKind) token {
	t := token{kind: k, pos: l.pos, text: l.src[l.pos : l.pos+1]}
	l.pos++
	return t
}

func (l *lexer) make(k tokKind, start int, val string) token {
	return token{kind: k, pos: start, text: l.src[start:l.pos], val: val}
}

// str reads a single-quoted string; only \' and \\ are escapes.
func (l *lexer) str() (token, error) {
	start := l.pos
	var b strings.Builder
	for l.pos++; l.pos < len(l.src); l.pos++ {
		switch c := l.src[l.pos]; c {
		case '\'':
			l.pos++
			return l.make(tokString, start, b.String()), nil
		case '\\':
			if l.pos+1 == len(l.src) {
				continue // the loop ends: unterminated
			}
			l.pos++
			if e := l.src[l.pos]; e != '\'' && e != '\\' {
				return token{}, apperr.InvalidAt(l.pos-1,
					"invalid escape %s at position %d: a string may only escape \\' and \\\\",
					show(l.src[l.pos-1:l.pos+1]), l.pos-1)
			}
			b.WriteByte(l.src[l.pos])
		default:
			b.WriteByte(c)
		}
	}
	return token{}, apperr.InvalidAt(start, "unterminated string starting at position %d", start)
}

// prop reads @Name.
func (l *lexer) prop() (token, error) {
	start := l.pos
	l.pos++
	name, err := l.name()
	if err != nil {
		return token{}, err
	}
	if name == "" {
		return token{}, apperr.InvalidAt(l.pos, "expected a property name after '@' at position %d", start)
	}
	return l.make(tokProp, start, name), nil
}

// name reads a property or relationship name: bytes up to white space or a
// delimiter, with '\' making the next byte part of the name.
func (l *lexer) name() (string, error) {
	var b strings.Builder
	for ; l.pos < len(l.src); l.pos++ {
		c := l.src[l.pos]
		if c == '\\' {
			if l.pos+1 == len(l.src) {
				return "", apperr.InvalidAt(l.pos, "unfinished escape '\\' at position %d", l.pos)
			}
			l.pos++
			b.WriteByte(l.src[l.pos])
			continue
		}
		if !isNameByte(c) {
			break
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// number reads -?digits(.digits)?, the syntax isNumber accepts.
func (l *lexer) number() token {
	start := l.pos
	if l.src[l.pos] == '-' {
		l.pos++
	}
	l.digits()
	if l.pos+1 < len(l.src) && l.src[l.pos] == '.' && isDigit(l.src[l.pos+1]) {
		l.pos++
		l.digits()
	}
	return l.make(tokNumber, start, l.src[start:l.pos])
}

func (l *lexer) digits() {
	for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		l.pos++
	}
}

// word reads a keyword or field name, and a relationship glued to it with '@'.
func (l *lexer) word() (token, error) {
	start := l.pos
	for l.pos < len(l.src) && isWordByte(l.src[l.pos]) {
		l.pos++
	}
	val := l.src[start:l.pos]
	if l.pos == len(l.src) || l.src[l.pos] != '@' {
		return l.make(tokWord, start, val), nil
	}
	at := l.pos
	l.pos++
	rel, err := l.name()
	if err != nil {
		return token{}, err
	}
	if rel == "" && strings.EqualFold(val, "ext") {
		return token{}, apperr.InvalidAt(l.pos, "expected a property name after '%s@' at position %d", val, at)
	}
	if rel == "" {
		return token{}, apperr.InvalidAt(l.pos, "expected a relationship after '%s@' at position %d", val, at)
	}
	t := l.make(tokWord, start, val)
	t.rel, t.hasRel, t.relPos = rel, true, at
	return t, nil
}

func (l *lexer) op() (token, error) {
	start := l.pos
	if l.pos+1 < len(l.src) {
		if _, ok := opsByText[l.src[start:start+2]]; ok {
			l.pos += 2
			return l.make(tokOp, start, l.src[start:l.pos]), nil
		}
	}
	if _, ok := opsByText[l.src[start:start+1]]; !ok {
		return token{}, unexpectedChar(l.src, start) // a lone '!'
	}
	l.pos++
	return l.make(tokOp, start, l.src[start:l.pos]), nil
}

func unexpectedChar(src string, pos int) error {
	_, n := utf8.DecodeRuneInString(src[pos:])
	hint := ""
	if src[pos] == '"' {
		hint = ": strings take single quotes, such as 'High'"
	}
	return apperr.InvalidAt(pos, "unexpected character %s at position %d%s", show(src[pos:pos+n]), pos, hint)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordStart(c byte) bool { return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

func isWordByte(c byte) bool { return isWordStart(c) || isDigit(c) }

// isNameByte reports whether c may appear unescaped in a property or
// relationship name. Bytes of multi-byte characters always may.
func isNameByte(c byte) bool {
	return !isSpace(c) && strings.IndexByte("()=!<>~,'\\", c) < 0
}

// show quotes source text for an error message: 'text' when printable,
// Go-quoted otherwise, cut after 30 bytes.
func show(s string) string {
	if len(s) > 30 {
		s = s[:30] + "..."
	}
	if !utf8.ValidString(s) || !strconv.CanBackquote(s) || strings.Contains(s, "'") {
		return strconv.Quote(s)
	}
	return "'" + s + "'"
}
