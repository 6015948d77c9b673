package wikitable

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// TestDecodeRowItemAsUnmarshalMap: decodeRowItem gives what
// attributevalue.UnmarshalMap gives, on the items the write path stores
// (random requirements, every attribute, current and archived) and on
// items whose attributes have other types, are NULL or hold more than
// requirementItem (which the fast path hands to UnmarshalMap).
func TestDecodeRowItemAsUnmarshalMap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	word := func() string {
		words := []string{"", "a", "High", "ß", "x\x1fy", "REQ-1", "Gold", "refines", "{\"j\":1}"}
		return words[rng.IntN(len(words))]
	}
	check := func(name string, av map[string]types.AttributeValue) {
		t.Helper()
		var want requirementItem
		wantErr := attributevalue.UnmarshalMap(av, &want)
		got, err := decodeRowItem(av)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, UnmarshalMap's %v", name, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got  %+v\n want %+v", name, got, want)
		}
		r1, err1 := decodeRequirement(av)
		if err1 == nil && !reflect.DeepEqual(r1, want.entity()) {
			t.Fatalf("%s: decodeRequirement differs from UnmarshalMap's entity", name)
		}
	}
	fast := 0
	for i := range 500 {
		r := &requirement.Requirement{SpaceKey: "S" + word(), Key: fmt.Sprintf("K-%d", i), Status: requirement.Active,
			Text: word(), HTMLExcerpt: word(), HTMLNeedsUpdating: rng.IntN(2) == 0,
			Origin: requirement.PageRef{PageID: word(), Title: word()}, NewSpaceKey: word(), NewKey: word(),
			LinksVersion: rng.Int64N(1 << 40)}
		if rng.IntN(3) == 0 {
			r.Baseline, r.Status = 1+rng.IntN(99999999), requirement.Archived
		}
		for range rng.IntN(4) {
			typ := requirement.Inline
			if rng.IntN(2) == 0 {
				typ = requirement.External
			}
			r.Properties = append(r.Properties, requirement.Property{Key: word(), Value: word(), Type: typ})
		}
		for range rng.IntN(3) {
			r.Dependencies = append(r.Dependencies, requirement.Dependency{SpaceKey: word(), Key: word(), Relationship: word()})
			r.ReverseDependencies = append(r.ReverseDependencies, requirement.Dependency{SpaceKey: word(), Key: word(), Relationship: word()})
			r.Issues = append(r.Issues, requirement.IssueLink{ServiceID: word(), IssueKey: word(), Relationship: word(),
				Page: rng.IntN(2) == 0, Tracker: rng.IntN(2) == 0})
			r.Suspects = append(r.Suspects, requirement.Suspect{IssueKey: "P-" + word(), Since: time.Unix(rng.Int64N(1<<31), 0).UTC(),
				Fields: []string{word()}, Page: word(), Version: rng.IntN(9)})
		}
		av, err := newRequirementItem("t", r).marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := decodeRowItemFast(av); ok {
			fast++
		}
		check(fmt.Sprintf("item %d", i), av)

		// The same item with one attribute changed in a way the write
		// path never does.
		odd := map[string]types.AttributeValue{}
		for k, v := range av {
			odd[k] = v
		}
		names := []string{"pk", "space", "key", "baseline", "status", "text", "needsHtml", "props", "ext", "deps", "rdeps", "issues", "sus", "lv", "other"}
		name := names[rng.IntN(len(names))]
		switch rng.IntN(7) {
		case 0:
			odd[name] = &types.AttributeValueMemberNULL{Value: true}
		case 1:
			odd[name] = &types.AttributeValueMemberN{Value: fmt.Sprint(rng.IntN(100))}
		case 2:
			odd[name] = &types.AttributeValueMemberS{Value: word()}
		case 3:
			odd[name] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: word()}}}
		case 4:
			odd[name] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"k": &types.AttributeValueMemberN{Value: "3"}, "v": &types.AttributeValueMemberS{Value: "x"}}}}}
		case 5:
			odd[name] = &types.AttributeValueMemberBOOL{Value: true}
		case 6:
			odd[name] = &types.AttributeValueMemberN{Value: "1.5"}
		}
		check(fmt.Sprintf("item %d with %s changed", i, name), odd)
	}
	if fast != 500 {
		t.Fatalf("%d of 500 stored items decoded without reflection, want all", fast)
	}
}

// TestDecodeIndexID: decodeIndexID reads an index item's space and key as
// UnmarshalMap into indexItem does.
func TestDecodeIndexID(t *testing.T) {
	t.Parallel()
	for _, av := range []map[string]types.AttributeValue{
		{"spaceKey": &types.AttributeValueMemberS{Value: "S"}, "key": &types.AttributeValueMemberS{Value: "K-1"}},
		{"key": &types.AttributeValueMemberS{Value: "K-1"}},
		{},
		{"spaceKey": &types.AttributeValueMemberNULL{Value: true}, "key": &types.AttributeValueMemberS{Value: "K"}},
		{"spaceKey": &types.AttributeValueMemberN{Value: "12"}, "key": &types.AttributeValueMemberS{Value: "K"}},
		{"spaceKey": &types.AttributeValueMemberBOOL{Value: true}, "key": &types.AttributeValueMemberS{Value: "K"}},
	} {
		var want indexItem
		wantErr := attributevalue.UnmarshalMap(av, &want)
		space, key, err := decodeIndexID(av)
		if (err != nil) != (wantErr != nil) || err == nil && (space != want.Space || key != want.Key) {
			t.Fatalf("%v: %q %q %v, want %q %q %v", av, space, key, err, want.Space, want.Key, wantErr)
		}
	}
}

// TestIndexItemAsMarshalled: indexItem.item gives what
// attributevalue.MarshalMap gives, empty strings included.
func TestIndexItemAsMarshalled(t *testing.T) {
	t.Parallel()
	for _, it := range []indexItem{
		{PK: "T#t#IX#W#record", SK: "REQ-1#DOC", GSI1PK: "T#t#IXS#DOC#W#record", GSI1SK: "REQ-1#DOC", Space: "DOC", Key: "REQ-1"},
		{},
	} {
		want, err := attributevalue.MarshalMap(it)
		if err != nil {
			t.Fatal(err)
		}
		if got := it.item(); !reflect.DeepEqual(got, want) {
			t.Errorf("item() of %+v = %v, want %v", it, got, want)
		}
	}
}
