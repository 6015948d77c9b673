package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// TestWordsCommands: status tells a space saved before the word index (no
// mark) from one with it; index gives it the index and the mark; the
// commands need a WikiTable and -from needs -space.
func TestWordsCommands(t *testing.T) {
	env := testenv.AWS(t)
	ctx := context.Background()
	st := openStores(env.DynamoDB, env.AuthTable, env.WikiTable)
	admin := adminCommand(ctx, st)
	svc := wiki.New(wiki.Deps{Store: st.wiki})
	for _, space := range []string{"OLD", "NEW"} {
		body := wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("REQ-1"), "<p>The zebra shall run.</p>"))
		if _, err := svc.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "p" + space, SpaceKey: space, Title: space, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	// OLD as the write path before the word index left it: no mark.
	_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &env.WikiTable,
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: dynamo.TenantPrefix("demo") + "SPACES"}, "sk": &types.AttributeValueMemberS{Value: "OLD"},
		},
		UpdateExpression: aws.String("REMOVE words"),
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := admin("words", "status", "demo")
	if err != nil || out != "NEW\tsearches use the word index\nOLD\tno word index: word searches scan the space (reqtrace-admin words index demo)" {
		t.Fatalf("status before:\n%s\n%v", out, err)
	}
	out, err = admin("words", "index", "demo")
	if err != nil || out != "OLD: rows up to REQ-1 written (to continue: words index demo -space OLD -from REQ-1)\n"+
		"OLD: word items written for the 1 rows read; searches of the space now use the word index" {
		t.Fatalf("index:\n%s\n%v", out, err)
	}
	if out, err = admin("words", "status", "demo"); err != nil || strings.Contains(out, "no word index") {
		t.Fatalf("status after:\n%s\n%v", out, err)
	}
	if out, err = admin("words", "index", "demo"); err != nil || out != "every space of tenant demo has the word index" {
		t.Fatalf("index again:\n%s\n%v", out, err)
	}
	if _, err = admin("words", "index", "demo", "-space", "NONE"); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("unregistered space: %v", err)
	}
	if _, err = admin("words", "index", "demo", "-from", "REQ-1"); err == nil {
		t.Fatal("-from without -space accepted")
	}
	if out, err = admin("words", "status", "acme"); err != nil || out != "tenant acme has no registered space" {
		t.Fatalf("another tenant:\n%s\n%v", out, err)
	}
	st.wiki = nil
	if _, err = adminCommand(ctx, st)("words", "status", "demo"); err == nil || !strings.Contains(err.Error(), "WIKI_TABLE") {
		t.Fatalf("without a WikiTable: %v", err)
	}
}
