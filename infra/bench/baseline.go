package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/bench/baselinebench"
	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/infra/scheduler"
)

// Baseline measures the freeze of a baseline of n requirements with the
// baseline team's hook (infra/bench/baselinebench: seed n ACTIVE
// requirements, freeze them in one go with baseline.Service and
// shared/dynamo/wikitable.BaselineStore, check the count, delete the baseline), on
// tables of its own so that its 2·n items do not weigh on the other
// measurements. It then creates the same baseline through the API of the
// local stack (the real WikiBaselines bootstrap under its template
// timeout, then the background worker if the request hands over), as a
// client would.
func Baseline(ctx context.Context, env *Env, n int, functionLog io.Writer, row *Row) error {
	timeout := env.FunctionTimeout("WikiBaselines")
	row.Method = fmt.Sprintf("In process: infra/bench/baselinebench.Freeze — %d ACTIVE requirements seeded in space %s (about 600 bytes each, "+
		"100 per page, each refining the next), frozen into one baseline by baseline.Service with shared/dynamo/wikitable.BaselineStore on "+
		"DynamoDB Local (own tables) without a deadline, count checked, baseline deleted again. Through the API: POST "+
		"/rest/reqs/1/baseline/%s/1/create on the same requirements through the local gateway and the real WikiBaselines bootstrap, "+
		"which runs under its %s template timeout like the deployed function, then, if the request hands the freeze over (202 FREEZING), "+
		"the background worker invoked until the baseline is COMPLETE or FAILED.", n, baselinebench.Space, baselinebench.Space, whole(timeout))
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
	result := row.result("baseline_100k", fmt.Sprintf("baseline.Service.Create freezing %d requirements in process (infra/bench/baselinebench.Freeze: "+
		"read the space, write the copies, commit), one round (a round takes minutes).", n),
		"BatchWriteItem of exactly the archived copies the freeze wrote (recorded from its calls), 25 a call, 8 at a time, "+
			"to the same table under a scratch tenant of the same length, right after the freeze; the freeze's read of the "+
			"space and its commit are not part of the floor.")
	// The copies only: the seeding writes current rows, the delete after
	// the freeze deletes the copies again.
	rec := NewRecorder(counted.API)
	rec.Keep = func(item map[string]types.AttributeValue) bool {
		pk, _ := item["pk"].(*types.AttributeValueMemberS)
		return pk != nil && strings.Contains(pk.Value, "#B#")
	}
	rec.Start()
	cpu := env.cpu()
	used := cpu.now()
	r, err := baselinebench.Freeze(ctx, rec, res.Tables["WikiTable"], Tenant, n)
	selfCPU := cpu.since(used).self
	stop()
	copies := rec.Stop()
	copies.Deletes = nil
	if r == nil {
		return err
	}
	if err == nil {
		floor, ferr := writeFloor(ctx, env.DynamoDB(), res.Tables["WikiTable"], Tenant, copies)
		if ferr != nil {
			return ferr
		}
		var p Pairs
		p.Add(r.Freeze, floor.Took)
		result.setPairs(p)
		result.Per = "requirement"
		result.ItemsWrittenPerRequirement = &Amplification{Service: round3(float64(len(copies.Puts)) / float64(n)),
			Floor: round3(float64(floor.Items) / float64(n))}
		total := 0
		for _, c := range r.Calls {
			total += c
		}
		result.Calls = &Calls{Service: float64(total), Floor: float64(floor.Calls), ServiceByOp: r.Calls}
		// The process's CPU over Freeze includes its seeding and the
		// delete: an upper bound, reported as such in the floor text.
		result.CPUMSPerRequirement = ptr(float64(selfCPU) / float64(time.Millisecond) / float64(n))
		result.Floor += " CPU per requirement here is the bench process's over the whole of Freeze (seeding and delete included): an upper bound."
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
	row.Headline = fmt.Sprintf("in process: completes in %s with %d BatchWriteItem (⌈N/25⌉ = %d); through the API: %s",
		secs(r.Freeze), r.BatchWrites, want, baselineAPI(ctx, env, n, timeout, functionLog, row))
	return nil
}

// baselineWorker is the LogicalId of the background freeze worker.
const baselineWorker = "WikiBaselineJobs"

// baselineAnswer is what the bench reads of a baseline's JSON.
type baselineAnswer struct {
	Number   int    `json:"number"`
	Status   string `json:"status"`
	Count    *int   `json:"count"`
	Message  string `json:"message"`
	Progress *struct {
		Written int `json:"written"`
		Total   int `json:"total"`
	} `json:"progress"`
}

// written is how many copies the answer says are written.
func (b *baselineAnswer) written() int {
	switch {
	case b.Progress != nil:
		return b.Progress.Written
	case b.Count != nil:
		return *b.Count
	}
	return 0
}

// baselineAPI creates a baseline of the requirements Freeze seeded through
// the local stack and reports whether it completed: in the request (200),
// or, when the request hands it over (202 FREEZING), through the
// background worker, invoked as its schedule would.
func baselineAPI(ctx context.Context, env *Env, n int, timeout time.Duration, functionLog io.Writer, row *Row) (summary string) {
	defer func() { summary = fmt.Sprintf("%s (%s)", summary, row.Metrics[len(row.Metrics)-1].Verdict) }()
	name := fmt.Sprintf("create through the API (local stack, %s function timeout)", whole(timeout))
	fns := []string{"WikiBaselines"}
	worker := env.FunctionTimeout(baselineWorker) > 0
	if worker {
		fns = append(fns, baselineWorker)
	}
	st, err := startStack(ctx, env, "baseline", fns, functionLog)
	if err != nil {
		row.add(name, "completes", "not measured: "+err.Error(), NotMeasured)
		return "not measured"
	}
	defer st.Close()
	body, _ := json.Marshal(map[string]string{"name": "Bench through the API", "ceo": "1"})
	start := time.Now()
	status, answer, err := do(ctx, http.MethodPost, st.WikiURL+"/rest/reqs/1/baseline/"+baselinebench.Space+"/1/create", wikiUserToken, body)
	inline := time.Since(start)
	if err != nil {
		row.add(name, "completes", "not measured: "+err.Error(), NotMeasured)
		return "not measured"
	}
	var got baselineAnswer
	_ = json.Unmarshal(answer, &got)
	switch {
	case status == http.StatusOK:
		row.add(name, "completes", fmt.Sprintf("HTTP 200 after %s, %d requirements frozen in the request", secs(inline), got.written()),
			verdict(got.written() == n))
		return fmt.Sprintf("200 after %s", secs(inline))
	case status == http.StatusAccepted && !worker:
		row.add(name, "completes", fmt.Sprintf("HTTP 202 %s after %s (%d of %d written); no %s function in template.yaml to finish it",
			got.Status, secs(inline), got.written(), n, baselineWorker), NotMeasured)
		return fmt.Sprintf("202 after %s, no worker", secs(inline))
	case status == http.StatusAccepted:
		return baselineJob(ctx, st, env, n, got, inline, name, row)
	default:
		row.add(name, "completes", fmt.Sprintf("no: HTTP %d after %s: %s", status, secs(inline), firstLine(got.Message)), Misses)
		return fmt.Sprintf("HTTP %d after %s", status, secs(inline))
	}
}

// maxWorkerRuns bounds the worker invocations that finish one baseline.
const maxWorkerRuns = 20

// baselineJob runs the background worker until the baseline accepted by
// the create request is COMPLETE or FAILED, and reports it.
func baselineJob(ctx context.Context, st *localstack.Stack, env *Env, n int, got baselineAnswer, inline time.Duration, name string, row *Row) string {
	inlineWritten := got.written()
	var work time.Duration
	runs := 0
	for runs < maxWorkerRuns && got.Status != "COMPLETE" && got.Status != "FAILED" {
		runs++
		start := time.Now()
		if _, err := st.Invoke(ctx, baselineWorker, scheduler.ScheduledEvent("bench-baseline-jobs", time.Now())); err != nil {
			row.add(name, "completes", fmt.Sprintf("not measured: worker run %d: %v", runs, err), NotMeasured)
			return "not measured"
		}
		work += time.Since(start)
		b, err := findBaseline(ctx, st.WikiURL, got.Number)
		if err != nil {
			row.add(name, "completes", "not measured: "+err.Error(), NotMeasured)
			return "not measured"
		}
		got = *b
	}
	measured := fmt.Sprintf("HTTP 202 FREEZING after %s (%d of %d written in the request), then %s after %d run(s) of %s taking %s (%d written)",
		secs(inline), inlineWritten, n, got.Status, runs, baselineWorker, secs(work), got.written())
	if got.Message != "" {
		measured += ": " + firstLine(got.Message)
	}
	row.add(name, "completes", measured, verdict(got.Status == "COMPLETE" && got.written() == n))
	row.note("Through the API a freeze that does not fit in the request continues in %s, which runs on a schedule (%s); "+
		"the bench invokes it directly, back to back, so a client waits the schedule's interval longer than the times above.",
		baselineWorker, scheduleOf(env, baselineWorker))
	return fmt.Sprintf("202 FREEZING after %s, %s after %d worker run(s) of %s", secs(inline), got.Status, runs, secs(work))
}

// findBaseline reads baseline number of the benchmark's space from the
// list with details.
func findBaseline(ctx context.Context, wikiURL string, number int) (*baselineAnswer, error) {
	body, err := get(ctx, wikiURL+"/rest/reqs/1/baseline/"+baselinebench.Space+"?expand=details", wikiUserToken)
	if err != nil {
		return nil, err
	}
	var list []baselineAnswer
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode the baselines: %w", err)
	}
	for i := range list {
		if list[i].Number == number {
			return &list[i], nil
		}
	}
	return nil, fmt.Errorf("baseline %d is not listed", number)
}

// scheduleOf describes the schedules of function logicalID in template.yaml.
func scheduleOf(env *Env, logicalID string) string {
	for _, f := range env.Template.Functions {
		if f.LogicalID == logicalID && len(f.Schedules) > 0 {
			return "every " + whole(f.Schedules[0].Rate)
		}
	}
	return "no schedule in template.yaml"
}
