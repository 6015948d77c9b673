package query

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// gen builds random well-formed trees from a vocabulary close to the
// fixture's, so that random queries match some rows.
type gen struct{ rng *rand.Rand }

func (g gen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

func (g gen) query() Expr {
	if g.rng.IntN(20) == 0 {
		return &FullText{Text: g.text()}
	}
	return g.expr(4)
}

func (g gen) expr(depth int) Expr {
	if depth == 0 || g.rng.IntN(3) == 0 {
		return g.predicate()
	}
	switch g.rng.IntN(3) {
	case 0:
		return &Or{Left: g.expr(depth - 1), Right: g.expr(depth - 1)}
	case 1:
		return &And{Left: g.expr(depth - 1), Right: g.expr(depth - 1)}
	}
	return &Not{X: g.expr(depth - 1)}
}

// plannable builds the shapes Drivers looks into: AND chains and ORs of
// mostly positive predicates.
func (g gen) plannable(depth int) Expr {
	if depth == 0 || g.rng.IntN(4) == 0 {
		if g.rng.IntN(4) == 0 {
			return g.expr(1)
		}
		f := g.field()
		if g.rng.IntN(3) == 0 {
			return &In{Field: f, Values: []Value{g.likely(f), g.likely(f)}}
		}
		op, v := OpEq, g.likely(f)
		if _, literal := likeLiteral(v.Text); (f.Kind == FieldKey || f.Kind == FieldPage && literal) && g.rng.IntN(2) == 0 {
			op = OpLike
		} else if f.Kind == FieldKey && g.rng.IntN(2) == 0 {
			op = Op(int(OpLt) + g.rng.IntN(4)) // key ranges, merged along AND chains
		}
		return &Compare{Field: f, Op: op, Value: v}
	}
	if g.rng.IntN(3) == 0 {
		return &Or{Left: g.plannable(depth - 1), Right: g.plannable(depth - 1)}
	}
	return &And{Left: g.plannable(depth - 1), Right: g.plannable(depth - 1)}
}

func (g gen) predicate() Expr {
	f := g.field()
	switch g.rng.IntN(4) {
	case 0:
		vals := []Value{g.value()}
		for g.rng.IntN(2) == 0 {
			vals = append(vals, g.value())
		}
		return &In{Field: f, Not: g.rng.IntN(3) == 0, Values: vals}
	case 1:
		return &IsNull{Field: f, Not: g.rng.IntN(2) == 0}
	}
	for {
		op, v := Op(1+g.rng.IntN(int(OpGe))), g.value()
		if f.Kind == FieldPage && g.rng.IntN(2) == 0 {
			v = g.likely(f)
		}
		// Parse refuses a wildcard after `page ~`.
		if _, literal := likeLiteral(v.Text); f.Kind.Allows(op) && (literal || f.Kind != FieldPage || op != OpLike) {
			return &Compare{Field: f, Op: op, Value: v}
		}
	}
}

func (g gen) field() Field {
	f := Field{Kind: FieldKind(1 + g.rng.IntN(int(FieldExternal)))}
	switch {
	case f.Kind == FieldProperty || f.Kind == FieldExternal:
		f.Name = g.pick("Category", "category", "Main Category", "Date", "a(b)", "x'y", `back\slash`, "Größe", "@at", "=")
	case f.Kind.TakesRel() && g.rng.IntN(2) == 0:
		f.Name = requirement.NormalizeRelationship(g.pick("refines", "dependency", "Business Rule", "Implements", "tests", "x(y)", "a\\b"))
	}
	return f
}

func (g gen) value() Value {
	if g.rng.IntN(4) == 0 {
		return Value{Text: g.pick("3", "0", "-1.5", "007", "123", "124", "2", "99999999999999999999"), Number: true}
	}
	return Value{Text: g.text()}
}

// likely returns, more often than not, a value that some fixture row has.
func (g gen) likely(f Field) Value {
	if g.rng.IntN(3) == 0 {
		return g.value()
	}
	var v string
	switch f.Kind {
	case FieldKey, FieldTo, FieldFrom, FieldParent, FieldChild:
		v = g.pick("REQ-000", "req-001", "REQ-0%", "DEMO/REQ-001", "REQ-002", "OTHER/X-1", "x-1")
	case FieldText:
		v = g.pick("Root requirement", "Other space")
	case FieldSpace:
		v = g.pick("DEMO", "OTHER")
	case FieldStatus:
		v = g.pick("active", "DELETED", "ARCHIVED")
	case FieldPage:
		// Ids, current titles in any case, and the title page 123's
		// rows stored before it was renamed (fixturePages).
		v = g.pick("123", "124", "200", "Specs v2", "LOGIN", "login", "Specs", "Other space")
	case FieldBaseline:
		v = g.pick("3", "3.0", "03")
	case FieldJira:
		v = g.pick("PROJ-1", "PROJ-2", "PROJ-3")
	default:
		v = g.pick("Functional", "Performance", "Security", "Non-Functional", "2024-03-01")
	}
	return Value{Text: v}
}

func (g gen) text() string {
	return g.pick("REQ-001", "req-00%", "REQ-000", "DEMO/REQ-000", "X-1", "OTHER/X-1", "a/b/c", "Functional",
		"Performance", "123", "PROJ-2", "%", "%LOG%", "%100\\%%", "2024-01-01", "it's", `a\b`, "", "ACTIVE",
		"deleted", "3", "DEMO", "OTHER", "login", "Größe")
}

// TestRandomRoundTrip: random tree → String → Parse gives the same tree.
func TestRandomRoundTrip(t *testing.T) {
	t.Parallel()
	g := gen{rand.New(rand.NewPCG(7, 11))}
	for range 3000 {
		e := g.query()
		assertRoundTrip(t, e)
		if s := e.String(); len(s) <= MaxQueryLength {
			if _, err := Parse(s); err != nil {
				t.Fatalf("Parse(%q): %v", s, err)
			}
		}
	}
}

// TestRandomSemantics checks, on random trees and the fixture, that every
// driver is a necessary condition, and the documented equivalences of
// !=, IN and NOT IN.
func TestRandomSemantics(t *testing.T) {
	t.Parallel()
	g := gen{rand.New(rand.NewPCG(3, 5))}
	reqs := fixture()
	for i := range 6000 {
		e := g.query()
		if i%2 == 0 {
			e = g.plannable(3)
		}
		env := graphEnv(t, reqs, e)
		drivers := Drivers(e)
		for _, r := range reqs {
			if !Match(e, r, env) {
				continue
			}
			for _, d := range drivers {
				if !d.Holds(r, env) {
					t.Fatalf("%s matches %s but its driver %v does not hold", e, id(r), d)
				}
			}
		}
		if p, ok := g.predicate().(*In); ok {
			checkEquivalences(t, p, reqs)
		}
	}
}

// TestKeyRangeExact: a key range (key comparisons and prefixes of one AND
// chain) holds exactly for the keys the query matches, whatever bytes the
// values hold, so reading the range is reading the matches.
func TestKeyRangeExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 19))
	alphabet := "-._09AZaz"
	word := func(chars string, n int) string {
		b := make([]byte, 1+rng.IntN(n))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	values := func() string {
		switch rng.IntN(4) {
		case 0:
			return word(alphabet+"#,!/:[`~", 4)
		case 1:
			return word(alphabet, 3) + string([]rune{'é', 'ÿ', '\U0010FFFF'}[rng.IntN(3)])
		case 2:
			return ""
		}
		return word(alphabet, 4)
	}
	ops := []string{"<", "<=", ">", ">=", "~"}
	ran := 0
	for range 3000 {
		n := 1 + rng.IntN(3)
		var parts []string
		for len(parts) < n {
			op, v := ops[rng.IntN(len(ops))], values()
			if isNumber(v) {
				continue // numbers compare numerically: they drive nothing
			}
			if op == "~" {
				v = word(alphabet, 3) + v + "%"
			}
			parts = append(parts, "key "+op+" "+quote(v))
		}
		q := strings.Join(parts, " AND ")
		e, err := Parse(q)
		if err != nil {
			t.Fatalf("Parse(%q): %v", q, err)
		}
		var ranges []Access
		for _, d := range Drivers(e) {
			if _, _, ok := d.KeyRange(); ok {
				ranges = append(ranges, d)
			}
		}
		if len(ranges) != 1 {
			t.Fatalf("%s: key ranges %v, want one", q, ranges)
		}
		ran++
		for range 40 {
			r := &requirement.Requirement{Key: word(alphabet, 5)}
			if got, want := ranges[0].Holds(r, nil), Match(e, r, nil); got != want {
				t.Fatalf("%s on key %q: range %v holds %v, Match %v", q, r.Key, ranges[0], got, want)
			}
		}
	}
	t.Logf("%d of 3000 random AND chains of key comparisons drove one key range", ran)
	if ran < 1000 {
		t.Fatalf("only %d chains drove a key range", ran)
	}
}

// TestWordDriversNecessary: on random texts and patterns cut from them (with
// '%' inside words, at word edges, anywhere), a word that drives a `text ~`
// pattern or a bare string is a word of every requirement they match.
func TestWordDriversNecessary(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 29))
	words := []string{"login", "Log", "in", "user", "users", "12", "123", "Größe", "GRÖSSE", "ß", "é", "x", "ı", "İ", "ſ"}
	seps := []string{" ", ", ", "-", "_", "%", ".", "  "}
	text := func() string {
		var b strings.Builder
		for i := range 1 + rng.IntN(6) {
			if i > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	driven, matched := 0, 0
	for range 20000 {
		r := &requirement.Requirement{Key: "REQ-" + words[rng.IntN(len(words))], Text: text()}
		// A pattern from the text or another one: a substring with '%'
		// put in at random places (literal '%' escaped).
		src := r.Text
		if rng.IntN(3) == 0 {
			src = text()
		}
		runes := []rune(src)
		i := rng.IntN(len(runes) + 1)
		j := i + rng.IntN(len(runes)-i+1)
		var p strings.Builder
		if rng.IntN(2) == 0 {
			p.WriteString("%")
		}
		for _, c := range runes[i:j] {
			if c == '%' || c == '\\' {
				p.WriteRune('\\')
			}
			p.WriteRune(c)
			if rng.IntN(8) == 0 {
				p.WriteString("%")
			}
		}
		if rng.IntN(2) == 0 {
			p.WriteString("%")
		}
		var e Expr = &Compare{Field: Field{Kind: FieldText}, Op: OpLike, Value: Value{Text: p.String()}}
		if rng.IntN(3) == 0 {
			e = &FullText{Text: string(runes[i:j])}
		}
		ds := Drivers(e)
		if len(ds) > 0 {
			driven++
		}
		if !Match(e, r, nil) {
			continue
		}
		matched++
		for _, d := range ds {
			if !d.Holds(r, nil) {
				t.Fatalf("%s matches %q (key %s) but its driver %v does not hold", e, r.Text, r.Key, d)
			}
		}
	}
	t.Logf("20000 random text patterns: %d driven by a word, %d matched their requirement", driven, matched)
	if driven < 2000 || matched < 2000 {
		t.Fatalf("too few cases: %d driven, %d matched", driven, matched)
	}
}

// checkEquivalences: `f IN (a, b)` = `f = a OR f = b`; `f NOT IN (a, b)` =
// `f IS NOT NULL AND NOT f IN (a, b)`; `f != a` = `f IS NOT NULL AND NOT f = a`.
func checkEquivalences(t *testing.T, in *In, reqs []*requirement.Requirement) {
	t.Helper()
	if !in.Field.Kind.Allows(OpNe) {
		return
	}
	positive := &In{Field: in.Field, Values: in.Values}
	var ors Expr
	for _, v := range in.Values {
		var eq Expr = &Compare{Field: in.Field, Op: OpEq, Value: v}
		if ors != nil {
			eq = &Or{Left: ors, Right: eq}
		}
		ors = eq
	}
	present := &IsNull{Field: in.Field, Not: true}
	first := in.Values[0]
	pairs := [][2]Expr{
		{positive, ors},
		{&In{Field: in.Field, Not: true, Values: in.Values}, &And{Left: present, Right: &Not{X: positive}}},
		{&Compare{Field: in.Field, Op: OpNe, Value: first}, &And{Left: present, Right: &Not{X: &Compare{Field: in.Field, Op: OpEq, Value: first}}}},
	}
	for _, p := range pairs {
		env := graphEnv(t, reqs, &And{Left: p[0], Right: p[1]})
		for _, r := range reqs {
			if Match(p[0], r, env) != Match(p[1], r, env) {
				t.Fatalf("on %s, %s and %s differ", id(r), p[0], p[1])
			}
		}
	}
}
