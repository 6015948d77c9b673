package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// transactAttempts bounds the calls Transact makes for one transaction.
const transactAttempts = 9

// Transact runs one transaction, retrying with backoff (up to 8 times) when
// DynamoDB cancels it only because another transaction was touching the
// same items (nothing was applied). Any other error, a failed condition
// included, is returned as DynamoDB gave it, for the caller to translate.
func Transact(ctx context.Context, db API, items []types.TransactWriteItem) error {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := Backoff(ctx, attempt); err != nil {
				return err
			}
		}
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil || attempt == transactAttempts-1 || !onlyConflicts(err) {
			return err
		}
	}
}

// onlyConflicts reports whether a transaction was cancelled only because
// another one was touching the same items.
func onlyConflicts(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var tip *types.TransactionInProgressException
		return errors.As(err, &tip)
	}
	conflict := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict":
			conflict = true
		case "", "None":
		default:
			return false
		}
	}
	return conflict
}

// CancellationCodes returns the code of each item of a cancelled
// transaction of n items ("" where DynamoDB gave none), or nil when err did
// not cancel a transaction.
func CancellationCodes(err error, n int) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	codes := make([]string, n)
	for i, r := range tce.CancellationReasons {
		if i < n {
			codes[i] = aws.ToString(r.Code)
		}
	}
	return codes
}

// RejectedByTransaction reports whether DynamoDB refused a write outside a
// transaction (PutItem, UpdateItem, DeleteItem, BatchWriteItem), applying
// nothing, because a transaction was touching the same item at that moment
// (TransactionConflictException): the write may be sent again as it was.
func RejectedByTransaction(err error) bool {
	var tce *types.TransactionConflictException
	return errors.As(err, &tce)
}

// RetryRejected calls write until DynamoDB stops rejecting it for a
// transaction in progress on its item (RejectedByTransaction), with
// backoff, at most transactAttempts times; it returns write's last error.
// The page item's writes use it: an external-property update checks the
// page's lease in a transaction (wikitable, extprops.go).
func RetryRejected(ctx context.Context, write func() error) error {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := Backoff(ctx, attempt); err != nil {
				return err
			}
		}
		err := write()
		if err == nil || attempt == transactAttempts-1 || !RejectedByTransaction(err) {
			return err
		}
	}
}
