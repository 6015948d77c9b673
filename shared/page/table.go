package page

import (
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/requirement"
	"golang.org/x/net/html"
)

// Bounds on cell spans, so that a hostile colspan cannot make the column
// bookkeeping large.
const (
	maxColumns = 1000
	maxRowSpan = 65534
)

// column is what a table's header says about one column.
type column struct {
	name   string // the header text, "" when the table has no header
	title  bool   // requirement-property title=true: the description column
	ignore bool   // requirement-property ignore=true: not read at all
}

// cell is a table cell and the column it starts in.
type cell struct {
	node *html.Node
	col  int
}

// table indexes a table: the first row is its header unless it defines a
// requirement; each row whose first cell holds a definition macro defines
// that requirement; other rows are ordinary content.
func (p *parser) table(t *html.Node) error {
	rows, others := tableRows(t)
	for _, n := range others {
		if err := p.node(n); err != nil {
			return err
		}
	}
	if len(rows) == 0 {
		return nil
	}
	var cols []column
	if n, _ := p.keyDefinition(rows[0]); n == nil {
		cols = p.header(rows[0])
		if err := p.walkCells(rows[0]); err != nil {
			return err
		}
		rows = rows[1:]
	}
	desc := descriptionColumn(cols)
	for _, row := range rows {
		if err := p.row(row, cols, desc); err != nil {
			return err
		}
	}
	return nil
}

// walkCells indexes the cells of a row that defines no requirement.
func (p *parser) walkCells(row []cell) error {
	for _, c := range row {
		if err := p.walk(c.node); err != nil {
			return err
		}
	}
	return nil
}

// row indexes one row.
func (p *parser) row(row []cell, cols []column, desc int) error {
	self, m := p.keyDefinition(row)
	if self == nil {
		return p.walkCells(row)
	}
	def := &Definition{Key: m.key}
	keep := p.claim(m.key)
	for _, c := range row {
		col := columnAt(cols, c.col)
		var err error
		switch {
		case c.col == 0:
			err = p.keyCell(def, keep, self, c.node)
		case col.ignore:
		case len(col.name) > maxHeader:
			// The header names a property, or the relationship of the
			// links in the column, stored with every link to a target.
			err = invalidAt(p.body, m.offset, "requirement %s: the header of column %d is %d bytes long; "+
				"a column of properties or links takes a header of at most %d", clip(m.key), c.col+1, len(col.name), maxHeader)
		case c.col == desc:
			err = p.descriptionCell(def, keep, self, c.node, col)
		default:
			err = p.propertyCell(def, keep, self, c.node, col)
		}
		if err != nil {
			return err
		}
	}
	if keep {
		p.add(def)
	}
	return nil
}

// keyCell reads the links of the key cell; its text is not used. Its header
// ("Key", "ID") names the column, not a relationship, so it is not used.
func (p *parser) keyCell(def *Definition, keep bool, self, n *html.Node) error {
	s := p.newScope(def, keep, newWriter(false))
	s.self = self
	s.linkRel = relDependency
	s.issueRel = relRelates
	return s.children(n)
}

// descriptionCell reads the text, excerpt and links of the description.
func (p *parser) descriptionCell(def *Definition, keep bool, self, n *html.Node, col column) error {
	s := p.newScope(def, keep, newWriter(true))
	s.self = self
	s.linkRel = relDependency
	s.issueRel = relationship(col.name, relRelates)
	if err := s.children(n); err != nil {
		return err
	}
	def.Text = s.w.plainText()
	def.HTMLExcerpt = s.w.excerpt()
	return nil
}

// propertyCell reads the values and links of a property column. Each line
// of the cell (paragraph, list item, <br>-separated line) is one value; a
// column without a header gives no values.
func (p *parser) propertyCell(def *Definition, keep bool, self, n *html.Node, col column) error {
	s := p.newScope(def, keep, newWriter(false))
	s.self = self
	s.macroText = false
	s.linkRel = relationship(col.name, relDependency)
	s.issueRel = relationship(col.name, relRelates)
	if err := s.children(n); err != nil {
		return err
	}
	if col.name == "" {
		return nil
	}
	for _, v := range s.w.lines() {
		def.Properties = append(def.Properties, requirement.Property{Key: col.name, Value: v})
	}
	return nil
}

// maxHeader bounds the header of a column a definition uses (its property
// name or link relationship), like the tracker's names.
const maxHeader = 255

// relationship is the relationship a column header names, or fallback.
func relationship(header, fallback string) string {
	if r := requirement.NormalizeRelationship(header); r != "" {
		return r
	}
	return fallback
}

// keyDefinition returns the definition macro of a row: the first one in the
// cell of its first column.
func (p *parser) keyDefinition(row []cell) (*html.Node, *macro) {
	if len(row) == 0 || row[0].col != 0 {
		return nil, nil
	}
	return p.firstDefinition(row[0].node)
}

// firstDefinition returns the first definition macro below n.
func (p *parser) firstDefinition(n *html.Node) (*html.Node, *macro) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || kindOf(c) == skipped {
			continue
		}
		if m := p.macros[c]; m != nil && m.kind == definitionMacro {
			return c, m
		}
		if d, m := p.firstDefinition(c); d != nil {
			return d, m
		}
	}
	return nil, nil
}

// header reads the columns a header row names; a cell spanning several
// columns names each of them.
func (p *parser) header(row []cell) []column {
	var cols []column
	for _, c := range row {
		col := p.headerColumn(c.node)
		end := min(c.col+span(c.node, "colspan", maxColumns), maxColumns)
		for i := c.col; i < end; i++ {
			for len(cols) <= i {
				cols = append(cols, column{})
			}
			cols[i] = col
		}
	}
	return cols
}

// headerColumn reads one header cell: its text and its requirement-property
// options (several macros in one cell add up).
func (p *parser) headerColumn(n *html.Node) column {
	s := &scope{macros: p.macros, w: newWriter(false), macroText: true}
	_ = s.children(n) // a scope without a definition never fails
	col := column{name: s.w.plainText()}
	p.propertyOptions(n, &col)
	return col
}

// propertyOptions sets the options of the requirement-property macros below
// n on col.
func (p *parser) propertyOptions(n *html.Node, col *column) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if m := p.macros[c]; m != nil && m.kind == propertyMacro {
			col.title = col.title || m.title
			col.ignore = col.ignore || m.ignore
		}
		p.propertyOptions(c, col)
	}
}

// descriptionColumn returns the first column marked title=true (and not
// ignored) after the key column, else the second column.
func descriptionColumn(cols []column) int {
	for i := 1; i < len(cols); i++ {
		if cols[i].title && !cols[i].ignore {
			return i
		}
	}
	return 1
}

// columnAt returns column i, a column without a header beyond the header.
func columnAt(cols []column, i int) column {
	if i < len(cols) {
		return cols[i]
	}
	return column{}
}

// tableRows returns the rows of t (directly or in thead, tbody, tfoot) with
// each cell placed in the column it starts in, as a browser lays them out: a
// cell spanning rows pushes the cells of the rows below to the right. A
// spanning cell belongs only to the row it starts in. others are the
// remaining elements of the table (a caption, or misplaced content), read as
// ordinary content.
func tableRows(t *html.Node) (rows [][]cell, others []*html.Node) {
	var covered []int // per column: how many more rows a rowspan covers
	for c := t.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type != html.ElementNode:
		case c.Data == "tr":
			rows = append(rows, placeCells(c, &covered))
		case c.Data == "thead" || c.Data == "tbody" || c.Data == "tfoot":
			for r := c.FirstChild; r != nil; r = r.NextSibling {
				switch {
				case r.Type != html.ElementNode:
				case r.Data == "tr":
					rows = append(rows, placeCells(r, &covered))
				default:
					others = append(others, r)
				}
			}
		default:
			others = append(others, c)
		}
	}
	return rows, others
}

// placeCells places the cells of row tr in columns and updates covered.
func placeCells(tr *html.Node, covered *[]int) []cell {
	var row []cell
	col := 0
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || c.Data != "td" && c.Data != "th" {
			continue
		}
		for col < len(*covered) && (*covered)[col] > 0 {
			col++
		}
		row = append(row, cell{node: c, col: col})
		rows := span(c, "rowspan", maxRowSpan)
		next := col + span(c, "colspan", maxColumns)
		for i := col; i < next && i < maxColumns; i++ {
			for len(*covered) <= i {
				*covered = append(*covered, 0)
			}
			(*covered)[i] = rows
		}
		col = next
	}
	for i := range *covered {
		if (*covered)[i] > 0 {
			(*covered)[i]--
		}
	}
	return row
}

// span reads a colspan or rowspan attribute: 1 when absent or invalid.
func span(n *html.Node, key string, maxSpan int) int {
	v, err := strconv.Atoi(strings.TrimSpace(attr(n, key)))
	if err != nil || v < 1 {
		return 1
	}
	return min(v, maxSpan)
}
