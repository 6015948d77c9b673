package search

import (
	"context"
	"sync/atomic"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// DefaultMaxRead is the most rows and index items one Search reads
// (Service.MaxRead): twice a space of 100,000 requirements read through
// an index, a few seconds of reads on DynamoDB, well inside a request's
// 29 s.
const DefaultMaxRead = 250000

// readBudget is the Store of one Search: it counts the rows and index
// items its reads return and fails the read that takes the count past
// max, so that a search no index narrows (a scan filtered by a pattern
// without a whole word, an order sorted in memory, a deep offset) is
// refused as too broad instead of reading a tenant of millions of
// requirements until the request times out. Reads may run concurrently.
type readBudget struct {
	Store
	max  int64
	read atomic.Int64
}

func (b *readBudget) spend(n int) error {
	if b.read.Add(int64(n)) > b.max {
		return apperr.InvalidField("q", "query too broad: the search read more than %d rows and index items before its page was complete; "+
			"narrow q with a predicate an index serves (a key prefix or range, a property value, an issue, a whole word of a text) or a spaceKey, "+
			"sort by REQKEY, or page from a lower offset (format=csv exports every match)", b.max)
	}
	return nil
}

// Rows implements Store.
func (b *readBudget) Rows(ctx context.Context, tenant string, r Range, after Token, limit int) ([]*requirement.Requirement, Token, error) {
	rows, next, err := b.Store.Rows(ctx, tenant, r, after, limit)
	if err == nil {
		err = b.spend(len(rows))
	}
	return rows, next, err
}

// Index implements Store.
func (b *readBudget) Index(ctx context.Context, tenant string, ix IndexRef, desc bool, after Token, limit int) ([]requirement.ID, Token, error) {
	ids, next, err := b.Store.Index(ctx, tenant, ix, desc, after, limit)
	if err == nil {
		err = b.spend(len(ids))
	}
	return ids, next, err
}

// Get implements Store.
func (b *readBudget) Get(ctx context.Context, tenant string, ids []requirement.ID) ([]*requirement.Requirement, error) {
	rows, err := b.Store.Get(ctx, tenant, ids)
	if err == nil {
		err = b.spend(len(rows))
	}
	return rows, err
}
