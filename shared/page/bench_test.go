package page

import (
	"fmt"
	"strings"
	"testing"
)

// page400 is a page with one table of 400 requirements, each with a
// formatted description, two properties, two links and an issue macro.
func page400() string {
	var b strings.Builder
	b.WriteString("<h1>Specification</h1><p>Generated for the benchmark.</p><table><tbody>")
	b.WriteString(th("Key", "Description", "Priority", "Category", "Depends On", "Implements"))
	for i := range 400 {
		b.WriteString(tr(
			def(fmt.Sprintf("REQ-%03d", i)),
			fmt.Sprintf("<p>The system shall handle <strong>case %d</strong> within 200&nbsp;ms.</p>"+
				"<ul><li>Logged for audits.</li><li>See %s.</li></ul>", i, link("", fmt.Sprintf("REQ-%03d", (i+1)%400))),
			"<p>High</p>",
			"<p>Functional</p><p>Security</p>",
			link("OTHER", fmt.Sprintf("BR-%d", i%37)),
			jira(fmt.Sprintf("PROJ-%d", i+1), "jira-1"),
		))
	}
	b.WriteString("</tbody></table>")
	return b.String()
}

func BenchmarkParse400(b *testing.B) {
	body := page400()
	r, err := Parse(body)
	if err != nil {
		b.Fatal(err)
	}
	if len(r.Definitions) != 400 {
		b.Fatalf("Parse gave %d definitions, want 400", len(r.Definitions))
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/400, "ns/requirement")
}
