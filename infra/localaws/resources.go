package localaws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

// Resources are the tables, queues and buckets created for one template.
type Resources struct {
	// Tables maps a table's logical ID to its table name.
	Tables map[string]string
	// Queues maps a queue's logical ID to its queue URL.
	Queues map[string]string
	// Buckets maps a bucket's logical ID to its bucket name (in moto,
	// which serves S3 on the SQS stand-in's endpoint).
	Buckets map[string]string
}

// Resolve returns what CloudFormation's !Ref gives for the table, queue
// or bucket with the given logical ID — the table name, the queue URL or
// the bucket name — or "" if there is none. It fits
// samtemplate.Template.Env.
func (r *Resources) Resolve(ref string) string {
	if name, ok := r.Tables[ref]; ok {
		return name
	}
	if name, ok := r.Buckets[ref]; ok {
		return name
	}
	return r.Queues[ref]
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// maxQueueName is SQS's limit, ".fifo" included.
const maxQueueName = 80

// CreateResources creates every table (on-demand, with its global
// secondary indexes and Time to Live) and queue (FIFO names end in ".fifo"; dead-letter
// queues first, then the redrive policy with their ARN) of t, each named
// "<prefix>-<LogicalID>", and every bucket (in moto, named the same way
// in lower case, '_' turned into '-': BucketName). Resources that already exist are reused, so it
// is safe to call again with the same prefix. The prefix may hold
// letters, digits, '-' and '_'.
func CreateResources(ctx context.Context, cfg aws.Config, t *samtemplate.Template, prefix string) (*Resources, error) {
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("create resources: prefix %q must be letters, digits, '-' or '_'", prefix)
	}
	for _, q := range t.Queues {
		if n := queueName(prefix, q); len(n) > maxQueueName {
			return nil, fmt.Errorf("create resources: queue name %s is longer than %d characters; use a shorter prefix", n, maxQueueName)
		}
	}
	r := &Resources{Tables: map[string]string{}, Queues: map[string]string{}, Buckets: map[string]string{}}
	if len(t.Tables) > 0 {
		if err := createTables(ctx, dynamodb.NewFromConfig(cfg), t.Tables, prefix, r); err != nil {
			return nil, fmt.Errorf("create resources: %w", err)
		}
	}
	if len(t.Queues) > 0 {
		if err := createQueues(ctx, sqs.NewFromConfig(cfg), t.Queues, prefix, r); err != nil {
			return nil, fmt.Errorf("create resources: %w", err)
		}
	}
	if len(t.Buckets) > 0 {
		if err := createBuckets(ctx, s3.NewFromConfig(cfg), t.Buckets, prefix, r); err != nil {
			return nil, fmt.Errorf("create resources: %w", err)
		}
	}
	return r, nil
}

// BucketName is the local name of bucket logicalID under prefix: S3 names
// are lower case letters, digits, '-' and '.'.
func BucketName(prefix, logicalID string) string {
	name := strings.ToLower(strings.ReplaceAll(prefix+"-"+logicalID, "_", "-"))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

// createBuckets creates the buckets; one that exists already (an earlier
// run with the same prefix) is reused.
func createBuckets(ctx context.Context, client *s3.Client, buckets []samtemplate.Bucket, prefix string, r *Resources) error {
	for _, b := range buckets {
		name := BucketName(prefix, b.LogicalID)
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
		var owned *s3types.BucketAlreadyOwnedByYou
		var exists *s3types.BucketAlreadyExists
		if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
			return fmt.Errorf("bucket %s: %w", b.LogicalID, err)
		}
		r.Buckets[b.LogicalID] = name
	}
	return nil
}

// createTables creates the tables concurrently: each CreateTable is a
// round trip, and tests create a set per test.
func createTables(ctx context.Context, db *dynamodb.Client, tables []samtemplate.Table, prefix string, r *Resources) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, tb := range tables {
		name := prefix + "-" + tb.LogicalID
		wg.Go(func() {
			err := createTable(ctx, db, tb, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("table %s: %w", tb.LogicalID, err))
				return
			}
			r.Tables[tb.LogicalID] = name
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func createTable(ctx context.Context, db *dynamodb.Client, tb samtemplate.Table, name string) error {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:   keySchema(tb.KeySchema),
	}
	for _, a := range tb.Attributes {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(a.Name),
			AttributeType: ddbtypes.ScalarAttributeType(a.Type),
		})
	}
	for _, ix := range tb.GSIs {
		gsi := ddbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keySchema(ix.KeySchema),
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(ix.Projection.Type)},
		}
		if len(ix.Projection.NonKeyAttributes) > 0 {
			gsi.Projection.NonKeyAttributes = ix.Projection.NonKeyAttributes
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, gsi)
	}
	if _, err := db.CreateTable(ctx, in); err != nil {
		var inUse *ddbtypes.ResourceInUseException
		if !errors.As(err, &inUse) {
			return err
		}
		// A table kept from an earlier version (make run's data directory)
		// gains the indexes the template added since.
		if err := addMissingIndexes(ctx, db, name, in); err != nil {
			return err
		}
	}
	// DynamoDB Local creates tables ACTIVE, but a reused table may still
	// be in CREATING; waiting costs one DescribeTable.
	err := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute)
	if err != nil || tb.TTLAttribute == "" {
		return err
	}
	return enableTTL(ctx, db, name, tb.TTLAttribute)
}

// enableTTL turns on Time to Live on attr, as the template's
// TimeToLiveSpecification does in AWS (DynamoDB Local deletes expired items
// too, within seconds). A reused table that has it already is fine.
func enableTTL(ctx context.Context, db *dynamodb.Client, name, attr string) error {
	_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
	})
	if err == nil {
		return nil
	}
	out, derr := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if derr == nil && out.TimeToLiveDescription != nil && aws.ToString(out.TimeToLiveDescription.AttributeName) == attr &&
		out.TimeToLiveDescription.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled {
		return nil
	}
	return fmt.Errorf("enable TTL on %s: %w", attr, err)
}

func keySchema(keys []samtemplate.KeyElement) []ddbtypes.KeySchemaElement {
	out := make([]ddbtypes.KeySchemaElement, 0, len(keys))
	for _, k := range keys {
		out = append(out, ddbtypes.KeySchemaElement{AttributeName: aws.String(k.Name), KeyType: ddbtypes.KeyType(k.Type)})
	}
	return out
}

func queueName(prefix string, q samtemplate.Queue) string {
	name := prefix + "-" + q.LogicalID
	if q.FIFO {
		name += ".fifo"
	}
	return name
}

// createQueues creates queues whose dead-letter queue exists before the
// queues that need its ARN.
func createQueues(ctx context.Context, client *sqs.Client, queues []samtemplate.Queue, prefix string, r *Resources) error {
	arns := map[string]string{}
	pending := queues
	for len(pending) > 0 {
		var next []samtemplate.Queue
		for _, q := range pending {
			if q.Redrive != nil && arns[q.Redrive.DeadLetterQueue] == "" {
				next = append(next, q)
				continue
			}
			url, arn, err := createQueue(ctx, client, q, queueName(prefix, q), arns)
			if err != nil {
				return fmt.Errorf("queue %s: %w", q.LogicalID, err)
			}
			r.Queues[q.LogicalID], arns[q.LogicalID] = url, arn
		}
		if len(next) == len(pending) {
			return fmt.Errorf("queue %s: its dead-letter queue %s is missing or part of a cycle", next[0].LogicalID, next[0].Redrive.DeadLetterQueue)
		}
		pending = next
	}
	return nil
}

func createQueue(ctx context.Context, client *sqs.Client, q samtemplate.Queue, name string, arns map[string]string) (url, arn string, err error) {
	attrs := map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout):      strconv.Itoa(int(q.VisibilityTimeout / time.Second)),
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(int(q.MessageRetention / time.Second)),
	}
	if q.FIFO {
		attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
		attrs[string(sqstypes.QueueAttributeNameContentBasedDeduplication)] = strconv.FormatBool(q.ContentBasedDeduplication)
	}
	if q.Redrive != nil {
		policy, err := json.Marshal(struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     int    `json:"maxReceiveCount"`
		}{arns[q.Redrive.DeadLetterQueue], q.Redrive.MaxReceiveCount})
		if err != nil {
			return "", "", err
		}
		attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(policy)
	}

	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	switch {
	case err == nil:
		url = aws.ToString(out.QueueUrl)
	case isQueueExists(err):
		// Same name, other attributes: an earlier run with an older
		// template. Bring the queue up to date.
		got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return "", "", err
		}
		url = aws.ToString(got.QueueUrl)
		delete(attrs, string(sqstypes.QueueAttributeNameFifoQueue)) // immutable
		if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
			return "", "", err
		}
	default:
		return "", "", err
	}

	got, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", err
	}
	arn = got.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", "", errors.New("GetQueueAttributes returned no QueueArn")
	}
	return url, arn, nil
}

// isQueueExists reports a CreateQueue conflict. SQS's JSON protocol calls
// it QueueNameExists, its query protocol QueueAlreadyExists.
func isQueueExists(err error) bool {
	var exists *sqstypes.QueueNameExists
	if errors.As(err, &exists) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "QueueAlreadyExists"
}

// Delete deletes the tables and queues, ignoring those already gone, and
// returns the other failures joined.
func (r *Resources) Delete(ctx context.Context, cfg aws.Config) error {
	var errs []error
	if len(r.Tables) > 0 {
		db := dynamodb.NewFromConfig(cfg)
		for id, name := range r.Tables {
			_, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			var gone *ddbtypes.ResourceNotFoundException
			if err != nil && !errors.As(err, &gone) {
				errs = append(errs, fmt.Errorf("delete table %s: %w", id, err))
			}
		}
	}
	if len(r.Queues) > 0 {
		client := sqs.NewFromConfig(cfg)
		for id, url := range r.Queues {
			_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			var gone *sqstypes.QueueDoesNotExist
			if err != nil && !errors.As(err, &gone) {
				errs = append(errs, fmt.Errorf("delete queue %s: %w", id, err))
			}
		}
	}
	if len(r.Buckets) > 0 {
		client := s3.NewFromConfig(cfg)
		for id, name := range r.Buckets {
			if err := deleteBucket(ctx, client, name); err != nil {
				errs = append(errs, fmt.Errorf("delete bucket %s: %w", id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteBucket deletes a bucket and the objects in it (a bucket must be
// empty to go); one already gone is fine.
func deleteBucket(ctx context.Context, client *s3.Client, name string) error {
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		var gone *s3types.NoSuchBucket
		if errors.As(err, &gone) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key}); err != nil {
				return err
			}
		}
	}
	_, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	var gone *s3types.NoSuchBucket
	if errors.As(err, &gone) {
		return nil
	}
	return err
}

// addMissingIndexes creates, on an existing table, each global secondary
// index of in that it lacks (one UpdateTable each: DynamoDB takes one index
// creation at a time), and waits until the table is ACTIVE again.
func addMissingIndexes(ctx context.Context, db *dynamodb.Client, name string, in *dynamodb.CreateTableInput) error {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, ix := range out.Table.GlobalSecondaryIndexes {
		have[aws.ToString(ix.IndexName)] = true
	}
	for _, ix := range in.GlobalSecondaryIndexes {
		if have[aws.ToString(ix.IndexName)] {
			continue
		}
		if _, err := db.UpdateTable(ctx, &dynamodb.UpdateTableInput{
			TableName: aws.String(name), AttributeDefinitions: in.AttributeDefinitions,
			GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Create: &ddbtypes.CreateGlobalSecondaryIndexAction{
				IndexName: ix.IndexName, KeySchema: ix.KeySchema, Projection: ix.Projection,
			}}},
		}); err != nil {
			return fmt.Errorf("add index %s: %w", aws.ToString(ix.IndexName), err)
		}
		if err := waitIndexesActive(ctx, db, name); err != nil {
			return err
		}
	}
	return nil
}

// waitIndexesActive polls the table until every global secondary index is
// ACTIVE (the table's own waiter does not look at indexes, and DynamoDB
// creates one index at a time), for at most a minute.
func waitIndexesActive(ctx context.Context, db *dynamodb.Client, name string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return err
		}
		busy := out.Table.TableStatus != ddbtypes.TableStatusActive
		for _, ix := range out.Table.GlobalSecondaryIndexes {
			busy = busy || ix.IndexStatus != ddbtypes.IndexStatusActive || aws.ToBool(ix.Backfilling)
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("table %s: indexes not ACTIVE after a minute", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
