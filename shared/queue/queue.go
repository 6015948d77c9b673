// Package queue is the SQS adapter of the outbound queue: a FIFO queue whose
// messages are envelopes of references to outbox messages of one
// integration ({"tenant","serviceId","ids"}), one message group per
// integration (tenant#serviceId). It implements integration.Queue over the
// few SQS operations it needs; the outbox in DynamoDB stays the record of
// truth.
package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/reqtrace/reqtrace/shared/integration"
)

// API is the part of the SQS client the queue uses.
type API interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Queue is the outbound FIFO queue at one URL.
type Queue struct {
	api API
	url string
}

var (
	_ integration.Queue           = (*Queue)(nil)
	_ integration.DeadLetterQueue = (*Queue)(nil) // a Queue at the dead-letter queue's URL
)

// New returns the queue at url (the outbound queue, or its dead-letter
// queue: its messages are the same envelopes).
func New(api API, url string) *Queue { return &Queue{api: api, url: url} }

// body is the JSON of an envelope.
type body struct {
	Tenant    string   `json:"tenant"`
	ServiceID string   `json:"serviceId"`
	IDs       []string `json:"ids"`
}

// DedupID is the deduplication id of an envelope: the outbox message id of
// a one-id envelope, else "h" and the SHA-256 of its ids, so that the same
// envelope sent twice within SQS's 5-minute window is stored once; "w" and
// its Wake value for a wake-up call, which must never be dropped as a
// duplicate.
func DedupID(e integration.Envelope) string {
	if e.Wake != "" {
		return "w" + e.Wake
	}
	if len(e.IDs) == 1 && len(e.IDs[0]) <= 128 {
		return e.IDs[0]
	}
	sum := sha256.Sum256([]byte(strings.Join(e.IDs, ",")))
	return "h" + hex.EncodeToString(sum[:])
}

// GroupID is the message group of an integration: tenant#serviceId (at
// most 63+1+64 = 128 characters, SQS's limit).
func GroupID(tenant, serviceID string) string { return tenant + "#" + serviceID }

// sendParallel bounds the SendMessageBatch calls in flight. Order inside a
// group does not matter for delivery: the sync function delivers in outbox
// id order.
const sendParallel = 8

// Publish sends envelopes with SendMessageBatch, 10 per call, up to 8 calls
// in parallel, and answers the envelopes SQS accepted; the error says how
// many it did not.
func (q *Queue) Publish(ctx context.Context, envs []integration.Envelope) ([]integration.Envelope, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sent []integration.Envelope
		errs []error
		sem  = make(chan struct{}, sendParallel)
	)
	for chunk := range slices.Chunk(envs, 10) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok, err := q.sendChunk(ctx, chunk)
			mu.Lock()
			sent = append(sent, ok...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return sent, errors.Join(errs...)
}

func (q *Queue) sendChunk(ctx context.Context, chunk []integration.Envelope) ([]integration.Envelope, error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(chunk))
	for i, e := range chunk {
		b, err := json.Marshal(body{Tenant: e.Tenant, ServiceID: e.ServiceID, IDs: e.IDs})
		if err != nil {
			return nil, fmt.Errorf("encode envelope: %w", err)
		}
		entries[i] = types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(b)),
			MessageGroupId: aws.String(GroupID(e.Tenant, e.ServiceID)), MessageDeduplicationId: aws.String(DedupID(e)),
		}
	}
	out, err := q.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &q.url, Entries: entries})
	if err != nil {
		return nil, fmt.Errorf("send %d envelopes: %w", len(chunk), err)
	}
	sent := make([]integration.Envelope, 0, len(out.Successful))
	for _, s := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i >= 0 && i < len(chunk) {
			sent = append(sent, chunk[i])
		}
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return sent, fmt.Errorf("send envelopes: %d refused (first: %s %s)", len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return sent, nil
}

// Receive takes up to n (at most 10) envelopes, long-polling up to wait
// (whole seconds, at most 20) for the first. A body that is not an
// envelope comes back Malformed, to be deleted.
func (q *Queue) Receive(ctx context.Context, n int, wait time.Duration) ([]integration.Received, error) {
	out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: &q.url, MaxNumberOfMessages: int32(min(max(n, 1), 10)),
		WaitTimeSeconds:             int32(min(max(wait/time.Second, 0), 20)),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return nil, fmt.Errorf("receive envelopes: %w", err)
	}
	recv := make([]integration.Received, 0, len(out.Messages))
	for _, m := range out.Messages {
		r := integration.Received{Handle: aws.ToString(m.ReceiptHandle)}
		r.Receives, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		var b body
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &b); err != nil || b.Tenant == "" || b.ServiceID == "" ||
			len(b.IDs) == 0 || slices.Contains(b.IDs, "") {
			r.Malformed = true
		} else {
			r.Envelope = integration.Envelope{Tenant: b.Tenant, ServiceID: b.ServiceID, IDs: b.IDs}
		}
		recv = append(recv, r)
	}
	return recv, nil
}

// Delete removes received messages, 10 per DeleteMessageBatch. Entries SQS
// refuses (a receipt handle gone stale after the visibility timeout) are
// reported in the error; their messages come back and are then ignored.
func (q *Queue) Delete(ctx context.Context, handles []string) error {
	var errs []error
	for chunk := range slices.Chunk(handles, 10) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
		}
		out, err := q.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete %d envelopes: %w", len(chunk), err))
			continue
		}
		if len(out.Failed) > 0 {
			errs = append(errs, fmt.Errorf("delete envelopes: %d refused (first: %s)", len(out.Failed), aws.ToString(out.Failed[0].Code)))
		}
	}
	return errors.Join(errs...)
}

// ChangeVisibility hides received messages for d (whole seconds, at most
// 12 hours), 10 per ChangeMessageVisibilityBatch.
func (q *Queue) ChangeVisibility(ctx context.Context, handles []string, d time.Duration) error {
	secs := int32(min(max(d/time.Second, 0), 12*time.Hour/time.Second))
	var errs []error
	for chunk := range slices.Chunk(handles, 10) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h), VisibilityTimeout: secs}
		}
		out, err := q.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			errs = append(errs, fmt.Errorf("hide %d envelopes: %w", len(chunk), err))
			continue
		}
		if len(out.Failed) > 0 {
			errs = append(errs, fmt.Errorf("hide envelopes: %d refused (first: %s)", len(out.Failed), aws.ToString(out.Failed[0].Code)))
		}
	}
	return errors.Join(errs...)
}
