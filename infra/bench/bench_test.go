package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
)

func TestPercentileAndMedian(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) Durations {
		d := make(Durations, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	tests := []struct {
		name          string
		in            Durations
		p             float64
		wantP, wantMd time.Duration
	}{
		{"empty", nil, 95, 0, 0},
		{"one", ms(7), 50, 7 * time.Millisecond, 7 * time.Millisecond},
		{"unsorted odd", ms(9, 1, 5), 50, 5 * time.Millisecond, 5 * time.Millisecond},
		{"even median is the mean of the middle two", ms(4, 1, 3, 2), 50, 2 * time.Millisecond, 2500 * time.Microsecond},
		// Nearest rank: p95 of 30 values is the 29th smallest.
		{"p95 of 30", ms(30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 95,
			29 * time.Millisecond, 15500 * time.Microsecond},
		{"p100 is the max", ms(3, 8, 1), 100, 8 * time.Millisecond, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Percentile(tt.p); got != tt.wantP {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.wantP)
			}
			if got := tt.in.Median(); got != tt.wantMd {
				t.Errorf("Median = %v, want %v", got, tt.wantMd)
			}
		})
	}
}

func TestRowVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		verdicts []Verdict
		err      error
		want     Verdict
	}{
		{"nothing measured", nil, nil, NotMeasured},
		{"only figures without target", []Verdict{Info}, nil, NotMeasured},
		{"all meet", []Verdict{Meets, Info, Meets}, nil, Meets},
		{"one miss wins", []Verdict{Meets, Misses, NotMeasured}, nil, Misses},
		{"partly measured still meets", []Verdict{Meets, NotMeasured}, nil, Meets},
		{"an error is not measured", []Verdict{Meets}, errors.New("boom"), NotMeasured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Row{Err: tt.err}
			for _, v := range tt.verdicts {
				r.add("m", "", "", v)
			}
			if got := r.Verdict(); got != tt.want {
				t.Errorf("Verdict() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMeasureRecoversAndBounds(t *testing.T) {
	t.Parallel()
	r := &Row{}
	Measure(t.Context(), r, time.Minute, func(ctx context.Context, row *Row) error { panic("broken service") })
	if r.Err == nil || !strings.Contains(r.Err.Error(), "broken service") {
		t.Errorf("Err = %v, want the panic", r.Err)
	}
	r = &Row{}
	Measure(t.Context(), r, time.Millisecond, func(ctx context.Context, row *Row) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("Err = %v, want the limit's deadline", r.Err)
	}
}

func TestReportSummary(t *testing.T) {
	t.Parallel()
	row := &Row{What: "GET requirement", Target: "1 read", Anchor: "one round trip"}
	row.add("calls", "exactly 1", "1 | 2", Meets)
	rep := &Report{Command: "make bench", Rows: []*Row{row}}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	if want := "| GET requirement | 1 read | one round trip | calls: 1 \\| 2 (meets) | meets |"; !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, b.String())
	}
}

func TestPairsRatioAndSpread(t *testing.T) {
	t.Parallel()
	d := func(v ...int) Durations {
		out := make(Durations, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	// Service and floor swing together (a loaded machine): the per-pair
	// ratios stay 2 while the times spread.
	p := Pairs{Service: d(20, 40, 200, 60), Floor: d(10, 20, 100, 30)}
	if got := p.Ratios(); len(got) != 4 || got[0] != 2 || got[2] != 2 {
		t.Errorf("Ratios = %v, want 2 each", got)
	}
	r := newResult("page_save", "w", "f")
	r.setPairs(p)
	if r.ServiceMS == nil || *r.ServiceMS != 50 || *r.FloorMS != 25 || *r.Ratio != 2 {
		t.Errorf("service %v floor %v ratio %v, want medians 50, 25 and ratio 2", deref(r.ServiceMS), deref(r.FloorMS), deref(r.Ratio))
	}
	if s := *r.Spread.ServiceMS; s.P25 != 20 || s.P75 != 60 {
		t.Errorf("service spread %+v, want p25 20 and p75 60 by nearest rank", s)
	}
	if s := *r.Spread.Ratio; s.P25 != 2 || s.P75 != 2 {
		t.Errorf("ratio spread %+v, want 2–2", s)
	}
	if r.Rounds != 4 || r.Verdict() != Misses {
		t.Errorf("rounds %d verdict %s, want 4 and misses (ratio 2 > %.1f)", r.Rounds, r.Verdict(), MaxRatio)
	}

	// The median of the per-pair ratios, not the ratio of the medians.
	p = Pairs{Service: d(10, 30, 12), Floor: d(10, 10, 10)}
	r = newResult("get_requirement", "w", "f")
	r.setPairs(p)
	if *r.Ratio != 1.2 || r.Verdict() != Meets {
		t.Errorf("ratio %v verdict %s, want 1.2 (median of 1, 3, 1.2) and meets", *r.Ratio, r.Verdict())
	}

	// A floor of 0 gives no ratio; no rounds measure nothing.
	r = newResult("x", "w", "f")
	r.setPairs(Pairs{Service: d(5), Floor: d(0)})
	if r.Ratio != nil || r.Verdict() != NotMeasured {
		t.Errorf("floor 0: ratio %v verdict %s", deref(r.Ratio), r.Verdict())
	}
	r = newResult("x", "w", "f")
	r.setPairs(Pairs{})
	if r.ServiceMS != nil || r.Verdict() != NotMeasured {
		t.Errorf("no rounds: service %v verdict %s", deref(r.ServiceMS), r.Verdict())
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestMedianAndQuantile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in           []float64
		md, p25, p75 float64
	}{
		{nil, 0, 0, 0},
		{[]float64{3}, 3, 3, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 3},
		{[]float64{5, 1, 4, 2, 3}, 3, 2, 4},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.md {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.md)
		}
		if got := percentile(tt.in, 25); got != tt.p25 {
			t.Errorf("p25(%v) = %v, want %v", tt.in, got, tt.p25)
		}
		if got := percentile(tt.in, 75); got != tt.p75 {
			t.Errorf("p75(%v) = %v, want %v", tt.in, got, tt.p75)
		}
	}
}

// The JSON has one object per row with the fields of the row names, every
// required name even when unmeasured, and the Markdown is rendered from
// that JSON alone.
func TestReportJSONIsTheSourceOfTheMarkdown(t *testing.T) {
	t.Parallel()
	row := &Row{ID: "page-save", What: "page save", Target: "t", Anchor: "a"}
	res := row.result("page_save", "saves", "BatchWriteItem of the items written")
	res.setPairs(Pairs{Service: Durations{30 * time.Millisecond}, Floor: Durations{20 * time.Millisecond}})
	res.Per = "requirement"
	res.ItemsWrittenPerRequirement = &Amplification{Service: 3.5, Floor: 3}
	res.Calls = &Calls{Service: 40, Floor: 30}
	res.CPUMSPerRequirement = ptr(0.25)
	res.FloorCPUMSPerRequirement = ptr(0.125)
	res.Goals = append(res.Goals, Goal{Name: "cpu", Target: "≤ 0.1 ms", Measured: "0.250 ms", Verdict: Misses})
	failed := &Row{ID: "search", What: "search"}
	failed.result("search_property", "s", "f")
	Measure(t.Context(), failed, time.Minute, func(context.Context, *Row) error { return errors.New("stand-in died") })
	cold := &Row{ID: "cold-start", What: "cold start"}
	cr := cold.result("cold_start", "init", "the smallest bootstrap")
	cr.setPairs(Pairs{Service: Durations{36 * time.Millisecond}, Floor: Durations{12 * time.Millisecond}})
	cr.SDKFloorMS = ptr(24)
	rep := &Report{Command: "make bench", Rows: []*Row{row, failed, cold}, Results: Results([]*Row{row, failed, cold})}

	doc, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(doc, &decoded); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, r := range decoded.Rows {
		byName[r["name"].(string)] = r
	}
	for _, name := range RowNames {
		if byName[name] == nil {
			t.Errorf("JSON lacks row %s", name)
		}
	}
	ps := byName["page_save"]
	for _, field := range []string{"service_ms", "floor_ms", "ratio", "spread", "items_written_per_requirement", "calls",
		"cpu_ms_per_requirement", "floor_cpu_ms_per_requirement", "load_before", "load_after"} {
		if _, ok := ps[field]; !ok {
			t.Errorf("page_save lacks %s: %v", field, ps)
		}
	}
	if ps["ratio"] != 1.5 || ps["service_ms"] != 30.0 {
		t.Errorf("page_save ratio %v service %v, want 1.5 and 30", ps["ratio"], ps["service_ms"])
	}
	if cs := byName["cold_start"]; cs["sdk_floor_ms"] != 24.0 {
		t.Errorf("cold_start %v, want sdk_floor_ms 24", cs)
	}
	if sp := byName["search_property"]; sp["error"] != "stand-in died" || sp["ratio"] != nil {
		t.Errorf("search_property %v, want the row's error and no ratio", sp)
	}

	var md strings.Builder
	if err := Render(doc, &md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| page_save | 30.0 (30.0–30.0) | 20.0 (20.0–20.0) | 1.50 (1.50–1.50) | 1 | 3.50 / 3.00 written per requirement | 40.0 / 30.0 | 0.250 (floor 0.125) |",
		"| search_property | — | — | — | 0 |", "not measured: stand-in died", "**Not measured:** stand-in died",
		"same rounds: 24.0 ms median init, 2.00 × the floor; the service's median over it 1.50.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
	// Rendering the same JSON twice gives the same Markdown: one source.
	var again strings.Builder
	if err := Render(doc, &again); err != nil || again.String() != out {
		t.Errorf("rendering is not a function of the JSON (err %v)", err)
	}
}

func TestRecorderKeepsDistinctWritesAndRemapsTenant(t *testing.T) {
	t.Parallel()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	item := func(pk, sk, body string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk), "gsi1pk": s("T#demo#CUR"), "body": s(body)}
	}
	rec := NewRecorder(nopAPI{})
	ctx := t.Context()
	table := "t"
	put := func(it map[string]types.AttributeValue) {
		_, _ = rec.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			table: {{PutRequest: &types.PutRequest{Item: it}}}}})
	}
	put(item("T#demo#S#A", "R#1", "before recording"))
	rec.Start()
	put(item("T#demo#S#A", "R#1", "v1"))
	put(item("T#demo#S#A", "R#2", "v1"))
	put(item("T#demo#S#A", "R#1", "v2"))
	_, _ = rec.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{Item: item("T#demo#OUTBOX#x", "M#1", "m")}},
		{ConditionCheck: &types.ConditionCheck{Key: map[string]types.AttributeValue{"pk": s("T#demo#PAGE#1"), "sk": s("PAGE")}}},
		{Update: &types.Update{Key: map[string]types.AttributeValue{"pk": s("T#demo#S#A"), "sk": s("R#3")},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": s("rdep")}}},
	}})
	_, _ = rec.DeleteItem(ctx, &dynamodb.DeleteItemInput{Key: map[string]types.AttributeValue{"pk": s("T#demo#IX#P#x"), "sk": s("1#A")}})
	_, _ = rec.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": s("T#demo#S#A"), "sk": s("R#9")}})
	got := rec.Stop()
	put(item("T#demo#S#A", "R#5", "after recording"))

	if len(got.Puts) != 4 || len(got.Deletes) != 1 || got.Written() != 5 {
		t.Fatalf("puts %d deletes %d, want 4 distinct items (R#1 once, R#2, the message, the update of R#3) and 1 delete", len(got.Puts), len(got.Deletes))
	}
	if b := got.Puts[0]["body"].(*types.AttributeValueMemberS).Value; b != "v2" {
		t.Errorf("R#1 kept %q, want its last write v2", b)
	}
	if v, ok := got.Puts[3]["vr"].(*types.AttributeValueMemberS); !ok || v.Value != "rdep" {
		t.Errorf("the update is replayed as %v, want its key and values", got.Puts[3])
	}
	if keys := recordedKeys(got, table); len(keys) != 1 {
		t.Errorf("recorded keys %v, want the GetItem's", keys)
	}
	m := remap(got.Puts[0], Tenant)
	for _, attr := range []string{"pk", "gsi1pk"} {
		old, now := got.Puts[0][attr].(*types.AttributeValueMemberS).Value, m[attr].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(now, "T#"+floorTenant+"#") || len(now) != len(old) {
			t.Errorf("remapped %s = %q from %q, want the scratch tenant, same length", attr, now, old)
		}
	}
	if got.Puts[0]["pk"].(*types.AttributeValueMemberS).Value != "T#demo#S#A" {
		t.Error("remap changed the recorded item")
	}
}

func TestRecorderMergesUpdatesIntoTheirItem(t *testing.T) {
	t.Parallel()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	ctx := t.Context()
	for _, merge := range []bool{false, true} {
		rec := NewRecorder(nopAPI{})
		rec.Merge = merge
		rec.Start()
		_, _ = rec.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": {
			{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": s("T#demo#OUTBOX#j#01"), "sk": s("M#1"), "body": s("message")}}}}}})
		_, _ = rec.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{{
			Statement:  aws.String(`UPDATE "t" SET "enqueued"=? WHERE "pk"=? AND "sk"=?`),
			Parameters: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}, s("T#demo#OUTBOX#j#01"), s("M#1")}}}})
		got := rec.Stop()
		if len(got.Puts) != 1 {
			t.Fatalf("merge %v: %d items, want 1", merge, len(got.Puts))
		}
		_, body := got.Puts[0]["body"]
		_, enq := got.Puts[0]["v0"]
		if body != merge || !enq {
			t.Errorf("merge %v: item %v, want the update's value and the message's body only when merged", merge, got.Puts[0])
		}
	}
}

// nopAPI answers every call with an empty output.
type nopAPI struct{ dynamo.API }

func (nopAPI) BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return &dynamodb.BatchWriteItemOutput{}, nil
}

func (nopAPI) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func (nopAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

func (nopAPI) BatchExecuteStatement(context.Context, *dynamodb.BatchExecuteStatementInput, ...func(*dynamodb.Options)) (*dynamodb.BatchExecuteStatementOutput, error) {
	return &dynamodb.BatchExecuteStatementOutput{}, nil
}

func (nopAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}
