package wikitable_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// titled returns "id:title" of the pages PagesTitled finds for title.
func titled(t *testing.T, s *wikitable.WikiStore, tenant, title string) []string {
	t.Helper()
	refs, err := s.PagesTitled(context.Background(), tenant, title)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range refs {
		out = append(out, r.PageID+":"+r.Title)
	}
	return out
}

// TestWikiStorePagesTitled: the title index follows every write of a
// page's title (create, save with another title, delete, a baseline's
// retitle), folds case, and keeps tenants apart.
func TestWikiStorePagesTitled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	put := func(tenant, id, title string) {
		t.Helper()
		if _, err := e.service.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: id, SpaceKey: "DEMO", Title: title,
			Body: saveSpecs(saveReq("R-"+id, "text", ""))}); err != nil {
			t.Fatal(err)
		}
	}
	put("demo", "1", "Specs")
	put("demo", "2", "SPECS")
	put("demo", "3", "Design")
	put("demo", "4", "Größe")
	put("acme", "1", "Specs")
	for _, tt := range []struct {
		title string
		want  []string
	}{
		{"specs", []string{"1:Specs", "2:SPECS"}},
		{"Design", []string{"3:Design"}},
		{"design ", nil},
		{"GRÖSSE", nil}, // Fold is strings.ToUpper: ß stays ß
		{"GRÖßE", []string{"4:Größe"}},
		{"", nil},
	} {
		if got := titled(t, e.store, "demo", tt.title); !slices.Equal(got, tt.want) {
			t.Errorf("PagesTitled(%q) = %v, want %v", tt.title, got, tt.want)
		}
	}
	if got := titled(t, e.store, "acme", "SPECS"); !slices.Equal(got, []string{"1:Specs"}) {
		t.Errorf("acme: %v", got)
	}

	// A save with another title moves the page; a delete removes it.
	put("demo", "2", "Design")
	if err := e.service.DeletePage(ctx, "demo", "bob", "3"); err != nil {
		t.Fatal(err)
	}
	if got := titled(t, e.store, "demo", "specs"); !slices.Equal(got, []string{"1:Specs"}) {
		t.Errorf("specs after the retitle: %v", got)
	}
	if got := titled(t, e.store, "demo", "design"); !slices.Equal(got, []string{"2:Design"}) {
		t.Errorf("design after the retitle and the delete: %v", got)
	}

	// A baseline titles its page without rewriting the page's rows: the
	// index follows the page item.
	bl := wikitable.NewBaselineStore(e.db, e.env.WikiTable)
	job := &baseline.Job{Tenant: "demo", Owner: "test", Baseline: baseline.Baseline{
		SpaceKey: "DEMO", Number: 1, Name: "Release 1", CEO: "1", CreatedAt: time.Now()}}
	if err := bl.Begin(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := bl.Commit(ctx, job, true); err != nil {
		t.Fatal(err)
	}
	if got := titled(t, e.store, "demo", "specs"); got != nil {
		t.Errorf("specs after the baseline: %v", got)
	}
	if got := titled(t, e.store, "demo", "RELEASE 1"); !slices.Equal(got, []string{"1:Release 1"}) {
		t.Errorf("release 1: %v", got)
	}
	if r := e.get(t, "demo", "DEMO", "R-1"); r.Origin.Title != "Specs" {
		t.Errorf("R-1's stored origin title %q: the baseline rewrote the row", r.Origin.Title)
	}
}

// capacity records the write capacity DynamoDB reports for the title
// index gsi2, asking for it on every write call of a client.
type capacity struct {
	mu   sync.Mutex
	gsi2 float64
}

func (c *capacity) options(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("capacity",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				const indexes = types.ReturnConsumedCapacityIndexes
				switch p := in.Parameters.(type) {
				case *dynamodb.PutItemInput:
					p.ReturnConsumedCapacity = indexes
				case *dynamodb.UpdateItemInput:
					p.ReturnConsumedCapacity = indexes
				case *dynamodb.DeleteItemInput:
					p.ReturnConsumedCapacity = indexes
				case *dynamodb.BatchWriteItemInput:
					p.ReturnConsumedCapacity = indexes
				case *dynamodb.TransactWriteItemsInput:
					p.ReturnConsumedCapacity = indexes
				}
				out, md, err := next.HandleInitialize(ctx, in)
				var caps []types.ConsumedCapacity
				switch r := out.Result.(type) {
				case *dynamodb.PutItemOutput:
					caps = append(caps, deref(r.ConsumedCapacity)...)
				case *dynamodb.UpdateItemOutput:
					caps = append(caps, deref(r.ConsumedCapacity)...)
				case *dynamodb.DeleteItemOutput:
					caps = append(caps, deref(r.ConsumedCapacity)...)
				case *dynamodb.BatchWriteItemOutput:
					caps = append(caps, r.ConsumedCapacity...)
				case *dynamodb.TransactWriteItemsOutput:
					caps = append(caps, r.ConsumedCapacity...)
				}
				c.mu.Lock()
				for _, cc := range caps {
					if ix, ok := cc.GlobalSecondaryIndexes["gsi2"]; ok {
						c.gsi2 += aws.ToFloat64(ix.CapacityUnits)
					}
				}
				c.mu.Unlock()
				return out, md, err
			}), middleware.After)
	})
}

func deref(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

func (c *capacity) take() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.gsi2
	c.gsi2 = 0
	return v
}

// TestWikiStoreTitleIndexWriteCost measures what the title index costs a
// page save: no call (it is a GSI of the page item) and, as DynamoDB
// Local reports it, write capacity on gsi2 only when the title changes.
func TestWikiStoreTitleIndexWriteCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testenv.AWS(t)
	c := &capacity{}
	db := dynamodb.NewFromConfig(env.Config, c.options)
	svc := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, env.WikiTable)})
	save := func(title string) float64 {
		t.Helper()
		c.take()
		if _, err := svc.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: title,
			Body: saveSpecs(saveReq("R-1", "text", "High"))}); err != nil {
			t.Fatal(err)
		}
		return c.take()
	}
	created, same, retitled := save("Specs"), save("Specs"), save("Design")
	t.Logf("gsi2 write capacity: new page %.1f, same title %.1f, new title %.1f", created, same, retitled)
	if created <= 0 || same != 0 || retitled <= 0 {
		t.Errorf("gsi2 write capacity: new page %.1f, same title %.1f, new title %.1f; want >0, 0, >0", created, same, retitled)
	}
}
