package httpapitest

import (
	"context"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
)

// CommitBaseline writes the record of baseline n of space, as a finished
// freeze does: archived copies of that number are visible only then.
func CommitBaseline(t testing.TB, store *wikitable.BaselineStore, tenant, space string, n int) {
	t.Helper()
	job := &baseline.Job{Tenant: tenant, Owner: "test", Baseline: baseline.Baseline{
		SpaceKey: space, Number: n, Name: "b", CEO: "1", Instant: true, CreatedAt: time.Now()}}
	if err := store.Begin(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(context.Background(), job, false); err != nil {
		t.Fatal(err)
	}
}
