package queue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/queue"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestQueueRoundTrip(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := context.Background()
	q := queue.New(env.SQS, env.QueueURL)
	var refs []integration.Ref
	for i := range 2500 {
		refs = append(refs, integration.Ref{Tenant: "demo", ServiceID: fmt.Sprintf("jira-%d", i%2), ID: fmt.Sprintf("%024x", i)})
	}
	for i := range 23 {
		refs = append(refs, integration.Ref{Tenant: "acme", ServiceID: fmt.Sprintf("s%d", i), ID: fmt.Sprintf("a%023x", i)})
	}
	envs := integration.Envelopes(refs)
	sent, err := q.Publish(ctx, envs)
	if err != nil || len(sent) != len(envs) || len(envs) != 4+23 {
		t.Fatalf("Publish = %d of %d, %v", len(sent), len(envs), err)
	}
	// The same envelopes again within the deduplication window: accepted,
	// stored once.
	if sent, err := q.Publish(ctx, envs[:3]); err != nil || len(sent) != 3 {
		t.Fatalf("second Publish = %d, %v", len(sent), err)
	}
	// A body that is not an envelope.
	if _, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &env.QueueURL, MessageBody: aws.String(`{"tenant":"demo","serviceId":"x","ids":[]}`),
		MessageGroupId: aws.String("x"), MessageDeduplicationId: aws.String("junk")}); err != nil {
		t.Fatal(err)
	}

	var got []integration.Ref
	received, malformed := 0, 0
	for range 20 {
		recv, err := q.Receive(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recv) == 0 {
			break
		}
		var hs []string
		for _, r := range recv {
			received++
			if r.Malformed {
				malformed++
			} else {
				got = append(got, r.Envelope.Refs()...)
				if r.Receives != 1 {
					t.Fatalf("receive count %d", r.Receives)
				}
			}
			hs = append(hs, r.Handle)
		}
		if err := q.Delete(ctx, hs); err != nil {
			t.Fatal(err)
		}
	}
	if received != 28 || malformed != 1 || len(got) != len(refs) {
		t.Fatalf("received %d envelopes (%d malformed) holding %d references", received, malformed, len(got))
	}
	for _, r := range refs {
		if !slices.Contains(got, r) {
			t.Fatalf("reference %+v not received", r)
		}
	}
}

func TestQueueVisibilityAndAttributes(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := context.Background()
	q := queue.New(env.SQS, env.QueueURL)
	one := integration.Envelope{Tenant: "acme", ServiceID: "jira-1", IDs: []string{"00000000000000010000abcd"}}
	two := integration.Envelope{Tenant: "acme", ServiceID: "jira-2", IDs: []string{"a", "b"}}
	if _, err := q.Publish(ctx, []integration.Envelope{one, two}); err != nil {
		t.Fatal(err)
	}
	// The messages carry the group and deduplication ids of the design.
	out, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &env.QueueURL, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("receive = %v, %v", out, err)
	}
	m := out.Messages[0]
	if m.Attributes["MessageGroupId"] != "acme#jira-1" || m.Attributes["MessageDeduplicationId"] != one.IDs[0] {
		t.Fatalf("attributes = %v", m.Attributes)
	}
	if d := out.Messages[1].Attributes["MessageDeduplicationId"]; d != queue.DedupID(two) || len(d) != 65 {
		t.Fatalf("envelope deduplication id = %q", d)
	}
	// Visible again at once, then hidden for an hour.
	if err := q.ChangeVisibility(ctx, []string{aws.ToString(m.ReceiptHandle)}, 0); err != nil {
		t.Fatal(err)
	}
	recv, err := q.Receive(ctx, 10, time.Second)
	if err != nil || len(recv) != 1 || !slices.Equal(recv[0].Envelope.IDs, one.IDs) || recv[0].Receives != 2 {
		t.Fatalf("Receive = %+v, %v", recv, err)
	}
	if err := q.ChangeVisibility(ctx, []string{recv[0].Handle}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if recv, _ := q.Receive(ctx, 10, 0); len(recv) != 0 {
		t.Fatalf("hidden message received: %+v", recv)
	}
}

// TestDeadLetterQueue: an envelope received maxReceiveCount times without
// a delete reaches the dead-letter queue, where a Queue at the DLQ's URL
// (the sync run's DeadLetterQueue) reads it back as an envelope and
// deletes it.
func TestDeadLetterQueue(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := context.Background()
	q, dlq := queue.New(env.SQS, env.QueueURL), queue.New(env.SQS, env.DLQURL)
	var _ integration.DeadLetterQueue = dlq
	e := integration.Envelope{Tenant: "demo", ServiceID: "jira-1", IDs: []string{"00000000000000010000abcd", "00000000000000020000abcd"}}
	if _, err := q.Publish(ctx, []integration.Envelope{e}); err != nil {
		t.Fatal(err)
	}
	for i := 1; ; i++ {
		recv, err := q.Receive(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recv) == 0 {
			break
		}
		if i > 10 {
			t.Fatal("the envelope never reached the dead-letter queue")
		}
		if err := q.ChangeVisibility(ctx, []string{recv[0].Handle}, 0); err != nil {
			t.Fatal(err)
		}
	}
	recv, err := dlq.Receive(ctx, 10, time.Second)
	if err != nil || len(recv) != 1 || recv[0].Malformed || recv[0].Envelope.Tenant != "demo" || !slices.Equal(recv[0].Envelope.IDs, e.IDs) {
		t.Fatalf("dead-letter Receive = %+v, %v", recv, err)
	}
	if err := dlq.Delete(ctx, []string{recv[0].Handle}); err != nil {
		t.Fatal(err)
	}
	if recv, _ := dlq.Receive(ctx, 10, 0); len(recv) != 0 {
		t.Fatalf("deleted dead letter received again: %+v", recv)
	}
}
