package wikitable

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

var _ integration.ReconcileStore = (*IntegrationStore)(nil)

// reconcilePendingPK is the sparse gsi1 partition of the integrations
// flagged for reconcile, across tenants: gsi1sk <at>#<tenant>#<serviceId>,
// <at> being 20 digits of unix nanoseconds, so the oldest flag comes first.
const reconcilePendingPK = "RECONCILE#PENDING"

// reconcileBatch is how many rows PageLinked reads per BatchGetItem.
const reconcileBatch = 100

// PageLinked implements integration.ReconcileStore: one Query per page of
// the service index partitions of serviceID and of macros naming none
// (index.go, indexService), then the rows, 100 per BatchGetItem, strongly
// consistent.
func (s *IntegrationStore) PageLinked(ctx context.Context, tenant, serviceID string, fn func([]*requirement.Requirement) error) error {
	values := []string{serviceIndexValue(serviceID)}
	if values[0] != indexAnyService {
		values = append(values, indexAnyService)
	}
	seen := map[requirement.ID]bool{}
	var ids []requirement.ID
	send := func() error {
		if len(ids) == 0 {
			return nil
		}
		rows, err := s.reqs.GetMany(ctx, tenant, ids)
		if err != nil {
			return fmt.Errorf("read linked requirements: %w", err)
		}
		page := make([]*requirement.Requirement, 0, len(rows))
		for _, id := range ids {
			if r := rows[requirement.NewID(id.SpaceKey, id.Key, 0)]; r != nil && r.Status != "" {
				page = append(page, r)
			}
		}
		ids = ids[:0]
		if len(page) == 0 {
			return nil
		}
		return fn(page)
	}
	for _, v := range values {
		var ferr error
		err := s.reqs.indexQuery(ctx, indexPK(tenant, indexService, v), "", 0, func(id requirement.ID) bool {
			k := requirement.NewID(id.SpaceKey, id.Key, 0)
			if seen[k] {
				return true
			}
			seen[k] = true
			ids = append(ids, id)
			if len(ids) == reconcileBatch {
				ferr = send()
			}
			return ferr == nil
		})
		if ferr != nil {
			return ferr
		}
		if err != nil {
			return fmt.Errorf("read the service index of %s: %w", serviceID, err)
		}
	}
	return send()
}

// CurrentRows implements integration.ReconcileStore (BatchGetItem of 100,
// strongly consistent): the current rows of ids, whatever their Baseline.
func (s *IntegrationStore) CurrentRows(ctx context.Context, tenant string, ids []requirement.ID) ([]*requirement.Requirement, error) {
	current := make([]requirement.ID, len(ids))
	for i, id := range ids {
		current[i] = id.Current()
	}
	rows, err := s.reqs.GetMany(ctx, tenant, current)
	if err != nil {
		return nil, fmt.Errorf("read requirements: %w", err)
	}
	out := make([]*requirement.Requirement, 0, len(rows))
	for _, r := range rows {
		if r.Status != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// AddMessages implements integration.ReconcileStore: BatchWriteItem of 25
// (OutboxStore.Put).
func (s *IntegrationStore) AddMessages(ctx context.Context, tenant string, msgs []*outbox.Message) error {
	return NewOutboxStore(s.db, s.table).Put(ctx, tenant, msgs)
}

func reconcileSK(tenant, serviceID string, at time.Time) string {
	return fmt.Sprintf("%020d#%s#%s", at.UnixNano(), tenant, serviceID)
}

// FlagReconcile implements integration.ReconcileStore.
func (s *IntegrationStore) FlagReconcile(ctx context.Context, tenant, serviceID string, at time.Time) error {
	sk := reconcileSK(tenant, serviceID, at)
	u := expression.Set(expression.Name("reconcileAt"), expression.Value(sk)).
		Set(expression.Name("gsi1pk"), expression.Value(reconcilePendingPK)).
		Set(expression.Name("gsi1sk"), expression.Value(sk))
	_, err := s.integrationConditional(ctx, tenant, serviceID, u, expression.AttributeExists(expression.Name("pk")), "flag for reconcile")
	return err
}

// Flagged implements integration.ReconcileStore (the one cross-tenant
// read of this item kind, by the sync function only).
func (s *IntegrationStore) Flagged(ctx context.Context, fn func([]integration.Flag) (bool, error)) error {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String("gsi1"),
		KeyConditionExpression:    aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: reconcilePendingPK}},
		ProjectionExpression:      aws.String("gsi1sk"),
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return dynamo.Errorf("list integrations to reconcile", err)
		}
		var flags []integration.Flag
		for _, av := range out.Items {
			sk, ok := av["gsi1sk"].(*types.AttributeValueMemberS)
			if !ok {
				continue
			}
			parts := strings.SplitN(sk.Value, "#", 2)
			i := strings.LastIndexByte(parts[len(parts)-1], '#')
			if len(parts) != 2 || i < 0 {
				continue
			}
			flags = append(flags, integration.Flag{Tenant: parts[1][:i], ServiceID: parts[1][i+1:], At: sk.Value})
		}
		if more, err := fn(flags); err != nil || !more {
			return err
		}
	}
	return nil
}

// ClearReconcile implements integration.ReconcileStore.
func (s *IntegrationStore) ClearReconcile(ctx context.Context, f integration.Flag) error {
	u := expression.Remove(expression.Name("reconcileAt")).Remove(expression.Name("gsi1pk")).Remove(expression.Name("gsi1sk"))
	_, err := s.integrationConditional(ctx, f.Tenant, f.ServiceID, u, expression.Name("reconcileAt").Equal(expression.Value(f.At)), "clear reconcile flag")
	return err
}

// ResetPendingRemovals implements integration.ReconcileStore.
func (s *IntegrationStore) ResetPendingRemovals(ctx context.Context, tenant, serviceID string) error {
	_, err := s.integrationConditional(ctx, tenant, serviceID, expression.Remove(expression.Name("pendingRemovals")),
		expression.AttributeExists(expression.Name("pk")), "reset pending removals")
	return err
}
