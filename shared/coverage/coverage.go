// Package coverage builds the traceability matrix of a space (GET
// /rest/reqs/1/coverage/{spaceKey}, docs/change-analysis.md "Coverage"):
// for every requirement a query matches, the items of each requested
// column (its issue links, the requirements it references, the
// requirements that reference it), and for each column how many of the
// matches have at least one item.
//
// A requirement row carries everything a cell needs (its dependencies,
// its reverse dependencies, its issue links and their suspect marks), so
// the matrix is one pass over the query's matches through the search's
// streaming walk (search.Service.Each): no read per row besides the walk's
// own, memory bounded by one read page plus the page of the answer. The
// package has no AWS types.
package coverage

import (
	"context"
	"fmt"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// Kind is what a column lists.
type Kind int

// The kinds of column; each is named as the query language's field that
// tests the same links (jira, to, from).
const (
	// Jira lists the requirement's issue links, of every integration.
	Jira Kind = iota + 1
	// To lists the requirements it references (its dependencies).
	To
	// From lists the requirements that reference it (its reverse
	// dependencies).
	From
)

var kinds = map[string]Kind{"jira": Jira, "to": To, "from": From}

// MaxColumns is the largest number of columns of one matrix.
const MaxColumns = 20

// SuspectMark is appended to the item of a suspect link: "PROJ-1 (suspect)".
const SuspectMark = " (suspect)"

// Column is one column of the matrix: a kind and, when Rel is not "", only
// the links of that relationship (normalised with
// requirement.NormalizeRelationship, as the query language does).
type Column struct {
	Kind Kind
	Rel  string
}

// Name is the column's name in answers: jira, to, from, or with the
// relationship: to@refines.
func (c Column) Name() string {
	name := map[Kind]string{Jira: "jira", To: "to", From: "from"}[c.Kind]
	if c.Rel != "" {
		name += "@" + c.Rel
	}
	return name
}

// ParseColumns reads the columns parameter: names separated by commas,
// each jira, to or from, optionally followed by @relationship (kinds
// ignore case, relationships are normalised). Errors: invalid (none,
// unknown, empty relationship, control characters, a column twice, more
// than MaxColumns), naming columns.
func ParseColumns(s string) ([]Column, error) {
	if strings.TrimSpace(s) == "" {
		return nil, apperr.InvalidNamed("columns", "columns is required: a comma-separated list of jira, to, from (each optionally @relationship)")
	}
	var cols []Column
	seen := map[Column]bool{}
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		kindName, rel, hasRel := strings.Cut(name, "@")
		kind, ok := kinds[strings.ToLower(kindName)]
		if !ok {
			return nil, apperr.InvalidNamed("columns", "unknown column %q: columns are jira, to, from, each optionally @relationship", cut(name))
		}
		c := Column{Kind: kind}
		if hasRel {
			if strings.ContainsFunc(rel, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return nil, apperr.InvalidNamed("columns", "column %q: the relationship must not contain control characters", cut(kindName))
			}
			if c.Rel = requirement.NormalizeRelationship(rel); c.Rel == "" {
				return nil, apperr.InvalidNamed("columns", "column %q: empty relationship after '@'", cut(name))
			}
		}
		if seen[c] {
			return nil, apperr.InvalidNamed("columns", "column %s is listed twice", c.Name())
		}
		seen[c] = true
		if cols = append(cols, c); len(cols) > MaxColumns {
			return nil, apperr.InvalidNamed("columns", "at most %d columns", MaxColumns)
		}
	}
	return cols, nil
}

// cut shortens a client's value for an error message.
func cut(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	for i := max; i > 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return s[:i] + "…"
		}
	}
	return "…"
}

// Cell returns the items of column c for r, in the row's order, each once:
// an issue key (once ignoring case) for Jira, "SPACE/KEY" of the other
// requirement (once per requirement, keys ignoring case, whatever the
// relationships) for To and From. An item of To or Jira whose link is
// suspect ends with SuspectMark; a From item never does (the mark belongs
// to the referencing requirement's link, shown in its own To cell). Never
// nil.
func Cell(r *requirement.Requirement, c Column) []string {
	out := []string{}
	seen := map[string]bool{}
	add := func(id, item string, suspect bool) {
		if seen[id] {
			return
		}
		seen[id] = true
		if suspect {
			item += SuspectMark
		}
		out = append(out, item)
	}
	switch c.Kind {
	case Jira:
		for _, l := range r.Issues {
			if c.Rel == "" || requirement.NormalizeRelationship(l.Relationship) == c.Rel {
				add(strings.ToUpper(l.IssueKey), l.IssueKey, r.IssueSuspect(l) != nil)
			}
		}
	case To, From:
		deps := r.Dependencies
		if c.Kind == From {
			deps = r.ReverseDependencies
		}
		for _, d := range deps {
			if c.Rel != "" && requirement.NormalizeRelationship(d.Relationship) != c.Rel {
				continue
			}
			space := d.SpaceKey
			if space == "" {
				space = r.SpaceKey
			}
			suspect := c.Kind == To && r.DependencySuspect(d) != nil
			add(requirement.NewID(space, d.Key, 0).String(), space+"/"+d.Key, suspect)
		}
	}
	return out
}

// Row is one requirement of the matrix: its cells, one per column in the
// request's order.
type Row struct {
	SpaceKey, Key, Text string
	Cells               [][]string
}

// ColumnCount is a column and how many requirements of the whole query
// have at least one item in it.
type ColumnCount struct {
	Column
	Covered int
}

// Service builds matrices.
type Service struct {
	walker search.Walker
}

// New returns a Service reading the matches through w (search.Service).
func New(w search.Walker) *Service { return &Service{walker: w} }

// Request is one matrix, its parameters parsed.
type Request struct {
	Tenant string
	// Space is the path's space: the only one the query is run in.
	Space string
	// Query is the parsed q (nil: every ACTIVE requirement of the space).
	Query   query.Expr
	Columns []Column
	// Offset and Limit page the rows; Limit 0 means search.DefaultLimit,
	// above search.MaxLimit it is clamped.
	Offset, Limit int
}

// Result is the counts of the whole matrix and one page of its rows.
type Result struct {
	Columns []ColumnCount
	// Total is the number of requirements the query matched.
	Total         int
	Rows          []Row
	Offset, Limit int
	HasMore       bool
}

// Coverage builds the matrix of req and returns the page
// [Offset, Offset+Limit) of its rows, in key order. Errors: invalid (bad
// offset, limit or space key, closures too broad), internal.
func (s *Service) Coverage(ctx context.Context, req Request) (*Result, error) {
	switch {
	case req.Offset < 0:
		return nil, apperr.InvalidNamed("offset", "offset must be at least 0, got %d", req.Offset)
	case req.Limit < 0:
		return nil, apperr.InvalidNamed("limit", "limit must be at least 1, got %d", req.Limit)
	case req.Limit == 0:
		req.Limit = search.DefaultLimit
	case req.Limit > search.MaxLimit:
		req.Limit = search.MaxLimit
	}
	res := &Result{Offset: req.Offset, Limit: req.Limit, Rows: []Row{}}
	cols, total, err := s.Each(ctx, req, func(i int, row Row) error {
		if i >= req.Offset && i < req.Offset+req.Limit {
			res.Rows = append(res.Rows, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Columns, res.Total, res.HasMore = cols, total, total > req.Offset+req.Limit
	return res, nil
}

// Each builds the whole matrix of req (Offset and Limit are ignored),
// calling emit with each row and its 0-based position, in key order, and
// returns the columns' counts and the number of rows. emit's error stops
// the walk and is returned. Errors: as Coverage, emit's.
func (s *Service) Each(ctx context.Context, req Request, emit func(i int, row Row) error) ([]ColumnCount, int, error) {
	if !requirement.ValidSpaceKey(req.Space) {
		return nil, 0, apperr.InvalidNamed("spaceKey", "invalid space key %q: letters, digits and '_' only", cut(req.Space))
	}
	counts := make([]ColumnCount, len(req.Columns))
	for i, c := range req.Columns {
		counts[i].Column = c
	}
	total := 0
	err := s.walker.Each(ctx, search.Request{Tenant: req.Tenant, PathSpace: req.Space, Space: req.Space, Query: req.Query},
		func(r *requirement.Requirement) error {
			row := Row{SpaceKey: r.SpaceKey, Key: r.Key, Text: r.Text, Cells: make([][]string, len(req.Columns))}
			for i, c := range req.Columns {
				row.Cells[i] = Cell(r, c)
				if len(row.Cells[i]) > 0 {
					counts[i].Covered++
				}
			}
			total++
			return emit(total-1, row)
		})
	if err != nil {
		return nil, 0, fmt.Errorf("coverage of %s: %w", req.Space, err)
	}
	return counts, total, nil
}

// Separator joins the items of a cell in the CSV export: one item per
// line, as the other exports list links.
const Separator = "\n"

// Table describes the whole matrix of req as an export (shared/export):
// columns spaceKey, key, text, then one per requested column (its name),
// each cell's items joined by Separator; its rows are built while they are
// written.
func (s *Service) Table(req Request) export.Table {
	columns := []string{"spaceKey", "key", "text"}
	for _, c := range req.Columns {
		columns = append(columns, c.Name())
	}
	return export.Table{Name: "coverage-" + req.Space, Columns: columns,
		Rows: func(ctx context.Context, emit func([]string) error) error {
			_, _, err := s.Each(ctx, req, func(_ int, row Row) error {
				cells := []string{row.SpaceKey, row.Key, row.Text}
				for _, items := range row.Cells {
					cells = append(cells, strings.Join(items, Separator))
				}
				return emit(cells)
			})
			return err
		}}
}
