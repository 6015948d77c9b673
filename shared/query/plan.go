package query

import (
	"slices"
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/keyrange"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// AccessKind says which index an Access reads.
type AccessKind int

// The access paths. For each, the condition Holds checks is given; an index
// serving the access must agree with it exactly.
const (
	// AccessKey: Fold(Key) equals one of Values (already folded).
	AccessKey AccessKind = iota + 1
	// AccessKeyPrefix: Fold(Key) starts with Values[0] (folded, not empty).
	AccessKeyPrefix
	// AccessProperty: a page property whose Fold(name) is Name (folded) has a
	// value equal (exactly) to one of Values.
	AccessProperty
	// AccessPage: Origin.PageID is a page one of Values names: equal to
	// the value, or in its PageNames.Titled (Env).
	AccessPage
	// AccessIssue: an issue link whose relationship is Name (normalised; ""
	// = any) has an IssueKey equal (exactly) to one of Values.
	AccessIssue
	// AccessTo: a Dependency whose relationship is Name ("" = any) names one
	// of Refs (the requirement references it).
	AccessTo
	// AccessFrom: a ReverseDependency whose relationship is Name ("" = any)
	// names one of Refs (it references the requirement). Equivalently: the
	// Dependencies of Refs name the requirement.
	AccessFrom
	// AccessBaseline: Baseline equals one of Values (decimal, never "0").
	AccessBaseline
	// AccessSpace: SpaceKey equals one of Values (exactly).
	AccessSpace
	// AccessStatus: Fold(Status) equals one of Values (folded: ACTIVE, ...).
	AccessStatus
	// AccessUnion: for at least one element of Branches, every Access of
	// that element holds.
	AccessUnion
	// AccessExternal: AccessProperty for external properties (ext@Name).
	AccessExternal
	// AccessPageCited: AccessPage holds, or the requirement (its NewRef)
	// is in the PageNames.Cited of one of Values (`page ~`; the values
	// are the patterns' texts, escapes resolved).
	AccessPageCited
	// AccessSuspect: one of the requirement's dependencies or issue links
	// is suspect (requirement.IsSuspect).
	AccessSuspect
	// AccessKeyRange: From <= Fold(Key) < Before, byte-wise ("" leaves
	// that end open): the intersection of the key comparisons and key
	// prefixes of an AND chain. From >= Before (both set) holds for
	// nothing. The bounds hold no byte below '-' (see keyBound), so that
	// they order the key-order indexes' sort keys (key, '#', space) as
	// they order the keys.
	AccessKeyRange
	// AccessWord: Values[0] is one of requirement.Words of the key or of
	// the text: a word that a `text ~` pattern or a bare string holds
	// whole (see wordDrivers).
	AccessWord
)

var accessNames = map[AccessKind]string{
	AccessKey: "key", AccessKeyPrefix: "key-prefix", AccessProperty: "property", AccessPage: "page",
	AccessIssue: "issue", AccessTo: "to", AccessFrom: "from", AccessBaseline: "baseline",
	AccessSpace: "space", AccessStatus: "status", AccessUnion: "union", AccessExternal: "external", AccessPageCited: "page-cited", AccessSuspect: "suspect",
	AccessKeyRange: "key-range", AccessWord: "word",
}

// String names the access kind.
func (k AccessKind) String() string {
	if s, ok := accessNames[k]; ok {
		return s
	}
	return "?"
}

// Access is one index access path that can drive a search. It is a
// NECESSARY condition of the expression it came from: every requirement that
// Match accepts satisfies it (Holds), so a planner may fetch the candidates
// of one Access and filter them with Match. It is not sufficient: Match must
// still run on every candidate.
type Access struct {
	Kind AccessKind
	// Name is the folded property name (AccessProperty, AccessExternal) or
	// the normalised
	// relationship (AccessIssue, AccessTo, AccessFrom; "" = any).
	Name string
	// Values are alternatives: the access holds when one of them does. They
	// are deduplicated and never empty, except for AccessUnion.
	Values []string
	// Refs are Values parsed with ParseRef (AccessTo, AccessFrom only).
	Refs []Ref
	// Branches are, for AccessUnion, one list of accesses per OR branch: a
	// planner picks one Access per branch and unions their candidates.
	Branches [][]Access
	// From and Before bound the folded key (AccessKeyRange only).
	From, Before string
}

// KeyRange returns the bounds of the folded keys an AccessKeyRange or
// AccessKeyPrefix holds for: From <= key < Before, "" for an open end;
// ok is false for other kinds.
func (a Access) KeyRange() (from, before string, ok bool) {
	switch a.Kind {
	case AccessKeyRange:
		return a.From, a.Before, true
	case AccessKeyPrefix:
		return keyBound(a.Values[0]), keyBound(keyrange.PrefixEnd(a.Values[0])), true
	}
	return "", "", false
}

// Empty reports whether an AccessKeyRange holds for no key.
func (a Access) Empty() bool {
	return a.Kind == AccessKeyRange && a.From != "" && a.Before != "" && a.From >= a.Before
}

// Drivers returns the accesses that can drive a search for e, in query
// order. A predicate counts when it is e itself or a member of e's top-level
// AND chain; an OR (at the top or inside that chain) counts as one
// AccessUnion when every branch has at least one access. Indexable
// predicates: key = 'X', key ~ 'PREFIX%' (a single trailing '%' and a
// non-empty prefix; no wildcard at all counts as key = 'X'), @Name = 'V',
// ext@Name = 'V', page = 'N' (an id or a title), page ~ 'N', jira[@rel] =
// 'X', to[@rel] = 'X', from[@rel] = 'X', baseline = N, space = 'S', status
// = 'S', IN lists of all of these, suspect IS TRUE (or IS NOT FALSE), key
// comparisons (<, <=, >, >= with a value that is not a number; with the key
// prefixes of the same AND chain they make one AccessKeyRange), and the
// whole words of text ~ patterns and bare strings (AccessWord). NOT, !=,
// NOT IN, IS [NOT] NULL, parent, child and the comparisons of other fields
// never drive. A nil result means no index helps.
//
// Selectivity, as a rule of thumb for choosing one: key, then issue, to,
// from, page (`=`, then `~`), key prefix, property (page or external),
// baseline, and last
// status and space.
func Drivers(e Expr) []Access {
	switch n := e.(type) {
	case *And:
		return mergeKeyRanges(append(Drivers(n.Left), Drivers(n.Right)...))
	case *Or:
		return unionDrivers(n)
	case *Compare:
		return compareDrivers(n)
	case *In:
		if !n.Not {
			return eqDrivers(n.Field, n.Values)
		}
	case *IsSuspect:
		if n.Wants() {
			return []Access{{Kind: AccessSuspect}}
		}
	case *FullText:
		return wordDrivers([]string{Fold(n.Text)}, false)
	}
	return nil
}

// wordDrivers is the access of a text pattern by its words: segs are the
// folded literal parts of a `~` pattern (likeSegments), or the one text a
// bare string must be found in (anchored false). A matching text holds
// each segment, so every word of a segment that is whole there — a run of
// letters and digits with a separator (or, anchored, the start of the
// first segment or the end of the last, which are the text's own) on both
// sides — is a word of the text (requirement.Words): `%Requirement 12%`
// holds no whole word (it matches "XRequirement 123"), `%the login page%`
// holds LOGIN, `login%` nothing (it matches "logins"), `login %` LOGIN. A
// bare string may be found in the key too, whose words the index also
// holds. The longest whole word drives (likely the rarest); none: no
// access, and the search reads its scope.
func wordDrivers(segs []string, anchored bool) []Access {
	best := ""
	for i, seg := range segs {
		start := anchored && i == 0
		end := anchored && i == len(segs)-1
		for _, w := range wholeWords(seg, start, end) {
			if len(w) > len(best) {
				best = w
			}
		}
	}
	if best == "" {
		return nil
	}
	return []Access{{Kind: AccessWord, Values: []string{best}}}
}

// wholeWords returns the runs of letters and digits of seg that are
// separated on both sides: by another character of seg, or by the start
// (start) or the end (end) of the text.
func wholeWords(seg string, start, end bool) []string {
	var out []string
	from := -1 // start of the current run
	for i, r := range seg {
		switch {
		case requirement.IsWordRune(r) && from < 0:
			from = i
		case !requirement.IsWordRune(r) && from >= 0:
			if from > 0 || start {
				out = append(out, seg[from:i])
			}
			from = -1
		}
	}
	if from >= 0 && end && (from > 0 || start) {
		out = append(out, seg[from:])
	}
	return out
}

func unionDrivers(n *Or) []Access {
	var branches [][]Access
	for _, b := range orBranches(n, nil) {
		d := Drivers(b)
		if len(d) == 0 {
			return nil
		}
		branches = append(branches, d)
	}
	return []Access{{Kind: AccessUnion, Branches: branches}}
}

// orBranches flattens a tree of ORs into its branches, left to right.
func orBranches(e Expr, out []Expr) []Expr {
	if n, ok := e.(*Or); ok {
		return orBranches(n.Right, orBranches(n.Left, out))
	}
	return append(out, e)
}

func compareDrivers(n *Compare) []Access {
	switch {
	case n.Op == OpEq:
		return eqDrivers(n.Field, []Value{n.Value})
	case n.Op == OpLike && n.Field.Kind == FieldPage:
		if name, ok := likeLiteral(n.Value.Text); ok {
			return []Access{{Kind: AccessPageCited, Values: []string{name}}}
		}
	case n.Field.Kind == FieldKey && n.Op >= OpLt && n.Op <= OpGe:
		return keyRangeDrivers(n.Op, n.Value.Text)
	case n.Op == OpLike && n.Field.Kind == FieldText:
		return wordDrivers(likeSegments(n.Value.Text), true)
	case n.Op == OpLike && n.Field.Kind == FieldKey:
		text, prefix, ok := likePrefix(n.Value.Text)
		switch {
		case ok && prefix:
			return []Access{{Kind: AccessKeyPrefix, Values: []string{text}}}
		case ok:
			return []Access{{Kind: AccessKey, Values: []string{text}}}
		}
	}
	return nil
}

// minKeyByte is the least byte a folded requirement key holds
// (requirement.ValidKey: letters, digits, '_', '-', '.'); it sorts above
// the '#' that ends the key in the key-order indexes' sort keys.
const minKeyByte = '-'

// keyRangeDrivers is the access for `key op v` (op <, <=, > or >=). The
// comparison is byte-wise on folded texts unless both sides are numbers
// (compareValues): a number v drives nothing, since numeric keys ("9" <
// "10") do not follow the index's byte order.
func keyRangeDrivers(op Op, v string) []Access {
	if isNumber(v) {
		return nil
	}
	v = Fold(v)
	a := Access{Kind: AccessKeyRange}
	// Every key is a string of bytes >= minKeyByte, so k > v is
	// k >= v+"-" and k <= v is k < v+"-".
	switch op {
	case OpGe:
		a.From = keyBound(v)
	case OpGt:
		a.From = keyBound(v + string(rune(minKeyByte)))
	case OpLt:
		a.Before = keyBound(v)
		if a.Before == "" { // k < '': nothing
			a.From, a.Before = string(rune(minKeyByte)), string(rune(minKeyByte))
		}
	case OpLe:
		a.Before = keyBound(v + string(rune(minKeyByte)))
	}
	return []Access{a}
}

// keyBound returns the bound b, free of bytes below minKeyByte, that
// every key k compares with as with v: k >= v exactly when k >= b, and k < v
// exactly when k < b. With a byte below minKeyByte at i, no key continues
// v[:i] the way v does, so k >= v is k > v[:i], which is k >= v[:i]+"-"
// (and k < v is k < v[:i]+"-").
func keyBound(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] < minKeyByte {
			return v[:i] + string(rune(minKeyByte))
		}
	}
	return v
}

// mergeKeyRanges replaces the key ranges and key prefixes of one AND chain
// by their intersection, where the first of them was: one key-order read
// serves them all. A lone prefix stays an AccessKeyPrefix.
func mergeKeyRanges(accesses []Access) []Access {
	first, n := -1, 0
	merged := Access{Kind: AccessKeyRange}
	for i, a := range accesses {
		from, before, ok := a.KeyRange()
		if !ok {
			continue
		}
		if first < 0 {
			first = i
		}
		n++
		if from > merged.From {
			merged.From = from
		}
		if before != "" && (merged.Before == "" || before < merged.Before) {
			merged.Before = before
		}
	}
	if n < 2 {
		return accesses
	}
	out := make([]Access, 0, len(accesses)-n+1)
	for i, a := range accesses {
		if i == first {
			out = append(out, merged)
		} else if _, _, ok := a.KeyRange(); !ok {
			out = append(out, a)
		}
	}
	return out
}

// eqDrivers is the access for `f = v1 OR f = v2 ...`.
func eqDrivers(f Field, vals []Value) []Access {
	a := Access{Name: f.Name}
	convert := func(v string) (string, bool) { return v, true }
	switch f.Kind {
	case FieldKey:
		a.Kind, convert = AccessKey, folded
	case FieldProperty:
		a.Kind, a.Name = AccessProperty, Fold(f.Name)
	case FieldExternal:
		a.Kind, a.Name = AccessExternal, Fold(f.Name)
	case FieldPage:
		a.Kind = AccessPage
	case FieldJira:
		a.Kind = AccessIssue
	case FieldTo, FieldFrom:
		return refDrivers(f, vals)
	case FieldBaseline:
		a.Kind, convert = AccessBaseline, canonicalBaseline
	case FieldSpace:
		a.Kind = AccessSpace
	case FieldStatus:
		a.Kind, convert = AccessStatus, folded
	default:
		return nil
	}
	a.Values = convertValues(vals, convert)
	if len(a.Values) == 0 {
		return nil
	}
	return []Access{a}
}

// refDrivers is the access for to/from: values that cannot name a
// requirement are dropped.
func refDrivers(f Field, vals []Value) []Access {
	a := Access{Kind: AccessTo, Name: f.Name}
	if f.Kind == FieldFrom {
		a.Kind = AccessFrom
	}
	for _, v := range vals {
		if r, ok := ParseRef(v.Text); ok && !slices.Contains(a.Refs, r) {
			a.Refs = append(a.Refs, r)
			a.Values = append(a.Values, r.String())
		}
	}
	if len(a.Refs) == 0 {
		return nil
	}
	return []Access{a}
}

// convertValues converts, drops the values that can match nothing, and
// deduplicates.
func convertValues(vals []Value, convert func(string) (string, bool)) []string {
	var out []string
	for _, v := range vals {
		if c, ok := convert(v.Text); ok && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func folded(v string) (string, bool) { return Fold(v), true }

// canonicalBaseline returns the decimal form of a non-zero integer value:
// "3", "03" and "3.0" all give "3". Other values match no baseline.
func canonicalBaseline(v string) (string, bool) {
	if !isNumber(v) {
		return "", false
	}
	neg, whole, frac := splitNumber(v)
	if frac != "" || whole == "" {
		return "", false
	}
	if neg {
		whole = "-" + whole
	}
	n, err := strconv.Atoi(whole)
	if err != nil {
		return "", false
	}
	return strconv.Itoa(n), true
}

// Holds reports whether r satisfies the access: the definition an index
// serving it must agree with (see the AccessKind constants). env answers
// what page values name, as it does for Match; it may be nil.
func (a Access) Holds(r *requirement.Requirement, env Env) bool {
	switch a.Kind {
	case AccessKey:
		return slices.Contains(a.Values, Fold(r.Key))
	case AccessKeyPrefix:
		return len(a.Values) > 0 && strings.HasPrefix(Fold(r.Key), a.Values[0])
	case AccessWord:
		return len(a.Values) > 0 && (slices.Contains(requirement.Words(r.Key), a.Values[0]) ||
			slices.Contains(requirement.Words(r.Text), a.Values[0]))
	case AccessKeyRange:
		k := Fold(r.Key)
		return k >= a.From && (a.Before == "" || k < a.Before)
	case AccessProperty:
		return anyIn(propertyValues(r.Properties, a.Name, requirement.Inline), a.Values)
	case AccessExternal:
		return anyIn(propertyValues(r.Properties, a.Name, requirement.External), a.Values)
	case AccessPage:
		pg := pages{id: r.Origin.PageID, env: env}
		return slices.ContainsFunc(a.Values, pg.named)
	case AccessPageCited:
		pg := pages{id: r.Origin.PageID, self: NewRef(r.SpaceKey, r.Key), env: env}
		return slices.ContainsFunc(a.Values, func(v string) bool { return pg.named(v) || pg.cited(v) })
	case AccessIssue:
		return anyIn(issueKeys(r.Issues, a.Name), a.Values)
	case AccessTo:
		return refsHold(withRel(r.Dependencies, a.Name), r.SpaceKey, a.Refs)
	case AccessFrom:
		return refsHold(withRel(r.ReverseDependencies, a.Name), r.SpaceKey, a.Refs)
	case AccessBaseline:
		return r.Baseline != 0 && slices.Contains(a.Values, strconv.Itoa(r.Baseline))
	case AccessSpace:
		return slices.Contains(a.Values, r.SpaceKey)
	case AccessStatus:
		return slices.Contains(a.Values, Fold(string(r.Status)))
	case AccessUnion:
		return slices.ContainsFunc(a.Branches, func(b []Access) bool { return allHold(b, r, env) })
	case AccessSuspect:
		return r.IsSuspect()
	}
	return false
}

func allHold(accesses []Access, r *requirement.Requirement, env Env) bool {
	for _, a := range accesses {
		if !a.Holds(r, env) {
			return false
		}
	}
	return true
}

func anyIn(have, want []string) bool {
	return slices.ContainsFunc(have, func(h string) bool { return slices.Contains(want, h) })
}

func refsHold(deps []requirement.Dependency, home string, want []Ref) bool {
	for _, d := range deps {
		space := linkSpace(d, home)
		if slices.ContainsFunc(want, func(w Ref) bool { return w.matches(space, d.Key) }) {
			return true
		}
	}
	return false
}

// String renders the access for logs and plan explanations, e.g.
// `property[CATEGORY] IN ('Functional')`.
func (a Access) String() string {
	if a.Kind == AccessUnion {
		parts := make([]string, len(a.Branches))
		for i, b := range a.Branches {
			inner := make([]string, len(b))
			for j, x := range b {
				inner[j] = x.String()
			}
			parts[i] = "[" + strings.Join(inner, " AND ") + "]"
		}
		return "union(" + strings.Join(parts, ", ") + ")"
	}
	if a.Kind == AccessKeyRange {
		return "key-range [" + quote(a.From) + ", " + quote(a.Before) + ")"
	}
	quoted := make([]string, len(a.Values))
	for i, v := range a.Values {
		quoted[i] = quote(v)
	}
	name := a.Kind.String()
	if a.Name != "" {
		name += "[" + a.Name + "]"
	}
	return name + " IN (" + strings.Join(quoted, ", ") + ")"
}
