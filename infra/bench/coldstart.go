package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/infra/scheduler"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
)

// ColdStartOptions size the cold-start measurement.
type ColdStartOptions struct {
	// Starts is the number of fresh starts of each function.
	Starts int
	// ARM64 also builds the largest function for linux/arm64 with the SAM
	// build flags of the Makefile and reports its size.
	ARM64 bool
	// FunctionLog receives the functions' output (nil: discarded).
	FunctionLog io.Writer
}

// maxBootstrap is the size target of the performance targets (15 MB).
const maxBootstrap = 15_000_000

// maxInit is the init target of the performance targets.
const maxInit = 50 * time.Millisecond

// firstRequest is the request that wakes one HTTP function: a cheap read
// that authenticates (one AuthTable read) and reads the WikiTable where the
// function does.
type firstRequest struct {
	tracker bool // the tracker API, else the wiki API
	path    string
	token   string
}

// firstRequests by LogicalId; the data comes from coldSeed.
var firstRequests = map[string]firstRequest{
	"WikiRequirements": {path: "/rest/reqs/1/requirement2/" + Space + "/" + seedKey(1), token: wikiUserToken},
	"WikiContent":      {path: "/rest/reqs/1/content/" + seedPageID(0), token: wikiUserToken},
	// The web pages authenticate by session cookie: the login form wakes
	// the function (its templates parsed at init) without one.
	"WikiWeb":            {path: "/login"},
	"WikiBaselines":      {path: "/rest/reqs/1/baseline/" + Space, token: wikiUserToken},
	"WikiIntegrations":   {path: "/rest/reqs/1/integration", token: "demo-wiki-admin"},
	"TrackerApiFunction": {tracker: true, path: "/rest/reqs/1/api"},
	"TrackerLinks":       {tracker: true, path: "/rest/reqs/1/issuelinks/PROJ-1", token: "demo-tracker-user"},
}

// ColdStart reports, for every function of template.yaml, the size of its
// bootstrap in BuildDir and the time from process start to the end of init
// (its first poll of the Runtime API) and to its first answer, over fresh
// starts of the local stack with that function alone (so that the 2 cores
// of this machine are not shared with the other bootstraps' inits). HTTP
// functions get one request through the gateway; other functions (Sync)
// one invocation.
func ColdStart(ctx context.Context, env *Env, opts ColdStartOptions, row *Row) error {
	row.Method = fmt.Sprintf("Sizes of %s/<LogicalId>/bootstrap (make build: this machine's %s/%s, CGO_ENABLED=0 -trimpath -tags lambda.norpc "+
		"-ldflags=\"-s -w\"). Init and first answer: %d fresh starts of infra/localstack with one function at a time (own tables, "+
		"one page of requirements), then one request through the gateway (Sync: one scheduled-event invocation); times from "+
		"lambdashim Runner.Stats (process start → first poll of /runtime/invocation/next, process start → first answer).",
		relPath(env.Root, env.BuildDir), runtime.GOOS, runtime.GOARCH, opts.Starts)
	sizes, err := coldSizes(ctx, env, opts, row)
	if err != nil {
		return err
	}
	if err := coldSeed(ctx, env); err != nil {
		return err
	}
	result := row.result("cold_start", "the slowest function's median init (process start → first poll of the Runtime API) over fresh "+
		"starts on the local shim, one function at a time.", "none measured: no minimum a Go bootstrap could be set against is "+
		"timed here (a hook: the init of an empty provided.al2023 bootstrap under the same shim would be it), so the row has no ratio.")
	var inits Durations
	defer func() {
		result.LoadAfter = LoadAverage()
		result.Rounds = opts.Starts
		if len(inits) == 0 {
			return
		}
		worst := inits.Max()
		result.ServiceMS = ptr(float64(worst) / float64(time.Millisecond))
		result.Goals = append(result.Goals, Goal{Name: "slowest function's median init", Target: "≤ 50 ms", Measured: ms(worst),
			Verdict: verdict(worst <= 50*time.Millisecond)},
			Goal{Name: "service / floor", Target: fmt.Sprintf("≤ %.1f", MaxRatio), Measured: "no floor", Verdict: NotMeasured})
	}()
	for _, fn := range env.Template.Functions {
		init, err := coldStarts(ctx, env, fn.LogicalID, opts, row)
		if err != nil {
			row.add(fn.LogicalID+": init / first answer (median)", "init ≤ 50 ms", "not measured: "+err.Error(), NotMeasured)
			continue
		}
		inits = append(inits, init)
	}
	row.Headline = fmt.Sprintf("bootstraps %s (%s)", sizes, verdictOf(row, "size"))
	if len(inits) > 0 {
		row.Headline += fmt.Sprintf("; median init %s–%s per function (%s)", ms(slices.Min(inits)), ms(slices.Max(inits)), verdictOf(row, "init"))
	}
	return nil
}

// verdictOf is Misses if a metric of row whose name contains word misses,
// else Meets.
func verdictOf(row *Row, word string) Verdict {
	for _, m := range row.Metrics {
		if strings.Contains(m.Name, word) && m.Verdict == Misses {
			return Misses
		}
	}
	return Meets
}

// coldPrefix names the cold-start measurement's tables.
const coldPrefix = "cold"

// coldSeed stores one page of requirements in the cold-start tables, so
// that the first requests read real items.
func coldSeed(ctx context.Context, env *Env) error {
	res, err := env.Resources(ctx, coldPrefix)
	if err != nil {
		return err
	}
	return Seed(ctx, wikitable.NewWikiStore(env.DynamoDB(), res.Tables["WikiTable"]), 0, seedPerPage)
}

// coldSizes reports the size of every bootstrap and, with opts.ARM64, of
// the largest one built for linux/arm64; it returns a summary of them.
func coldSizes(ctx context.Context, env *Env, opts ColdStartOptions, row *Row) (string, error) {
	largest, smallest := int64(0), int64(math.MaxInt64)
	largestFn := ""
	for _, fn := range env.Template.Functions {
		fi, err := os.Stat(filepath.Join(env.BuildDir, fn.LogicalID, "bootstrap"))
		if err != nil {
			row.add(fn.LogicalID+": bootstrap size", "≤ 15 MB", "not measured: no bootstrap (run make build)", NotMeasured)
			continue
		}
		row.add(fn.LogicalID+": bootstrap size ("+runtime.GOARCH+")", "≤ 15 MB", mb(fi.Size()), verdict(fi.Size() <= maxBootstrap))
		if fi.Size() > largest {
			largestFn, largest = fn.LogicalID, fi.Size()
		}
		smallest = min(smallest, fi.Size())
	}
	if largestFn == "" {
		return "not measured", nil
	}
	summary := fmt.Sprintf("%s–%s %s", mb(smallest), mb(largest), runtime.GOARCH)
	if !opts.ARM64 {
		return summary, nil
	}
	name := largestFn + ": bootstrap size (linux/arm64, SAM flags; the largest " + runtime.GOARCH + " build)"
	size, elapsed, err := buildARM64(ctx, env, largestFn)
	if err != nil {
		row.add(name, "≤ 15 MB", "not measured: "+err.Error(), NotMeasured)
		return summary, nil
	}
	row.add(name, "≤ 15 MB", fmt.Sprintf("%s (built in %s)", mb(size), secs(elapsed)), verdict(size <= maxBootstrap))
	return fmt.Sprintf("%s, %s arm64", summary, mb(size)), nil
}

// functionDir is functions/<dir> of a LogicalId, as the Makefile derives
// it: lower case, a trailing "function" removed.
func functionDir(logicalID string) string {
	return filepath.Join("functions", strings.TrimSuffix(strings.ToLower(logicalID), "function"))
}

// buildARM64 builds a function as `make build-<LogicalId>` does for SAM and
// returns the size of its bootstrap.
func buildARM64(ctx context.Context, env *Env, logicalID string) (int64, time.Duration, error) {
	dir, err := os.MkdirTemp("", "reqtrace-bench-arm64-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags=-s -w",
		"-o", out, "./"+functionDir(logicalID))
	cmd.Dir = env.Root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("go build: %w: %.300s", err, b)
	}
	elapsed := time.Since(start)
	fi, err := os.Stat(out)
	if err != nil {
		return 0, 0, err
	}
	return fi.Size(), elapsed, nil
}

// coldStarts measures opts.Starts fresh starts of one function and
// returns its median init.
func coldStarts(ctx context.Context, env *Env, fn string, opts ColdStartOptions, row *Row) (time.Duration, error) {
	var inits, firsts Durations
	status := ""
	for range opts.Starts {
		init, first, st, err := coldStartOnce(ctx, env, fn, opts)
		if err != nil {
			return 0, err
		}
		inits, firsts, status = append(inits, init), append(firsts, first), st
	}
	med := inits.Median()
	row.add(fmt.Sprintf("%s: init / first answer (median of %d; max init %s; %s)", fn, len(inits), ms(inits.Max()), status),
		"init ≤ 50 ms", fmt.Sprintf("%s / %s", ms(med), ms(firsts.Median())), verdict(med <= maxInit))
	return med, nil
}

// coldStartOnce starts a local stack with fn alone, wakes it once and
// returns its first process's init and first-answer times.
func coldStartOnce(ctx context.Context, env *Env, fn string, opts ColdStartOptions) (init, first time.Duration, status string, err error) {
	st, err := startStack(ctx, env, coldPrefix, []string{fn}, opts.FunctionLog)
	if err != nil {
		return 0, 0, "", err
	}
	defer st.Close()
	if req, ok := firstRequests[fn]; ok {
		base := st.WikiURL
		if req.tracker {
			base = st.TrackerURL
		}
		code, body, err := do(ctx, http.MethodGet, base+req.path, req.token, nil)
		if err != nil {
			return 0, 0, "", err
		}
		if code >= 500 {
			return 0, 0, "", fmt.Errorf("GET %s answered %d: %.200s", req.path, code, body)
		}
		status = fmt.Sprintf("GET %s → %d", req.path, code)
	} else {
		if _, err := st.Invoke(ctx, fn, scheduler.ScheduledEvent("bench", time.Now())); err != nil {
			return 0, 0, "", fmt.Errorf("invoke: %w", err)
		}
		status = "one scheduled event"
		if fn == "Sync" {
			status += "; its first answer includes the run's 1 s long poll of the empty queue"
		}
	}
	r := st.Runners[fn]
	if r == nil {
		return 0, 0, "", fmt.Errorf("the stack did not start %s", fn)
	}
	procs := r.Stats().Processes
	if len(procs) == 0 {
		return 0, 0, "", fmt.Errorf("%s started no process", fn)
	}
	return procs[0].InitDuration(), procs[0].ColdStart(), status, nil
}

// relPath is path relative to root when it lies below it.
func relPath(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
