package wikirequirements_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/keyrange"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// diffFloor reads what any diff of baseline 1 of space against its current
// rows must read at least: each row of both sides once, in Queries of
// pageSize rows, the key range first..last cut into segments of which
// inFlight are read at once (both sides each), as the diff reads them;
// nothing decoded, nothing compared. It answers the time and the items
// read. The partitions are the WikiTable's (docs/architecture.md): the
// space's current rows and baseline 1's copies, sort keys R#<folded key>.
func diffFloor(ctx context.Context, db *dynamodb.Client, table, tenant, space, first, last string, segments, inFlight, pageSize int) (time.Duration, int, error) {
	bounds := keyrange.Split(requirement.FoldKey(first), requirement.FoldKey(last), segments)
	// The last bound is the last key: read it too.
	bounds[len(bounds)-1] += "\uffff"
	partitions := []string{fmt.Sprintf("T#%s#S#%s", tenant, space), fmt.Sprintf("T#%s#S#%s#B#%08d", tenant, space, 1)}
	var (
		items atomic.Int64
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 2*inFlight)
		mu    sync.Mutex
		errs  []error
	)
	start := time.Now()
	for i := range len(bounds) - 1 {
		for _, pk := range partitions {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				p := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{
					TableName: &table, KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :a AND :b"),
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":pk": &types.AttributeValueMemberS{Value: pk},
						":a":  &types.AttributeValueMemberS{Value: "R#" + bounds[i]},
						":b":  &types.AttributeValueMemberS{Value: "R#" + bounds[i+1]},
					},
					Limit: aws.Int32(int32(pageSize)),
				})
				for p.HasMorePages() {
					page, err := p.NextPage(ctx)
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					items.Add(int64(len(page.Items)))
				}
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, 0, errs[0]
	}
	return time.Since(start), int(items.Load()), nil
}
