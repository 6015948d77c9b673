package dynamo

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StopQuery is what a QueryEach callback returns to end the query early:
// no further page is read, and QueryEach returns nil.
var StopQuery = errors.New("stop the query")

// QueryEach pages through a Query (one call per page, as the SDK's
// paginator makes them), calling fn for each item until fn returns an error,
// which QueryEach returns (nil for StopQuery). A failed call is wrapped with
// what.
func QueryEach(ctx context.Context, db API, in *dynamodb.QueryInput, what string, fn func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewQueryPaginator(db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return Errorf(what, err)
		}
		for _, av := range page.Items {
			if err := fn(av); errors.Is(err, StopQuery) {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	return nil
}

// Each calls fn for each item, n at a time, and returns the first error; the
// context passed to fn is cancelled once one call has failed.
func Each[T any](ctx context.Context, items []T, n int, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sem   = make(chan struct{}, n)
	)
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, it); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}

// QueryAll pages through a Query and returns every item decoded, in the
// order DynamoDB returned them.
func QueryAll[T any](ctx context.Context, db API, in *dynamodb.QueryInput, what string, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	var out []T
	err := QueryEach(ctx, db, in, what, func(av map[string]types.AttributeValue) error {
		v, err := decode(av)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
