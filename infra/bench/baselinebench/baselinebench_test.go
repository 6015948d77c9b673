package baselinebench_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/reqtrace/reqtrace/infra/bench/baselinebench"
	"github.com/reqtrace/reqtrace/infra/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestFreeze runs the benchmark with 2,000 requirements, so that `make
// test` keeps the hook working; it asserts the call counts, not times.
func TestFreeze(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	res, err := baselinebench.Freeze(t.Context(), env.DynamoDB, env.WikiTable, "bench", 2000)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	// TransactWriteItems: the number with the job, and the commit;
	// UpdateItem: one progress save after the first of the two slices of
	// 1,000.
	if res.BatchWrites != 2000/25 || res.Calls["TransactWriteItems"] != 2 || res.Calls["UpdateItem"] != 1 {
		t.Errorf("calls %v", res.Calls)
	}
}

// BenchmarkFreeze measures a freeze of REQTRACE_BENCH_BASELINE
// requirements (100,000 when unset) on DynamoDB Local, once per
// iteration; run it with
//
//	REQTRACE_BENCH_BASELINE=100000 go test -run XXX -bench Freeze -benchtime 1x ./infra/bench/baselinebench
func BenchmarkFreeze(b *testing.B) {
	n := 100_000
	if s := os.Getenv("REQTRACE_BENCH_BASELINE"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("REQTRACE_BENCH_BASELINE=%q: want a positive integer", s)
		}
		n = v
	}
	for range b.N {
		env := testenv.AWS(b)
		res, err := baselinebench.Freeze(b.Context(), env.DynamoDB, env.WikiTable, "bench", n)
		if err != nil {
			b.Fatal(err)
		}
		b.Log(res)
		b.ReportMetric(res.Freeze.Seconds(), "freeze-s")
		b.ReportMetric(float64(res.BatchWrites), "batchwrites")
	}
}
