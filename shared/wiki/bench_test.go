package wiki_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// page400 is a page of 400 requirements with two properties, a dependency
// on the previous one and an issue link each.
func page400(version int) string {
	rows := []string{wt.TH("Key", "Description", "Priority", "Category", "Implements")}
	for i := range 400 {
		desc := fmt.Sprintf("<p>Requirement %d shall do thing %d, version %d.", i, i, version)
		if i > 0 {
			desc += " " + wt.Link("", fmt.Sprintf("BIG-%d", i-1))
		}
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("BIG-%d", i)), desc+"</p>", []string{"High", "Low"}[i%2],
			fmt.Sprintf("Cat %d", i%7), wt.Jira(fmt.Sprintf("PROJ-%d", i), "jira-1")))
	}
	return wt.Table(rows...)
}

// BenchmarkSavePage400 measures the service time of saving a page of 400
// requirements whose every excerpt changed (parse, diff, messages), with an
// in-memory store: the performance targets allows 1 ms per requirement.
func BenchmarkSavePage400(b *testing.B) {
	mem := wt.NewMem()
	mem.AddIntegration(tenant, "jira-1")
	svc := wiki.New(wiki.Deps{Store: mem})
	bodies := []string{page400(0), page400(1)}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Big", Body: bodies[i%2]}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/400, "µs/requirement")
}
