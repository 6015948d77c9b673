// Package export turns a result into one download (docs/change-analysis.md, "Export"): a
// Table (a header and rows produced in order, one at a time) written as
// RFC 4180 CSV while it is produced, into a Store that keeps it and answers
// where a client fetches it. Memory stays bounded whatever the number of
// rows: nothing holds the whole result. Search, diff and coverage each
// describe their result as a Table; the package has no AWS types (the S3
// Store is shared/s3export). docs/change-analysis.md has the decisions.
package export

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

// Table is a result to export: its column names and its rows, in order.
type Table struct {
	// Name names the download, without extension ("diff-DEMO-3-current").
	Name    string
	Columns []string
	// Rows calls emit with each row, in order, each with one cell per
	// column; emit's error stops it and is returned. Errors found before
	// the first row (bad input, not found) are returned as they are, and
	// then nothing is stored.
	Rows func(ctx context.Context, emit func(row []string) error) error
}

// Store keeps downloads.
type Store interface {
	// Save stores what write writes as a download named name (its
	// content type contentType) for tenant, and returns the URL it can be
	// fetched from without credentials, for a limited time. A write that
	// fails stores nothing and its error is returned as it is. Errors:
	// internal, write's.
	Save(ctx context.Context, tenant, name, contentType string, write func(io.Writer) error) (url string, err error)
}

// ContentType is the media type of a CSV export.
const ContentType = "text/csv; charset=utf-8"

// Service exports tables.
type Service struct {
	store Store
}

// New returns a Service that keeps exports in store.
func New(store Store) *Service {
	return &Service{store: store}
}

// CSV writes t as CSV into the Store and returns its download URL.
// Errors: t.Rows' (as they are), internal.
func (s *Service) CSV(ctx context.Context, tenant string, t Table) (string, error) {
	url, err := s.store.Save(ctx, tenant, t.Name+".csv", ContentType, func(w io.Writer) error {
		return WriteCSV(ctx, w, t)
	})
	if err != nil {
		return "", fmt.Errorf("export %s: %w", t.Name, err)
	}
	return url, nil
}

// WriteCSV writes t to w as RFC 4180 CSV (CRLF line ends, fields quoted
// when they hold a comma, a quote or a line end), UTF-8, with a header row;
// every cell passes Guard.
func WriteCSV(ctx context.Context, w io.Writer, t Table) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	cw.UseCRLF = true
	record := make([]string, len(t.Columns))
	write := func(cells []string) error {
		if len(cells) != len(t.Columns) {
			return fmt.Errorf("export row of %d cells under %d columns", len(cells), len(t.Columns))
		}
		for i, c := range cells {
			record[i] = Guard(c)
		}
		return cw.Write(record)
	}
	if err := write(t.Columns); err != nil {
		return err
	}
	if err := t.Rows(ctx, write); err != nil {
		return err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}

// formulaStarts are the first characters that make a spreadsheet read a
// cell as a formula: =, +, -, @ (docs/change-analysis.md), and tab and carriage
// return, which some spreadsheets skip before looking for one.
const formulaStarts = "=+-@\t\r"

// Guard returns cell prefixed with ' when it starts like a formula, so
// that a spreadsheet shows it as text and never evaluates it.
func Guard(cell string) string {
	if cell != "" && strings.IndexByte(formulaStarts, cell[0]) >= 0 {
		return "'" + cell
	}
	return cell
}
