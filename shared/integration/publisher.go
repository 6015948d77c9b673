package integration

import (
	"context"
	"errors"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/outbox"
)

// Publisher hands committed outbox messages to the outbound queue. The
// content function calls Publish right after the transaction that wrote
// the messages commits; the sync function calls it for messages that never
// reached SQS.
type Publisher struct {
	queue  RefPublisher
	outbox EnqueueMarker
}

// NewPublisher returns a Publisher sending to queue and recording the sent
// messages in outbox.
func NewPublisher(queue RefPublisher, outbox EnqueueMarker) *Publisher {
	return &Publisher{queue: queue, outbox: outbox}
}

// Publish sends references to the NEW, not yet enqueued messages of tenant
// to SQS, one envelope per integration (Envelopes; message group
// tenant#serviceId, up to 10 envelopes per SendMessageBatch), and then
// takes the sent ones out of the pending partition. It does not change
// msgs.
//
// An error here must be logged, not answered: the change is committed and
// its messages are safe in the outbox; the sync function re-enqueues the
// ones that are still pending a minute later.
func (p *Publisher) Publish(ctx context.Context, tenant string, msgs []*outbox.Message) error {
	refs := make([]Ref, 0, len(msgs))
	for _, m := range msgs {
		if m != nil && m.State == outbox.New && !m.Enqueued {
			refs = append(refs, RefOf(tenant, m))
		}
	}
	return p.publish(ctx, refs)
}

// Wake sends a wake-up envelope naming message id of an integration
// (WakeEnvelope): never dropped as a duplicate, it makes the next sync run
// sweep the integration's whole backlog.
func (p *Publisher) Wake(ctx context.Context, tenant, serviceID, id string) error {
	if _, err := p.queue.Publish(ctx, []Envelope{WakeEnvelope(tenant, serviceID, id)}); err != nil {
		return fmt.Errorf("wake integration %s: %w", serviceID, err)
	}
	return nil
}

func (p *Publisher) publish(ctx context.Context, refs []Ref) error {
	if len(refs) == 0 {
		return nil
	}
	envs, sendErr := p.queue.Publish(ctx, Envelopes(refs))
	var sent []Ref
	for _, e := range envs {
		sent = append(sent, e.Refs()...)
	}
	if sendErr != nil {
		sendErr = fmt.Errorf("publish %d of %d outbound messages: %w", len(refs)-len(sent), len(refs), sendErr)
	}
	var markErr error
	if len(sent) > 0 {
		if err := p.outbox.MarkEnqueued(ctx, sent); err != nil {
			markErr = fmt.Errorf("mark %d outbound messages enqueued: %w", len(sent), err)
		}
	}
	return errors.Join(sendErr, markErr)
}
