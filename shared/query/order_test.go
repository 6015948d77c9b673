package query

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

func TestParseOrder(t *testing.T) {
	t.Parallel()
	asc := func(c Column) OrderBy { return OrderBy{Column: c} }
	desc := func(c Column) OrderBy { return OrderBy{Column: c, Desc: true} }
	tests := []struct {
		s    string
		want Order
	}{
		{"", Order{asc(ColumnKey), desc(ColumnBaseline)}},
		{"  \t", Order{asc(ColumnKey), desc(ColumnBaseline)}},
		{"REQKEY ASC, BASELINE DESC", Order{asc(ColumnKey), desc(ColumnBaseline)}},
		{"reqkey", Order{asc(ColumnKey)}},
		{"rEqKeY dEsC", Order{desc(ColumnKey)}},
		{"KEY desc,baseline", Order{desc(ColumnKey), asc(ColumnBaseline)}},
		{"space ASC , STATUS DESC,text,  page desc", Order{asc(ColumnSpace), desc(ColumnStatus), asc(ColumnText), desc(ColumnPage)}},
		{"SPACEKEY", Order{asc(ColumnSpace)}},
	}
	for _, tt := range tests {
		got, err := ParseOrder(tt.s)
		if err != nil {
			t.Errorf("ParseOrder(%q): %v", tt.s, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseOrder(%q) = %v, want %v", tt.s, got, tt.want)
		}
		back, err := ParseOrder(got.String())
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("ParseOrder(%q) = %v, %v; want %v", got.String(), back, err, got)
		}
	}
}

func TestParseOrderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		pos  int
		want string
	}{
		{"REQKEY; DROP TABLE x", 6, "unexpected character ';' at position 6"},
		{"REQKEY ASC -- x", 11, "unexpected character '-' at position 11"},
		{"1=1", 0, "unknown order column '1' at position 0"},
		{"REQKEY=1", 6, "unexpected character '='"},
		{"(SELECT 1)", 0, "unexpected character '('"},
		{"REQKEY ASC DESC", 11, "expected ',' or the end of order at position 11, found 'DESC'"},
		{"REQKEY ASC NULLS FIRST", 11, "found 'NULLS'"},
		{"REQKEY,", 7, "expected a column at position 7, found end of order"},
		{",REQKEY", 0, "expected a column at position 0, found ','"},
		{"REQKEY,,BASELINE", 7, "expected a column at position 7, found ','"},
		{"REQKEY, REQKEY", 8, "column REQKEY appears twice"},
		{"KEY, reqkey DESC", 5, "column REQKEY appears twice"},
		{"FOO", 0, "unknown order column 'FOO' at position 0: use REQKEY, BASELINE"},
		{"ASC", 0, "unknown order column 'ASC'"},
		{"REQKEY ASC\x00", 10, `unexpected character "\x00" at position 10`},
		{"REQKEY 'x'", 7, `unexpected character "'" at position 7`},
		{"REQKEY\u00a0ASC", 6, `unexpected character`},
		{"BASELINE DESC, " + strings.Repeat("x", MaxOrderLength), MaxOrderLength, "order is longer than 256 bytes"},
	}
	for _, tt := range tests {
		o, err := ParseOrder(tt.s)
		if err == nil {
			t.Errorf("ParseOrder(%q) = %v, want an error", tt.s, o)
			continue
		}
		t.Run(tt.s, func(t *testing.T) { assertInvalidAt(t, err, tt.pos, tt.want) })
	}
}

func row(space, key string, baseline int) *requirement.Requirement {
	return &requirement.Requirement{SpaceKey: space, Key: key, Baseline: baseline}
}

func rowID(r *requirement.Requirement) string {
	return r.SpaceKey + "/" + id(r)
}

func sorted(o Order, rows []*requirement.Requirement) []string {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b *requirement.Requirement) int {
		switch {
		case o.Less(a, b):
			return -1
		case o.Less(b, a):
			return 1
		}
		return 0
	})
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = rowID(r)
	}
	return ids
}

func TestOrderLess(t *testing.T) {
	t.Parallel()
	rows := []*requirement.Requirement{
		row("B", "REQ-2", 1), row("A", "REQ-2", 0), row("A", "REQ-10", 0), row("A", "REQ-2", 2),
		row("A", "REQ-2", 1), row("B", "REQ-2", 0), row("A", "req-1", 0), row("A", "REQ-1", 0), row("B", "req-10", 0),
	}
	tests := []struct {
		order string
		want  []string
	}{
		// Default: the key ignoring case, then its space (each requirement's
		// versions together: current (NULL) first, then the newest baseline);
		// rows equal so far (REQ-1 and req-1 in one space) then by the
		// tie-break: space, key byte-wise, baseline DESC.
		{"", []string{"A/REQ-1", "A/req-1", "A/REQ-10", "B/req-10", "A/REQ-2", "A/REQ-2@2", "A/REQ-2@1", "B/REQ-2", "B/REQ-2@1"}},
		{"KEY, SPACE, BASELINE DESC", []string{"A/REQ-1", "A/req-1", "A/REQ-10", "B/req-10", "A/REQ-2", "A/REQ-2@2", "A/REQ-2@1", "B/REQ-2", "B/REQ-2@1"}},
		// REQKEY DESC reverses the key and the space alike.
		{"REQKEY DESC, BASELINE DESC", []string{"B/REQ-2", "B/REQ-2@1", "A/REQ-2", "A/REQ-2@2", "A/REQ-2@1", "B/req-10", "A/REQ-10", "A/REQ-1", "A/req-1"}},
		// BASELINE ASC puts NULL last; ties fall back to space, key, baseline DESC.
		{"BASELINE", []string{"A/REQ-2@1", "B/REQ-2@1", "A/REQ-2@2", "A/REQ-1", "A/req-1", "A/REQ-10", "A/REQ-2", "B/req-10", "B/REQ-2"}},
		{"SPACE DESC, KEY DESC", []string{"B/REQ-2", "B/REQ-2@1", "B/req-10", "A/REQ-2", "A/REQ-2@2", "A/REQ-2@1", "A/REQ-10", "A/REQ-1", "A/req-1"}},
	}
	for _, tt := range tests {
		o, err := ParseOrder(tt.order)
		if err != nil {
			t.Fatal(err)
		}
		if got := sorted(o, rows); !slices.Equal(got, tt.want) {
			t.Errorf("order %q sorts %q, want %q", tt.order, got, tt.want)
		}
	}
}

func TestOrderLessPageStatusText(t *testing.T) {
	t.Parallel()
	page := func(key, id string) *requirement.Requirement {
		r := row("S", key, 0)
		r.Origin.PageID = id
		r.Text = id
		r.Status = requirement.Status(id)
		return r
	}
	rows := []*requirement.Requirement{page("a", "100"), page("b", ""), page("c", "99"), page("d", "x"), page("e", "099")}
	tests := []struct {
		order string
		want  []string
	}{
		// Numbers first in numeric order ("099" and "99" tie, then byte-wise),
		// then other texts, then NULL.
		{"PAGE", []string{"S/e", "S/c", "S/a", "S/d", "S/b"}},
		{"PAGE DESC", []string{"S/b", "S/d", "S/a", "S/c", "S/e"}},
		{"TEXT", []string{"S/b", "S/e", "S/a", "S/c", "S/d"}},
		{"STATUS DESC", []string{"S/d", "S/c", "S/a", "S/e", "S/b"}},
	}
	for _, tt := range tests {
		o, err := ParseOrder(tt.order)
		if err != nil {
			t.Fatal(err)
		}
		if got := sorted(o, rows); !slices.Equal(got, tt.want) {
			t.Errorf("order %q sorts %q, want %q", tt.order, got, tt.want)
		}
	}
}

// TestOrderIsStrictWeak checks irreflexivity, asymmetry and transitivity of
// Less on random rows and orders, and that distinct rows never tie.
func TestOrderIsStrictWeak(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	var rows []*requirement.Requirement
	seen := map[string]bool{}
	for range 200 {
		r := row(pick("A", "B", "C"), pick("R-1", "R-2", "R-10", "r-1"), rng.IntN(4))
		r.Origin.PageID = pick("", "9", "10", "010", "x", "5y")
		r.Text = pick("", "a", "B")
		r.Status = requirement.Status(pick("ACTIVE", "DELETED"))
		if !seen[rowID(r)] {
			seen[rowID(r)] = true
			rows = append(rows, r)
		}
	}
	columns := []string{"REQKEY", "BASELINE", "SPACEKEY", "STATUS", "TEXT", "PAGE"}
	for range 50 {
		rng.Shuffle(len(columns), func(i, j int) { columns[i], columns[j] = columns[j], columns[i] })
		var items []string
		for _, c := range columns[:1+rng.IntN(3)] {
			items = append(items, c+pick("", " ASC", " DESC"))
		}
		o, err := ParseOrder(strings.Join(items, ", "))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range rows {
			for _, b := range rows {
				checkPair(t, o, a, b, rows)
			}
		}
	}
}

func checkPair(t *testing.T, o Order, a, b *requirement.Requirement, rows []*requirement.Requirement) {
	t.Helper()
	ab, ba := o.Less(a, b), o.Less(b, a)
	if a == b && ab {
		t.Fatalf("%v: Less(%s, %s) is reflexive", o, rowID(a), rowID(a))
	}
	if a != b && ab == ba {
		t.Fatalf("%v: Less(%s, %s) = Less(b, a) = %v", o, rowID(a), rowID(b), ab)
	}
	if !ab {
		return
	}
	for _, c := range rows {
		if o.Less(b, c) && !o.Less(a, c) {
			t.Fatalf("%v: %s < %s < %s but not %s < %s", o, rowID(a), rowID(b), rowID(c), rowID(a), rowID(c))
		}
	}
}
