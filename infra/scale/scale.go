// Package scale measures where a workload's writes land on DynamoDB: the
// write capacity each partition key of the WikiTable and of its indexes
// receives per page save, read from the table's stream on DynamoDB Local
// while the real save path (wiki.Service with its DynamoDB stores, the
// outbound publisher on the SQS stand-in) runs the workload. A partition
// takes at most 1,000 write units a second, so the key with most units
// per save says how many saves a second a tenant, or the whole service,
// can make before that key throttles (docs/scale.md).
package scale

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/page/pagetest"
	"github.com/reqtrace/reqtrace/shared/queue"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// PartitionWCU is the write capacity of one DynamoDB partition (units a
// second), the same for a table and for a global secondary index.
const PartitionWCU = 1000

// Workload is what the measured tenants do: each has Spaces spaces of
// Pages pages of Requirements requirements (a property, a dependency on
// the previous requirement and, with IssueLinks, an issue link of the
// tenant's integration); after creating them (not measured) the tenants
// make Edits saves each, round robin over their pages, each changing the
// text of Changed requirements.
type Workload struct {
	Tenants, Spaces, Pages, Requirements int
	IssueLinks                           bool
	Edits, Changed                       int
}

func (w Workload) String() string {
	links := "without issue links"
	if w.IssueLinks {
		links = "each with an issue link"
	}
	return fmt.Sprintf("%d tenants × %d spaces × %d pages of %d requirements (%s); %d saves per tenant, each changing %d requirements",
		w.Tenants, w.Spaces, w.Pages, w.Requirements, links, w.Edits, w.Changed)
}

// Deps are the local stack's parts a measurement uses: a fresh set of
// the template's tables and queues.
type Deps struct {
	Config aws.Config
	// DynamoDBEndpoint serves DynamoDB Streams too (DynamoDB Local does).
	DynamoDBEndpoint string
	WikiTable        string
	QueueURL         string
}

// Key is one partition key's share of the measured saves.
type Key struct {
	// Index is "table" or a global secondary index's name.
	Index string
	// Key is the partition key value; Class the same with tenants, spaces,
	// pages and integrations replaced by placeholders.
	Key, Class string
	// Writes and WCU are the writes and write units it received.
	Writes, WCU int
	// CrossTenant says whether several tenants' saves wrote it.
	CrossTenant bool
}

// Report is a measurement.
type Report struct {
	Workload Workload
	// Saves is the number of measured saves (every tenant's).
	Saves int
	// Keys are the partition keys written, most write units first.
	Keys []Key
	// Items is the number of stream records (item writes on the table).
	Items int
}

// Shards are the partitions of the sharded keys, by class: writes to such
// a class spread over its shards as tenants (or pages, or message ids)
// spread. A tenant's sharded key (the outbox of an integration) spreads
// one tenant's writes.
var Shards = map[string]int{
	"OUTBOX#PENDING#<nn>":                wikitable.OutboxPendingShards,
	"UNFINISHED#<nn>":                    wikitable.UnfinishedShards,
	"T#<tenant>#OUTBOX#<serviceId>#<nn>": wikitable.OutboxShards,
}

// PerSave is the write units a key received per measured save of one
// tenant (a tenant's key; for a tenant's sharded key, the units of all
// its tenant's shards divided by the shards, as the shard is a hash of the
// message id), or, for a key tenants share, the units its whole class
// received per save of any tenant divided by the class's shards (tenants
// spread evenly over them).
func (r *Report) PerSave(k Key) float64 {
	if !k.CrossTenant {
		n, ok := Shards[k.Class]
		if !ok {
			return float64(k.WCU) / float64(r.Saves/r.Workload.Tenants)
		}
		total := 0
		for _, o := range r.Keys {
			if o.Index == k.Index && o.Class == k.Class && !o.CrossTenant && keyTenant(o.Key) == keyTenant(k.Key) {
				total += o.WCU
			}
		}
		return float64(total) / float64(r.Saves/r.Workload.Tenants) / float64(n)
	}
	total := 0
	for _, o := range r.Keys {
		if o.Index == k.Index && o.Class == k.Class {
			total += o.WCU
		}
	}
	return float64(total) / float64(r.Saves) / float64(max(1, Shards[k.Class]))
}

// keyTenant is the tenant of a tenant's key T#<tenant>#….
func keyTenant(key string) string {
	parts := strings.SplitN(key, "#", 3)
	if len(parts) < 3 || parts[0] != "T" {
		return ""
	}
	return parts[1]
}

// SavesPerSecond is the save rate at which k alone reaches a partition's
// write capacity: of one tenant for a tenant's key, of the whole service
// for a key tenants share.
func (r *Report) SavesPerSecond(k Key) float64 {
	return PartitionWCU / r.PerSave(k)
}

// Hottest returns the key of each class with most write units, classes in
// order of their saturating rate, lowest first.
func (r *Report) Hottest() []Key {
	seen := map[string]bool{}
	var out []Key
	for _, k := range r.Keys {
		if !seen[k.Index+" "+k.Class] {
			seen[k.Index+" "+k.Class] = true
			out = append(out, k)
		}
	}
	slices.SortStableFunc(out, func(a, b Key) int {
		return cmpFloat(r.SavesPerSecond(a), r.SavesPerSecond(b))
	})
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// serviceID is each tenant's integration.
const serviceID = "jira-scale"

// Measure runs w on d's tables and reports the writes per partition key of
// its measured saves. The tables must be fresh: the stream is switched on
// after the pages are created.
func Measure(ctx context.Context, d Deps, w Workload) (*Report, error) {
	db := dynamodb.NewFromConfig(d.Config)
	tx := &txRecorder{API: db, units: map[string]int{}}
	saver := wiki.New(wiki.Deps{
		Store:     wikitable.NewWikiStore(tx, d.WikiTable),
		Publisher: integration.NewPublisher(queue.New(sqs.NewFromConfig(d.Config), d.QueueURL), wikitable.NewOutboxStore(tx, d.WikiTable)),
	})
	for t := range w.Tenants {
		if w.IssueLinks {
			desc := &integration.Descriptor{ServiceID: serviceID, RPCURL: "http://127.0.0.1:9", Endpoint: integration.DefaultEndpoint,
				Version: integration.DefaultVersion, Status: integration.Active, Token: "scale-token"}
			desc.Normalize()
			if err := wikitable.NewIntegrationStore(db, d.WikiTable).Create(ctx, tenant(t), desc); err != nil {
				return nil, fmt.Errorf("create the integration of %s: %w", tenant(t), err)
			}
		}
	}
	save := func(t, s, p, v int) error {
		in := wiki.PageInput{ID: pageID(s, p), SpaceKey: space(s), Title: fmt.Sprintf("Page %s %d", space(s), p), Body: body(w, s, p, v)}
		if _, err := saver.SavePage(ctx, tenant(t), "scale", in); err != nil {
			return fmt.Errorf("save page %s of %s: %w", in.ID, tenant(t), err)
		}
		return nil
	}
	if err := eachTenant(w.Tenants, func(t int) error {
		for s := range w.Spaces {
			for p := range w.Pages {
				if err := save(t, s, p, 0); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}

	st, err := openStream(ctx, d, db)
	if err != nil {
		return nil, err
	}
	tx.reset()
	if err := eachTenant(w.Tenants, func(t int) error {
		for e := range w.Edits {
			page := e % (w.Spaces * w.Pages)
			if err := save(t, page/w.Pages, page%w.Pages, 1+e/(w.Spaces*w.Pages)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	writes, err := st.read(ctx)
	if err != nil {
		return nil, err
	}
	return report(w, writes, tx), nil
}

// eachTenant runs fn for every tenant at once, as tenants do.
func eachTenant(n int, fn func(t int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for t := range n {
		wg.Go(func() { errs[t] = fn(t) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func tenant(t int) string            { return fmt.Sprintf("scale%02d", t) }
func space(s int) string             { return fmt.Sprintf("SP%d", s) }
func pageID(s, p int) string         { return fmt.Sprint(1000*(s+1) + p) }
func reqKey(s, p, i int) string      { return fmt.Sprintf("R%d-%03d-%03d", s, p, i) }
func changed(w Workload, i int) bool { return i < w.Changed }

// body is version v of page p of space s: version 0 creates it; each later
// version changes the text of the first w.Changed requirements.
func body(w Workload, s, p, v int) string {
	rows := []string{pagetest.TH("Key", "Description", "Priority", "Implements")}
	for i := range w.Requirements {
		version := 0
		if changed(w, i) {
			version = v
		}
		desc := fmt.Sprintf("<p>Requirement %d of page %d, version %d.", i, p, version)
		if i > 0 {
			desc += " " + pagetest.Link("", reqKey(s, p, i-1))
		}
		issue := ""
		if w.IssueLinks {
			issue = pagetest.Jira(fmt.Sprintf("PROJ-%d", i), serviceID)
		}
		rows = append(rows, pagetest.TR(pagetest.Def(reqKey(s, p, i)), desc+"</p>", []string{"High", "Low"}[i%2], issue))
	}
	return pagetest.Table(rows...)
}

// placeholders turn a partition key into its class.
var placeholders = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`scale\d\d`), "<tenant>"},
	{regexp.MustCompile(`SP\d+`), "<SPACE>"},
	{regexp.MustCompile(`PAGE#\d+`), "PAGE#<pageId>"},
	{regexp.MustCompile(`CHILDREN#\d*`), "CHILDREN#<parentId>"},
	{regexp.MustCompile(`TITLE#.*`), "TITLE#<title>"},
	{regexp.MustCompile(`#\d\d$`), "#<nn>"},
	{regexp.MustCompile(`R\d+-\d+-\d+`), "<KEY>"},
	{regexp.MustCompile(`PROJ-\d+`), "<issue>"},
	{regexp.MustCompile(`#(High|Low)$`), "#<value>"},
	{regexp.MustCompile(`#W#.*$`), "#W#<word>"},
	{regexp.MustCompile(serviceID), "<serviceId>"},
}

func class(key string) string {
	for _, p := range placeholders {
		key = p.re.ReplaceAllString(key, p.with)
	}
	return key
}

// report sums the write units per partition key; items written in a
// transaction count twice on the table, as DynamoDB charges them.
func report(w Workload, writes []write, tx *txRecorder) *Report {
	type acc struct {
		writes, wcu int
		tenants     map[string]bool
	}
	by := map[[2]string]*acc{}
	for _, wr := range writes {
		k := [2]string{wr.index, wr.key}
		a := by[k]
		if a == nil {
			a = &acc{tenants: map[string]bool{}}
			by[k] = a
		}
		a.writes++
		a.wcu += wr.wcu
		a.tenants[wr.tenant] = true
	}
	for pk, n := range tx.units {
		if a := by[[2]string{"table", pk}]; a != nil {
			a.wcu += n
		}
	}
	rep := &Report{Workload: w, Saves: w.Tenants * w.Edits}
	for k, a := range by {
		if k[0] == "table" {
			rep.Items += a.writes
		}
		rep.Keys = append(rep.Keys, Key{Index: k[0], Key: k[1], Class: class(k[1]), Writes: a.writes, WCU: a.wcu,
			CrossTenant: len(a.tenants) > 1 || !strings.HasPrefix(k[1], "T#")})
	}
	slices.SortFunc(rep.Keys, func(a, b Key) int {
		if a.WCU != b.WCU {
			return b.WCU - a.WCU
		}
		return strings.Compare(a.Index+a.Key, b.Index+b.Key)
	})
	return rep
}

// txRecorder counts, per table partition key, the items written in
// transactions (a transactional write costs twice a plain one).
type txRecorder struct {
	dynamo.API
	mu    sync.Mutex
	units map[string]int
}

func (r *txRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.units)
}

func (r *txRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := r.API.TransactWriteItems(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range in.TransactItems {
		var key map[string]types.AttributeValue
		switch {
		case it.Put != nil:
			key = it.Put.Item
		case it.Update != nil:
			key = it.Update.Key
		case it.Delete != nil:
			key = it.Delete.Key
		default:
			continue
		}
		if pk, ok := key["pk"].(*types.AttributeValueMemberS); ok {
			r.units[pk.Value]++
		}
	}
	return out, nil
}
