package wikitable_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// wordVocabulary makes texts whose words repeat across requirements, as
// real descriptions do.
var wordVocabulary = strings.Fields("the system shall record every change of a requirement with its author time and previous value keep it for ten years émigré ÅNGSTRÖM 42 v2")

// wordPage is a page of n requirements with random texts; keys from first.
func wordPage(rnd *rand.Rand, first, n int) string {
	var rows []string
	for i := first; i < first+n; i++ {
		words := make([]string, 3+rnd.IntN(8))
		for j := range words {
			words[j] = wordVocabulary[rnd.IntN(len(wordVocabulary))]
		}
		rows = append(rows, saveReq(fmt.Sprintf("REQ-%04d", i), strings.Join(words, " ")+".", "High"))
	}
	return saveSpecs(rows...)
}

// wordItems returns the word index items of a tenant's space as
// "<word> <folded key>" (a Scan: the test's table is small).
func (e *saveEnv) wordItems(t *testing.T, tenant, space string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	prefix := dynamo.TenantPrefix(tenant) + "IX#W#"
	p := dynamodb.NewScanPaginator(e.env.DynamoDB, &dynamodb.ScanInput{
		TableName:                 &e.env.WikiTable,
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: prefix}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			sk := it["sk"].(*types.AttributeValueMemberS).Value
			if key, ok := strings.CutSuffix(sk, "#"+space); ok {
				out[strings.TrimPrefix(pk, prefix)+" "+key] = true
			}
		}
	}
	return out
}

// wantWordItems is wordItems as the rows of the space require them: every
// word of each ACTIVE row's key and text.
func (e *saveEnv) wantWordItems(t *testing.T, tenant, space string) (map[string]bool, int) {
	t.Helper()
	want := map[string]bool{}
	rows := 0
	err := e.reqs.QuerySpace(context.Background(), tenant, space, "", 0, func(r *requirement.Requirement) bool {
		rows++
		if r.Status != requirement.Active {
			return true
		}
		for _, w := range append(requirement.Words(r.Key), requirement.Words(r.Text)...) {
			want[strings.ToLower(w)+" "+requirement.FoldKey(r.Key)] = true
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return want, rows
}

// forgetWords puts a space back as the write path before the word index
// left it: no word items, a registry item without the mark.
func (e *saveEnv) forgetWords(t *testing.T, tenant, space string) {
	t.Helper()
	ctx := context.Background()
	var deletes []types.WriteRequest
	prefix := dynamo.TenantPrefix(tenant) + "IX#W#"
	for item := range e.wordItems(t, tenant, space) {
		word, key, _ := strings.Cut(item, " ")
		deletes = append(deletes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: prefix + word}, "sk": &types.AttributeValueMemberS{Value: key + "#" + space},
		}}})
	}
	if err := dynamo.BatchWrite(ctx, e.env.DynamoDB, e.env.WikiTable, deletes); err != nil {
		t.Fatal(err)
	}
	_, err := e.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &e.env.WikiTable,
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: dynamo.TenantPrefix(tenant) + "SPACES"}, "sk": &types.AttributeValueMemberS{Value: space},
		},
		UpdateExpression: aws.String("REMOVE words"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.WordIndexed(ctx, tenant, []string{space}); err != nil || ok {
		t.Fatalf("space %s still vouched for after forgetting: %v %v", space, ok, err)
	}
}

// TestIndexWordsGivesAnOldSpaceTheWordIndex: IndexWords writes exactly the
// word items the page saves would have written, resumes from a key, marks
// the space, refuses an unregistered space, and leaves no word of any
// ACTIVE row without its item while pages are saved meanwhile (random
// edits, fixed seeds).
func TestIndexWordsGivesAnOldSpaceTheWordIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	rnd := rand.New(rand.NewPCG(21, 1))
	for p := range 3 {
		e.save(t, "demo", fmt.Sprint(500+p), "OLD", wordPage(rnd, p*200, 200))
	}
	e.save(t, "demo", "600", "KEEP", wordPage(rnd, 0, 20))
	saved := e.wordItems(t, "demo", "OLD")
	want, rows := e.wantWordItems(t, "demo", "OLD")
	if !maps.Equal(saved, want) {
		t.Fatalf("the saves wrote %d word items of OLD, its rows need %d", len(saved), len(want))
	}
	keep := e.wordItems(t, "demo", "KEEP")

	e.forgetWords(t, "demo", "OLD")
	// From a key: the rows from it on, not the first ones.
	var done []string
	read, err := e.store.IndexWords(ctx, "demo", "OLD", "REQ-0450", func(key string) { done = append(done, key) })
	if err != nil || read != 150 || !slices.Equal(done, []string{"REQ-0599"}) {
		t.Fatalf("from REQ-0450: read %d, done %v, %v", read, done, err)
	}
	if got := e.wordItems(t, "demo", "OLD"); len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("from REQ-0450: %d word items of %d", len(got), len(want))
	}
	done = nil
	read, err = e.store.IndexWords(ctx, "demo", "OLD", "", func(key string) { done = append(done, key) })
	if err != nil || read != rows || !slices.Equal(done, []string{"REQ-0249", "REQ-0499", "REQ-0599"}) {
		t.Fatalf("whole space: read %d of %d rows, done %v, %v", read, rows, done, err)
	}
	if got := e.wordItems(t, "demo", "OLD"); !maps.Equal(got, want) {
		t.Fatalf("after IndexWords: %d word items, the saves wrote %d", len(got), len(want))
	}
	if ok, err := e.store.WordIndexed(ctx, "demo", nil); err != nil || !ok {
		t.Fatalf("tenant not vouched for after IndexWords: %v %v", ok, err)
	}
	if got := e.wordItems(t, "demo", "KEEP"); !maps.Equal(got, keep) {
		t.Fatal("IndexWords of OLD changed the word items of KEEP")
	}
	if _, err := e.store.IndexWords(ctx, "demo", "NONE", "", nil); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("unregistered space: %v", err)
	}
	if _, err := e.store.IndexWords(ctx, "acme", "OLD", "", nil); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("another tenant's space: %v", err)
	}

	// Saves meanwhile (of smaller pages, to interleave more): every word
	// of every ACTIVE row has its item at the end, whatever the order.
	for p := range 3 {
		e.save(t, "demo", fmt.Sprint(700+p), "HIST", wordPage(rnd, p*40, 40))
	}
	const histories = 6
	for seed := range uint64(histories) {
		e.forgetWords(t, "demo", "HIST")
		rnd := rand.New(rand.NewPCG(seed, 2))
		var wg sync.WaitGroup
		stop := make(chan struct{})
		saves := 0
		var saveErr error
		wg.Go(func() {
			for saveErr == nil {
				select {
				case <-stop:
					return
				default:
				}
				p := rnd.IntN(3)
				// Fewer requirements at times: some become DELETED.
				_, saveErr = e.service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: fmt.Sprint(700 + p), SpaceKey: "HIST",
					Title: fmt.Sprint("Page ", 700+p), Body: wordPage(rnd, p*40, 30+rnd.IntN(11))})
				saves++
			}
		})
		_, err := e.store.IndexWords(ctx, "demo", "HIST", "", nil)
		close(stop)
		wg.Wait()
		if err = errors.Join(err, saveErr); err != nil {
			t.Fatal(err)
		}
		got := e.wordItems(t, "demo", "HIST")
		want, _ := e.wantWordItems(t, "demo", "HIST")
		for item := range want {
			if !got[item] {
				t.Fatalf("history %d (%d saves meanwhile): word item %q missing", seed, saves, item)
			}
		}
		t.Logf("history %d: %d saves during IndexWords, %d word items needed, %d present", seed, saves, len(want), len(got))
	}
	t.Logf("%d histories of IndexWords with saves meanwhile", histories)
}
