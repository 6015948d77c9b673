package trackertable

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// Pending messages.

type pendingItem struct {
	PK             string  `dynamodbav:"pk"`
	SK             string  `dynamodbav:"sk"`
	ApplinkID      string  `dynamodbav:"applinkId"`
	ReceivedAt     int64   `dynamodbav:"receivedAt"` // Unix nanoseconds
	Index          int     `dynamodbav:"index"`
	ID             *int64  `dynamodbav:"id,omitempty"`
	Type           string  `dynamodbav:"type"`
	AuthorKey      string  `dynamodbav:"authorKey,omitempty"`
	AuthorName     string  `dynamodbav:"authorName,omitempty"`
	SpaceKey       string  `dynamodbav:"spaceKey"`
	Key            string  `dynamodbav:"key"`
	Baseline       int     `dynamodbav:"baseline"`
	Estate         string  `dynamodbav:"estate,omitempty"`
	ObjectKey      string  `dynamodbav:"objectKey,omitempty"`
	Relationship   string  `dynamodbav:"relationship,omitempty"`
	NewHTMLExcerpt *string `dynamodbav:"newHtmlExcerpt,omitempty"`
	NewSpaceKey    string  `dynamodbav:"newSpaceKey,omitempty"`
	NewKey         string  `dynamodbav:"newKey,omitempty"`
	NewBaseline    *int    `dynamodbav:"newBaseline,omitempty"`
	NewURL         *string `dynamodbav:"newUrl,omitempty"`
	// LINKS (version 5) and UPDATED's version-5 fields.
	Links         []pendingLink `dynamodbav:"links,omitempty"`
	HasLinks      bool          `dynamodbav:"hasLinks,omitempty"`
	LinksVersion  *int          `dynamodbav:"linksVersion,omitempty"`
	OriginPageID  string        `dynamodbav:"originPageId,omitempty"`
	OriginTitle   string        `dynamodbav:"originTitle,omitempty"`
	ChangedFields []string      `dynamodbav:"changedFields,omitempty"`
	Suspect       *bool         `dynamodbav:"suspect,omitempty"`
}

type pendingLink struct {
	ObjectKey    string `dynamodbav:"objectKey"`
	Relationship string `dynamodbav:"relationship"`
}

func pendingSK(p tracker.Pending) string { return p.ApplinkID + "#" + p.Message.Fingerprint() }

func newPendingItem(tenant string, p tracker.Pending) pendingItem {
	m := p.Message
	return pendingItem{PK: pendingPK(tenant), SK: pendingSK(p), ApplinkID: p.ApplinkID,
		ReceivedAt: p.ReceivedAt.UnixNano(), Index: p.Index, ID: m.ID, Type: string(m.Type),
		AuthorKey: m.AuthorKey, AuthorName: m.AuthorName, SpaceKey: m.SpaceKey, Key: m.Key, Baseline: m.Baseline,
		Estate: m.Estate, ObjectKey: m.ObjectKey, Relationship: m.Relationship, NewHTMLExcerpt: m.NewHTMLExcerpt,
		NewSpaceKey: m.NewSpaceKey, NewKey: m.NewKey, NewBaseline: m.NewBaseline, NewURL: m.NewURL,
		Links: pendingLinks(m.Links), HasLinks: m.Links != nil, LinksVersion: m.LinksVersion,
		OriginPageID: m.Origin.PageID, OriginTitle: m.Origin.Title, ChangedFields: m.ChangedFields, Suspect: m.Suspect}
}

func pendingLinks(links []tracker.IssueRelationship) []pendingLink {
	if len(links) == 0 {
		return nil
	}
	out := make([]pendingLink, len(links))
	for i, l := range links {
		out[i] = pendingLink{ObjectKey: l.IssueKey, Relationship: l.Relationship}
	}
	return out
}

func (it pendingItem) entity() tracker.Pending {
	p := tracker.Pending{ApplinkID: it.ApplinkID, ReceivedAt: time.Unix(0, it.ReceivedAt).UTC(), Index: it.Index,
		Message: tracker.Message{ID: it.ID, Type: tracker.MessageType(it.Type), AuthorKey: it.AuthorKey,
			AuthorName: it.AuthorName, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline, Estate: it.Estate,
			ObjectKey: it.ObjectKey, Relationship: it.Relationship, NewHTMLExcerpt: it.NewHTMLExcerpt,
			NewSpaceKey: it.NewSpaceKey, NewKey: it.NewKey, NewBaseline: it.NewBaseline, NewURL: it.NewURL,
			LinksVersion: it.LinksVersion, Origin: tracker.PageOrigin{PageID: it.OriginPageID, Title: it.OriginTitle},
			ChangedFields: it.ChangedFields, Suspect: it.Suspect}}
	if it.HasLinks {
		p.Message.Links = make([]tracker.IssueRelationship, len(it.Links))
		for i, l := range it.Links {
			p.Message.Links[i] = tracker.IssueRelationship{IssueKey: l.ObjectKey, Relationship: l.Relationship}
		}
	}
	return p
}

// AddPending stores messages; one with the content of a stored message (a
// retried delivery) replaces it, taking its new place in the order.
func (s *TrackerStore) AddPending(ctx context.Context, tenant string, ps []tracker.Pending) error {
	byKey := map[string]int{}
	writes := make([]types.WriteRequest, 0, len(ps))
	for _, p := range ps {
		it := newPendingItem(tenant, p)
		av, err := attributevalue.MarshalMap(it)
		if err != nil {
			return dynamo.Errorf("encode pending message", err)
		}
		w := types.WriteRequest{PutRequest: &types.PutRequest{Item: av}}
		if i, ok := byKey[it.SK]; ok {
			writes[i] = w
			continue
		}
		byKey[it.SK] = len(writes)
		writes = append(writes, w)
	}
	if err := dynamo.BatchWrite(ctx, s.db, s.table, writes); err != nil {
		return fmt.Errorf("put pending messages: %w", err)
	}
	return nil
}

// ListPending returns the tenant's pending messages in the order received.
func (s *TrackerStore) ListPending(ctx context.Context, tenant string) ([]tracker.Pending, error) {
	var out []tracker.Pending
	err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pendingPK(tenant)},
		},
		ConsistentRead: aws.Bool(true),
	}, "list pending messages", func(av map[string]types.AttributeValue) error {
		var it pendingItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode pending message", err)
		}
		out = append(out, it.entity())
		return nil
	})
	slices.SortFunc(out, func(a, b tracker.Pending) int {
		return cmp.Or(a.ReceivedAt.Compare(b.ReceivedAt), cmp.Compare(a.Index, b.Index))
	})
	return out, err
}

// DeletePending removes pending messages; absent ones are not an error.
func (s *TrackerStore) DeletePending(ctx context.Context, tenant string, ps []tracker.Pending) error {
	keys := make([]map[string]types.AttributeValue, 0, len(ps))
	for _, p := range ps {
		keys = append(keys, itemKey(pendingPK(tenant), pendingSK(p)))
	}
	if err := dynamo.BatchWrite(ctx, s.db, s.table, dynamo.Deletes(keys)); err != nil {
		return fmt.Errorf("delete pending messages: %w", err)
	}
	return nil
}
