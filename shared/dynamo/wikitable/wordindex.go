package wikitable

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// SpaceWords is a registered space and whether its registry item vouches
// for the word index (every ACTIVE row of it has its word items).
type SpaceWords struct {
	Space string
	Words bool
}

// WordIndexStatus lists the tenant's registered spaces, in order, with
// their word index mark: one Query of the space registry.
func (s *WikiStore) WordIndexStatus(ctx context.Context, tenant string) ([]SpaceWords, error) {
	var out []SpaceWords
	err := s.saveQueryEach(ctx, spacesPK(tenant), "read space registry", []string{"sk", "words"}, func(av map[string]types.AttributeValue) error {
		sk, _ := av["sk"].(*types.AttributeValueMemberS)
		words, _ := av["words"].(*types.AttributeValueMemberBOOL)
		if sk == nil {
			return errors.New("read space registry: an item without a sort key")
		}
		out = append(out, SpaceWords{Space: sk.Value, Words: words != nil && words.Value})
		return nil
	})
	return out, err
}

// wordIndexChunk is the number of rows whose word items IndexWords writes
// together (about 24 items a row: some 230 BatchWriteItem calls, 8 at a
// time).
const wordIndexChunk = 250

// IndexWords gives a space registered before the word index existed the
// word index: it writes the word items of every ACTIVE current row of the
// space, in key order from the folded key from ("" for the first), calling
// done with the folded key of the last row of each chunk written, then
// marks the space's registry item (words: true), after which searches of
// the space use the index (docs/search.md, "Word index"). It answers the
// rows read; apperr.ErrNotFound for a space that is not registered.
//
// Every write is an idempotent put, so an interrupted run is continued by
// running it again from the last key done reported (or from the start).
// Page saves may run meanwhile: a save writes the word items its new rows
// add to those of the stored rows, and this job writes every word item of
// the rows as it read them, so whichever comes first, every word of a
// row's current text has its item when the mark is set. A row changed
// between its read here and its write may keep items of words it no
// longer holds: a superset, which the search evaluator checks row by row
// as it does for every index.
func (s *WikiStore) IndexWords(ctx context.Context, tenant, space, from string, done func(key string)) (int, error) {
	wordPK := indexPK(tenant, indexWord, "")
	var (
		rows  []*requirement.Requirement
		read  int
		write error
	)
	flush := func() bool {
		var puts []types.WriteRequest
		for _, r := range rows {
			all, _ := indexDiff(tenant, nil, r)
			for _, w := range all {
				if pk, _ := w.PutRequest.Item["pk"].(*types.AttributeValueMemberS); pk != nil && strings.HasPrefix(pk.Value, wordPK) {
					puts = append(puts, w)
				}
			}
		}
		if err := dynamo.BatchWrite(ctx, s.db, s.table, puts); err != nil {
			write = fmt.Errorf("write word index items: %w", err)
			return false
		}
		if done != nil && len(rows) > 0 {
			done(requirement.FoldKey(rows[len(rows)-1].Key))
		}
		rows = rows[:0]
		return true
	}
	err := s.reqs.query(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :end"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: spacePK(tenant, space)},
			":from": &types.AttributeValueMemberS{Value: reqSK(from)},
			// No row's sort key reaches "R$": they all begin with "R#".
			":end": &types.AttributeValueMemberS{Value: "R$"},
		},
		Limit: aws.Int32(wordIndexChunk),
	}, func(r *requirement.Requirement) bool {
		read++
		rows = append(rows, r)
		return len(rows) < wordIndexChunk || flush()
	})
	if err == nil && write == nil {
		flush()
	}
	if err = errors.Join(err, write); err != nil {
		return read, err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: spacesPK(tenant)}, "sk": &types.AttributeValueMemberS{Value: space},
		},
		UpdateExpression:         aws.String("SET #w = :t"),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: map[string]string{"#w": "words"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": &types.AttributeValueMemberBOOL{Value: true},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return read, fmt.Errorf("space %q is not registered: %w", space, apperr.ErrNotFound)
	}
	if err != nil {
		return read, dynamo.Errorf("mark the space's word index", err)
	}
	return read, nil
}
