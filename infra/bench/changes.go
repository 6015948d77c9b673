package bench

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/search"
)

// ChangesSpace is the space the change-analysis measurement fills.
const ChangesSpace = "CHANGES"

// Changes measures the diff of a baseline of n requirements with the
// current state (1% changed) and the CSV exports of that diff and of a
// search of all n, on tables of its own: in process with diff.Service on
// wikitable.SearchStore (items read counted), then through the local stack
// (the real WikiRequirements bootstrap, the export bucket in moto), where
// the bootstrap's peak resident memory is read from /proc.
func Changes(ctx context.Context, env *Env, n int, functionLog io.Writer, row *Row) error {
	row.Method = fmt.Sprintf("%d current ACTIVE requirements of space %s (about 600 bytes each: text, a property, a dependency, an issue "+
		"link) and baseline 1 of the same requirements with one in a hundred of another text, written as rows (not through page "+
		"saves). In process: diff.Service with shared/dynamo/wikitable.SearchStore on DynamoDB Local, from=1 to=current, items "+
		"read counted on the client. Through the local stack: GET /rest/reqs/1/diff/%s?from=1&to=current, the same with "+
		"format=csv, and GET /rest/reqs/1/requirement2/%s?spaceKey=%s&format=csv (every requirement), each followed to its "+
		"download in moto's S3, through the local gateway and the real WikiRequirements bootstrap; peak memory is the "+
		"bootstrap process's VmHWM after each.", n, ChangesSpace, ChangesSpace, ChangesSpace, ChangesSpace)
	res, err := env.Resources(ctx, "changes")
	if err != nil {
		return err
	}
	table := res.Tables["WikiTable"]
	seedStart := time.Now()
	if err := seedChanges(ctx, env, table, n); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	row.note("Seeding %d rows and %d archived copies took %s (not counted).", n, n, secs(time.Since(seedStart)))

	counted := env.NewCounted()
	rec := NewRecorder(counted.API)
	store := wikitable.NewSearchStore(rec, table)
	svc := diff.New(diff.Deps{Store: store, Matcher: search.New(search.Deps{Store: store, Settings: store})})
	stop, err := startProfile(env, "diff")
	if err != nil {
		return err
	}
	result := row.result("diff_100k", fmt.Sprintf("diff.Service.Diff of %d vs %d requirements (1%% changed), first page of 50 and "+
		"the summary, in process, one round.", n, n), diffFloor)
	rec.Start()
	cpu := env.cpu()
	used := cpu.now()
	start := time.Now()
	got, err := svc.Diff(ctx, diff.Request{Tenant: Tenant, Space: ChangesSpace, From: 1, To: diff.Current, Limit: 50})
	took := time.Since(start)
	selfCPU := cpu.since(used).self
	recorded := rec.Stop()
	stop()
	if err != nil {
		return fmt.Errorf("diff in process: %w", err)
	}
	// The floor: each side's key ranges read once, as the diff read them,
	// without the one-row reads of each side's last key.
	var ranges []*dynamodb.QueryInput
	for _, q := range recorded.Queries {
		if q.Limit == nil || *q.Limit > 1 {
			ranges = append(ranges, q)
		}
	}
	floor, err := queryFloor(ctx, env.DynamoDB(), ranges)
	if err != nil {
		return err
	}
	result.readRound(took, floor, counted, selfCPU, 2*n, "requirement and side")
	changed := n / 100
	ok := got.Summary.Modified == changed && got.Summary.Unchanged == n-changed && got.Summary.Added+got.Summary.Removed == 0
	row.add(fmt.Sprintf("diff of %d vs %d requirements (1%% changed) in process: summary right", n, n), "completes, no cap",
		fmt.Sprintf("%d modified, %d unchanged", got.Summary.Modified, got.Summary.Unchanged), verdict(ok))
	// Each row once; besides, the last key of each side (one row each) and
	// a row whose key is exactly a cut between segments (read by both
	// segments' Queries, kept by one).
	perReq := float64(counted.API.Items()) / float64(2*n)
	overhead := 2 + 2*(got.Segments-1)
	row.add("items read per requirement per side (in process)", "≤ 1, + 1 a side for its last key and ≤ 1 a cut",
		fmt.Sprintf("%.3f (%d items: %d + %d rows in %d key ranges; calls %s)", perReq, counted.API.Items(), got.ReadFrom, got.ReadTo,
			got.Segments, formatCalls(counted.Calls.Counts())), verdict(counted.API.Items() <= 2*n+overhead))
	row.add("diff time in process", "", secs(took), Info)
	row.Headline = fmt.Sprintf("diff of %d vs %d: %s in process, %.3f items read per requirement and side", n, n, secs(took), perReq)

	searchSvc := search.New(search.Deps{Store: store, Settings: store})
	if err := exportAndCoverage(ctx, env, counted, rec, searchSvc, n, row); err != nil {
		return err
	}

	st, err := startStack(ctx, env, "changes", []string{"WikiRequirements"}, functionLog)
	if err != nil {
		row.note("Not measured through the local stack: %v", err)
		return nil
	}
	defer st.Close()
	peak := func() string {
		best := 0
		for _, p := range st.Runners["WikiRequirements"].Stats().Processes {
			if p.Exited.IsZero() {
				best = max(best, peakKiB(p.PID))
			}
		}
		return fmt.Sprintf("%.1f MB", float64(best)/1024)
	}
	client := &http.Client{Timeout: 2 * time.Minute, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		r.Header.Del("Authorization") // the download is presigned, as curl -L and requests send it
		return nil
	}}
	get := func(path string) (int, []byte, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.WikiURL+path, nil)
		if err != nil {
			return 0, nil, 0, err
		}
		req.Header.Set("Authorization", "Bearer demo-wiki-user")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, time.Since(start), err
	}
	code, body, took, err := get("/rest/reqs/1/diff/" + ChangesSpace + "?from=1&to=current")
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("diff through the API: %d %v %.200s", code, err, body)
	}
	want := fmt.Sprintf(`"modified":%d,"unchanged":%d`, changed, n-changed)
	row.add("diff through the API (first page of 50 and the summary)", "within the request deadline (29 s)",
		fmt.Sprintf("%s; peak memory of the function %s", secs(took), peak()), verdict(strings.Contains(string(body), want) && took < 29*time.Second))
	for _, ex := range []struct{ name, path string }{
		{"export of the diff (CSV)", "/rest/reqs/1/diff/" + ChangesSpace + "?from=1&to=current&format=csv"},
		{fmt.Sprintf("export of a search of all %d requirements (CSV)", n), "/rest/reqs/1/requirement2/" + ChangesSpace + "?spaceKey=" + ChangesSpace + "&format=csv"},
		{fmt.Sprintf("export of the coverage of all %d requirements, columns jira and from (CSV)", n), "/rest/reqs/1/coverage/" + ChangesSpace + "?columns=jira,from&format=csv"},
	} {
		code, body, took, err := get(ex.path)
		if err != nil || code != http.StatusOK {
			row.add(ex.name, "one download, any size", fmt.Sprintf("failed: %d %v %.200s", code, err, body), Misses)
			continue
		}
		records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
		rows := len(records) - 1
		if err != nil {
			rows = -1
		}
		row.add(ex.name, "one download, any size, within the request deadline",
			fmt.Sprintf("%d rows, %.1f MB in %s (request and download); peak memory of the function %s", rows,
				float64(len(body))/(1<<20), secs(took), peak()), verdict(rows > 0 && took < 29*time.Second))
	}
	return nil
}

// seedChanges writes httpapitest.ChangedRows of ChangesSpace (n current
// rows, their copies in baseline 1, one in a hundred with another text),
// then commits baseline 1.
func seedChanges(ctx context.Context, env *Env, table string, n int) error {
	reqs := wikitable.NewRequirementStore(env.DynamoDB(), table)
	rows := httpapitest.ChangedRows(ChangesSpace, n)
	const batch = 10_000
	for from := 0; from < len(rows); from += batch {
		if err := reqs.Put(ctx, Tenant, rows[from:min(from+batch, len(rows))]); err != nil {
			return err
		}
	}
	bl := wikitable.NewBaselineStore(env.DynamoDB(), table)
	job := &baseline.Job{Tenant: Tenant, Owner: "bench", Baseline: baseline.Baseline{
		SpaceKey: ChangesSpace, Number: 1, Name: "bench", CEO: "1", Instant: true, CreatedAt: time.Now()}}
	if err := bl.Begin(ctx, job); err != nil {
		return err
	}
	return bl.Commit(ctx, job, false)
}

// peakKiB is the peak resident memory (VmHWM) of process pid in KiB, 0
// when it cannot be read.
func peakKiB(pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	return 0
}

// diffFloor says what a diff's floor is.
const diffFloor = "each side's items read once, right after the diff: the diff's own Query calls (recorded: the pages of " +
	"its segments of the baseline's and of the space's partitions) sent again with their key conditions, limits and " +
	"start keys but without filter or projection, 8 at a time as the diff reads its segments; the diff's one-row reads " +
	"of each side's last key are left out. The floor thus has the diff's read pattern; the ratio is the diff's own " +
	"work (merge, compare, page) over the reads. " +
	"CPU per requirement is per requirement and side."

// readFloor says what the floor of an export or a matrix is.
const readFloor = "the space's items read once, right after the service: its own Query calls (recorded: the pages of the " +
	"space's partition in key order) sent again with their key conditions, limits and start keys but without filter or " +
	"projection, 8 at a time, as the service reads its key ranges (search.Service.Each cuts the space after its first page " +
	"into key ranges read 8 at a time; its one-row read of the space's last key is part of the floor too)."

// exportAndCoverage measures, in process on the seeded space, the CSV
// export of a search of every requirement (the rows written to a byte
// counter as shared/export writes them to S3) and the coverage matrix of
// every requirement with two columns (the counts of all and the first page
// of 500), each against its floor: the rows export_100k and coverage_100k.
func exportAndCoverage(ctx context.Context, env *Env, counted *Counted, rec *Recorder, svc *search.Service, n int, row *Row) error {
	cols, err := coverage.ParseColumns("jira,from")
	if err != nil {
		return err
	}
	var csvBytes countingWriter
	var matrix *coverage.Result
	for _, m := range []struct {
		name, what string
		run        func(ctx context.Context) error
	}{
		{"export_100k", fmt.Sprintf("CSV export of a search of all %d requirements of the space (search.Table written by "+
			"shared/export.WriteCSV, to a byte counter instead of S3), in process, one round.", n),
			func(ctx context.Context) error {
				return export.WriteCSV(ctx, &csvBytes, search.Table(svc, search.Request{Tenant: Tenant, PathSpace: ChangesSpace, Space: ChangesSpace}))
			}},
		{"coverage_100k", fmt.Sprintf("coverage.Service.Coverage of all %d requirements of the space, columns jira and from "+
			"(the counts of the whole matrix and its first page of 500), in process, one round.", n),
			func(ctx context.Context) (err error) {
				matrix, err = coverage.New(svc).Coverage(ctx, coverage.Request{Tenant: Tenant, Space: ChangesSpace, Columns: cols, Limit: 500})
				return err
			}},
	} {
		result := row.result(m.name, m.what, readFloor)
		counted.Reset()
		rec.Start()
		cpu := env.cpu()
		used := cpu.now()
		var took time.Duration
		var runErr error
		heap := httpapitest.PeakHeap(func() {
			start := time.Now()
			runErr = m.run(ctx)
			took = time.Since(start)
		})
		selfCPU := cpu.since(used).self
		recorded := rec.Stop()
		if runErr != nil {
			return fmt.Errorf("%s: %w", m.name, runErr)
		}
		floor, err := queryFloor(ctx, env.DynamoDB(), recorded.Queries)
		if err != nil {
			return err
		}
		result.readRound(took, floor, counted, selfCPU, n, "requirement")
		items := counted.API.Items()
		// Each row once; besides, the range's last key (one row, read
		// before it is cut into segments) and a row whose key is exactly
		// a cut (read by both segments' Queries, kept by one).
		overhead := 1 + max(svc.Segments-1, 0)
		result.Goals = append(result.Goals, Goal{Name: "items read per requirement", Target: "≤ 1, + 1 for the last key and ≤ 1 a cut",
			Measured: fmt.Sprintf("%.3f (%d items)", float64(items)/float64(n), items), Verdict: verdict(items <= n+overhead)},
			Goal{Name: "heap peak in process (above the heap before; a bound of what the function holds)", Target: "bounded, whatever n",
				Measured: fmt.Sprintf("%.1f MB", float64(heap)/(1<<20)), Verdict: Info})
		row.add(m.name+" in process", "", fmt.Sprintf("%s, %.3f items read per requirement, heap peak +%.1f MB", secs(took),
			float64(items)/float64(n), float64(heap)/(1<<20)), Info)
	}
	if csvBytes.n == 0 || matrix == nil || matrix.Total != n {
		return fmt.Errorf("export of %d bytes, matrix of %v rows: want a CSV and %d rows", csvBytes.n, matrixTotal(matrix), n)
	}
	row.note("The in-process export wrote %.1f MB of CSV; the matrix counted %d requirements (jira %d/%d, from %d/%d).",
		float64(csvBytes.n)/(1<<20), matrix.Total, matrix.Columns[0].Covered, n, matrix.Columns[1].Covered, n)
	return nil
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// matrixTotal is m's row count, -1 without a matrix.
func matrixTotal(m *coverage.Result) int {
	if m == nil {
		return -1
	}
	return m.Total
}

// readRound fills r from one round of a read of n units (per, "requirement"
// or "requirement and side"): its time against the floor's, the items
// read and calls of both, and the CPU per unit.
func (r *Result) readRound(took time.Duration, floor FloorRound, counted *Counted, cpu time.Duration, n int, per string) {
	var pairs Pairs
	pairs.Add(took, floor.Took)
	r.setPairs(pairs)
	r.Per = per
	r.ItemsReadPerResult = &Amplification{Service: round3(float64(counted.API.Items()) / float64(n)), Floor: round3(float64(floor.Items) / float64(n))}
	r.Calls = &Calls{Service: float64(counted.Calls.Total()), Floor: float64(floor.Calls), ServiceByOp: counted.Calls.Counts()}
	r.CPUMSPerRequirement = ptr(float64(cpu) / float64(time.Millisecond) / float64(n))
}
