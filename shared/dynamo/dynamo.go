// Package dynamo holds the DynamoDB mechanics the table packages share:
// the client interface they use, error translation into apperr errors
// (ErrConflict for a failed condition), tenant key prefixes, batched reads
// and writes with unprocessed-item retries, paged queries, transactions'
// condition checks, backoff and the time codec of items.
//
// The stores themselves live in one package per table, each importing only
// the domain packages its table serves: wikitable (requirements, pages,
// baselines, integrations, the outbox, settings), trackertable (applinks,
// issue links, pending messages, the tracker's outbox) and authtable
// (tokens, tenants). A table package never imports another. Every partition
// key starts with "T#<tenant>#" (TenantPrefix), so one tenant can never
// address another's items. The key design is documented in
// docs/architecture.md.
package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// API is the part of the DynamoDB client the stores use.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	// BatchExecuteStatement runs up to 25 PartiQL statements, each on its
	// own (the outbox's conditional marks).
	BatchExecuteStatement(ctx context.Context, in *dynamodb.BatchExecuteStatementInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchExecuteStatementOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Translate turns DynamoDB's condition failures into apperr conflicts; other
// errors are returned wrapped with what was being done.
func Translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return apperr.Wrap(apperr.Conflictf("%s: the item changed concurrently", what), err)
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if r.Code != nil && *r.Code == "ConditionalCheckFailed" {
				return apperr.Wrap(apperr.Conflictf("%s: the item changed concurrently", what), err)
			}
		}
	}
	return Errorf(what, err)
}

// Errorf wraps err (a DynamoDB or codec error) with what was being done; the
// result unwraps to err.
func Errorf(what string, err error) error {
	return &wrapped{what: what, err: err}
}

type wrapped struct {
	what string
	err  error
}

func (w *wrapped) Error() string { return w.what + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// TenantPrefix starts every partition key of a tenant.
func TenantPrefix(tenant string) string { return "T#" + tenant + "#" }

// TxConditionFailed reports whether a transaction was cancelled because a
// condition failed or it met another transaction on the same items: the
// caller reads again and redoes its work (or answers a conflict).
func TxConditionFailed(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed", "TransactionConflict":
			return true
		}
	}
	return false
}
