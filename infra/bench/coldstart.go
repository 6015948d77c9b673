package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/infra/lambdashim"
	"github.com/reqtrace/reqtrace/infra/localaws"
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
//
// The floor is the init of the smallest Go bootstrap (coldfloor/: the
// aws-lambda-go runtime client and a handler that answers at once), built
// in the run with the flags of `make build` and started under the same
// shim with the same settings, once per round: a round starts the floor,
// then every function once, so that the floor and the functions meet the
// same load of the machine.
func ColdStart(ctx context.Context, env *Env, opts ColdStartOptions, row *Row) error {
	row.Method = fmt.Sprintf("Sizes of %s/<LogicalId>/bootstrap (make build: this machine's %s/%s, CGO_ENABLED=0 -trimpath -tags lambda.norpc "+
		"-ldflags=\"-s -w\"). Init and first answer: %d rounds; each starts the floor (infra/bench/coldfloor, built with the same flags, "+
		"under the same lambdashim settings, invoked once) and the SDK floor (infra/bench/coldfloorsdk: the floor plus the AWS "+
		"configuration and a DynamoDB client, started the same way), then each function in a fresh infra/localstack with that function alone "+
		"(own tables, one page of requirements) and one request through the gateway (Sync: one scheduled-event invocation); times from "+
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
		"starts on the local shim, one function at a time; the ratio is the median over the rounds of that function's init over the "+
		"floor's init of the same round.", "the init of the smallest Go bootstrap (infra/bench/coldfloor: aws-lambda-go's lambda.Start "+
		"with a handler that answers at once, built with the flags of make build) under the same shim, started once per round beside "+
		"the functions' starts.")
	floorBin, floorSize, err := buildColdFloor(ctx, env, coldFloorPackage)
	if err != nil {
		row.note("Floor not measured: %v", err)
	} else {
		defer os.RemoveAll(filepath.Dir(floorBin))
		row.add("floor: bootstrap size ("+runtime.GOARCH+", infra/bench/coldfloor)", "", mb(floorSize), Info)
	}
	// The SDK floor is reported beside the floor, not used for the ratio:
	// it shows how much of the functions' init the SDK's packages take.
	sdkBin, sdkSize, sdkErr := buildColdFloor(ctx, env, coldFloorSDKPackage)
	if sdkErr == nil {
		defer os.RemoveAll(filepath.Dir(sdkBin))
		row.add("SDK floor: bootstrap size ("+runtime.GOARCH+", infra/bench/coldfloorsdk)", "", mb(sdkSize), Info)
	}
	var sdkInits, sdkFirsts Durations
	names := make([]string, 0, len(env.Template.Functions))
	for _, fn := range env.Template.Functions {
		names = append(names, fn.LogicalID)
	}
	inits, firsts, status := map[string]Durations{}, map[string]Durations{}, map[string]string{}
	failed := map[string]error{}
	var floorInits, floorFirsts Durations
	var floorErr error
	if floorBin == "" {
		floorErr = errors.New("not built")
	}
	for range opts.Starts {
		if floorErr == nil {
			init, first, err := coldFloorOnce(ctx, env, floorBin, opts)
			if err != nil {
				floorErr = err
			}
			floorInits, floorFirsts = append(floorInits, init), append(floorFirsts, first)
		}
		if sdkErr == nil {
			init, first, err := coldFloorOnce(ctx, env, sdkBin, opts)
			if err != nil {
				sdkErr = err
			}
			sdkInits, sdkFirsts = append(sdkInits, init), append(sdkFirsts, first)
		}
		for _, fn := range names {
			if failed[fn] != nil {
				continue
			}
			init, first, st, err := coldStartOnce(ctx, env, fn, opts)
			if err != nil {
				failed[fn] = err
				continue
			}
			inits[fn], firsts[fn], status[fn] = append(inits[fn], init), append(firsts[fn], first), st
		}
		if err := ctx.Err(); err != nil {
			break
		}
	}
	if floorErr != nil {
		floorInits = nil
		row.note("Floor not measured: %v", floorErr)
	} else if len(floorInits) > 0 {
		row.add(fmt.Sprintf("floor: init / first answer (median of %d; max init %s)", len(floorInits), ms(floorInits.Max())),
			"", fmt.Sprintf("%s / %s", ms(floorInits.Median()), ms(floorFirsts.Median())), Info)
	}
	if sdkErr != nil {
		sdkInits = nil
		row.note("SDK floor not measured: %v", sdkErr)
	} else if len(sdkInits) > 0 {
		name := fmt.Sprintf("SDK floor: init / first answer (median of %d; max init %s", len(sdkInits), ms(sdkInits.Max()))
		if len(floorInits) > 0 && floorInits.Median() > 0 {
			name += fmt.Sprintf("; %.2f × the floor's median", float64(sdkInits.Median())/float64(floorInits.Median()))
		}
		row.add(name+")", "", fmt.Sprintf("%s / %s", ms(sdkInits.Median()), ms(sdkFirsts.Median())), Info)
		result.SDKFloorMS = ptr(float64(sdkInits.Median()) / float64(time.Millisecond))
	}
	slowest, worst := "", time.Duration(-1)
	var medians Durations
	for _, fn := range names {
		if err := failed[fn]; err != nil {
			row.add(fn+": init / first answer (median)", "init ≤ 50 ms", "not measured: "+err.Error(), NotMeasured)
			continue
		}
		if len(inits[fn]) == 0 {
			continue
		}
		med := inits[fn].Median()
		medians = append(medians, med)
		name := fmt.Sprintf("%s: init / first answer (median of %d; max init %s; %s)", fn, len(inits[fn]), ms(inits[fn].Max()), status[fn])
		if len(floorInits) > 0 && floorInits.Median() > 0 {
			name += fmt.Sprintf("; %.2f × the floor's median", float64(med)/float64(floorInits.Median()))
		}
		row.add(name, "init ≤ 50 ms", fmt.Sprintf("%s / %s", ms(med), ms(firsts[fn].Median())), verdict(med <= maxInit))
		if med > worst {
			slowest, worst = fn, med
		}
	}
	result.LoadAfter = LoadAverage()
	row.Headline = fmt.Sprintf("bootstraps %s (%s)", sizes, verdictOf(row, "size"))
	if slowest == "" {
		result.Rounds = opts.Starts
		return nil
	}
	row.Headline += fmt.Sprintf("; median init %s–%s per function (%s)", ms(slices.Min(medians)), ms(slices.Max(medians)), verdictOf(row, "init"))
	result.Goals = append(result.Goals, Goal{Name: "slowest function's median init (" + slowest + ")", Target: "≤ 50 ms", Measured: ms(worst),
		Verdict: verdict(worst <= maxInit)})
	if len(floorInits) == 0 {
		result.ServiceMS, result.Rounds = ptr(float64(worst)/float64(time.Millisecond)), len(inits[slowest])
		result.Goals = append(result.Goals, Goal{Name: "service / floor", Target: fmt.Sprintf("≤ %.1f", MaxRatio), Measured: "floor not measured",
			Verdict: NotMeasured})
		return nil
	}
	// The rounds pair the slowest function's start with the floor's start
	// of the same round (a function that failed a round is not measured;
	// rounds cut short by the row's time limit pair as far as both went).
	var p Pairs
	for i := range min(len(inits[slowest]), len(floorInits)) {
		p.Add(inits[slowest][i], floorInits[i])
	}
	result.setPairs(p)
	if result.Ratio != nil {
		row.Headline += fmt.Sprintf("; floor %s, slowest (%s) / floor %.2f (%s)", ms(floorInits.Median()), slowest, *result.Ratio,
			verdict(*result.Ratio <= MaxRatio))
	}
	return nil
}

// The floors' main packages: the floor (coldfloor/) and the floor with
// the AWS configuration and a DynamoDB client (coldfloorsdk/).
const (
	coldFloorPackage    = "./infra/bench/coldfloor"
	coldFloorSDKPackage = "./infra/bench/coldfloorsdk"
)

// buildColdFloor builds a floor's bootstrap (main package pkg) as `make
// build` builds a function's, into a temporary directory, and returns its
// path and size.
func buildColdFloor(ctx context.Context, env *Env, pkg string) (string, int64, error) {
	dir, err := os.MkdirTemp("", "reqtrace-bench-coldfloor-")
	if err != nil {
		return "", 0, err
	}
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = env.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", 0, fmt.Errorf("go build %s: %w: %.300s", pkg, err, b)
	}
	fi, err := os.Stat(out)
	if err != nil {
		os.RemoveAll(dir)
		return "", 0, err
	}
	return out, fi.Size(), nil
}

// coldFloorOnce starts the floor's bootstrap under the shim with the
// settings localstack gives a function (the stand-ins' AWS variables,
// the Globals' timeout and memory of template.yaml, the same concurrency
// and output), invokes it once and returns its init and first-answer times.
func coldFloorOnce(ctx context.Context, env *Env, bootstrap string, opts ColdStartOptions) (init, first time.Duration, err error) {
	out := opts.FunctionLog
	if out == nil {
		out = io.Discard
	}
	r, err := lambdashim.Start(ctx, lambdashim.Function{
		Name: "ColdFloor", Bootstrap: bootstrap, Env: localaws.Environ(env.DynamoDBEndpoint, env.SQSEndpoint),
		Timeout: 29 * time.Second, MemoryMB: 512, MaxConcurrency: 8, Stdout: out, Stderr: out,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	if _, err := r.Invoke(ctx, []byte("{}")); err != nil {
		return 0, 0, fmt.Errorf("invoke the floor: %w", err)
	}
	procs := r.Stats().Processes
	if len(procs) == 0 {
		return 0, 0, errors.New("the floor started no process")
	}
	return procs[0].InitDuration(), procs[0].ColdStart(), nil
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
