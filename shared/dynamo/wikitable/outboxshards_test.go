package wikitable_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
)

// outboxPartitionItems returns the items of one outbox partition.
func (e *integrationEnv) outboxPartitionItems(t *testing.T, pk string) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewQueryPaginator(e.db, &dynamodb.QueryInput{TableName: &e.table, KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, page.Items...)
	}
	return items
}

func shardPK(tenant, sid string, n int) string {
	return fmt.Sprintf("T#%s#OUTBOX#%s#%02d", tenant, sid, n)
}

// toLegacy moves messages to the single partition of the releases before
// the shards, T#<tenant>#OUTBOX#<serviceId>, as those releases wrote them
// (the same attributes under the old key).
func (e *integrationEnv) toLegacy(t *testing.T, tenant, sid string, msgs []*outbox.Message) {
	t.Helper()
	ctx := context.Background()
	want := map[string]bool{}
	for _, m := range msgs {
		want["M#"+m.ID] = true
	}
	moved := 0
	for n := range wikitable.OutboxShards {
		for _, it := range e.outboxPartitionItems(t, shardPK(tenant, sid, n)) {
			sk := it["sk"].(*types.AttributeValueMemberS).Value
			if !want[sk] {
				continue
			}
			old := map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}
			it["pk"] = &types.AttributeValueMemberS{Value: "T#" + tenant + "#OUTBOX#" + sid}
			if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: it}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.table, Key: old}); err != nil {
				t.Fatal(err)
			}
			moved++
		}
	}
	if moved != len(msgs) {
		t.Fatalf("moved %d messages to the legacy partition, want %d", moved, len(msgs))
	}
}

func ids(msgs []*outbox.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// TestOutboxShardedMergeOrder: an integration's messages sit in all its
// shards (and some in the legacy partition), and every listing (List with
// from and limit, CountNew, ScanNew) answers exactly what one partition in
// id order answered: checked against the sorted messages for random ids
// (many sharing their time part), random DONE states, random from and
// limit, and by paging through the whole queue.
func TestOutboxShardedMergeOrder(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 7))
	base := time.Now().Add(-time.Hour)
	var all []*outbox.Message
	for i := range 400 {
		at := base.Add(time.Duration(rnd.IntN(120)) * time.Millisecond) // about 3 ids per time part
		m := &outbox.Message{ID: outbox.NewID(at), ServiceID: "j", State: outbox.New, CreatedAt: at, Type: outbox.Link,
			SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%04d", i), ObjectKey: "PROJ-1", Relationship: "tests"}
		if rnd.IntN(3) == 0 {
			m.State = outbox.Done
		}
		all = append(all, m)
	}
	if err := e.outbox.Put(ctx, "demo", all); err != nil {
		t.Fatal(err)
	}
	// Another integration's and tenant's messages are never read.
	if err := e.outbox.Put(ctx, "demo", outboxMessages("j2", 5, base)); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.Put(ctx, "acme", outboxMessages("j", 5, base)); err != nil {
		t.Fatal(err)
	}
	var legacy []*outbox.Message
	for _, m := range all {
		if rnd.IntN(6) == 0 {
			legacy = append(legacy, m)
		}
	}
	e.toLegacy(t, "demo", "j", legacy)
	for n := range wikitable.OutboxShards {
		if len(e.outboxPartitionItems(t, shardPK("demo", "j", n))) == 0 {
			t.Fatalf("shard %d holds none of 400 messages", n)
		}
	}
	slices.SortFunc(all, func(a, b *outbox.Message) int { return strings.Compare(a.ID, b.ID) })
	var fresh []*outbox.Message
	for _, m := range all {
		if m.State == outbox.New {
			fresh = append(fresh, m)
		}
	}
	from := func(msgs []*outbox.Message, prefix string) []*outbox.Message {
		i, _ := slices.BinarySearchFunc(msgs, prefix, func(m *outbox.Message, p string) int { return strings.Compare(m.ID, p) })
		return msgs[i:]
	}

	for round := range 40 {
		prefix := ""
		if round > 0 {
			m := all[rnd.IntN(len(all))]
			prefix = m.ID[:4+rnd.IntN(len(m.ID)-3)]
		}
		limit := []int{1, 2, 7, 25, 100, 1000}[rnd.IntN(6)]
		includeDone := rnd.IntN(2) == 0
		src := fresh
		if includeDone {
			src = all
		}
		want := from(src, prefix)
		want = want[:min(limit, len(want))]
		got, err := e.outbox.List(ctx, "demo", "j", prefix, limit, includeDone)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("List(from %q, limit %d, done %v) = %v, want %v", prefix, limit, includeDone, ids(got), ids(want))
		}
		for i, m := range got {
			if m.Key != want[i].Key || m.State != want[i].State {
				t.Fatalf("List message %s = %+v, want %+v", m.ID, m, want[i])
			}
		}
		if n, err := e.outbox.CountNew(ctx, "demo", "j", prefix); err != nil || n != len(from(fresh, prefix)) {
			t.Fatalf("CountNew(from %q) = %d, %v, want %d", prefix, n, err, len(from(fresh, prefix)))
		}
		var scanned []string
		if err := e.outbox.ScanNew(ctx, "demo", "j", prefix, func(p []*outbox.Message) (bool, error) {
			scanned = append(scanned, ids(p)...)
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(scanned, ids(from(fresh, prefix))) {
			t.Fatalf("ScanNew(from %q) = %d messages, want %d in id order", prefix, len(scanned), len(from(fresh, prefix)))
		}
	}

	// Paging through the whole queue, limit by limit, each page from the
	// last id of the one before.
	for _, limit := range []int{1, 3, 10, 64} {
		for _, includeDone := range []bool{false, true} {
			var paged []string
			last := ""
			for {
				page, err := e.outbox.List(ctx, "demo", "j", last, limit+1, includeDone)
				if err != nil {
					t.Fatal(err)
				}
				if last != "" {
					if len(page) == 0 || page[0].ID != last {
						t.Fatalf("page from %s does not start with it", last)
					}
					page = page[1:]
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, ids(page)...)
				last = page[len(page)-1].ID
			}
			want := ids(fresh)
			if includeDone {
				want = ids(all)
			}
			if !slices.Equal(paged, want) {
				t.Fatalf("paging by %d (done %v): %d messages, want %d in id order", limit, includeDone, len(paged), len(want))
			}
		}
	}

	// A ScanNew stopped by fn reads no further.
	calls := 0
	if err := e.outbox.ScanNew(ctx, "demo", "j", "", func(p []*outbox.Message) (bool, error) {
		calls++
		return false, nil
	}); err != nil || calls != 1 {
		t.Fatalf("ScanNew stopped after the first chunk: %d calls, %v", calls, err)
	}
}

// TestOutboxLegacyMessages: messages an earlier release wrote to the single
// partition T#<tenant>#OUTBOX#<serviceId> are listed, counted, swept,
// read, marked enqueued, failed and done, deleted, found pending and
// purged through the same calls as the sharded ones; updates of a message
// deleted meanwhile resurrect it under neither key.
func TestOutboxLegacyMessages(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	msgs := outboxMessages("j", 20, time.Now().Add(-10*time.Minute))
	if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	var legacy []*outbox.Message
	for i, m := range msgs {
		if i%2 == 0 {
			legacy = append(legacy, m)
		}
	}
	e.toLegacy(t, "demo", "j", legacy)
	legacyPK := "T#demo#OUTBOX#j"
	if n := len(e.outboxPartitionItems(t, legacyPK)); n != 10 {
		t.Fatalf("%d legacy items, want 10", n)
	}

	list, err := e.outbox.List(ctx, "demo", "j", "", 100, false)
	if err != nil || !slices.Equal(ids(list), ids(msgs)) {
		t.Fatalf("List = %d, %v; want the 20 messages in id order", len(list), err)
	}
	if n, err := e.outbox.CountNew(ctx, "demo", "j", ""); err != nil || n != 20 {
		t.Fatalf("CountNew = %d, %v", n, err)
	}
	var pending []string
	if err := e.outbox.Pending(ctx, time.Now(), func(p []integration.Pending) (bool, error) {
		for _, m := range p {
			pending = append(pending, m.Message.ID)
		}
		return true, nil
	}); err != nil || len(pending) != 20 {
		t.Fatalf("Pending = %d, %v", len(pending), err)
	}

	// By id: one call for a sharded message, two for a legacy one.
	e.calls.Reset()
	if m, err := e.outbox.Get(ctx, "demo", "j", msgs[1].ID); err != nil || m.Key != msgs[1].Key {
		t.Fatalf("Get sharded = %+v, %v", m, err)
	}
	if n := e.calls.Count("GetItem"); n != 1 {
		t.Fatalf("Get of a sharded message: %d GetItem", n)
	}
	if m, err := e.outbox.Get(ctx, "demo", "j", msgs[0].ID); err != nil || m.Key != msgs[0].Key {
		t.Fatalf("Get legacy = %+v, %v", m, err)
	}
	got, err := e.outbox.GetMany(ctx, outboxRefs("demo", msgs))
	if err != nil || len(got) != 20 {
		t.Fatalf("GetMany = %d, %v", len(got), err)
	}

	// Marks: enqueued takes legacy messages out of the pending partition,
	// a failure is recorded, done sets them DONE, all in place.
	if err := e.outbox.MarkEnqueued(ctx, outboxRefs("demo", msgs[:4])); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.RecordFailure(ctx, outboxRefs("demo", msgs[:6]), "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.MarkDone(ctx, []integration.Outcome{{Ref: integration.RefOf("demo", msgs[2]), LastResponse: "HTTP 200: OK"},
		{Ref: integration.RefOf("demo", msgs[3]), LastResponse: "HTTP 200: OK"}}); err != nil {
		t.Fatal(err)
	}
	// RecordFailure on DONE ones leaves them.
	if err := e.outbox.RecordFailure(ctx, outboxRefs("demo", msgs[2:4]), "HTTP 502"); err != nil {
		t.Fatal(err)
	}
	got, _ = e.outbox.GetMany(ctx, outboxRefs("demo", msgs[:6]))
	for i, m := range msgs[:6] {
		g := got[integration.RefOf("demo", m)]
		wantState, wantResp, wantEnq := outbox.New, "HTTP 500", i < 4
		if i == 2 || i == 3 {
			wantState, wantResp = outbox.Done, "HTTP 200: OK"
		}
		if g == nil || g.State != wantState || g.LastResponse != wantResp || g.Enqueued != wantEnq {
			t.Fatalf("message %d = %+v, want %s %q enqueued %v", i, g, wantState, wantResp, wantEnq)
		}
	}
	if n := len(e.outboxPartitionItems(t, legacyPK)); n != 10 {
		t.Fatalf("%d legacy items after the marks, want the 10 in place", n)
	}
	pending = nil
	_ = e.outbox.Pending(ctx, time.Now(), func(p []integration.Pending) (bool, error) {
		for _, m := range p {
			pending = append(pending, m.Message.ID)
		}
		return true, nil
	})
	if len(pending) != 16 || slices.Contains(pending, msgs[0].ID) || slices.Contains(pending, msgs[2].ID) {
		t.Fatalf("Pending after the marks = %d", len(pending))
	}
	var swept []string
	if err := e.outbox.ScanNew(ctx, "demo", "j", "", func(p []*outbox.Message) (bool, error) {
		swept = append(swept, ids(p)...)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := append(ids(msgs[:2]), ids(msgs[4:])...); !slices.Equal(swept, want) {
		t.Fatalf("ScanNew = %v, want %v", swept, want)
	}

	// Delete, then marks of the deleted messages create nothing.
	if err := e.outbox.Delete(ctx, "demo", "j", msgs[4].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.Delete(ctx, "demo", "j", msgs[5].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.Delete(ctx, "demo", "j", msgs[4].ID); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("second Delete of a legacy message = %v", err)
	}
	gone := outboxRefs("demo", msgs[4:6])
	if err := e.outbox.MarkEnqueued(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.MarkDone(ctx, []integration.Outcome{{Ref: gone[0]}, {Ref: gone[1]}}); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.RecordFailure(ctx, gone, "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	for _, r := range gone {
		if _, err := e.outbox.Get(ctx, "demo", "j", r.ID); !errors.Is(err, apperr.ErrNotFound) {
			t.Fatalf("a mark resurrected deleted message %s: %v", r.ID, err)
		}
	}
	if n, _ := e.outbox.CountNew(ctx, "demo", "j", ""); n != 16 {
		t.Fatalf("CountNew after the deletes = %d, want 16 (2 DONE, 2 deleted)", n)
	}

	// Purge below an id reaches both; then all.
	if n, err := e.outbox.Purge(ctx, "demo", "j", msgs[10].ID); err != nil || n != 8 {
		t.Fatalf("Purge below message 10 = %d, %v; want 8", n, err)
	}
	list, _ = e.outbox.List(ctx, "demo", "j", "", 100, true)
	if !slices.Equal(ids(list), ids(msgs[10:])) {
		t.Fatalf("after the purge: %v", ids(list))
	}
	if n, err := e.outbox.Purge(ctx, "demo", "j", ""); err != nil || n != 10 {
		t.Fatalf("Purge all = %d, %v", n, err)
	}
	if n := len(e.outboxPartitionItems(t, legacyPK)); n != 0 {
		t.Fatalf("%d legacy items after the purge", n)
	}
}

// TestOutboxPurgeAcrossShards: a purge below an id deletes exactly the
// messages below it in every shard, and another integration's none.
func TestOutboxPurgeAcrossShards(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	msgs := outboxMessages("j", 300, time.Now().Add(-time.Hour))
	if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.Put(ctx, "demo", outboxMessages("j2", 40, time.Now().Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	below := map[int]int{}
	for n := range wikitable.OutboxShards {
		for _, it := range e.outboxPartitionItems(t, shardPK("demo", "j", n)) {
			if it["sk"].(*types.AttributeValueMemberS).Value < "M#"+msgs[200].ID {
				below[n]++
			}
		}
	}
	if len(below) != wikitable.OutboxShards {
		t.Fatalf("messages below the cut in %d shards, want all %d", len(below), wikitable.OutboxShards)
	}
	if n, err := e.outbox.Purge(ctx, "demo", "j", msgs[200].ID); err != nil || n != 200 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	for n := range wikitable.OutboxShards {
		for _, it := range e.outboxPartitionItems(t, shardPK("demo", "j", n)) {
			if it["sk"].(*types.AttributeValueMemberS).Value < "M#"+msgs[200].ID {
				t.Fatalf("shard %d kept %v", n, it["sk"])
			}
		}
	}
	list, err := e.outbox.List(ctx, "demo", "j", "", 1000, true)
	if err != nil || !slices.Equal(ids(list), ids(msgs[200:])) {
		t.Fatalf("left %d, %v", len(list), err)
	}
	if n, _ := e.outbox.CountNew(ctx, "demo", "j2", ""); n != 40 {
		t.Fatalf("another integration kept %d of 40", n)
	}
}

// TestOutboxShardedCallCounts: the reads of an integration's queue make
// one Query per partition (8 shards and the legacy one) when a page of
// each holds the answer; by-id reads and marks go to one key.
func TestOutboxShardedCallCounts(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	msgs := outboxMessages("j", 150, time.Now().Add(-time.Minute))
	if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	parts := wikitable.OutboxShards + 1
	e.calls.Reset()
	if list, err := e.outbox.List(ctx, "demo", "j", "", 10, false); err != nil || !slices.Equal(ids(list), ids(msgs[:10])) {
		t.Fatalf("List = %d, %v", len(list), err)
	}
	if n := e.calls.Count("Query"); n != parts || e.calls.Total() != parts {
		t.Fatalf("List of 10 used %v, want %d Queries", e.calls.Counts(), parts)
	}
	e.calls.Reset()
	if n, err := e.outbox.CountNew(ctx, "demo", "j", ""); err != nil || n != 150 {
		t.Fatalf("CountNew = %d, %v", n, err)
	}
	if n := e.calls.Count("Query"); n != parts || e.calls.Total() != parts {
		t.Fatalf("CountNew used %v, want %d Queries", e.calls.Counts(), parts)
	}
	e.calls.Reset()
	if err := e.outbox.ScanNew(ctx, "demo", "j", "", func([]*outbox.Message) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if n := e.calls.Count("Query"); n != parts || e.calls.Total() != parts {
		t.Fatalf("ScanNew used %v, want %d Queries", e.calls.Counts(), parts)
	}
	e.calls.Reset()
	if got, err := e.outbox.GetMany(ctx, outboxRefs("demo", msgs)); err != nil || len(got) != 150 {
		t.Fatalf("GetMany = %d, %v", len(got), err)
	}
	if n := e.calls.Count("BatchGetItem"); n != 2 || e.calls.Total() != 2 {
		t.Fatalf("GetMany of 150 used %v, want 2 BatchGetItem", e.calls.Counts())
	}
	e.calls.Reset()
	if err := e.outbox.MarkEnqueued(ctx, outboxRefs("demo", msgs)); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.RecordFailure(ctx, outboxRefs("demo", msgs), "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	if n := e.calls.Count("BatchExecuteStatement"); n != 12 || e.calls.Total() != 12 {
		t.Fatalf("MarkEnqueued and RecordFailure of 150 used %v, want 2·⌈150/25⌉ = 12 BatchExecuteStatement", e.calls.Counts())
	}
	// On DONE messages: the failed checks return the item, so the legacy
	// keys are not tried.
	if err := e.outbox.MarkDone(ctx, []integration.Outcome{{Ref: integration.RefOf("demo", msgs[0])}}); err != nil {
		t.Fatal(err)
	}
	e.calls.Reset()
	if err := e.outbox.RecordFailure(ctx, outboxRefs("demo", msgs[:1]), "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	if n := e.calls.Total(); n != 1 {
		t.Fatalf("RecordFailure of a DONE message used %v, want 1 call", e.calls.Counts())
	}
	e.calls.Reset()
	if _, err := e.outbox.Purge(ctx, "demo", "j", ""); err != nil {
		t.Fatal(err)
	}
	// One keys-only Query per partition, and ⌈150/25⌉ = 6 BatchWriteItem
	// at least (one per shard's page with messages: 8).
	if n := e.calls.Count("Query"); n != parts {
		t.Fatalf("Purge used %v, want %d Queries", e.calls.Counts(), parts)
	}
}
