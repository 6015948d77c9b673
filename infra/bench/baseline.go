package bench

import (
	"context"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/baseline/baselinebench"
)

// Baseline measures the freeze of a baseline of n requirements with the
// baseline team's hook (shared/baseline/baselinebench: seed n ACTIVE
// requirements, freeze them with baseline.Service and
// shared/dynamo.BaselineStore, check the count, delete the baseline), on
// tables of its own so that its 2·n items do not weigh on the other
// measurements.
func Baseline(ctx context.Context, env *Env, n int, row *Row) error {
	row.Method = fmt.Sprintf("shared/baseline/baselinebench.Freeze: %d ACTIVE requirements seeded in space %s (about 600 bytes each, "+
		"100 per page, each refining the next), frozen into one baseline by baseline.Service with shared/dynamo.BaselineStore in process "+
		"on DynamoDB Local (own tables), count checked, baseline deleted again.", n, baselinebench.Space)
	res, err := env.Resources(ctx, "baseline")
	if err != nil {
		return err
	}
	counted := env.NewCounted()
	stop, err := startProfile(env, "baseline")
	if err != nil {
		return err
	}
	defer stop()
	r, err := baselinebench.Freeze(ctx, counted.API, res.Tables["WikiTable"], Tenant, n)
	stop()
	if r == nil {
		return err
	}
	completed := err == nil
	measured := "yes"
	if !completed {
		measured = "no: " + err.Error()
	}
	row.add(fmt.Sprintf("freeze of %d requirements completes", n), "completes", measured, verdict(completed))
	want := ceilDiv(n, 25)
	row.add("BatchWriteItem calls of the freeze", fmt.Sprintf("⌈N/25⌉ = %d", want), fmt.Sprint(r.BatchWrites), verdict(r.BatchWrites == want))
	timeout := env.FunctionTimeout("WikiBaselines")
	row.add("freeze duration (read / write copies / commit)", fmt.Sprintf("reported; WikiBaselines timeout %s", timeout),
		fmt.Sprintf("%s (%s / %s / %s)", secs(r.Freeze), secs(r.Read), secs(r.Write), secs(r.Commit)), Info)
	row.add("all DynamoDB calls of the freeze", "", formatCalls(r.Calls), Info)
	row.add("seeding / deleting the baseline", "", fmt.Sprintf("%s / %s", secs(r.Seed), secs(r.Delete)), Info)
	if completed && timeout > 0 && r.Freeze > timeout {
		row.note("The freeze took %s, longer than the %s timeout of WikiBaselines behind API Gateway (29 s at most): "+
			"on this machine a synchronous create of %d requirements would time out; DESIGN.md §5 allows a background job for such sizes.",
			secs(r.Freeze), timeout, n)
	}
	return err
}
