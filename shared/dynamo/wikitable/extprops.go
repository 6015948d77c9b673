package wikitable

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// External properties live on the current requirement row, in the ext
// attribute (a list of {k, v} in name order), with one search index item
// per value under the kind "E" (index.go). Page operations write whole
// rows under the page's lease and carry ext over from the rows they read;
// SetExternal writes ext alone, in a transaction that also checks the
// page's lease is free, so that a page save never writes back a row it
// read before an external update (docs/indexing.md, "External
// properties").

// SetExternal implements wiki.Store: one TransactWriteItems of
//
//   - a ConditionCheck on old's page item: no unexpired lease is held
//     (pgLeaseFree);
//   - an Update of the row setting (or removing) ext, on condition that
//     the row is still ACTIVE on old's page with old's ext;
//   - the Puts and Deletes of the index items that change (indexDiff).
//
// When the index changes do not fit one transaction (more than 98 items:
// about 50 values changed at once), the puts go before it
// (BatchWriteItem) and the deletes after it, as a page save does: the
// index is then at worst a superset of the rows, which searches check. A
// failed condition is apperr.Conflict with nothing of the row changed.
func (s *WikiStore) SetExternal(ctx context.Context, tenant string, old, next *requirement.Requirement) error {
	before, after := newRequirementItem(tenant, old), newRequirementItem(tenant, next)
	av, err := after.marshal()
	if err != nil {
		return err
	}
	if size := saveItemSize(av); size > saveMaxRow {
		return apperr.TooLargef("requirement %s/%s cannot take these external properties: with them it takes %d bytes, "+
			"over the %d bytes a requirement may take", next.SpaceKey, next.Key, size, saveMaxRow)
	}
	puts, deletes := indexDiff(tenant, old, next)
	update, err := s.extUpdate(before, after)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{s.extLeaseFree(tenant, old.Origin.PageID), update}
	inline := len(items)+len(puts)+len(deletes) <= saveTxItems
	if inline {
		for _, w := range puts {
			items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: w.PutRequest.Item}})
		}
		for _, w := range deletes {
			items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.table, Key: w.DeleteRequest.Key}})
		}
	} else if err := dynamo.BatchWrite(ctx, s.db, s.table, puts); err != nil {
		return fmt.Errorf("write search index items: %w", err)
	}
	err = dynamo.Transact(ctx, s.db, items)
	if codes := dynamo.CancellationCodes(err, len(items)); codes != nil {
		switch {
		case codes[0] == "ConditionalCheckFailed":
			return apperr.Wrap(apperr.Conflictf("page %s is being saved by another request", old.Origin.PageID), err)
		case codes[1] == "ConditionalCheckFailed":
			return apperr.Wrap(apperr.Conflictf("requirement %s/%s changed meanwhile", old.SpaceKey, old.Key), err)
		}
	}
	if err != nil {
		return dynamo.Translate(err, "write external properties")
	}
	if !inline {
		if err := dynamo.BatchWrite(ctx, s.db, s.table, deletes); err != nil {
			return fmt.Errorf("delete search index items: %w", err)
		}
	}
	return nil
}

// extLeaseFree is the transaction element that checks that no unexpired
// lease is held on page pageID (the condition a lease is taken on).
func (s *WikiStore) extLeaseFree(tenant, pageID string) types.TransactWriteItem {
	return leaseFree(s.table, tenant, pageID, s.now())
}

// leaseFree is the transaction element that checks that no lease
// unexpired at now is held on page pageID (a page that does not exist
// holds none).
func leaseFree(table, tenant, pageID string, now time.Time) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &table, Key: pgKey(tenant, pageID),
		ConditionExpression:       aws.String(pgLeaseFree),
		ExpressionAttributeNames:  pgNames("#lu"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": pgMillis(now)},
	}}
}

// extUpdate sets a row's ext from before's to after's, on condition that
// the row is still ACTIVE on before's page with before's ext.
func (s *WikiStore) extUpdate(before, after requirementItem) (types.TransactWriteItem, error) {
	cond := expression.Name("status").Equal(expression.Value(string(requirement.Active))).
		And(expression.Name("pageId").Equal(expression.Value(before.PageID)))
	return rowListSwap(s.table, before, cond, "ext", before.Ext, after.Ext)
}
