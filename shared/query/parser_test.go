package query

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// Helpers that build trees tersely.

func str(s string) Value { return Value{Text: s} }
func num(s string) Value { return Value{Text: s, Number: true} }

func fld(k FieldKind) Field { return Field{Kind: k} }

func cmpx(f Field, op Op, v Value) Expr { return &Compare{Field: f, Op: op, Value: v} }

func keyEq(s string) Expr { return cmpx(fld(FieldKey), OpEq, str(s)) }

func TestParse(t *testing.T) {
	t.Parallel()
	prop := func(name string) Field { return Field{Kind: FieldProperty, Name: name} }
	rel := func(k FieldKind, r string) Field { return Field{Kind: k, Name: r} }
	ext := func(name string) Field { return Field{Kind: FieldExternal, Name: name} }
	tests := []struct {
		q    string
		want Expr
	}{
		// The search examples of reference/requirement-yogi.md.
		{`key = 'IG-1'`, keyEq("IG-1")},
		{`key ~ 'IG-%'`, cmpx(fld(FieldKey), OpLike, str("IG-%"))},
		{`text ~ '%login%'`, cmpx(fld(FieldText), OpLike, str("%login%"))},
		{`page = 467382`, cmpx(fld(FieldPage), OpEq, num("467382"))},
		{`jira = 'JRA-21'`, cmpx(fld(FieldJira), OpEq, str("JRA-21"))},
		{`jira@implements = 'JRA-21'`, cmpx(rel(FieldJira, "implements"), OpEq, str("JRA-21"))},
		{`NOT (jira ~ '%')`, &Not{X: cmpx(fld(FieldJira), OpLike, str("%"))}},
		{`@Category = 'Functional'`, cmpx(prop("Category"), OpEq, str("Functional"))},
		{`@Main\ Category = 'Functional'`, cmpx(prop("Main Category"), OpEq, str("Functional"))},
		{`TO = 'REQ-001'`, cmpx(fld(FieldTo), OpEq, str("REQ-001"))},
		{`FROM = 'REQ-001'`, cmpx(fld(FieldFrom), OpEq, str("REQ-001"))},
		{`FROM@refines = 'REQ-001'`, cmpx(rel(FieldFrom, "refines"), OpEq, str("REQ-001"))},
		{`baseline = 3`, cmpx(fld(FieldBaseline), OpEq, num("3"))},
		{`baseline IS NOT NULL`, &IsNull{Field: fld(FieldBaseline), Not: true}},
		{`status = 'DELETED'`, cmpx(fld(FieldStatus), OpEq, str("DELETED"))},
		{`key IN ('A', 'B')`, &In{Field: fld(FieldKey), Values: []Value{str("A"), str("B")}}},
		{`@Cat IS NULL`, &IsNull{Field: prop("Cat")}},
		{`@Date < '2024-01-01'`, cmpx(prop("Date"), OpLt, str("2024-01-01"))},
		{`@Date <= '2024-01-01'`, cmpx(prop("Date"), OpLe, str("2024-01-01"))},
		{`@Date > '2024-01-01'`, cmpx(prop("Date"), OpGt, str("2024-01-01"))},
		{`@Date >= '2024-01-01'`, cmpx(prop("Date"), OpGe, str("2024-01-01"))},
		// External properties (the original's Data Center form).
		{`ext@Cost = '12'`, cmpx(ext("Cost"), OpEq, str("12"))},
		{`EXT@Cost == 12`, cmpx(ext("Cost"), OpEq, num("12"))},
		{`ext@Main\ Owner ~ 'b%'`, cmpx(ext("Main Owner"), OpLike, str("b%"))},
		{`ext@Cost != 'x'`, cmpx(ext("Cost"), OpNe, str("x"))},
		{`ext@Cost <> 'x'`, cmpx(ext("Cost"), OpNe, str("x"))},
		{`ext@Cost < 3`, cmpx(ext("Cost"), OpLt, num("3"))},
		{`ext@Cost <= 3`, cmpx(ext("Cost"), OpLe, num("3"))},
		{`ext@Cost > 3`, cmpx(ext("Cost"), OpGt, num("3"))},
		{`ext@Cost >= 3`, cmpx(ext("Cost"), OpGe, num("3"))},
		{`ext@Cost IN ('1', '2')`, &In{Field: ext("Cost"), Values: []Value{str("1"), str("2")}}},
		{`ext@Cost NOT IN ('1')`, &In{Field: ext("Cost"), Not: true, Values: []Value{str("1")}}},
		{`ext@Cost IS NULL`, &IsNull{Field: ext("Cost")}},
		{`ext@Cost IS NOT NULL`, &IsNull{Field: ext("Cost"), Not: true}},
		{`ext@a\(b\)\,c\=\\ = 1`, cmpx(ext(`a(b),c=\`), OpEq, num("1"))},
		{`ext@Größe = 'x' AND @Größe = 'y'`, &And{Left: cmpx(ext("Größe"), OpEq, str("x")), Right: cmpx(prop("Größe"), OpEq, str("y"))}},
		{`ext@@at = 'x'`, cmpx(ext("@at"), OpEq, str("x"))},
		{`key == 'A'`, keyEq("A")},
		{`key != 'A'`, cmpx(fld(FieldKey), OpNe, str("A"))},
		{`key <> 'A'`, cmpx(fld(FieldKey), OpNe, str("A"))},
		{`'login'`, &FullText{Text: "login"}},
		{`  'it\'s'  `, &FullText{Text: "it's"}},
		{``, nil},
		{" \t\n ", nil},
		// Case, spacing and escapes.
		{`KEY='a'`, keyEq("a")},
		{`key not in ('a')`, &In{Field: fld(FieldKey), Not: true, Values: []Value{str("a")}}},
		{`key is null`, &IsNull{Field: fld(FieldKey)}},
		{`text = 'a\\b\'c'`, cmpx(fld(FieldText), OpEq, str(`a\b'c`))},
		{`@a\(b\)\,c\=\\ = 1`, cmpx(prop(`a(b),c=\`), OpEq, num("1"))},
		{`@Cost\ \(k\,EUR\) > 3`, cmpx(prop("Cost (k,EUR)"), OpGt, num("3"))},
		{`@Größe = 'x'`, cmpx(prop("Größe"), OpEq, str("x"))},
		{`to@Business\ Rule = 'X'`, cmpx(rel(FieldTo, "business_rule"), OpEq, str("X"))},
		{`parent@refines IN ('A', 'DEMO/B')`, &In{Field: rel(FieldParent, "refines"), Values: []Value{str("A"), str("DEMO/B")}}},
		{`child != 'A'`, cmpx(fld(FieldChild), OpNe, str("A"))},
		{`baseline >= -1.5`, cmpx(fld(FieldBaseline), OpGe, num("-1.5"))},
		{`space='S'and status='ACTIVE'`, &And{Left: cmpx(fld(FieldSpace), OpEq, str("S")), Right: cmpx(fld(FieldStatus), OpEq, str("ACTIVE"))}},
		// Precedence: NOT > AND > OR, left-associative.
		{`key = 'a' OR key = 'b' AND key = 'c'`, &Or{Left: keyEq("a"), Right: &And{Left: keyEq("b"), Right: keyEq("c")}}},
		{`key = 'a' AND key = 'b' OR key = 'c'`, &Or{Left: &And{Left: keyEq("a"), Right: keyEq("b")}, Right: keyEq("c")}},
		{`NOT key = 'a' AND key = 'b'`, &And{Left: &Not{X: keyEq("a")}, Right: keyEq("b")}},
		{`NOT (key = 'a' AND key = 'b')`, &Not{X: &And{Left: keyEq("a"), Right: keyEq("b")}}},
		{`NOT NOT key = 'a'`, &Not{X: &Not{X: keyEq("a")}}},
		{`(key = 'a' OR key = 'b') AND key = 'c'`, &And{Left: &Or{Left: keyEq("a"), Right: keyEq("b")}, Right: keyEq("c")}},
		{`key = 'a' OR key = 'b' OR key = 'c'`, &Or{Left: &Or{Left: keyEq("a"), Right: keyEq("b")}, Right: keyEq("c")}},
		{`key = 'a' OR (key = 'b' OR key = 'c')`, &Or{Left: keyEq("a"), Right: &Or{Left: keyEq("b"), Right: keyEq("c")}}},
		{`((key = 'a'))`, keyEq("a")},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.q, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q) = %s, want %s", tt.q, render(got), render(tt.want))
			}
			assertRoundTrip(t, got)
		})
	}
}

func render(e Expr) string {
	if e == nil {
		return "<nil>"
	}
	return e.String()
}

// assertRoundTrip checks that String renders text that parses back to e.
func assertRoundTrip(t *testing.T, e Expr) {
	t.Helper()
	if e == nil {
		return
	}
	s := e.String()
	back, err := parse(s)
	if err != nil {
		t.Fatalf("String() = %q does not parse: %v", s, err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Fatalf("String() = %q parses to %s, want the same tree", s, render(back))
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct{ q, want string }{
		{`key=='a' and not (text~'%x%' or page<>1)`, `key = 'a' AND NOT (text ~ '%x%' OR page != 1)`},
		{`@Main\ Category is not null`, `@Main\ Category IS NOT NULL`},
		{`Ext@Main\ Owner in ('a')`, `ext@Main\ Owner IN ('a')`},
		{`jira@Implements not in ('A','B')`, `jira@implements NOT IN ('A', 'B')`},
		{`key = 'a' and (key = 'b' and key = 'c')`, `key = 'a' AND (key = 'b' AND key = 'c')`},
		{`'it\'s \\'`, `'it\'s \\'`},
	}
	for _, tt := range tests {
		e, err := Parse(tt.q)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.q, err)
		}
		if got := e.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.q, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "key = 'a'" + strings.Repeat(close, n)
	}
	tests := []struct {
		q    string
		pos  int
		want string // a part of the message
	}{
		{`key = 'a')`, 9, "unexpected ')' at position 9"},
		{`key = 'abc`, 6, "unterminated string starting at position 6"},
		{`key = 'abc\'`, 6, "unterminated string starting at position 6"},
		{`key = 'abc\`, 6, "unterminated string starting at position 6"},
		{`foo = 'x'`, 0, "unknown field 'foo' at position 0"},
		{`key = 'a' AND foo = 'x'`, 14, "unknown field 'foo' at position 14"},
		{`key =`, 5, "expected a value after '=' at position 5, found end of query"},
		{`key = )`, 6, "expected a value after '=' at position 6, found ')'"},
		{`key = key`, 6, "expected a value after '=' at position 6, found 'key'"},
		{`@Priority = High`, 12, "found 'High': values are quoted strings, such as 'High', or numbers"},
		{`@Priority = "High"`, 12, `unexpected character '"' at position 12: strings take single quotes, such as 'High'`},
		{`(key = 'a'`, 10, "expected ')' to close the '(' at position 0, found end of query at position 10"},
		{`key 'a'`, 4, "expected an operator, IN or IS after 'key' at position 4, found string 'a'"},
		{`key = 'a' AND`, 13, "expected a field, NOT or '(' at position 13, found end of query"},
		{`key = 'a' 'b'`, 10, "unexpected string 'b' at position 10"},
		{`'a' AND key = 'b'`, 4, "full-text search and must be the whole query"},
		{`key = 'a\x'`, 8, `invalid escape '\x' at position 8`},
		{`@ = 'x'`, 1, "expected a property name after '@' at position 0"},
		{`jira@ = 'x'`, 5, "expected a relationship after 'jira@' at position 4"},
		{`ext@ = 'x'`, 4, "expected a property name after 'ext@' at position 3"},
		{`ext = 'x'`, 3, "field 'ext' needs a property name: ext@Name (at position 3)"},
		{`ext IS NULL`, 3, "field 'ext' needs a property name"},
		{`ext@Cost\`, 8, "unfinished escape '\\' at position 8"},
		{`jira@\  = 'x'`, 5, "empty relationship"},
		{`key@rel = 'x'`, 3, "field 'key' takes no relationship"},
		{`to < 'x'`, 3, "operator '<' cannot be used with field 'to'"},
		{`parent ~ 'x'`, 7, "operator '~' cannot be used with field 'parent'"},
		{`page ~ '12%'`, 7, "'page ~' finds the requirements defined on or referenced by one page and takes its id or title, not a pattern: the value at position 7 holds the wildcard '%'"},
		{`key = 'a' OR page ~ '%'`, 20, `(write \\% for a literal %; page IS NOT NULL finds requirements on any page)`},
		{`page ~ 'Specs\\\\%'`, 7, "holds the wildcard"},
		{`key IN 'a'`, 7, "expected '(' after IN at position 7"},
		{`key IN ()`, 8, "expected a value after '(' at position 8, found ')'"},
		{`key IN ('a' 'b')`, 12, "expected ',' or ')' in the IN list at position 12"},
		{`key IN ('a',)`, 12, "expected a value after ',' at position 12"},
		{`key NOT = 'a'`, 8, "expected IN after NOT at position 8"},
		{`key IS 'a'`, 7, "expected NULL at position 7"},
		{`key IS NOT 'a'`, 11, "expected NULL at position 11"},
		{`key ! 'a'`, 4, "unexpected character '!' at position 4"},
		{`key = 'a' # x`, 10, "unexpected character '#' at position 10"},
		{`key = 'a'; DROP`, 9, "unexpected character ';' at position 9"},
		{"key = 'a' \xff", 10, `unexpected character "\xff" at position 10`},
		{`AND key = 'a'`, 0, "unexpected 'AND' at position 0"},
		{`key = 'a' AND OR`, 14, "unexpected 'OR' at position 14"},
		{`@Cat\`, 4, "unfinished escape '\\' at position 4"},
		{`()`, 1, "expected a field, NOT or '(' at position 1, found ')'"},
		{`-key = 1`, 0, "unexpected character '-' at position 0"},
		{deep("(", ")", MaxDepth+1), MaxDepth, "query nests deeper than 100 levels"},
		{strings.Repeat("NOT ", MaxDepth+1) + "key = 'a'", 4 * MaxDepth, "query nests deeper than 100 levels"},
		{strings.Repeat("(", 5000), MaxQueryLength, "query is longer than 4096 bytes"},
	}
	for _, tt := range tests {
		name := tt.q
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.q)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want an error", tt.q, render(e))
			}
			assertInvalidAt(t, err, tt.pos, tt.want)
		})
	}
}

func assertInvalidAt(t *testing.T, err error, pos int, want string) {
	t.Helper()
	if !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("error %v is not invalid", err)
	}
	ae := apperr.As(err)
	if ae.Position != pos {
		t.Errorf("error %q at position %d, want %d", ae.Message, ae.Position, pos)
	}
	if !strings.Contains(ae.Message, want) {
		t.Errorf("error %q does not contain %q", ae.Message, want)
	}
}

func TestParseDepthLimitIsInclusive(t *testing.T) {
	t.Parallel()
	q := strings.Repeat("(", MaxDepth) + "key = 'a'" + strings.Repeat(")", MaxDepth)
	if _, err := Parse(q); err != nil {
		t.Fatalf("Parse at depth %d: %v", MaxDepth, err)
	}
	q = strings.Repeat("NOT ", MaxDepth/2) + strings.Repeat("(", MaxDepth/2) + "key = 'a'" + strings.Repeat(")", MaxDepth/2)
	if _, err := Parse(q); err != nil {
		t.Fatalf("Parse of NOTs and parentheses at depth %d: %v", MaxDepth, err)
	}
	long := "key = 'a'" + strings.Repeat(" ", MaxQueryLength-len("key = 'a'"))
	if _, err := Parse(long); err != nil {
		t.Fatalf("Parse of %d bytes: %v", len(long), err)
	}
}
