package query

import (
	"slices"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Column is a sortable column of the order parameter.
type Column int

// The columns of the whitelist. The zero Column is not a column.
const (
	ColumnKey      Column = iota + 1 // REQKEY, alias KEY
	ColumnBaseline                   // BASELINE; 0 (current) is NULL, the highest
	ColumnSpace                      // SPACEKEY, alias SPACE
	ColumnStatus                     // STATUS
	ColumnText                       // TEXT
	ColumnPage                       // PAGE; numeric ids in numeric order, "" is NULL, the highest

	// columnKeyExact, the folded key then the key byte-wise, only breaks
	// ties.
	columnKeyExact
)

var columnsByName = map[string]Column{
	"REQKEY": ColumnKey, "KEY": ColumnKey, "BASELINE": ColumnBaseline, "SPACEKEY": ColumnSpace,
	"SPACE": ColumnSpace, "STATUS": ColumnStatus, "TEXT": ColumnText, "PAGE": ColumnPage,
}

var columnNames = map[Column]string{
	ColumnKey: "REQKEY", ColumnBaseline: "BASELINE", ColumnSpace: "SPACEKEY",
	ColumnStatus: "STATUS", ColumnText: "TEXT", ColumnPage: "PAGE",
}

// String returns the canonical name of the column.
func (c Column) String() string {
	if s, ok := columnNames[c]; ok {
		return s
	}
	return "?"
}

// OrderBy is one item of an Order: a column and its direction.
type OrderBy struct {
	Column Column
	Desc   bool
}

// Order is a parsed order parameter, most significant column first.
type Order []OrderBy

// DefaultOrder returns the order of an empty parameter: REQKEY ASC,
// BASELINE DESC (the current version first, then the newest baseline).
func DefaultOrder() Order {
	return Order{{Column: ColumnKey}, {Column: ColumnBaseline, Desc: true}}
}

// tieBreak makes Less a total order on rows: (space, key, baseline) is a
// row's identity.
var tieBreak = Order{{Column: ColumnSpace}, {Column: columnKeyExact}, {Column: ColumnBaseline, Desc: true}}

// ParseOrder reads the order parameter: `column [ASC|DESC] (, column
// [ASC|DESC])*`, case-insensitive, each column at most once, direction ASC by
// default. Columns: REQKEY (KEY), BASELINE, SPACEKEY (SPACE), STATUS, TEXT,
// PAGE. White space or an empty s gives DefaultOrder. It looks like SQL but
// is never passed to a database: anything else is an apperr.InvalidAt naming
// the position of the first problem.
func ParseOrder(s string) (Order, error) {
	if len(s) > MaxOrderLength {
		return nil, apperr.InvalidAt(MaxOrderLength, "order is longer than %d bytes", MaxOrderLength)
	}
	l := orderLexer{src: s}
	if l.peek().eof {
		return DefaultOrder(), nil
	}
	var o Order
	for {
		by, err := l.item(o)
		if err != nil {
			return nil, err
		}
		o = append(o, by)
		t := l.next()
		switch {
		case t.err != nil:
			return nil, t.err
		case t.eof:
			return o, nil
		case t.text != ",":
			return nil, apperr.InvalidAt(t.pos, "expected ',' or the end of order at position %d, found %s",
				t.pos, t.describe())
		}
	}
}

// item reads `column [ASC|DESC]`; done holds the columns already read.
func (l *orderLexer) item(done Order) (OrderBy, error) {
	t := l.next()
	if t.err != nil {
		return OrderBy{}, t.err
	}
	col, ok := columnsByName[strings.ToUpper(t.text)]
	if !ok || !t.word {
		return OrderBy{}, badColumn(t)
	}
	if slices.ContainsFunc(done, func(by OrderBy) bool { return by.Column == col }) {
		return OrderBy{}, apperr.InvalidAt(t.pos, "column %s appears twice in order (at position %d)", col, t.pos)
	}
	by := OrderBy{Column: col}
	if dir := l.peek(); dir.word && (strings.EqualFold(dir.text, "ASC") || strings.EqualFold(dir.text, "DESC")) {
		by.Desc = strings.EqualFold(dir.text, "DESC")
		l.next()
	}
	return by, nil
}

func badColumn(t orderToken) error {
	if !t.word {
		return apperr.InvalidAt(t.pos, "expected a column at position %d, found %s", t.pos, t.describe())
	}
	return apperr.InvalidAt(t.pos,
		"unknown order column %s at position %d: use REQKEY, BASELINE, SPACEKEY, STATUS, TEXT or PAGE",
		show(t.text), t.pos)
}

// orderToken is a word ([A-Za-z0-9_]+), a comma, the end (eof), or a
// character that has no place in an order (err).
type orderToken struct {
	text string
	pos  int
	word bool
	eof  bool
	err  error
}

func (t orderToken) describe() string {
	if t.eof {
		return "end of order"
	}
	return show(t.text)
}

// orderLexer reads tokens on demand, so that the first problem from the left
// is the one reported.
type orderLexer struct {
	src string
	pos int
}

func (l *orderLexer) peek() orderToken {
	saved := l.pos
	t := l.next()
	l.pos = saved
	return t
}

func (l *orderLexer) next() orderToken {
	for l.pos < len(l.src) && isSpace(l.src[l.pos]) {
		l.pos++
	}
	start := l.pos
	switch {
	case start == len(l.src):
		return orderToken{pos: start, eof: true}
	case l.src[start] == ',':
		l.pos++
		return orderToken{text: ",", pos: start}
	case isWordByte(l.src[start]):
		for l.pos < len(l.src) && isWordByte(l.src[l.pos]) {
			l.pos++
		}
		return orderToken{text: l.src[start:l.pos], pos: start, word: true}
	}
	return orderToken{pos: start, err: unexpectedChar(l.src, start)}
}

// String renders the order canonically: "REQKEY ASC, BASELINE DESC".
func (o Order) String() string {
	parts := make([]string, len(o))
	for i, by := range o {
		dir := " ASC"
		if by.Desc {
			dir = " DESC"
		}
		parts[i] = by.Column.String() + dir
	}
	return strings.Join(parts, ", ")
}

// Less reports whether a sorts before b. REQKEY compares the folded key
// (the upper-cased key DynamoDB sorts by), then the space key, both in the
// column's direction; SPACEKEY, STATUS and TEXT compare byte-wise; PAGE
// puts numeric ids first in numeric order; BASELINE is numeric with 0 (the
// current version) as NULL. NULL is higher than every value: last under
// ASC, first under DESC. Ties are broken by space key, key (folded, then
// byte-wise) and baseline DESC, so Less is a total order on rows and a sort is stable
// whatever the input order.
func (o Order) Less(a, b *requirement.Requirement) bool {
	for _, by := range o {
		if c := by.compare(a, b); c != 0 {
			return c < 0
		}
	}
	for _, by := range tieBreak {
		if c := by.compare(a, b); c != 0 {
			return c < 0
		}
	}
	return false
}

func (by OrderBy) compare(a, b *requirement.Requirement) int {
	c := compareColumn(by.Column, a, b)
	if by.Desc {
		return -c
	}
	return c
}

func compareColumn(col Column, a, b *requirement.Requirement) int {
	switch col {
	case ColumnKey:
		return compareKeys(a, b)
	case columnKeyExact:
		if c := strings.Compare(Fold(a.Key), Fold(b.Key)); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	case ColumnBaseline:
		return compareBaselines(a.Baseline, b.Baseline)
	case ColumnSpace:
		return strings.Compare(a.SpaceKey, b.SpaceKey)
	case ColumnStatus:
		return strings.Compare(string(a.Status), string(b.Status))
	case ColumnText:
		return strings.Compare(a.Text, b.Text)
	case ColumnPage:
		return comparePages(a.Origin.PageID, b.Origin.PageID)
	}
	return 0
}

// compareKeys orders rows by their folded key, the upper-cased key the
// indexes sort by, then by space key: one key ignoring case, defined in
// several spaces, sorts by space, as the key-order indexes hold it. A
// search in key order therefore reads its candidates in the answer's
// order and stops at the last row of the page, with no look-ahead.
func compareKeys(a, b *requirement.Requirement) int {
	if c := strings.Compare(Fold(a.Key), Fold(b.Key)); c != 0 {
		return c
	}
	return strings.Compare(a.SpaceKey, b.SpaceKey)
}

// compareBaselines orders baseline numbers with 0 (NULL) above all.
func compareBaselines(a, b int) int {
	switch {
	case a == b:
		return 0
	case a == 0:
		return 1
	case b == 0, a < b:
		return -1
	}
	return 1
}

// comparePages orders page ids numerically, with "" (NULL) above all.
func comparePages(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	return orderValues(a, b)
}
