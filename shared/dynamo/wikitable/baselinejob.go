package wikitable

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// Freeze jobs. The job of baseline n is the item pk T#t#S#<SPACE>, sk
// BLJOB#<n8> (next to the records, so that List reads both with one
// Query): the baseline's fields, state (FREEZING or FAILED), total,
// written, cursor (keys done), the page summary so far (gzip JSON), the
// lease (owner, leaseUntil in Unix milliseconds) and attempts. Its
// selected keys are stored in chunks of at most baselineChunkBytes of JSON:
// for a job BeginNext numbered, the items pk T#t#S#<SPACE>#BJ#<keysId>, sk
// JOBKEYS#<i4>, written before the number is taken (so they carry a ttl
// of baselineKeysTTL: chunks a crash left before numbering expire); for a
// job Begin wrote with its number, pk T#t#S#<SPACE>#B#<n8> (the baseline's
// partition, which a cancel or a delete removes with the copies).
// A FREEZING job sits in the sparse gsi1 partition FREEZE#PENDING (sk
// <startedAt>#<tenant>#<SPACE>#<n8>): the only cross-tenant read, by the
// scheduled worker. The commit deletes the job; FAILED removes it from
// gsi1.
const (
	baselineJobPrefix   = "BLJOB#"
	baselinePendingPK   = "FREEZE#PENDING"
	baselineChunkPrefix = "JOBKEYS#"
	baselineChunkBytes  = 300 << 10
)

func baselineJobKey(tenant, space string, n int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: spacePK(tenant, space)},
		"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("%s%08d", baselineJobPrefix, n)},
	}
}

// baselineKeysTTL is how long staged key chunks live (the "ttl"
// attribute, epoch seconds): far longer than any freeze.
const baselineKeysTTL = 30 * 24 * time.Hour

// baselineChunkKey is the key of chunk i of a job's keys: staged under
// keysID, or in baseline n's partition when keysID is "".
func baselineChunkKey(tenant, space string, n int, keysID string, i int) map[string]types.AttributeValue {
	pk := baselinePK(tenant, space, n)
	if keysID != "" {
		pk = spacePK(tenant, space) + "#BJ#" + keysID
	}
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("%s%04d", baselineChunkPrefix, i)},
	}
}

// baselineJobItem is the DynamoDB shape of a job.
type baselineJobItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	Tenant     string `dynamodbav:"tenant"`
	Space      string `dynamodbav:"spaceKey"`
	Number     int    `dynamodbav:"number"`
	Name       string `dynamodbav:"name"`
	Label      string `dynamodbav:"label"`
	CEO        string `dynamodbav:"ceo"`
	Instant    bool   `dynamodbav:"instant,omitempty"`
	CreatedAt  string `dynamodbav:"createdAt"`
	CreatedBy  string `dynamodbav:"createdBy"`
	State      string `dynamodbav:"state"`
	Total      int    `dynamodbav:"total"`
	Written    int    `dynamodbav:"written"`
	Cursor     int    `dynamodbav:"cursor"`
	Chunks     int    `dynamodbav:"chunks"`
	Pages      []byte `dynamodbav:"pages,omitempty"`
	PagesLost  bool   `dynamodbav:"pagesLost,omitempty"`
	Owner      string `dynamodbav:"owner"`
	LeaseUntil int64  `dynamodbav:"leaseUntil"`
	Attempts   int    `dynamodbav:"attempts"`
	Message    string `dynamodbav:"message,omitempty"`
	KeysID     string `dynamodbav:"keysId,omitempty"`
	GSI1PK     string `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK     string `dynamodbav:"gsi1sk,omitempty"`
}

func baselineDecodeJob(av map[string]types.AttributeValue) (*baseline.Job, error) {
	var it baselineJobItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, dynamo.Errorf("decode baseline job", err)
	}
	created := dynamo.ParseTime(it.CreatedAt)
	job := &baseline.Job{
		Baseline: baseline.Baseline{
			SpaceKey: it.Space, Number: it.Number, Name: it.Name, Label: it.Label, CEO: it.CEO, Instant: it.Instant,
			CreatedAt: created, CreatedBy: it.CreatedBy, Count: it.Written, Status: it.State, Total: it.Total, Message: it.Message,
		},
		Tenant: it.Tenant, Cursor: it.Cursor, PagesLost: it.PagesLost, Owner: it.Owner, Attempts: it.Attempts,
		KeysID: it.KeysID,
	}
	if job.Status == "" {
		job.Status = baseline.StatusFreezing
	}
	if it.LeaseUntil > 0 {
		job.LeaseUntil = time.UnixMilli(it.LeaseUntil)
	}
	if len(it.Pages) > 0 {
		var list []baselinePage
		if err := gunzipJSON(it.Pages, &list); err != nil {
			return nil, fmt.Errorf("decode job page summary: %w", err)
		}
		for _, p := range list {
			job.Pages = append(job.Pages, baseline.PageCount{PageID: p.ID, Title: p.Title, Count: p.Count})
		}
	}
	return job, nil
}

func gzipJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzipJSON(data []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// baselineJobPages encodes the job's page summary; nil and lost when too large.
func baselineJobPages(job *baseline.Job) ([]byte, error) {
	if job.PagesLost || len(job.Pages) == 0 {
		return nil, nil
	}
	list := make([]baselinePage, 0, len(job.Pages))
	for _, p := range job.Pages {
		list = append(list, baselinePage{ID: p.PageID, Title: p.Title, Count: p.Count})
	}
	data, err := gzipJSON(list)
	if err != nil {
		return nil, fmt.Errorf("encode job page summary: %w", err)
	}
	if len(data) > baselineMaxPages {
		job.PagesLost, job.Pages = true, nil
		return nil, nil
	}
	return data, nil
}

func leaseMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// baselineChunks cuts keys into JSON arrays of at most baselineChunkBytes.
func baselineChunks(keys []string) ([]string, error) {
	var out []string
	var cur []string
	size := 2
	flush := func() error {
		raw, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		out = append(out, string(raw))
		cur, size = nil, 2
		return nil
	}
	for _, k := range keys {
		raw, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		if len(cur) > 0 && size+len(raw)+1 > baselineChunkBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		cur = append(cur, k)
		size += len(raw) + 1
	}
	if len(cur) > 0 || len(out) == 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Begin writes the job's key chunks in its baseline's partition (one
// PutItem each), then the job, on condition that it does not exist,
// listed in FREEZE#PENDING.
func (s *BaselineStore) Begin(ctx context.Context, job *baseline.Job) error {
	chunks, err := s.baselinePutChunks(ctx, job, nil)
	if err != nil {
		return err
	}
	av, err := baselineJobAV(job, chunks)
	if err != nil {
		return err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: av, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}); err != nil {
		return dynamo.Errorf("write baseline job", err)
	}
	return nil
}

// baselineNumberAttempts bounds BeginNext's tries when concurrent creations
// of the space take the number it read.
const baselineNumberAttempts = 60

// BeginNext stages the job's key chunks under a random keysId (one PutItem
// each, with a ttl), then numbers the job: it reads the space's counter
// (one consistent GetItem) and, in one TransactWriteItems, moves the
// counter from that value to the next on condition that it is unchanged
// and puts the job (listed in FREEZE#PENDING) on condition that it does
// not exist. A creation that took the number meanwhile cancels the
// transaction, and BeginNext reads the counter again, with backoff. A
// number is thus never taken without its job, which the worker finishes:
// a space's numbers are dense.
func (s *BaselineStore) BeginNext(ctx context.Context, job *baseline.Job) error {
	job.KeysID = rand.Text()
	ttl := time.Now().Add(baselineKeysTTL).Unix()
	chunks, err := s.baselinePutChunks(ctx, job, &ttl)
	if err != nil {
		return err
	}
	counter := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: spacePK(job.Tenant, job.SpaceKey)},
		"sk": &types.AttributeValueMemberS{Value: baselineCounterSK},
	}
	for attempt := 0; attempt < baselineNumberAttempts; attempt++ {
		if attempt > 0 {
			if err := dynamo.Backoff(ctx, min(attempt, 4)); err != nil {
				return err
			}
		}
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: &s.table, Key: counter, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("n"),
		})
		if err != nil {
			return dynamo.Errorf("read baseline counter", err)
		}
		var got struct {
			N int `dynamodbav:"n"`
		}
		if err := attributevalue.UnmarshalMap(out.Item, &got); err != nil {
			return dynamo.Errorf("decode baseline counter", err)
		}
		if got.N >= maxBaseline {
			return apperr.Conflictf("space %s has used all %d baseline numbers", job.SpaceKey, maxBaseline)
		}
		job.Number = got.N + 1
		av, err := baselineJobAV(job, chunks)
		if err != nil {
			return err
		}
		cond, values := "attribute_not_exists(n)", map[string]types.AttributeValue{
			":n": &types.AttributeValueMemberN{Value: strconv.Itoa(job.Number)},
		}
		if got.N > 0 {
			cond = "n = :prev"
			values[":prev"] = &types.AttributeValueMemberN{Value: strconv.Itoa(got.N)}
		}
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{
				TableName: &s.table, Key: counter, UpdateExpression: aws.String("SET n = :n"),
				ConditionExpression: &cond, ExpressionAttributeValues: values,
			}},
			{Put: &types.Put{TableName: &s.table, Item: av, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		}})
		if err == nil {
			return nil
		}
		if !dynamo.TxConditionFailed(err) {
			return dynamo.Errorf("number baseline job", err)
		}
	}
	return apperr.Conflictf("too many baselines of space %s are being created at once; retry", job.SpaceKey)
}

// baselinePutChunks writes the job's key chunks (one PutItem each; with
// ttl, staged under job.KeysID) and returns how many.
func (s *BaselineStore) baselinePutChunks(ctx context.Context, job *baseline.Job, ttl *int64) (int, error) {
	chunks, err := baselineChunks(job.Keys)
	if err != nil {
		return 0, fmt.Errorf("encode job keys: %w", err)
	}
	for i, c := range chunks {
		item := baselineChunkKey(job.Tenant, job.SpaceKey, job.Number, job.KeysID, i)
		item["keys"] = &types.AttributeValueMemberS{Value: c}
		if ttl != nil {
			item["ttl"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(*ttl, 10)}
		}
		if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item}); err != nil {
			return 0, dynamo.Errorf("write baseline job keys", err)
		}
	}
	return len(chunks), nil
}

// baselineJobAV encodes a new job with its chunk count.
func baselineJobAV(job *baseline.Job, chunks int) (map[string]types.AttributeValue, error) {
	pages, err := baselineJobPages(job)
	if err != nil {
		return nil, err
	}
	key := baselineJobKey(job.Tenant, job.SpaceKey, job.Number)
	started := job.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000000Z")
	it := baselineJobItem{
		PK: key["pk"].(*types.AttributeValueMemberS).Value, SK: key["sk"].(*types.AttributeValueMemberS).Value,
		Tenant: job.Tenant, Space: job.SpaceKey, Number: job.Number, Name: job.Name, Label: job.Label, CEO: job.CEO,
		Instant: job.Instant, CreatedAt: dynamo.Time(job.CreatedAt), CreatedBy: job.CreatedBy,
		State: baseline.StatusFreezing, Total: job.Total, Written: job.Count, Cursor: job.Cursor, Chunks: chunks,
		Pages: pages, PagesLost: job.PagesLost, Owner: job.Owner, LeaseUntil: leaseMillis(job.LeaseUntil), KeysID: job.KeysID,
		GSI1PK: baselinePendingPK, GSI1SK: fmt.Sprintf("%s#%s#%s#%08d", started, job.Tenant, job.SpaceKey, job.Number),
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, dynamo.Errorf("encode baseline job", err)
	}
	return av, nil
}

// baselineJobGone tells a failed conditional update of a job apart: not found
// when the job is gone, conflict when another run holds its lease.
func (s *BaselineStore) baselineJobGone(ctx context.Context, job *baseline.Job, err error) error {
	out, gerr := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: baselineJobKey(job.Tenant, job.SpaceKey, job.Number), ProjectionExpression: aws.String("pk"), ConsistentRead: aws.Bool(true),
	})
	if gerr != nil {
		return dynamo.Errorf("get baseline job", gerr)
	}
	if out.Item == nil {
		return apperr.Wrap(apperr.NotFoundf("the freeze of baseline %d of space %s was cancelled", job.Number, job.SpaceKey), err)
	}
	return apperr.Wrap(apperr.Conflictf("the freeze of baseline %d of space %s is leased by another run", job.Number, job.SpaceKey), err)
}

// Progress saves the job's progress and lease with one conditional
// UpdateItem (condition: the job exists and job.Owner holds it).
func (s *BaselineStore) Progress(ctx context.Context, job *baseline.Job) error {
	pages, err := baselineJobPages(job)
	if err != nil {
		return err
	}
	vals := map[string]types.AttributeValue{
		":w":  &types.AttributeValueMemberN{Value: fmt.Sprint(job.Count)},
		":c":  &types.AttributeValueMemberN{Value: fmt.Sprint(job.Cursor)},
		":a":  &types.AttributeValueMemberN{Value: fmt.Sprint(job.Attempts)},
		":lu": &types.AttributeValueMemberN{Value: fmt.Sprint(leaseMillis(job.LeaseUntil))},
		":pl": &types.AttributeValueMemberBOOL{Value: job.PagesLost},
		":o":  &types.AttributeValueMemberS{Value: job.Owner},
	}
	update := "SET written = :w, #c = :c, attempts = :a, leaseUntil = :lu, pagesLost = :pl"
	if pages != nil {
		update += ", pages = :p"
		vals[":p"] = &types.AttributeValueMemberB{Value: pages}
	} else {
		update += " REMOVE pages"
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: baselineJobKey(job.Tenant, job.SpaceKey, job.Number),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(pk) AND #o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": "owner", "#c": "cursor"},
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return s.baselineJobGone(ctx, job, err)
	}
	if err != nil {
		return dynamo.Errorf("save baseline job progress", err)
	}
	return nil
}

// Fail marks the job FAILED with message and removes it from
// FREEZE#PENDING (condition: job.Owner holds it).
func (s *BaselineStore) Fail(ctx context.Context, job *baseline.Job, message string) error {
	if len(message) > 1000 {
		message = message[:1000]
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: baselineJobKey(job.Tenant, job.SpaceKey, job.Number),
		UpdateExpression:         aws.String("SET #s = :s, message = :m, attempts = :a, written = :w REMOVE gsi1pk, gsi1sk, leaseUntil"),
		ConditionExpression:      aws.String("attribute_exists(pk) AND #o = :o"),
		ExpressionAttributeNames: map[string]string{"#o": "owner", "#s": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: baseline.StatusFailed},
			":m": &types.AttributeValueMemberS{Value: message},
			":a": &types.AttributeValueMemberN{Value: fmt.Sprint(job.Attempts)},
			":w": &types.AttributeValueMemberN{Value: fmt.Sprint(job.Count)},
			":o": &types.AttributeValueMemberS{Value: job.Owner},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return s.baselineJobGone(ctx, job, err)
	}
	if err != nil {
		return dynamo.Errorf("mark baseline job failed", err)
	}
	return nil
}

// Pending reads up to limit jobs of gsi1 FREEZE#PENDING, oldest first
// (one Query).
func (s *BaselineStore) Pending(ctx context.Context, limit int) ([]baseline.JobRef, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String("gsi1"),
		KeyConditionExpression:    aws.String("gsi1pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: baselinePendingPK}},
		ProjectionExpression:      aws.String("tenant, spaceKey, #n"),
		ExpressionAttributeNames:  map[string]string{"#n": "number"},
		Limit:                     aws.Int32(int32(max(limit, 1))),
	})
	if err != nil {
		return nil, dynamo.Errorf("list pending baseline jobs", err)
	}
	refs := make([]baseline.JobRef, 0, len(out.Items))
	for _, av := range out.Items {
		var r struct {
			Tenant string `dynamodbav:"tenant"`
			Space  string `dynamodbav:"spaceKey"`
			Number int    `dynamodbav:"number"`
		}
		if err := attributevalue.UnmarshalMap(av, &r); err != nil {
			return nil, dynamo.Errorf("decode pending baseline job", err)
		}
		refs = append(refs, baseline.JobRef{Tenant: r.Tenant, SpaceKey: r.Space, Number: r.Number})
	}
	return refs, nil
}

// Lease takes the lease of a FREEZING job whose lease is free or expired
// (one conditional UpdateItem returning the job), then reads its key
// chunks (one consistent GetItem each); nil when it is not available.
func (s *BaselineStore) Lease(ctx context.Context, ref baseline.JobRef, owner string, until, now time.Time) (*baseline.Job, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: baselineJobKey(ref.Tenant, ref.SpaceKey, ref.Number),
		UpdateExpression:         aws.String("SET #o = :o, leaseUntil = :u"),
		ConditionExpression:      aws.String("attribute_exists(pk) AND #s = :f AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)"),
		ExpressionAttributeNames: map[string]string{"#o": "owner", "#s": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":o":   &types.AttributeValueMemberS{Value: owner},
			":u":   &types.AttributeValueMemberN{Value: fmt.Sprint(until.UnixMilli())},
			":f":   &types.AttributeValueMemberS{Value: baseline.StatusFreezing},
			":now": &types.AttributeValueMemberN{Value: fmt.Sprint(now.UnixMilli())},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, nil
	}
	if err != nil {
		return nil, dynamo.Errorf("lease baseline job", err)
	}
	job, err := baselineDecodeJob(out.Attributes)
	if err != nil {
		return nil, err
	}
	var chunks struct {
		Chunks int `dynamodbav:"chunks"`
	}
	if err := attributevalue.UnmarshalMap(out.Attributes, &chunks); err != nil {
		return nil, dynamo.Errorf("decode baseline job", err)
	}
	for i := range chunks.Chunks {
		c, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: &s.table, Key: baselineChunkKey(job.Tenant, job.SpaceKey, job.Number, job.KeysID, i), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, dynamo.Errorf("read baseline job keys", err)
		}
		v, _ := c.Item["keys"].(*types.AttributeValueMemberS)
		if v == nil {
			return nil, fmt.Errorf("read baseline job keys: chunk %d of baseline %d of %s is missing", i, job.Number, job.SpaceKey)
		}
		var keys []string
		if err := json.Unmarshal([]byte(v.Value), &keys); err != nil {
			return nil, fmt.Errorf("decode baseline job keys: %w", err)
		}
		job.Keys = append(job.Keys, keys...)
	}
	return job, nil
}

// baselineDeleteStagedChunks removes the n staged key chunks of a job
// (best effort: they expire by their ttl anyway).
func (s *BaselineStore) baselineDeleteStagedChunks(ctx context.Context, job *baseline.Job, n int) {
	for i := range n {
		_, _ = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: baselineChunkKey(job.Tenant, job.SpaceKey, job.Number, job.KeysID, i)})
	}
}

// baselineDeleteKeyChunks removes the key chunks of a committed job (best
// effort: they are invisible, staged ones expire by their ttl, and a
// DELETE of the baseline removes the others).
func (s *BaselineStore) baselineDeleteKeyChunks(ctx context.Context, job *baseline.Job) {
	chunks, err := baselineChunks(job.Keys)
	if err != nil {
		return
	}
	for i := range chunks {
		_, _ = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: baselineChunkKey(job.Tenant, job.SpaceKey, job.Number, job.KeysID, i)})
	}
}
