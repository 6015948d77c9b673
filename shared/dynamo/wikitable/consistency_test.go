package wikitable

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// batchRecorder is an API that answers BatchGetItem with nothing and
// records whether each call asked for a strongly consistent read.
type batchRecorder struct {
	dynamo.API
	consistent []bool
}

func (b *batchRecorder) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		b.consistent = append(b.consistent, ka.ConsistentRead != nil && *ka.ConsistentRead)
	}
	return &dynamodb.BatchGetItemOutput{}, nil
}

// Reads that feed writes (indexing, links callback, freezes) must be
// strongly consistent; searches read eventually consistent items.
func TestGetManyConsistency(t *testing.T) {
	ids := []requirement.ID{{SpaceKey: "DEMO", Key: "REQ-1"}}
	for _, c := range []struct {
		name string
		get  func(*RequirementStore) error
		want bool
	}{
		{"GetMany", func(s *RequirementStore) error { _, err := s.GetMany(context.Background(), "demo", ids); return err }, true},
		{"GetManyEventual", func(s *RequirementStore) error {
			_, err := s.GetManyEventual(context.Background(), "demo", ids)
			return err
		}, false},
	} {
		rec := &batchRecorder{}
		if err := c.get(NewRequirementStore(rec, "wiki")); err != nil {
			t.Fatal(err)
		}
		if len(rec.consistent) != 1 || rec.consistent[0] != c.want {
			t.Errorf("%s: consistent reads %v, want [%v]", c.name, rec.consistent, c.want)
		}
	}
}
