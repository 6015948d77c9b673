package diff

import (
	"context"

	"github.com/reqtrace/reqtrace/shared/export"
)

// Columns are the columns of a diff's CSV: one row per changed field.
var Columns = []string{"spaceKey", "key", "change", "field", "from", "to"}

// Table describes the whole diff of req as an export (shared/export), named
// diff-<SPACE>-<from>-<to>: one row per changed field of each change (one
// with empty field, from and to for a change without fields), in key
// order; the rows are built while they are written.
func (s *Service) Table(req Request) export.Table {
	return export.Table{Name: "diff-" + req.Space + "-" + SideName(req.From) + "-" + SideName(req.To), Columns: Columns,
		Rows: func(ctx context.Context, emit func([]string) error) error {
			_, err := s.Each(ctx, req, func(c Change) error {
				for _, row := range Rows(c) {
					if err := emit(row); err != nil {
						return err
					}
				}
				return nil
			})
			return err
		}}
}

// Rows are the CSV rows of one change, as Table writes them.
func Rows(c Change) [][]string {
	if len(c.Fields) == 0 {
		return [][]string{{c.SpaceKey, c.Key, string(c.Kind), "", "", ""}}
	}
	rows := make([][]string, 0, len(c.Fields))
	for _, f := range c.Fields {
		rows = append(rows, []string{c.SpaceKey, c.Key, string(c.Kind), f.Name, ValueText(f.Name, f.From), ValueText(f.Name, f.To)})
	}
	return rows
}
