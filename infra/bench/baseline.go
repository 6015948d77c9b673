package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/shared/baseline/baselinebench"
)

// baselineCleanupReserve is baseline.Service's CleanupReserve: the part of
// the request deadline a freeze keeps back to delete what it wrote when it
// runs out of time.
const baselineCleanupReserve = 3 * time.Second

// Baseline measures the freeze of a baseline of n requirements with the
// baseline team's hook (shared/baseline/baselinebench: seed n ACTIVE
// requirements, freeze them with baseline.Service and
// shared/dynamo.BaselineStore, check the count, delete the baseline), on
// tables of its own so that its 2·n items do not weigh on the other
// measurements. It then creates the same baseline through the API of the
// local stack (the real WikiBaselines bootstrap under its template
// timeout), as a client would.
func Baseline(ctx context.Context, env *Env, n int, functionLog io.Writer, row *Row) error {
	timeout := env.FunctionTimeout("WikiBaselines")
	row.Method = fmt.Sprintf("In process: shared/baseline/baselinebench.Freeze — %d ACTIVE requirements seeded in space %s (about 600 bytes each, "+
		"100 per page, each refining the next), frozen into one baseline by baseline.Service with shared/dynamo.BaselineStore on "+
		"DynamoDB Local (own tables) without a deadline, count checked, baseline deleted again. Through the API: POST "+
		"/rest/reqs/1/baseline/%s/1/create on the same requirements through the local gateway and the real WikiBaselines bootstrap, "+
		"which runs under its %s template timeout like the deployed function.", n, baselinebench.Space, baselinebench.Space, whole(timeout))
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
	row.add(fmt.Sprintf("freeze of %d requirements completes (in process, no deadline)", n), "completes", measured, verdict(completed))
	want := ceilDiv(n, 25)
	row.add("BatchWriteItem calls of the freeze", fmt.Sprintf("⌈N/25⌉ = %d", want), fmt.Sprint(r.BatchWrites), verdict(r.BatchWrites == want))
	row.add("freeze duration in process (read the space / write the copies / commit)", "",
		fmt.Sprintf("%s (%s / %s / %s)", secs(r.Freeze), secs(r.Read), secs(r.Write), secs(r.Commit)), Info)
	row.add("all DynamoDB calls of the freeze", "", formatCalls(r.Calls), Info)
	row.add("seeding / deleting the baseline (not part of the freeze)", "", fmt.Sprintf("%s / %s", secs(r.Seed), secs(r.Delete)), Info)
	if err != nil {
		return err
	}
	baselineAPI(ctx, env, n, timeout, functionLog, row)
	if r.Freeze > timeout-baselineCleanupReserve {
		row.note("The in-process freeze took %s (reading the space %s, then writing the copies %s: the phases do not overlap), more than "+
			"the %s a request of WikiBaselines has for writing (its %s timeout, API Gateway's limit, less %s kept for cleanup). "+
			"DESIGN.md §5 asks for parallel batches within the deadline or a background job with progress.",
			secs(r.Freeze), secs(r.Read), secs(r.Write), whole(timeout-baselineCleanupReserve), whole(timeout), whole(baselineCleanupReserve))
	}
	return nil
}

// baselineAPI creates a baseline of the requirements Freeze seeded through
// the local stack and reports whether it completed.
func baselineAPI(ctx context.Context, env *Env, n int, timeout time.Duration, functionLog io.Writer, row *Row) {
	name := fmt.Sprintf("create through the API (local stack, %s function timeout)", whole(timeout))
	st, err := localstack.Start(ctx, localstack.Options{
		Root: env.Root, BuildDir: env.BuildDir, WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0", SyncInterval: -1,
		DynamoDBEndpoint: env.DynamoDBEndpoint, SQSEndpoint: env.SQSEndpoint, Prefix: env.Prefix + "-baseline",
		Functions: []string{"WikiBaselines"}, Logger: slog.New(slog.DiscardHandler), FunctionLog: functionLog,
	})
	if err != nil {
		row.add(name, "completes", "not measured: "+err.Error(), NotMeasured)
		return
	}
	defer st.Close()
	body, _ := json.Marshal(map[string]string{"name": "Bench through the API", "ceo": "1"})
	start := time.Now()
	status, answer, err := do(ctx, http.MethodPost, st.WikiURL+"/rest/reqs/1/baseline/"+baselinebench.Space+"/1/create", wikiUserToken, body)
	elapsed := time.Since(start)
	if err != nil {
		row.add(name, "completes", "not measured: "+err.Error(), NotMeasured)
		return
	}
	var got struct {
		Count   int    `json:"count"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(answer, &got)
	ok := status == http.StatusOK || status == http.StatusCreated
	measured := fmt.Sprintf("HTTP %d after %s, %d requirements frozen", status, secs(elapsed), got.Count)
	if !ok {
		measured = fmt.Sprintf("no: HTTP %d after %s: %s", status, secs(elapsed), firstLine(got.Message))
	}
	row.add(name, "completes", measured, verdict(ok && got.Count == n))
}
