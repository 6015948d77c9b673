package dynamo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/dynamo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// row is the key of item n of partition pk: sort key "v<n>".
func row(pk string, n int) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint("v", n)}}
}

func TestCallCounter(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := t.Context()
	counter := dynamo.NewCallCounter()
	db := dynamodb.NewFromConfig(env.Config, counter.Options)

	for i := range 3 {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.AuthTable), Item: row("P", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Three pages of one item, then an empty last page: four calls.
	p := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{
		TableName:                 aws.String(env.AuthTable),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: "P"}},
		Limit:                     aws.Int32(1),
	})
	for p.HasMorePages() {
		if _, err := p.NextPage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A failing call counts too.
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("no-such-table"), Key: row("x", 0)}); err == nil {
		t.Fatal("GetItem on a missing table succeeded")
	}
	// Calls on a client without the counter do not count.
	if _, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.AuthTable), Key: row("P", 0)}); err != nil {
		t.Fatal(err)
	}

	if got := counter.Count("PutItem"); got != 3 {
		t.Errorf("Count(PutItem) = %d, want 3", got)
	}
	if got := counter.Count("Query"); got != 4 {
		t.Errorf("Count(Query) = %d, want 4", got)
	}
	if got := counter.Count("GetItem"); got != 1 {
		t.Errorf("Count(GetItem) = %d, want 1", got)
	}
	if got := counter.Total(); got != 8 {
		t.Errorf("Total() = %d, want 8 (%v)", got, counter.Counts())
	}
	counter.Reset()
	if got := counter.Total(); got != 0 {
		t.Errorf("Total() after Reset = %d", got)
	}

	// Through cfg.APIOptions it sees every DynamoDB client of the config
	// and ignores SQS; concurrent calls are all counted.
	cfg := env.Config.Copy()
	cfg.APIOptions = append(cfg.APIOptions, counter.Middleware)
	db2, q := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := db2.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.AuthTable), Key: row("P", 0)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(env.QueueURL)}); err != nil {
		t.Fatal(err)
	}
	if got := counter.Counts(); len(got) != 1 || got["GetItem"] != 10 {
		t.Errorf("Counts() = %v, want only GetItem: 10", got)
	}
}

// TestCallCounterTwice checks that two counters can share a client.
func TestCallCounterTwice(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	a, b := dynamo.NewCallCounter(), dynamo.NewCallCounter()
	db := dynamodb.NewFromConfig(env.Config, a.Options, b.Options)
	if _, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	if a.Count("ListTables") != 1 || b.Count("ListTables") != 1 {
		t.Errorf("counts = %v, %v; want one ListTables each", a.Counts(), b.Counts())
	}
}
