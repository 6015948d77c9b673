package localaws_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

// The stand-ins shared by the tests of this package, started in TestMain.
var dynamo, queue *localaws.Service

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	var (
		wg             sync.WaitGroup
		ddbErr, sqsErr error
		ddbDur, sqsDur time.Duration
	)
	wg.Go(func() {
		start := time.Now()
		dynamo, ddbErr = localaws.StartDynamoDB(ctx, localaws.Options{})
		ddbDur = time.Since(start)
	})
	wg.Go(func() {
		start := time.Now()
		queue, sqsErr = localaws.StartSQS(ctx, localaws.Options{})
		sqsDur = time.Since(start)
	})
	wg.Wait()
	defer func() {
		for _, s := range []*localaws.Service{dynamo, queue} {
			if s != nil {
				if err := s.Stop(); err != nil {
					fmt.Fprintln(os.Stderr, "stop:", err)
				}
			}
		}
	}()
	if err := errors.Join(ddbErr, sqsErr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "DynamoDB Local ready in %v at %s; moto_server ready in %v at %s\n",
		ddbDur.Round(time.Millisecond), dynamo.Endpoint, sqsDur.Round(time.Millisecond), queue.Endpoint)
	return m.Run()
}

var prefixes atomic.Int64

// setup returns a config for the shared stand-ins and resources created
// from template.yaml under a fresh prefix.
func setup(t *testing.T) (aws.Config, *samtemplate.Template, *localaws.Resources) {
	t.Helper()
	cfg, err := localaws.AWSConfig(t.Context(), dynamo.Endpoint, queue.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := samtemplate.Load(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("la%d-%d", os.Getpid(), prefixes.Add(1))
	res, err := localaws.CreateResources(t.Context(), cfg, tmpl, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := res.Delete(context.Background(), cfg); err != nil {
			t.Error(err)
		}
	})
	return cfg, tmpl, res
}

func TestCreateResources(t *testing.T) {
	t.Parallel()
	cfg, tmpl, res := setup(t)
	ctx := t.Context()
	db := dynamodb.NewFromConfig(cfg)
	client := sqs.NewFromConfig(cfg)

	if len(res.Tables) != len(tmpl.Tables) || len(res.Queues) != len(tmpl.Queues) {
		t.Fatalf("created %v and %v, want %d tables and %d queues", res.Tables, res.Queues, len(tmpl.Tables), len(tmpl.Queues))
	}
	for _, tb := range tmpl.Tables {
		name := res.Resolve(tb.LogicalID)
		if !strings.HasSuffix(name, "-"+tb.LogicalID) {
			t.Errorf("Resolve(%s) = %q", tb.LogicalID, name)
		}
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		d := out.Table
		if d.TableStatus != ddbtypes.TableStatusActive || d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
			t.Errorf("%s: status %s, billing %+v", name, d.TableStatus, d.BillingModeSummary)
		}
		if len(d.GlobalSecondaryIndexes) != len(tb.GSIs) {
			t.Fatalf("%s has %d GSIs, want %d", name, len(d.GlobalSecondaryIndexes), len(tb.GSIs))
		}
		for i, ix := range tb.GSIs {
			got := d.GlobalSecondaryIndexes[i]
			if aws.ToString(got.IndexName) != ix.Name || string(got.Projection.ProjectionType) != ix.Projection.Type ||
				aws.ToString(got.KeySchema[0].AttributeName) != ix.KeySchema[0].Name {
				t.Errorf("%s GSI %d = %+v, want %+v", name, i, got, ix)
			}
		}
		ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		gotTTL := ""
		if d := ttl.TimeToLiveDescription; d != nil && d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled {
			gotTTL = aws.ToString(d.AttributeName)
		}
		if gotTTL != tb.TTLAttribute {
			t.Errorf("%s: TTL on %q, want %q", name, gotTTL, tb.TTLAttribute)
		}
	}

	url := res.Resolve("OutboundQueue")
	if !strings.HasSuffix(url, "-OutboundQueue.fifo") {
		t.Errorf("Resolve(OutboundQueue) = %q, want a .fifo queue URL", url)
	}
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Attributes
	if a["FifoQueue"] != "true" || a["VisibilityTimeout"] != "120" || a["MessageRetentionPeriod"] != "1209600" {
		t.Errorf("OutboundQueue attributes = %v", a)
	}
	var policy struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(a["RedrivePolicy"]), &policy); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", a["RedrivePolicy"], err)
	}
	if !strings.HasSuffix(policy.DeadLetterTargetArn, ":"+filepath.Base(res.Queues["OutboundDLQ"])) ||
		strings.Trim(string(policy.MaxReceiveCount), `"`) != "5" {
		t.Errorf("RedrivePolicy = %s, want the DLQ's ARN and 5", a["RedrivePolicy"])
	}

	// A second call with the same prefix reuses everything.
	again, err := localaws.CreateResources(ctx, cfg, tmpl, strings.TrimSuffix(res.Tables["AuthTable"], "-AuthTable"))
	if err != nil {
		t.Fatalf("CreateResources again: %v", err)
	}
	for id, name := range res.Tables {
		if again.Tables[id] != name {
			t.Errorf("again: table %s = %q, want %q", id, again.Tables[id], name)
		}
	}
	for id, url := range res.Queues {
		if again.Queues[id] != url {
			t.Errorf("again: queue %s = %q, want %q", id, again.Queues[id], url)
		}
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	cfg, _, res := setup(t)
	ctx := t.Context()
	if err := res.Delete(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(res.Tables["WikiTable"])})
	var notFound *ddbtypes.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("DescribeTable after Delete: %v, want ResourceNotFoundException", err)
	}
	_, err = sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(filepath.Base(res.Queues["OutboundQueue"]))})
	var gone *sqstypes.QueueDoesNotExist
	if !errors.As(err, &gone) {
		t.Errorf("GetQueueUrl after Delete: %v, want QueueDoesNotExist", err)
	}
	// Deleting again is not an error (the cleanup does it once more).
	if err := res.Delete(ctx, cfg); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

// TestRedriveToDLQ checks that moto moves a FIFO message to the
// dead-letter queue after maxReceiveCount receives without a delete, as
// SQS does, through the SDK's JSON protocol.
func TestRedriveToDLQ(t *testing.T) {
	t.Parallel()
	cfg, tmpl, res := setup(t)
	ctx := t.Context()
	client := sqs.NewFromConfig(cfg)
	q, _ := tmpl.Queue("OutboundQueue")
	maxReceives := q.Redrive.MaxReceiveCount
	url, dlq := res.Queues["OutboundQueue"], res.Queues[q.Redrive.DeadLetterQueue]

	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:               aws.String(url),
		MessageBody:            aws.String(`{"op":"push"}`),
		MessageGroupId:         aws.String("tenant-demo"),
		MessageDeduplicationId: aws.String("m-1"),
	}); err != nil {
		t.Fatal(err)
	}
	receive := func(url string) []sqstypes.Message {
		t.Helper()
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	for i := 1; i <= maxReceives; i++ {
		msgs := receive(url)
		if len(msgs) != 1 {
			t.Fatalf("receive %d: %d messages, want 1", i, len(msgs))
		}
		m := msgs[0]
		if got := m.Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(i) {
			t.Errorf("receive %d: ApproximateReceiveCount = %s", i, got)
		}
		if got := m.Attributes["MessageGroupId"]; got != "tenant-demo" {
			t.Errorf("receive %d: MessageGroupId = %q", i, got)
		}
		// Hand it back at once instead of waiting out the 120 s timeout.
		if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
		}); err != nil {
			t.Fatal(err)
		}
	}
	if msgs := receive(url); len(msgs) != 0 {
		t.Fatalf("receive %d: got %d messages, want the message moved to the DLQ", maxReceives+1, len(msgs))
	}
	msgs := receive(dlq)
	if len(msgs) != 1 || aws.ToString(msgs[0].Body) != `{"op":"push"}` {
		t.Fatalf("DLQ holds %+v, want the message", msgs)
	}
}

// TestEnvConvention checks the path application code takes: nothing but
// config.LoadDefaultConfig and the standard variables from Environ.
func TestEnvConvention(t *testing.T) {
	_, _, res := setup(t)
	for _, kv := range localaws.Environ(dynamo.Endpoint, queue.Endpoint) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))

	ctx := t.Context()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(res.Tables["AuthTable"])}); err != nil {
		t.Errorf("DescribeTable through AWS_ENDPOINT_URL_DYNAMODB: %v", err)
	}
	if _, err := sqs.NewFromConfig(cfg).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(res.Queues["OutboundDLQ"])}); err != nil {
		t.Errorf("GetQueueAttributes through AWS_ENDPOINT_URL_SQS: %v", err)
	}
}

// TestAWSConfigIgnoresEnv checks that AWSConfig is hermetic: endpoints in
// the environment do not redirect it.
func TestAWSConfigIgnoresEnv(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	t.Setenv("AWS_REGION", "eu-west-3")
	cfg, err := localaws.AWSConfig(t.Context(), dynamo.Endpoint, queue.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Errorf("ListTables: %v", err)
	}

	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	if _, err := localaws.AWSConfig(t.Context(), dynamo.Endpoint, queue.Endpoint); err == nil || !strings.Contains(err.Error(), "AWS_ENDPOINT_URL") {
		t.Errorf("AWSConfig with AWS_ENDPOINT_URL set: %v, want an error naming it", err)
	}
}

func TestMissingPrograms(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	tests := []struct {
		name  string
		start func(context.Context, localaws.Options) (*localaws.Service, error)
		want  string
	}{
		{"dynamodb", localaws.StartDynamoDB, "java not found"},
		{"sqs", localaws.StartSQS, "moto_server not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.start(t.Context(), localaws.Options{})
			if err == nil {
				s.Stop()
				t.Fatal("started without the program on PATH")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	// moto exits once Python has imported it and found the port taken:
	// tens of seconds on a loaded machine, so the timeout must not be
	// what ends the wait.
	s, err := localaws.StartSQS(t.Context(), localaws.Options{Port: port, StartTimeout: 120 * time.Second})
	if err == nil {
		s.Stop()
		t.Fatal("started on a port in use")
	}
	if !strings.Contains(err.Error(), "exited before answering") {
		t.Errorf("error = %v, want an early exit", err)
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	s, err := localaws.StartSQS(t.Context(), localaws.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(s.Endpoint, "http://"), time.Second); err == nil {
		t.Error("port still accepts connections after Stop")
	}
}

func TestCreateResourcesBadPrefix(t *testing.T) {
	t.Parallel()
	cfg, err := localaws.AWSConfig(t.Context(), dynamo.Endpoint, queue.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := samtemplate.Load(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "a b", "x.y", strings.Repeat("p", 70)} {
		if _, err := localaws.CreateResources(t.Context(), cfg, tmpl, prefix); err == nil {
			t.Errorf("CreateResources with prefix %q succeeded", prefix)
		}
	}
}

// TestCreateResourcesAddsMissingIndexes: a table kept from an earlier
// template (make run's data directory) gains the indexes added since, with
// the items it holds indexed.
func TestCreateResourcesAddsMissingIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg, err := localaws.AWSConfig(ctx, dynamo.Endpoint, queue.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := samtemplate.Load(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wiki samtemplate.Table
	for _, tb := range tmpl.Tables {
		if tb.LogicalID == "WikiTable" {
			wiki = tb
		}
	}
	if len(wiki.GSIs) < 2 {
		t.Fatalf("WikiTable has %d indexes, want several", len(wiki.GSIs))
	}
	old := wiki
	old.GSIs = old.GSIs[:1]
	old.Attributes = nil
	for _, a := range wiki.Attributes {
		if !strings.HasPrefix(a.Name, "gsi") || strings.HasPrefix(a.Name, old.GSIs[0].Name) {
			old.Attributes = append(old.Attributes, a)
		}
	}
	prefix := fmt.Sprintf("la%d-%d", os.Getpid(), prefixes.Add(1))
	res, err := localaws.CreateResources(ctx, cfg, &samtemplate.Template{Tables: []samtemplate.Table{old}}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Delete(context.Background(), cfg) })
	db := dynamodb.NewFromConfig(cfg)
	name := res.Resolve("WikiTable")
	last := wiki.GSIs[len(wiki.GSIs)-1]
	item := map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: "p"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "s"},
		last.KeySchema[0].Name: &ddbtypes.AttributeValueMemberS{Value: "h"}, last.KeySchema[1].Name: &ddbtypes.AttributeValueMemberS{Value: "r"},
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, err := localaws.CreateResources(ctx, cfg, &samtemplate.Template{Tables: []samtemplate.Table{wiki}}, prefix); err != nil {
		t.Fatal(err)
	}
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Table.GlobalSecondaryIndexes) != len(wiki.GSIs) {
		t.Fatalf("%d indexes after the upgrade, want %d", len(out.Table.GlobalSecondaryIndexes), len(wiki.GSIs))
	}
	q, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), IndexName: aws.String(last.Name),
		KeyConditionExpression:    aws.String("#h = :h"),
		ExpressionAttributeNames:  map[string]string{"#h": last.KeySchema[0].Name},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":h": &ddbtypes.AttributeValueMemberS{Value: "h"}}})
	if err != nil || len(q.Items) != 1 {
		t.Fatalf("query of the added index %s: %v items, %v", last.Name, q, err)
	}
}
