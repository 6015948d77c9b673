package scale

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// stream is the WikiTable's stream, switched on for the measured saves.
type stream struct {
	client *dynamodbstreams.Client
	arn    *string
	// indexes are the table's global secondary indexes.
	indexes []index
}

// index is a global secondary index: its key attributes and projection.
type index struct {
	name, pk, sk string
	projection   types.ProjectionType
	include      []string
}

// write is one write an item change made on the table or on an index.
type write struct {
	index, key, tenant string
	wcu                int
}

func openStream(ctx context.Context, d Deps, db *dynamodb.Client) (*stream, error) {
	out, err := db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &d.WikiTable,
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	if err != nil {
		return nil, fmt.Errorf("switch on the stream of %s: %w", d.WikiTable, err)
	}
	s := &stream{arn: out.TableDescription.LatestStreamArn,
		client: dynamodbstreams.NewFromConfig(d.Config, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(d.DynamoDBEndpoint) })}
	for _, g := range out.TableDescription.GlobalSecondaryIndexes {
		ix := index{name: *g.IndexName, projection: g.Projection.ProjectionType, include: g.Projection.NonKeyAttributes}
		for _, k := range g.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				ix.pk = *k.AttributeName
			} else {
				ix.sk = *k.AttributeName
			}
		}
		s.indexes = append(s.indexes, ix)
	}
	return s, nil
}

// read returns the writes of every record of the stream so far.
func (s *stream) read(ctx context.Context) ([]write, error) {
	desc, err := s.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: s.arn})
	if err != nil {
		return nil, fmt.Errorf("describe the stream: %w", err)
	}
	var out []write
	for _, sh := range desc.StreamDescription.Shards {
		it, err := s.client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: s.arn, ShardId: sh.ShardId,
			ShardIteratorType: st.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return nil, fmt.Errorf("read stream shard %s: %w", aws.ToString(sh.ShardId), err)
		}
		for iter := it.ShardIterator; iter != nil; {
			recs, err := s.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
			if err != nil {
				return nil, fmt.Errorf("read stream shard %s: %w", aws.ToString(sh.ShardId), err)
			}
			for _, r := range recs.Records {
				out = append(out, s.writes(r.Dynamodb.OldImage, r.Dynamodb.NewImage)...)
			}
			if len(recs.Records) == 0 {
				break // an open shard's end
			}
			iter = recs.NextShardIterator
		}
	}
	return out, nil
}

// writes are the writes one item change makes: one on the table, and on
// each index one per entry removed or written. An index entry is
// rewritten when its key or a projected attribute changes.
func (s *stream) writes(old, new map[string]st.AttributeValue) []write {
	img := new
	if img == nil {
		img = old
	}
	pk := str(img["pk"])
	tenant := ""
	if strings.HasPrefix(pk, "T#") {
		tenant, _, _ = strings.Cut(strings.TrimPrefix(pk, "T#"), "#")
	}
	out := []write{{index: "table", key: pk, tenant: tenant, wcu: units(max(size(old), size(new)))}}
	for _, ix := range s.indexes {
		oldKey, newKey := str(old[ix.pk]), str(new[ix.pk])
		oldIn := oldKey != "" && str(old[ix.sk]) != ""
		newIn := newKey != "" && str(new[ix.sk]) != ""
		switch {
		case oldIn && newIn && oldKey == newKey && str(old[ix.sk]) == str(new[ix.sk]):
			if ix.changed(old, new) {
				out = append(out, write{index: ix.name, key: newKey, tenant: tenant, wcu: units(ix.size(new))})
			}
		default:
			if oldIn {
				out = append(out, write{index: ix.name, key: oldKey, tenant: tenant, wcu: units(ix.size(old))})
			}
			if newIn {
				out = append(out, write{index: ix.name, key: newKey, tenant: tenant, wcu: units(ix.size(new))})
			}
		}
	}
	return out
}

// projected says whether the index holds attribute name.
func (ix index) projected(name string) bool {
	switch {
	case ix.projection == types.ProjectionTypeAll:
		return true
	case name == "pk" || name == "sk" || name == ix.pk || name == ix.sk:
		return true
	case ix.projection == types.ProjectionTypeInclude:
		for _, a := range ix.include {
			if a == name {
				return true
			}
		}
	}
	return false
}

func (ix index) changed(old, new map[string]st.AttributeValue) bool {
	for name := range merged(old, new) {
		if ix.projected(name) && fmt.Sprint(old[name]) != fmt.Sprint(new[name]) {
			return true
		}
	}
	return false
}

func (ix index) size(img map[string]st.AttributeValue) int {
	n := 0
	for name, v := range img {
		if ix.projected(name) {
			n += len(name) + valueSize(v)
		}
	}
	return n
}

func merged(a, b map[string]st.AttributeValue) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func str(v st.AttributeValue) string {
	if s, ok := v.(*st.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// units are the write units of an item of n bytes: one per KB started.
func units(n int) int { return max(1, (n+1023)/1024) }

// size approximates DynamoDB's size of an item: attribute names and values.
func size(img map[string]st.AttributeValue) int {
	n := 0
	for name, v := range img {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v st.AttributeValue) int {
	switch v := v.(type) {
	case *st.AttributeValueMemberS:
		return len(v.Value)
	case *st.AttributeValueMemberN:
		return len(v.Value)/2 + 1
	case *st.AttributeValueMemberB:
		return len(v.Value)
	case *st.AttributeValueMemberBOOL, *st.AttributeValueMemberNULL:
		return 1
	case *st.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *st.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += len(s)/2 + 1
		}
		return n
	case *st.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *st.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}
