package trackertable

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// Tracker outbox marks.

// A mark (pk T#t#TOUTBOX, sk <applinkId>#<space>#<key>#<baseline|->) says
// that a requirement's TRACKER set must reach its wiki. While it exists it
// is in one of the sparse gsi1 partitions TOUTBOX#PENDING#<nn> (gsi1sk
// <tenant>#<sk>), chosen by tenant, which the TrackerOutbox function reads
// across tenants. Every mark is written there and removed again once sent,
// so a single partition would bound every tenant's link edits together
// (docs/scale.md). seq grows with every edit that marks it; a sender
// leases it, and deletes it only if seq is still the one it read.
const outboxPendingShards = 64

// outboxPendingLegacy is the one pending partition of the releases before
// the shards: still read, so that marks a former release left there are
// sent; nothing writes it any more.
const outboxPendingLegacy = "TOUTBOX#PENDING"

func outboxPending(tenant string) string {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	return outboxPendingShard(int(h.Sum32() % outboxPendingShards))
}

func outboxPendingShard(n int) string { return fmt.Sprintf("%s#%02d", outboxPendingLegacy, n) }

func outboxPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "TOUTBOX" }

type markItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	Tenant     string `dynamodbav:"tenant"`
	ApplinkID  string `dynamodbav:"applinkId"`
	SpaceKey   string `dynamodbav:"spaceKey"`
	Key        string `dynamodbav:"key"`
	Baseline   int    `dynamodbav:"baseline"`
	Seq        int64  `dynamodbav:"seq"`
	Attempts   int    `dynamodbav:"attempts"`
	LastError  string `dynamodbav:"lastError"`
	MarkedAt   string `dynamodbav:"markedAt"`
	LeaseOwner string `dynamodbav:"leaseOwner"`
}

func (it markItem) entity() tracker.Mark {
	return tracker.Mark{Tenant: it.Tenant, Seq: it.Seq, Attempts: it.Attempts, LastError: it.LastError,
		MarkedAt: dynamo.ParseTime(it.MarkedAt),
		Ref:      tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline}}
}

// markUpdate marks ref (a transaction item of WriteLinks).
func (s *TrackerStore) markUpdate(tenant string, ref tracker.ReqRef, now time.Time) (types.TransactWriteItem, error) {
	upd := refSet(expression.UpdateBuilder{}, ref).
		Add(expression.Name("seq"), expression.Value(1)).
		Set(expression.Name("tenant"), expression.Value(tenant)).
		Set(expression.Name("markedAt"), expression.Value(dynamo.Time(now))).
		Set(expression.Name("gsi1pk"), expression.Value(outboxPending(tenant))).
		Set(expression.Name("gsi1sk"), expression.Value(tenant+"#"+refPart(ref)))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, dynamo.Errorf("build outbox mark", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.table, Key: itemKey(outboxPK(tenant), refPart(ref)),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// PendingMarks lists the marks of every tenant from the sparse gsi1
// partitions TOUTBOX#PENDING#<nn> and the legacy TOUTBOX#PENDING
// (eventually consistent), at most limit. The shards are read from a
// random one on, so that when there are more than limit marks no shard's
// tenants wait behind the others' run after run.
func (s *TrackerStore) PendingMarks(ctx context.Context, limit int) ([]tracker.Mark, error) {
	pks := []string{outboxPendingLegacy}
	first := rand.IntN(outboxPendingShards)
	for i := range outboxPendingShards {
		pks = append(pks, outboxPendingShard((first+i)%outboxPendingShards))
	}
	var out []tracker.Mark
	for _, pk := range pks {
		p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
			TableName:              &s.table,
			IndexName:              aws.String("gsi1"),
			KeyConditionExpression: aws.String("gsi1pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": &types.AttributeValueMemberS{Value: pk},
			},
		})
		for p.HasMorePages() && len(out) < limit {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, dynamo.Errorf("query outbox marks", err)
			}
			for _, av := range page.Items {
				var it markItem
				if err := attributevalue.UnmarshalMap(av, &it); err != nil {
					return nil, dynamo.Errorf("decode outbox mark", err)
				}
				out = append(out, it.entity())
			}
		}
		if len(out) >= limit {
			return out[:limit], nil
		}
	}
	return out, nil
}

// TakeMark leases the mark of ref to owner; apperr.ErrConflict when there
// is none or another owner's lease has not expired.
func (s *TrackerStore) TakeMark(ctx context.Context, tenant string, ref tracker.ReqRef, owner string, now, until time.Time) (tracker.Mark, error) {
	upd := expression.Set(expression.Name("leaseOwner"), expression.Value(owner)).
		Set(expression.Name("leaseUntil"), expression.Value(until.UnixMilli()))
	cond := expression.AttributeExists(expression.Name("pk")).And(
		expression.AttributeNotExists(expression.Name("leaseUntil")).
			Or(expression.Name("leaseUntil").LessThan(expression.Value(now.UnixMilli()))))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return tracker.Mark{}, dynamo.Errorf("build outbox lease", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: itemKey(outboxPK(tenant), refPart(ref)),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return tracker.Mark{}, dynamo.Translate(err, "take outbox mark "+ref.String())
	}
	var it markItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return tracker.Mark{}, dynamo.Errorf("decode outbox mark", err)
	}
	return it.entity(), nil
}

// ClearMark deletes the mark if its seq is still m's and owner leases it;
// otherwise (marked again meanwhile) it releases owner's lease.
func (s *TrackerStore) ClearMark(ctx context.Context, tenant string, m tracker.Mark, owner string) (bool, error) {
	cond := expression.Name("seq").Equal(expression.Value(m.Seq)).And(expression.Name("leaseOwner").Equal(expression.Value(owner)))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return false, dynamo.Errorf("build outbox clear", err)
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: itemKey(outboxPK(tenant), refPart(m.Ref)),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	err = dynamo.Translate(err, "clear outbox mark "+m.Ref.String())
	if errors.Is(err, apperr.ErrConflict) {
		return false, s.ReleaseMark(ctx, tenant, m, owner, "")
	}
	return err == nil, err
}

// ReleaseMark ends owner's lease on m, recording reason (and one more
// attempt) when it is not empty.
func (s *TrackerStore) ReleaseMark(ctx context.Context, tenant string, m tracker.Mark, owner, reason string) error {
	upd := expression.Remove(expression.Name("leaseOwner")).Remove(expression.Name("leaseUntil"))
	if reason != "" {
		if len(reason) > 1000 {
			reason = strings.ToValidUTF8(reason[:1000], "")
		}
		upd = upd.Set(expression.Name("lastError"), expression.Value(reason)).Add(expression.Name("attempts"), expression.Value(1))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).
		WithCondition(expression.Name("leaseOwner").Equal(expression.Value(owner))).Build()
	if err != nil {
		return dynamo.Errorf("build outbox release", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: itemKey(outboxPK(tenant), refPart(m.Ref)),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err = dynamo.Translate(err, "release outbox mark "+m.Ref.String()); errors.Is(err, apperr.ErrConflict) {
		return nil // gone or no longer ours
	}
	return err
}
