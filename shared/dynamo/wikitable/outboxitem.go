package wikitable

import (
	"fmt"
	"hash/fnv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/outbox"
)

// outboxItem is the DynamoDB shape of an outbound message:
// pk T#t#OUTBOX#<serviceId>#<nn>, sk M#<id>, the shard nn a function of
// the id (outboxShard); messages of releases before the shards sit in
// T#t#OUTBOX#<serviceId> (outboxLegacyPK). While a NEW message has not reached
// SQS it also sits in one of the sparse gsi1 partitions OUTBOX#PENDING#<nn>
// (sorted by id) so the sync function can re-enqueue it across tenants.
type outboxItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	GSI1PK       string `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK       string `dynamodbav:"gsi1sk,omitempty"`
	Tenant       string `dynamodbav:"tenant"`
	ID           string `dynamodbav:"id"`
	ServiceID    string `dynamodbav:"serviceId"`
	State        string `dynamodbav:"state"`
	CreatedAt    string `dynamodbav:"createdAt"`
	Type         string `dynamodbav:"type"`
	AuthorKey    string `dynamodbav:"authorKey,omitempty"`
	AuthorName   string `dynamodbav:"authorName,omitempty"`
	Space        string `dynamodbav:"spaceKey,omitempty"`
	Key          string `dynamodbav:"key,omitempty"`
	Baseline     int    `dynamodbav:"baseline,omitempty"`
	ObjectKey    string `dynamodbav:"objectKey,omitempty"`
	Relationship string `dynamodbav:"relationship,omitempty"`
	NewHTML      string `dynamodbav:"newHtmlExcerpt,omitempty"`
	NewSpace     string `dynamodbav:"newSpaceKey,omitempty"`
	NewKey       string `dynamodbav:"newKey,omitempty"`
	NewBaseline  int    `dynamodbav:"newBaseline,omitempty"`
	NewURL       string `dynamodbav:"newUrl,omitempty"`
	LastResponse string `dynamodbav:"lastResponse,omitempty"`
	Enqueued     bool   `dynamodbav:"enqueued,omitempty"`
	// Version-5 fields: the PAGE link set of a LINKS message (a list
	// of issue links), its version,
	// the origin page, and the changed fields of an UPDATED message (an
	// absent set on a LINKS message is the empty set).
	Links         []outboxLink `dynamodbav:"links,omitempty"`
	LinksVersion  int64        `dynamodbav:"linksVersion,omitempty"`
	OriginPageID  string       `dynamodbav:"originPageId,omitempty"`
	OriginTitle   string       `dynamodbav:"originTitle,omitempty"`
	ChangedFields []string     `dynamodbav:"changedFields,omitempty"`
	// SuspectFields are the fields of an UPDATED message's change that
	// made its links suspect (suspectFields), none when it made none.
	SuspectFields []string `dynamodbav:"suspectFields,omitempty"`
}

type outboxLink struct {
	IK string `dynamodbav:"ik"`
	R  string `dynamodbav:"r"`
}

// OutboxPendingShards spreads the NEW messages not yet in SQS over gsi1
// partitions. Every message is written there and removed again once in
// SQS, so a single partition would bound every tenant's messages together
// (two writes each: about 500 messages a second for the whole service at
// one partition's 1,000 writes a second; docs/scale.md).
const OutboxPendingShards = 64

// outboxPendingLegacy is the one pending partition of the releases before
// the shards: the sync function still reads it, so that messages a former
// release left there are re-enqueued; nothing writes it any more.
const outboxPendingLegacy = "OUTBOX#PENDING"

// outboxPendingPK is the sparse gsi1 partition of an integration's NEW
// messages not yet in SQS: one of OutboxPendingShards, chosen by the
// integration, so that each integration's messages stay in id order in one
// partition.
func outboxPendingPK(tenant, serviceID string) string {
	h := fnv.New32a()
	h.Write([]byte(tenant + "/" + serviceID))
	return outboxPendingShard(int(h.Sum32() % OutboxPendingShards))
}

func outboxPendingShard(n int) string { return fmt.Sprintf("%s#%02d", outboxPendingLegacy, n) }

// outboxPendingPartitions are every partition Pending reads: the legacy
// one, then the shards.
func outboxPendingPartitions() []string {
	out := []string{outboxPendingLegacy}
	for n := range OutboxPendingShards {
		out = append(out, outboxPendingShard(n))
	}
	return out
}

// OutboxShards spreads an integration's messages over partitions by
// message id. One partition would take every message of the integration at
// its newest end (the ids sort by creation time, so DynamoDB's split for
// heat does not help): about 2 write units per message, 1,000 a second per
// partition (docs/scale.md).
const OutboxShards = 8

// outboxShard is the shard of a message id: a hash of the whole id (its
// random part makes ids created in the same nanosecond spread too), so
// every message's key is known from its reference.
func outboxShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % OutboxShards)
}

// outboxLegacyPK is the one partition of an integration's messages in the
// releases before the shards: read as one more shard, never written.
func outboxLegacyPK(tenant, serviceID string) string {
	return dynamo.TenantPrefix(tenant) + "OUTBOX#" + serviceID
}

// outboxPK is the partition of message id of an integration.
func outboxPK(tenant, serviceID, id string) string {
	return outboxShardPK(tenant, serviceID, outboxShard(id))
}

func outboxShardPK(tenant, serviceID string, n int) string {
	return fmt.Sprintf("%s#%02d", outboxLegacyPK(tenant, serviceID), n)
}

// outboxPartitions are every partition of an integration's messages: the
// shards, then the legacy one.
func outboxPartitions(tenant, serviceID string) []string {
	out := make([]string, 0, OutboxShards+1)
	for n := range OutboxShards {
		out = append(out, outboxShardPK(tenant, serviceID, n))
	}
	return append(out, outboxLegacyPK(tenant, serviceID))
}

func newOutboxItem(tenant string, m *outbox.Message) outboxItem {
	it := outboxItem{
		PK: outboxPK(tenant, m.ServiceID, m.ID), SK: "M#" + m.ID, Tenant: tenant, ID: m.ID, ServiceID: m.ServiceID,
		State: string(m.State), CreatedAt: dynamo.Time(m.CreatedAt), Type: string(m.Type),
		AuthorKey: m.AuthorKey, AuthorName: m.AuthorName, Space: m.SpaceKey, Key: m.Key, Baseline: m.Baseline,
		ObjectKey: m.ObjectKey, Relationship: m.Relationship, NewHTML: m.NewHTMLExcerpt, NewSpace: m.NewSpaceKey,
		NewKey: m.NewKey, NewBaseline: m.NewBaseline, NewURL: m.NewURL, LastResponse: m.LastResponse, Enqueued: m.Enqueued,
		LinksVersion: m.LinksVersion, OriginPageID: m.OriginPageID, OriginTitle: m.OriginTitle,
		ChangedFields: m.ChangedFields, SuspectFields: m.SuspectFields,
	}
	if m.Type == outbox.Links {
		it.Links = make([]outboxLink, 0, len(m.Links))
		for _, l := range m.Links {
			it.Links = append(it.Links, outboxLink{IK: l.IssueKey, R: l.Relationship})
		}
	}
	if m.State == outbox.New && !m.Enqueued {
		it.GSI1PK, it.GSI1SK = outboxPendingPK(tenant, m.ServiceID), m.ID+"#"+tenant+"#"+m.ServiceID
	}
	return it
}

func (it *outboxItem) entity() *outbox.Message {
	created := dynamo.ParseTime(it.CreatedAt)
	m := &outbox.Message{
		ID: it.ID, ServiceID: it.ServiceID, State: outbox.State(it.State), CreatedAt: created, Type: outbox.Type(it.Type),
		AuthorKey: it.AuthorKey, AuthorName: it.AuthorName, SpaceKey: it.Space, Key: it.Key, Baseline: it.Baseline,
		ObjectKey: it.ObjectKey, Relationship: it.Relationship, NewHTMLExcerpt: it.NewHTML, NewSpaceKey: it.NewSpace,
		NewKey: it.NewKey, NewBaseline: it.NewBaseline, NewURL: it.NewURL, LastResponse: it.LastResponse, Enqueued: it.Enqueued,
		LinksVersion: it.LinksVersion, OriginPageID: it.OriginPageID, OriginTitle: it.OriginTitle,
		ChangedFields: it.ChangedFields, SuspectFields: it.SuspectFields,
	}
	for _, l := range it.Links {
		m.Links = append(m.Links, outbox.LinkRef{IssueKey: l.IK, Relationship: l.R})
	}
	return m
}

// outboxPut returns the transaction element that writes a new message; the
// condition makes a retried transaction unable to write it twice.
func outboxPut(table, tenant string, m *outbox.Message) (types.TransactWriteItem, error) {
	av, err := attributevalue.MarshalMap(newOutboxItem(tenant, m))
	if err != nil {
		return types.TransactWriteItem{}, dynamo.Errorf("encode outbox message", err)
	}
	cond := "attribute_not_exists(pk)"
	return types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: av, ConditionExpression: &cond}}, nil
}

func decodeOutbox(av map[string]types.AttributeValue) (*outbox.Message, error) {
	var it outboxItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, dynamo.Errorf("decode outbox message", err)
	}
	return it.entity(), nil
}
