package query

import (
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Env supplies what Match cannot read from the requirement itself: the
// transitive sets of the parent and child predicates, and what the value
// of a page predicate names besides the page of that id. A nil Env makes
// every `parent =`/`child =`/IN predicate false, and a page predicate's
// value name the page of that id only, citing nothing.
type Env interface {
	// Members returns the refs (built with NewRef) of the requirements in
	// closure c; nil when none or unknown.
	Members(c Closure) map[Ref]bool
	// Page returns what value v of a page predicate names (PageLookups
	// lists the values Match asks about); nil when unknown.
	Page(v string) *PageNames
}

// Closure names one transitive set:
//
//   - Field FieldParent: the requirements that reference Of directly or
//     transitively (walk ReverseDependencies from Of), so that `parent = 'X'`
//     matches them;
//   - Field FieldChild: the requirements that Of references directly or
//     transitively (walk Dependencies from Of), so that `child = 'X'`
//     matches them.
//
// Rel, when not "", keeps only links of that (normalised) relationship, at
// every step. Of.SpaceKey "" means: start from the requirements keyed Of.Key
// in every space. Of itself is a member only when it lies on a cycle. Which
// rows' links to follow (current versions, or a baseline's copies) is the
// Env's choice; membership ignores baselines.
type Closure struct {
	Field FieldKind
	Rel   string
	Of    Ref
}

// ClosureSet holds precomputed closures: compute Closures(e) before
// matching and fill it.
type ClosureSet map[Closure]map[Ref]bool

// PageNames is what the value v of a page predicate names beyond its id.
// A value names the page whose id is v (byte for byte) and the current
// pages whose title is v ignoring case (SameTitle): `page = v` matches the
// requirements whose origin is a named page; `page ~ v` also those that a
// named page cites (Cites).
type PageNames struct {
	// Titled holds the ids of the current pages whose title is v.
	Titled map[string]bool
	// Cited holds the requirements (NewRef) that the named pages cite;
	// filled only for the values of `page ~` (PageLookup.Cited).
	Cited map[Ref]bool
}

// Sets is an Env of precomputed sets: compute Closures(e) and
// PageLookups(e) before matching, fill them, and pass the Sets to Match.
type Sets struct {
	Closures ClosureSet
	Pages    map[string]*PageNames
}

// Members returns s.Closures[c].
func (s Sets) Members(c Closure) map[Ref]bool { return s.Closures[c] }

// Page returns s.Pages[v].
func (s Sets) Page(v string) *PageNames { return s.Pages[v] }

// PageLookup is one value of a page predicate whose PageNames Match will
// ask its Env for.
type PageLookup struct {
	// Value names pages: the page of that id, the current pages of that
	// title. For `page ~` it is the pattern's text, escapes resolved.
	Value string
	// Cited says that a `page ~` predicate needs the requirements the
	// named pages cite.
	Cited bool
}

// PageLookups lists, without duplicates and in query order, the values of
// the page predicates (=, !=, ~, IN, NOT IN) of e whose PageNames Match
// will ask its Env for; a value used with ~ anywhere has Cited set.
func PageLookups(e Expr) []PageLookup {
	var out []PageLookup
	at := map[string]int{}
	add := func(v string, cited bool) {
		if i, ok := at[v]; ok {
			out[i].Cited = out[i].Cited || cited
			return
		}
		at[v] = len(out)
		out = append(out, PageLookup{Value: v, Cited: cited})
	}
	var visit func(Expr)
	visit = func(e Expr) {
		switch n := e.(type) {
		case *Or:
			visit(n.Left)
			visit(n.Right)
		case *And:
			visit(n.Left)
			visit(n.Right)
		case *Not:
			visit(n.X)
		case *Compare:
			if n.Field.Kind != FieldPage {
				return
			}
			switch n.Op {
			case OpEq, OpNe:
				add(n.Value.Text, false)
			case OpLike:
				if name, ok := likeLiteral(n.Value.Text); ok {
					add(name, true)
				}
			}
		case *In:
			if n.Field.Kind == FieldPage {
				for _, v := range n.Values {
					add(v.Text, false)
				}
			}
		}
	}
	visit(e)
	return out
}

// SameTitle reports whether a page titled title is named by the value v of
// a page predicate: equal after Fold. A title index that serves the page
// predicates must hold Fold of the title (or a coarser folding, a superset
// that SameTitle then narrows).
func SameTitle(title, v string) bool { return Fold(title) == Fold(v) }

// Cites returns, without duplicates, the requirements that page pageID
// cites: the dependencies of its ACTIVE requirements (the current rows
// among rows that are ACTIVE with pageID as origin; other rows are
// ignored, so a caller may pass more than the page's), a link that names
// no space staying in its requirement's space. This is the notion behind
// a requirement's references (the pages citing it).
func Cites(pageID string, rows []*requirement.Requirement) []Ref {
	var out []Ref
	seen := map[Ref]bool{}
	for _, r := range rows {
		if r.Baseline != 0 || r.Status != requirement.Active || r.Origin.PageID != pageID {
			continue
		}
		for _, d := range r.Dependencies {
			ref := NewRef(linkSpace(d, r.SpaceKey), d.Key)
			if !seen[ref] {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	return out
}

// Closures lists, without duplicates and in query order, the closures that
// Match will ask its Env for while evaluating e.
func Closures(e Expr) []Closure {
	var out []Closure
	seen := map[Closure]bool{}
	walk(e, func(f Field, values []Value) {
		if f.Kind != FieldParent && f.Kind != FieldChild {
			return
		}
		for _, v := range values {
			ref, ok := ParseRef(v.Text)
			c := Closure{Field: f.Kind, Rel: f.Name, Of: ref}
			if ok && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	})
	return out
}

// walk calls visit for every Compare and In of e, with its values.
func walk(e Expr, visit func(Field, []Value)) {
	switch n := e.(type) {
	case *Or:
		walk(n.Left, visit)
		walk(n.Right, visit)
	case *And:
		walk(n.Left, visit)
		walk(n.Right, visit)
	case *Not:
		walk(n.X, visit)
	case *Compare:
		visit(n.Field, []Value{n.Value})
	case *In:
		visit(n.Field, n.Values)
	}
}

// Reach computes closure c by breadth-first search from c.Of. next returns
// the refs one step away in c's direction (for FieldParent, the requirements
// that reference the given ref with relationship c.Rel; for FieldChild, those
// it references), built with NewRef; for a ref with an empty SpaceKey it must
// answer for every space. Reach stops at the first error of next.
func Reach(c Closure, next func(Ref) ([]Ref, error)) (map[Ref]bool, error) {
	members := map[Ref]bool{}
	queue := []Ref{c.Of}
	for len(queue) > 0 {
		adjacent, err := next(queue[0])
		if err != nil {
			return nil, err
		}
		queue = queue[1:]
		for _, r := range adjacent {
			if !members[r] {
				members[r] = true
				queue = append(queue, r)
			}
		}
	}
	return members, nil
}

// Match reports whether requirement r satisfies e, with two-valued logic:
//
//   - a nil e matches everything;
//   - a field yields zero or more values (zero = NULL); `=`, `~`, `<`, `<=`,
//     `>`, `>=` and IN are true when ANY value satisfies them, so they are
//     false on NULL;
//   - `!=` and NOT IN are true when the field has a value and NO value is
//     equal, so they are false on NULL too;
//   - IS NULL is true when the field has no value; NOT inverts its operand,
//     so `NOT @Cat = 'X'` (absent or no value X) differs from `@Cat != 'X'`
//     (present and no value X).
//
// env answers the parent and child predicates; it may be nil.
func Match(e Expr, r *requirement.Requirement, env Env) bool {
	switch n := e.(type) {
	case nil:
		return true
	case *Or:
		return Match(n.Left, r, env) || Match(n.Right, r, env)
	case *And:
		return Match(n.Left, r, env) && Match(n.Right, r, env)
	case *Not:
		return !Match(n.X, r, env)
	case *FullText:
		return matchFullText(n.Text, r)
	case *Compare:
		return matchCompare(n, subjectOf(n.Field, r, env))
	case *In:
		return matchIn(n, subjectOf(n.Field, r, env))
	case *IsNull:
		return subjectOf(n.Field, r, env).present() == n.Not
	case *IsSuspect:
		return r.IsSuspect() == n.Wants()
	}
	return false
}

func matchFullText(text string, r *requirement.Requirement) bool {
	t := Fold(text)
	return strings.Contains(Fold(r.Key), t) || strings.Contains(Fold(r.Text), t)
}

func matchCompare(n *Compare, s subject) bool {
	if n.Op == OpNe {
		return s.present() && !s.has(OpEq, n.Value.Text)
	}
	return s.has(n.Op, n.Value.Text)
}

func matchIn(n *In, s subject) bool {
	found := false
	for _, v := range n.Values {
		if s.has(OpEq, v.Text) {
			found = true
			break
		}
	}
	if n.Not {
		return s.present() && !found
	}
	return found
}

// subject is what a field yields for one requirement: whether it has a value
// at all, and whether some value x satisfies `x op v` (op is never OpNe).
type subject interface {
	present() bool
	has(op Op, v string) bool
}

func subjectOf(f Field, r *requirement.Requirement, env Env) subject {
	switch f.Kind {
	case FieldKey:
		return texts{vals: nonEmpty(r.Key), fold: true}
	case FieldText:
		return texts{vals: nonEmpty(r.Text)}
	case FieldSpace:
		return texts{vals: nonEmpty(r.SpaceKey)}
	case FieldStatus:
		return texts{vals: nonEmpty(string(r.Status)), fold: true}
	case FieldPage:
		return pages{id: r.Origin.PageID, self: NewRef(r.SpaceKey, r.Key), env: env}
	case FieldBaseline:
		return texts{vals: baselineValues(r.Baseline), numeric: true}
	case FieldJira:
		return texts{vals: issueKeys(r.Issues, f.Name)}
	case FieldProperty:
		return texts{vals: propertyValues(r.Properties, f.Name, requirement.Inline)}
	case FieldExternal:
		return texts{vals: propertyValues(r.Properties, f.Name, requirement.External)}
	case FieldTo:
		return refs{deps: withRel(r.Dependencies, f.Name), home: r.SpaceKey}
	case FieldFrom:
		return refs{deps: withRel(r.ReverseDependencies, f.Name), home: r.SpaceKey}
	case FieldParent:
		return closure{c: Closure{Field: FieldParent, Rel: f.Name}, self: NewRef(r.SpaceKey, r.Key),
			edges: len(withRel(r.Dependencies, f.Name)) > 0, env: env}
	case FieldChild:
		return closure{c: Closure{Field: FieldChild, Rel: f.Name}, self: NewRef(r.SpaceKey, r.Key),
			edges: len(withRel(r.ReverseDependencies, f.Name)) > 0, env: env}
	}
	return texts{}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// baselineValues is the baseline as text; 0 (the current version) is NULL.
func baselineValues(n int) []string {
	if n == 0 {
		return nil
	}
	return []string{strconv.Itoa(n)}
}

func issueKeys(issues []requirement.IssueLink, rel string) []string {
	var keys []string
	for _, i := range issues {
		if rel == "" || requirement.NormalizeRelationship(i.Relationship) == rel {
			keys = append(keys, i.IssueKey)
		}
	}
	return keys
}

// propertyValues returns the values of the properties of type typ (page
// or external) named name, compared case-insensitively. A property listed
// with an empty value is present.
func propertyValues(props []requirement.Property, name string, typ requirement.PropertyType) []string {
	var vals []string
	folded := Fold(name)
	for _, p := range props {
		if p.Type == typ && Fold(p.Key) == folded {
			vals = append(vals, p.Value)
		}
	}
	return vals
}

func withRel(deps []requirement.Dependency, rel string) []requirement.Dependency {
	if rel == "" {
		return deps
	}
	var out []requirement.Dependency
	for _, d := range deps {
		if requirement.NormalizeRelationship(d.Relationship) == rel {
			out = append(out, d)
		}
	}
	return out
}

// texts are plain values. fold makes `=` and the comparisons
// case-insensitive (key, status); numeric makes `=` compare numbers
// (baseline). `~` is always case-insensitive.
type texts struct {
	vals          []string
	fold, numeric bool
}

func (t texts) present() bool { return len(t.vals) > 0 }

func (t texts) has(op Op, v string) bool {
	for _, x := range t.vals {
		if t.test(op, x, v) {
			return true
		}
	}
	return false
}

func (t texts) test(op Op, x, v string) bool {
	if op == OpLike {
		return like(x, v)
	}
	if t.fold {
		x, v = Fold(x), Fold(v)
	}
	if op == OpEq {
		if t.numeric && isNumber(x) && isNumber(v) {
			return compareNumbers(x, v) == 0
		}
		return x == v
	}
	c := compareValues(x, v)
	switch op {
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}

// refs are the direct links of to and from. `=` names a requirement
// ('KEY' or 'SPACE/KEY'); `~` matches the key, or 'SPACE/KEY' when the
// pattern contains '/'.
type refs struct {
	deps []requirement.Dependency
	home string // the requirement's space, for links that name none
}

func (s refs) present() bool { return len(s.deps) > 0 }

func (s refs) has(op Op, v string) bool {
	want, ok := ParseRef(v)
	for _, d := range s.deps {
		space := linkSpace(d, s.home)
		switch {
		case op == OpEq && ok && want.matches(space, d.Key):
			return true
		case op == OpLike && strings.Contains(v, "/") && like(space+"/"+d.Key, v):
			return true
		case op == OpLike && !strings.Contains(v, "/") && like(d.Key, v):
			return true
		}
	}
	return false
}

// linkSpace is the space of a link's target; a link that names none stays
// in home, the space of the requirement that holds it.
func linkSpace(d requirement.Dependency, home string) string {
	if d.SpaceKey == "" {
		return home
	}
	return d.SpaceKey
}

// pages is the page field: present when the requirement has an origin
// page; `=` when the value names it (its id, or the current title of that
// page: PageNames.Titled); `~` when the value names it or names a page
// that cites the requirement (PageNames.Cited, which does not need the
// requirement to have a page of its own); the comparisons compare the id.
type pages struct {
	id   string
	self Ref
	env  Env
}

func (s pages) present() bool { return s.id != "" }

func (s pages) has(op Op, v string) bool {
	switch op {
	case OpEq:
		return s.named(v)
	case OpLike:
		name, ok := likeLiteral(v)
		// Parse refuses a wildcard here; a tree built by hand with one
		// names no page.
		return ok && (s.named(name) || s.cited(name))
	}
	return texts{vals: nonEmpty(s.id)}.has(op, v)
}

// named reports whether value v names the requirement's origin page.
func (s pages) named(v string) bool {
	if s.id == "" {
		return false
	}
	if s.id == v {
		return true
	}
	n := s.names(v)
	return n != nil && n.Titled[s.id]
}

// cited reports whether a page that value v names cites the requirement.
func (s pages) cited(v string) bool {
	n := s.names(v)
	return n != nil && n.Cited[s.self]
}

func (s pages) names(v string) *PageNames {
	if s.env == nil {
		return nil
	}
	return s.env.Page(v)
}

// closure is a parent or child field: present when the requirement has a
// direct link in that direction, equal to X when it is in X's closure.
type closure struct {
	c     Closure // Of is filled per value
	self  Ref
	edges bool
	env   Env
}

func (s closure) present() bool { return s.edges }

func (s closure) has(op Op, v string) bool {
	of, ok := ParseRef(v)
	if op != OpEq || !ok || s.env == nil || !s.edges {
		return false
	}
	c := s.c
	c.Of = of
	return s.env.Members(c)[s.self]
}
