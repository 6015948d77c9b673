package samtemplate_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

// realTemplate is the repository's template.yaml, two levels up.
var realTemplate = filepath.Join("..", "..", "template.yaml")

func loadReal(t *testing.T) *samtemplate.Template {
	t.Helper()
	tmpl, err := samtemplate.Load(realTemplate)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestLoadFunctions(t *testing.T) {
	t.Parallel()
	tmpl := loadReal(t)

	var ids []string
	for _, f := range tmpl.Functions {
		ids = append(ids, f.LogicalID)
	}
	want := []string{"Sync", "TrackerApiFunction", "TrackerLinks", "TrackerOutbox", "WikiBaselineJobs", "WikiBaselines", "WikiContent", "WikiIntegrations", "WikiRequirements", "WikiWeb"}
	if !slices.Equal(ids, want) {
		t.Fatalf("functions = %v, want %v", ids, want)
	}

	tests := []struct {
		id         string
		dir        string
		api        string
		routes     int
		timeout    time.Duration
		memory     int
		schedules  int
		firstRoute samtemplate.Route
	}{
		{"WikiRequirements", "functions/wikirequirements", "WikiApi", 17, 29 * time.Second, 1024, 0,
			samtemplate.Route{Event: "Coverage", API: "WikiApi", Method: "GET", Path: "/rest/reqs/1/coverage/{spaceKey}"}},
		{"WikiWeb", "functions/wikiweb", "WikiApi", 9, 29 * time.Second, 512, 0,
			samtemplate.Route{Event: "Coverage", API: "WikiApi", Method: "GET", Path: "/coverage/{spaceKey}"}},
		{"WikiContent", "functions/wikicontent", "WikiApi", 5, 29 * time.Second, 512, 0,
			samtemplate.Route{Event: "Delete", API: "WikiApi", Method: "DELETE", Path: "/rest/reqs/1/content/{contentId}"}},
		{"WikiBaselines", "functions/wikibaselines", "WikiApi", 6, 29 * time.Second, 1024, 0,
			samtemplate.Route{Event: "Create", API: "WikiApi", Method: "POST", Path: "/rest/reqs/1/baseline/{spaceKey}/1/create"}},
		{"WikiIntegrations", "functions/wikiintegrations", "WikiApi", 14, 29 * time.Second, 512, 0,
			samtemplate.Route{Event: "Create", API: "WikiApi", Method: "POST", Path: "/rest/reqs/1/integration"}},
		{"TrackerApiFunction", "functions/trackerapi", "TrackerApi", 11, 29 * time.Second, 512, 0,
			samtemplate.Route{Event: "Default", API: "TrackerApi", Method: "ANY", Path: samtemplate.DefaultRoute}},
		{"TrackerLinks", "functions/trackerlinks", "TrackerApi", 7, 29 * time.Second, 512, 0,
			samtemplate.Route{Event: "Create", API: "TrackerApi", Method: "POST", Path: "/rest/reqs/1/issuelinks/{issueKey}"}},
		{"Sync", "functions/sync", "", 0, 600 * time.Second, 512, 1, samtemplate.Route{}},
		{"TrackerOutbox", "functions/trackeroutbox", "", 0, 60 * time.Second, 256, 1, samtemplate.Route{}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			f, ok := tmpl.Function(tt.id)
			if !ok {
				t.Fatalf("Function(%q) not found", tt.id)
			}
			if got := f.Dir(); got != tt.dir {
				t.Errorf("Dir() = %q, want %q", got, tt.dir)
			}
			if len(f.Routes) != tt.routes {
				t.Errorf("%d routes, want %d: %+v", len(f.Routes), tt.routes, f.Routes)
			}
			for _, r := range f.Routes {
				if r.API != tt.api {
					t.Errorf("route %s on %s, want %s", r.Event, r.API, tt.api)
				}
			}
			if tt.routes > 0 && f.Routes[0] != tt.firstRoute {
				t.Errorf("first route = %+v, want %+v", f.Routes[0], tt.firstRoute)
			}
			if f.Timeout != tt.timeout {
				t.Errorf("Timeout = %v, want %v", f.Timeout, tt.timeout)
			}
			if f.MemorySize != tt.memory {
				t.Errorf("MemorySize = %d, want %d", f.MemorySize, tt.memory)
			}
			if len(f.Schedules) != tt.schedules {
				t.Errorf("%d schedules, want %d", len(f.Schedules), tt.schedules)
			}
		})
	}
}

func TestSyncSchedule(t *testing.T) {
	t.Parallel()
	f, ok := loadReal(t).Function("Sync")
	if !ok {
		t.Fatal("no Sync function")
	}
	want := []samtemplate.Schedule{{Event: "Schedule", Expression: "rate(3 minutes)", Rate: 3 * time.Minute, Enabled: true}}
	if !slices.Equal(f.Schedules, want) {
		t.Errorf("Schedules = %+v, want %+v", f.Schedules, want)
	}
}

// TestRoutesUnique checks what API Gateway enforces on deploy: one
// integration per (API, method, path).
func TestRoutesUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, f := range loadReal(t).Functions {
		for _, r := range f.Routes {
			key := r.API + " " + r.Method + " " + r.Path
			if other, dup := seen[key]; dup {
				t.Errorf("%s is routed to both %s and %s", key, other, f.LogicalID)
			}
			seen[key] = f.LogicalID
		}
	}
	if len(seen) == 0 {
		t.Error("no routes in template.yaml")
	}
}

func TestLoadTables(t *testing.T) {
	t.Parallel()
	tmpl := loadReal(t)
	keys := []samtemplate.KeyElement{{Name: "pk", Type: "HASH"}, {Name: "sk", Type: "RANGE"}}
	gsi1 := samtemplate.Index{
		Name:       "gsi1",
		KeySchema:  []samtemplate.KeyElement{{Name: "gsi1pk", Type: "HASH"}, {Name: "gsi1sk", Type: "RANGE"}},
		Projection: samtemplate.Projection{Type: "ALL"},
	}
	gsi2 := samtemplate.Index{
		Name:       "gsi2",
		KeySchema:  []samtemplate.KeyElement{{Name: "gsi2pk", Type: "HASH"}, {Name: "gsi2sk", Type: "RANGE"}},
		Projection: samtemplate.Projection{Type: "INCLUDE", NonKeyAttributes: []string{"title"}},
	}
	gsi3 := samtemplate.Index{
		Name:       "gsi3",
		KeySchema:  []samtemplate.KeyElement{{Name: "gsi3pk", Type: "HASH"}, {Name: "gsi3sk", Type: "RANGE"}},
		Projection: samtemplate.Projection{Type: "KEYS_ONLY"},
	}
	tests := []struct {
		id    string
		attrs int
		gsis  []samtemplate.Index
		ttl   string
	}{
		{"AuthTable", 2, nil, "ttl"}, // rate-limit windows expire
		{"TrackerTable", 4, []samtemplate.Index{gsi1}, ""},
		{"WikiTable", 8, []samtemplate.Index{gsi1, gsi2, gsi3}, "ttl"}, // DONE outbound messages and staged baseline keys expire
	}
	if len(tmpl.Tables) != len(tests) {
		t.Fatalf("%d tables, want %d", len(tmpl.Tables), len(tests))
	}
	for i, tt := range tests {
		tb := tmpl.Tables[i]
		if tb.LogicalID != tt.id {
			t.Errorf("table %d = %s, want %s", i, tb.LogicalID, tt.id)
		}
		if tb.BillingMode != "PAY_PER_REQUEST" {
			t.Errorf("%s BillingMode = %s", tb.LogicalID, tb.BillingMode)
		}
		if !slices.Equal(tb.KeySchema, keys) {
			t.Errorf("%s KeySchema = %+v", tb.LogicalID, tb.KeySchema)
		}
		if len(tb.Attributes) != tt.attrs {
			t.Errorf("%s has %d attributes, want %d", tb.LogicalID, len(tb.Attributes), tt.attrs)
		}
		if !slices.EqualFunc(tb.GSIs, tt.gsis, func(a, b samtemplate.Index) bool {
			return a.Name == b.Name && slices.Equal(a.KeySchema, b.KeySchema) && a.Projection.Type == b.Projection.Type &&
				slices.Equal(a.Projection.NonKeyAttributes, b.Projection.NonKeyAttributes)
		}) {
			t.Errorf("%s GSIs = %+v, want %+v", tb.LogicalID, tb.GSIs, tt.gsis)
		}
		if tb.TTLAttribute != tt.ttl {
			t.Errorf("%s TTLAttribute = %q, want %q", tb.LogicalID, tb.TTLAttribute, tt.ttl)
		}
	}
}

func TestTableTTL(t *testing.T) {
	t.Parallel()
	table := `
Parameters: { On: { Type: String, Default: "true" } }
Resources:
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{ AttributeName: id, AttributeType: S }]
      KeySchema: [{ AttributeName: id, KeyType: HASH }]
`
	tests := []struct {
		name, spec, want, err string
	}{
		{"absent", "", "", ""},
		{"enabled", "      TimeToLiveSpecification: { AttributeName: expires, Enabled: true }\n", "expires", ""},
		{"enabled by a parameter", "      TimeToLiveSpecification: { AttributeName: expires, Enabled: !Ref On }\n", "expires", ""},
		{"disabled", "      TimeToLiveSpecification: { AttributeName: expires, Enabled: false }\n", "", ""},
		{"enabled without attribute", "      TimeToLiveSpecification: { Enabled: true }\n", "", "AttributeName is missing"},
		{"not a mapping", "      TimeToLiveSpecification: [ttl]\n", "", "not a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := samtemplate.Parse([]byte(table + tt.spec))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tb, _ := tmpl.Table("T"); tb.TTLAttribute != tt.want {
				t.Errorf("TTLAttribute = %q, want %q", tb.TTLAttribute, tt.want)
			}
		})
	}
}

func TestLoadQueues(t *testing.T) {
	t.Parallel()
	tmpl := loadReal(t)
	q, ok := tmpl.Queue("OutboundQueue")
	if !ok {
		t.Fatal("no OutboundQueue")
	}
	if !q.FIFO || q.ContentBasedDeduplication || q.VisibilityTimeout != 120*time.Second || q.MessageRetention != 14*24*time.Hour {
		t.Errorf("OutboundQueue = %+v", q)
	}
	// maxReceiveCount is !Ref SyncMaxReceiveCount, whose default is 5.
	if q.Redrive == nil || *q.Redrive != (samtemplate.Redrive{DeadLetterQueue: "OutboundDLQ", MaxReceiveCount: 5}) {
		t.Errorf("OutboundQueue.Redrive = %+v", q.Redrive)
	}
	dlq, ok := tmpl.Queue("OutboundDLQ")
	if !ok {
		t.Fatal("no OutboundDLQ")
	}
	if !dlq.FIFO || dlq.Redrive != nil || dlq.VisibilityTimeout != 30*time.Second {
		t.Errorf("OutboundDLQ = %+v", dlq)
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	tmpl := loadReal(t)
	local := map[string]string{
		"WikiTable":     "p-WikiTable",
		"TrackerTable":  "p-TrackerTable",
		"AuthTable":     "p-AuthTable",
		"OutboundQueue": "http://127.0.0.1:1/123456789012/p-OutboundQueue.fifo",
		"OutboundDLQ":   "http://127.0.0.1:1/123456789012/p-OutboundDLQ.fifo",
		"ExportBucket":  "p-exportbucket",
	}
	resolve := func(ref string) string { return local[ref] }
	common := map[string]string{
		"WIKI_TABLE":         "p-WikiTable",
		"TRACKER_TABLE":      "p-TrackerTable",
		"AUTH_TABLE":         "p-AuthTable",
		"OUTBOUND_QUEUE_URL": "http://127.0.0.1:1/123456789012/p-OutboundQueue.fifo",
		"LOG_LEVEL":          "INFO",
		// !Ref AllowPrivateTargets, default "false"
		"ALLOW_PRIVATE_TARGETS": "false",
		// !Ref TenantRate, a Number parameter, default 200
		"TENANT_RATE": "200",
	}
	withEmail := maps.Clone(common)
	withEmail["ERROR_EMAIL_FROM"] = ""                   // !Ref ErrorEmailFrom, default ""
	withEmail["OUTBOUND_DLQ_URL"] = local["OutboundDLQ"] // !Ref of a second queue
	withBucket := maps.Clone(common)
	withBucket["EXPORT_BUCKET"] = "p-exportbucket" // !Ref of a bucket
	noQueue := maps.Clone(common)
	delete(noQueue, "OUTBOUND_QUEUE_URL")

	tests := []struct {
		name    string
		fn      string
		resolve func(string) string
		want    map[string]string
	}{
		{"globals only", "WikiBaselines", resolve, common},
		{"function adds a bucket", "WikiRequirements", resolve, withBucket},
		{"function adds a parameter", "Sync", resolve, withEmail},
		{"unresolved ref is dropped", "TrackerLinks", func(ref string) string {
			if ref == "OutboundQueue" {
				return ""
			}
			return local[ref]
		}, noQueue},
		{"nil resolver keeps literals and parameters", "WikiContent", nil, map[string]string{"LOG_LEVEL": "INFO", "ALLOW_PRIVATE_TARGETS": "false", "TENANT_RATE": "200"}},
		{"unknown function", "Nope", resolve, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tmpl.Env(tt.fn, tt.resolve)
			if !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Env(%q) = %v, want %v", tt.fn, got, tt.want)
			}
		})
	}
}

const intrinsics = `
Parameters:
  Stage: { Type: String, Default: dev }
  Email: { Type: String, Default: "" }
  Count: { Type: Number, Default: 3 }
  NoDefault: { Type: String }
Conditions:
  HasEmail: !Not [!Equals [!Ref Email, ""]]
  IsDev: !Equals [!Ref Stage, dev]
  Both: !And [!Condition IsDev, !Not [!Condition HasEmail]]
Globals:
  Function:
    Timeout: 10
    Environment:
      Variables:
        SHORT_REF: !Ref Things
        LONG_REF: { Ref: Things }
        GETATT: !GetAtt Things.Arn
        GETATT_LIST: !GetAtt [Things, Arn]
        SUB: !Sub "${Stage}-${Things}-${!Literal}"
        SUB_VARS: !Sub ["${A}/${Stage}", { A: !Ref Count }]
        SUB_GETATT: !Sub "${Things.Arn}"
        IF_TRUE: !If [IsDev, yes, no]
        IF_FALSE: !If [HasEmail, yes, no]
        IF_AND: !If [Both, both, not-both]
        IF_NOVALUE: !If [IsDev, !Ref "AWS::NoValue", x]
        LONG_IF: { "Fn::If": [IsDev, long, short] }
        JOIN: !Join [":", [a, !Ref Stage, !Ref Count]]
        PSEUDO: !Ref AWS::Region
        NO_DEFAULT: !Ref NoDefault
        NUMBER: 42
        BOOL: true
Resources:
  Things:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{ AttributeName: id, AttributeType: S }]
      KeySchema: [{ AttributeName: id, KeyType: HASH }]
  Q:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": "D.Arn" }, maxReceiveCount: !Ref Count }
  D:
    Type: AWS::SQS::Queue
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 7
      Events:
        Implicit: { Type: HttpApi, Properties: { Method: get, Path: /x } }
        Hourly: { Type: Schedule, Properties: { Schedule: rate(1 hour), Enabled: false } }
`

func TestIntrinsics(t *testing.T) {
	t.Parallel()
	tmpl, err := samtemplate.Parse([]byte(intrinsics))
	if err != nil {
		t.Fatal(err)
	}
	got := tmpl.Env("Fn", func(ref string) string { return "local-" + ref })
	want := map[string]string{
		"SHORT_REF": "local-Things",
		"LONG_REF":  "local-Things",
		"SUB":       "dev-local-Things-${Literal}",
		"SUB_VARS":  "3/dev",
		"IF_TRUE":   "yes",
		"IF_FALSE":  "no",
		"IF_AND":    "both",
		"LONG_IF":   "long",
		"JOIN":      "a:dev:3",
		"NUMBER":    "42",
		"BOOL":      "true",
	}
	if !maps.Equal(got, want) {
		t.Errorf("Env = %v\nwant  %v", got, want)
	}

	f, _ := tmpl.Function("Fn")
	if f.Timeout != 7*time.Second || f.MemorySize != 128 {
		t.Errorf("Timeout, MemorySize = %v, %d; want 7s, 128", f.Timeout, f.MemorySize)
	}
	if want := []samtemplate.Route{{Event: "Implicit", API: "ServerlessHttpApi", Method: "GET", Path: "/x"}}; !slices.Equal(f.Routes, want) {
		t.Errorf("Routes = %+v, want %+v", f.Routes, want)
	}
	if want := []samtemplate.Schedule{{Event: "Hourly", Expression: "rate(1 hour)", Rate: time.Hour}}; !slices.Equal(f.Schedules, want) {
		t.Errorf("Schedules = %+v, want %+v", f.Schedules, want)
	}
	q, _ := tmpl.Queue("Q")
	if q.Redrive == nil || *q.Redrive != (samtemplate.Redrive{DeadLetterQueue: "D", MaxReceiveCount: 3}) {
		t.Errorf("Q.Redrive = %+v", q.Redrive)
	}
	if q.FIFO || q.VisibilityTimeout != 30*time.Second {
		t.Errorf("Q = %+v, want standard queue with the default visibility timeout", q)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	table := `
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{ AttributeName: id, AttributeType: S }]
      KeySchema: [{ AttributeName: %s, KeyType: HASH }]`
	tests := []struct {
		name, yaml, want string
	}{
		{"not a mapping", "- a\n- b\n", "not a mapping"},
		{"unknown tag", "Resources: { X: !Bogus y }\n", "unsupported tag !Bogus"},
		{"bad getatt", "Resources: { X: !GetAtt nodot }\n", "not Resource.Attribute"},
		{"duplicate key", "Resources: {}\nResources: {}\n", "duplicate key"},
		{"undefined key attribute", "Resources:" + strings.Replace(table, "%s", "other", 1), "key attribute other has no AttributeDefinition"},
		{"cron schedule", `
Resources:
  F:
    Type: AWS::Serverless::Function
    Properties:
      Events: { S: { Type: Schedule, Properties: { Schedule: "cron(0 * * * ? *)" } } }`, "not a rate("},
		{"dlq missing", `
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties: { RedrivePolicy: { deadLetterTargetArn: !GetAtt Gone.Arn, maxReceiveCount: 2 } }`, "Gone is not a queue"},
		{"dlq literal arn", `
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties: { RedrivePolicy: { deadLetterTargetArn: "arn:aws:sqs:us-east-1:1:x", maxReceiveCount: 2 } }`, "not a !GetAtt"},
		{"fifo with standard dlq", `
Resources:
  D: { Type: AWS::SQS::Queue }
  Q:
    Type: AWS::SQS::Queue
    Properties: { FifoQueue: true, RedrivePolicy: { deadLetterTargetArn: !GetAtt D.Arn, maxReceiveCount: 2 } }`, "same FifoQueue"},
		{"max receive count without default", `
Parameters: { N: { Type: Number } }
Resources:
  D: { Type: AWS::SQS::Queue }
  Q:
    Type: AWS::SQS::Queue
    Properties: { RedrivePolicy: { deadLetterTargetArn: !GetAtt D.Arn, maxReceiveCount: !Ref N } }`, "maxReceiveCount"},
		{"route without path", `
Resources:
  F:
    Type: AWS::Serverless::Function
    Properties: { Events: { E: { Type: HttpApi, Properties: { Method: GET } } } }`, "Path is missing"},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e]\n" +
			"g: &g [*f, *f, *f, *f, *f, *f, *f, *f]\n", "nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := samtemplate.Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr    string
		want    time.Duration
		wantErr bool
	}{
		{"rate(3 minutes)", 3 * time.Minute, false},
		{"rate(1 minute)", time.Minute, false},
		{"rate(2 hours)", 2 * time.Hour, false},
		{"rate(1 day)", 24 * time.Hour, false},
		{"rate(1 minutes)", 0, true},
		{"rate(5 minute)", 0, true},
		{"rate(0 minutes)", 0, true},
		{"rate(3 seconds)", 0, true},
		{"cron(0 12 * * ? *)", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := samtemplate.ParseRate(tt.expr)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, error %v", tt.expr, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	if _, err := samtemplate.Load(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestDefaultRoute(t *testing.T) {
	t.Parallel()
	tmpl, err := samtemplate.Parse([]byte(`
Resources:
  Api: {Type: AWS::Serverless::HttpApi}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Default: {Type: HttpApi, Properties: {ApiId: !Ref Api}}
        Get: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: get, Path: /x}}
`))
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := tmpl.Function("Fn")
	got := map[string]string{}
	for _, r := range fn.Routes {
		got[r.Event] = r.API + " " + r.Method + " " + r.Path
	}
	if got["Default"] != "Api ANY $default" || got["Get"] != "Api GET /x" {
		t.Fatalf("routes %v", got)
	}
}
