// Package samtemplate reads the parts of the SAM template (template.yaml)
// that the local stack needs: functions with their HTTP API routes,
// schedules and environment, DynamoDB tables and SQS queues.
//
// The template stays the single source of truth: the local gateway routes
// requests, and the test harness creates tables and queues, from what this
// package reads, so a change to template.yaml is exercised by every local
// run. Intrinsic functions (!Ref, !GetAtt, !Sub, !If, ...) are resolved
// only as far as a local stack can: parameters take their defaults, tables
// and queues are named by the caller, anything else is dropped.
package samtemplate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Resource types the package understands; other resources are ignored.
const (
	typeFunction = "AWS::Serverless::Function"
	typeTable    = "AWS::DynamoDB::Table"
	typeQueue    = "AWS::SQS::Queue"
	typeBucket   = "AWS::S3::Bucket"
)

// Defaults CloudFormation and SAM apply when a property is absent.
const (
	defaultTimeout           = 3 * time.Second
	defaultMemorySize        = 128
	defaultVisibilityTimeout = 30 * time.Second
	defaultRetention         = 4 * 24 * time.Hour
)

// Template is the local view of a SAM template. Slices are sorted by
// logical ID.
type Template struct {
	Parameters []Parameter
	Functions  []Function
	Tables     []Table
	Queues     []Queue
	Buckets    []Bucket

	params     map[string]Parameter
	conditions map[string]any
}

// Parameter is a template parameter. Locally it always takes its default.
type Parameter struct {
	Name       string
	Type       string
	Default    string
	HasDefault bool
}

// Function is an AWS::Serverless::Function with Globals applied. Routes
// and Schedules are sorted by event name.
type Function struct {
	LogicalID  string
	Routes     []Route
	Schedules  []Schedule
	Timeout    time.Duration
	MemorySize int

	// env holds the unevaluated environment variables, Globals merged
	// with the function's own (which win).
	env map[string]any
}

// Route is an HttpApi (or Api) event of a function.
type Route struct {
	// Event is the event's name in the template, e.g. "Search".
	Event string
	// API is the logical ID of the API, e.g. "WikiApi"; SAM's implicit
	// API is "ServerlessHttpApi" (or "ServerlessRestApi" for Api events).
	API string
	// Method is upper case: GET, POST, PUT, DELETE or ANY.
	Method string
	// Path is the route's path with {parameters}, e.g.
	// "/rest/reqs/1/requirement2/{spaceKey}".
	Path string
}

// Schedule is a Schedule event of a function.
type Schedule struct {
	// Event is the event's name in the template.
	Event string
	// Expression is the schedule as written, e.g. "rate(3 minutes)".
	Expression string
	// Rate is the interval of the rate expression.
	Rate time.Duration
	// Enabled is false when the template disables the schedule.
	Enabled bool
}

// Table is an AWS::DynamoDB::Table.
type Table struct {
	LogicalID   string
	BillingMode string
	Attributes  []Attribute
	KeySchema   []KeyElement
	GSIs        []Index
	// TTLAttribute is the attribute DynamoDB's Time to Live reads expiry
	// times from (TimeToLiveSpecification with Enabled true); "" when the
	// table has no TTL.
	TTLAttribute string
}

// Attribute is an attribute definition of a table.
type Attribute struct {
	Name string
	// Type is "S", "N" or "B".
	Type string
}

// KeyElement is an element of a key schema.
type KeyElement struct {
	Name string
	// Type is "HASH" or "RANGE".
	Type string
}

// Index is a global secondary index.
type Index struct {
	Name       string
	KeySchema  []KeyElement
	Projection Projection
}

// Projection says which attributes an index holds.
type Projection struct {
	// Type is "ALL", "KEYS_ONLY" or "INCLUDE".
	Type             string
	NonKeyAttributes []string
}

// Queue is an AWS::SQS::Queue. Absent durations take CloudFormation's
// defaults (30 s visibility timeout, 4 days retention).
type Queue struct {
	LogicalID                 string
	FIFO                      bool
	ContentBasedDeduplication bool
	VisibilityTimeout         time.Duration
	MessageRetention          time.Duration
	// Redrive is nil when the queue has no dead-letter queue.
	Redrive *Redrive
}

// Redrive is a queue's redrive policy.
type Redrive struct {
	// DeadLetterQueue is the logical ID of the dead-letter queue.
	DeadLetterQueue string
	// MaxReceiveCount is the number of receives after which a message
	// moves to the dead-letter queue.
	MaxReceiveCount int
}

// Bucket is an AWS::S3::Bucket. Locally only its name matters (moto serves
// it); ExpirationDays is what its lifecycle rules say about expiry, for
// the checks of the template's tests.
type Bucket struct {
	LogicalID string
	// ExpirationDays is the ExpirationInDays of its enabled lifecycle
	// rules (0 when none expires objects).
	ExpirationDays []int
}

// Load reads and parses the template at path.
func Load(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load template: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load template %s: %w", path, err)
	}
	return t, nil
}

// Parse parses a template from YAML.
func Parse(data []byte) (*Template, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	v, err := toValue(&doc)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("parse template: top level is not a mapping")
	}
	t := &Template{params: map[string]Parameter{}}
	if err := t.parse(root); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	return t, nil
}

// Function returns the function with the given logical ID.
func (t *Template) Function(logicalID string) (Function, bool) {
	i := slices.IndexFunc(t.Functions, func(f Function) bool { return f.LogicalID == logicalID })
	if i < 0 {
		return Function{}, false
	}
	return t.Functions[i], true
}

// Table returns the table with the given logical ID.
func (t *Template) Table(logicalID string) (Table, bool) {
	i := slices.IndexFunc(t.Tables, func(tb Table) bool { return tb.LogicalID == logicalID })
	if i < 0 {
		return Table{}, false
	}
	return t.Tables[i], true
}

// Queue returns the queue with the given logical ID.
func (t *Template) Queue(logicalID string) (Queue, bool) {
	i := slices.IndexFunc(t.Queues, func(q Queue) bool { return q.LogicalID == logicalID })
	if i < 0 {
		return Queue{}, false
	}
	return t.Queues[i], true
}

// Env returns the environment of function fn (Globals merged with the
// function's own variables) as the function would see it locally. A !Ref
// to a table or queue is passed to resolve, which returns the local table
// name or queue URL ("" when it has none); a !Ref to a parameter takes its
// default; !If, !Sub and !Join are evaluated with those rules. Variables
// whose value cannot be resolved locally (a !GetAtt, a pseudo parameter,
// an unknown resource, AWS::NoValue) are left out. Env returns nil if
// there is no function fn.
func (t *Template) Env(fn string, resolve func(ref string) string) map[string]string {
	f, ok := t.Function(fn)
	if !ok {
		return nil
	}
	var resource func(string) (string, bool)
	if resolve != nil {
		resource = func(id string) (string, bool) {
			v := resolve(id)
			return v, v != ""
		}
	}
	e := newEvaluator(t, resource)
	env := make(map[string]string, len(f.env))
	for k, raw := range f.env {
		if v, ok := e.value(raw, 0); ok {
			env[k] = v
		}
	}
	return env
}

// Dir returns the function's Go package directory relative to the module
// root, slash-separated: "functions/" and the lower-case logical ID
// without a trailing "function" (TrackerApiFunction → functions/trackerapi,
// Sync → functions/sync).
func (f Function) Dir() string {
	return "functions/" + strings.TrimSuffix(strings.ToLower(f.LogicalID), "function")
}

func (t *Template) parse(root map[string]any) error {
	params, err := mapping(root["Parameters"], "Parameters")
	if err != nil {
		return err
	}
	for name, raw := range params {
		p, err := parseParameter(name, raw)
		if err != nil {
			return err
		}
		t.params[name] = p
		t.Parameters = append(t.Parameters, p)
	}
	slices.SortFunc(t.Parameters, func(a, b Parameter) int { return strings.Compare(a.Name, b.Name) })

	if t.conditions, err = mapping(root["Conditions"], "Conditions"); err != nil {
		return err
	}

	globals, err := mapping(root["Globals"], "Globals")
	if err != nil {
		return err
	}
	globalFn, err := mapping(globals["Function"], "Globals.Function")
	if err != nil {
		return err
	}

	resources, err := mapping(root["Resources"], "Resources")
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(resources)) {
		res, err := mapping(resources[id], "Resources."+id)
		if err != nil {
			return err
		}
		props, err := mapping(res["Properties"], "Resources."+id+".Properties")
		if err != nil {
			return err
		}
		switch res["Type"] {
		case typeFunction:
			f, err := t.parseFunction(id, props, globalFn)
			if err != nil {
				return fmt.Errorf("function %s: %w", id, err)
			}
			t.Functions = append(t.Functions, f)
		case typeTable:
			tb, err := t.parseTable(id, props)
			if err != nil {
				return fmt.Errorf("table %s: %w", id, err)
			}
			t.Tables = append(t.Tables, tb)
		case typeQueue:
			q, err := t.parseQueue(id, props)
			if err != nil {
				return fmt.Errorf("queue %s: %w", id, err)
			}
			t.Queues = append(t.Queues, q)
		case typeBucket:
			b, err := t.parseBucket(id, props)
			if err != nil {
				return fmt.Errorf("bucket %s: %w", id, err)
			}
			t.Buckets = append(t.Buckets, b)
		}
	}
	for _, q := range t.Queues {
		if q.Redrive == nil {
			continue
		}
		dlq, ok := t.Queue(q.Redrive.DeadLetterQueue)
		if !ok {
			return fmt.Errorf("queue %s: dead-letter queue %s is not a queue in the template", q.LogicalID, q.Redrive.DeadLetterQueue)
		}
		if dlq.FIFO != q.FIFO {
			return fmt.Errorf("queue %s: dead-letter queue %s must have the same FifoQueue setting", q.LogicalID, dlq.LogicalID)
		}
	}
	return nil
}

func parseParameter(name string, raw any) (Parameter, error) {
	m, err := mapping(raw, "Parameters."+name)
	if err != nil {
		return Parameter{}, err
	}
	p := Parameter{Name: name}
	if p.Type, err = str(m["Type"], "Parameters."+name+".Type"); err != nil {
		return Parameter{}, err
	}
	if d, ok := m["Default"]; ok && d != nil {
		s, ok := scalarString(d)
		if !ok {
			return Parameter{}, fmt.Errorf("Parameters.%s.Default is not a scalar", name)
		}
		p.Default, p.HasDefault = s, true
	}
	return p, nil
}

func (t *Template) parseFunction(id string, props, globals map[string]any) (Function, error) {
	f := Function{LogicalID: id, Timeout: defaultTimeout, MemorySize: defaultMemorySize, env: map[string]any{}}
	for _, m := range []map[string]any{globals, props} {
		if err := errors.Join(
			optional(m, "Timeout", &f.Timeout, t.seconds),
			optional(m, "MemorySize", &f.MemorySize, t.integer),
		); err != nil {
			return Function{}, err
		}
		env, err := mapping(m["Environment"], "Environment")
		if err != nil {
			return Function{}, err
		}
		vars, err := mapping(env["Variables"], "Environment.Variables")
		if err != nil {
			return Function{}, err
		}
		maps.Copy(f.env, vars)
	}

	events, err := mapping(props["Events"], "Events")
	if err != nil {
		return Function{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(events)) {
		ev, err := mapping(events[name], "Events."+name)
		if err != nil {
			return Function{}, err
		}
		evProps, err := mapping(ev["Properties"], "Events."+name+".Properties")
		if err != nil {
			return Function{}, err
		}
		switch ev["Type"] {
		case "HttpApi", "Api":
			r, err := parseRoute(name, ev["Type"].(string), evProps)
			if err != nil {
				return Function{}, fmt.Errorf("event %s: %w", name, err)
			}
			f.Routes = append(f.Routes, r)
		case "Schedule":
			s, err := t.parseSchedule(name, evProps)
			if err != nil {
				return Function{}, fmt.Errorf("event %s: %w", name, err)
			}
			f.Schedules = append(f.Schedules, s)
		}
	}
	return f, nil
}

// DefaultRoute is the Path of an HttpApi event that declares neither Path
// nor Method: API Gateway's $default route, taking every request that no
// other route matches.
const DefaultRoute = "$default"

func parseRoute(event, typ string, props map[string]any) (Route, error) {
	r := Route{Event: event, API: "ServerlessHttpApi"}
	apiKey := "ApiId"
	if typ == "Api" {
		r.API, apiKey = "ServerlessRestApi", "RestApiId"
	}
	if v, ok := props[apiKey]; ok {
		ref, ok := refTarget(v)
		if !ok {
			return Route{}, fmt.Errorf("%s is not a !Ref to an API in the template", apiKey)
		}
		r.API = ref
	}
	_, hasMethod := props["Method"]
	_, hasPath := props["Path"]
	if typ == "HttpApi" && !hasMethod && !hasPath {
		// SAM's default route: requests that match no other route.
		r.Method, r.Path = "ANY", DefaultRoute
		return r, nil
	}
	method, err := str(props["Method"], "Method")
	if err != nil {
		return Route{}, err
	}
	r.Method = strings.ToUpper(method)
	if r.Path, err = str(props["Path"], "Path"); err != nil {
		return Route{}, err
	}
	if !strings.HasPrefix(r.Path, "/") {
		return Route{}, fmt.Errorf("path %q does not start with /", r.Path)
	}
	return r, nil
}

func (t *Template) parseSchedule(event string, props map[string]any) (Schedule, error) {
	s := Schedule{Event: event, Enabled: true}
	expr, err := t.str(props["Schedule"])
	if err != nil {
		return Schedule{}, fmt.Errorf("Schedule: %w", err)
	}
	s.Expression = expr
	if s.Rate, err = ParseRate(expr); err != nil {
		return Schedule{}, err
	}
	if err := optional(props, "Enabled", &s.Enabled, t.boolean); err != nil {
		return Schedule{}, err
	}
	if v, ok := props["State"]; ok {
		state, err := t.str(v)
		if err != nil {
			return Schedule{}, fmt.Errorf("State: %w", err)
		}
		s.Enabled = state == "ENABLED"
	}
	return s, nil
}

var rateRE = regexp.MustCompile(`^rate\(\s*([0-9]+)\s+(minute|minutes|hour|hours|day|days)\s*\)$`)

// ParseRate parses an EventBridge rate expression such as "rate(3
// minutes)" or "rate(1 hour)". Cron expressions are not supported: the
// local stack can only run fixed intervals.
func ParseRate(expr string) (time.Duration, error) {
	m := rateRE.FindStringSubmatch(strings.TrimSpace(expr))
	if m == nil {
		return 0, fmt.Errorf("schedule %q is not a rate(N minutes|hours|days) expression", expr)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 || n > 1e6 {
		return 0, fmt.Errorf("schedule %q: rate must be a positive integer", expr)
	}
	singular := n == 1
	unit := time.Minute
	switch m[2] {
	case "hour", "hours":
		unit = time.Hour
	case "day", "days":
		unit = 24 * time.Hour
	}
	// EventBridge rejects "rate(1 minutes)" and "rate(5 minute)".
	if singular == strings.HasSuffix(m[2], "s") {
		return 0, fmt.Errorf("schedule %q: the unit must be singular for 1 and plural otherwise", expr)
	}
	return time.Duration(n) * unit, nil
}

func (t *Template) parseTable(id string, props map[string]any) (Table, error) {
	tb := Table{LogicalID: id, BillingMode: "PROVISIONED"}
	if v, ok := props["BillingMode"]; ok {
		s, err := str(v, "BillingMode")
		if err != nil {
			return Table{}, err
		}
		tb.BillingMode = s
	}
	err := eachMapping(props["AttributeDefinitions"], "AttributeDefinitions", func(m map[string]any, at string) error {
		name, typ, err := nameAndType(m, at, "AttributeType")
		if err == nil {
			tb.Attributes = append(tb.Attributes, Attribute{Name: name, Type: typ})
		}
		return err
	})
	if err != nil {
		return Table{}, err
	}
	if tb.KeySchema, err = parseKeySchema(props["KeySchema"], "KeySchema"); err != nil {
		return Table{}, err
	}
	err = eachMapping(props["GlobalSecondaryIndexes"], "GlobalSecondaryIndexes", func(m map[string]any, at string) error {
		ix, err := parseIndex(m, at)
		if err == nil {
			tb.GSIs = append(tb.GSIs, ix)
		}
		return err
	})
	if err != nil {
		return Table{}, err
	}
	if tb.TTLAttribute, err = t.parseTTL(props["TimeToLiveSpecification"]); err != nil {
		return Table{}, err
	}

	// DynamoDB rejects key attributes without a definition; say so here,
	// with the template's names, rather than at CreateTable.
	keys := slices.Clone(tb.KeySchema)
	for _, ix := range tb.GSIs {
		keys = append(keys, ix.KeySchema...)
	}
	for _, k := range keys {
		if !slices.ContainsFunc(tb.Attributes, func(a Attribute) bool { return a.Name == k.Name }) {
			return Table{}, fmt.Errorf("key attribute %s has no AttributeDefinition", k.Name)
		}
	}
	return tb, nil
}

// parseTTL returns the attribute of an enabled TimeToLiveSpecification, ""
// when there is none or it is disabled.
func (t *Template) parseTTL(raw any) (string, error) {
	const at = "TimeToLiveSpecification"
	if raw == nil {
		return "", nil
	}
	m, err := mapping(raw, at)
	if err != nil {
		return "", err
	}
	enabled := false
	if err := optional(m, "Enabled", &enabled, t.boolean); err != nil {
		return "", fmt.Errorf("%s.%w", at, err)
	}
	if !enabled {
		return "", nil
	}
	return str(m["AttributeName"], at+".AttributeName")
}

// parseIndex parses a global secondary index; at names it in errors.
func parseIndex(m map[string]any, at string) (Index, error) {
	var (
		ix  Index
		err error
	)
	if ix.Name, err = str(m["IndexName"], at+".IndexName"); err != nil {
		return Index{}, err
	}
	if ix.KeySchema, err = parseKeySchema(m["KeySchema"], at+".KeySchema"); err != nil {
		return Index{}, err
	}
	proj, err := mapping(m["Projection"], at+".Projection")
	if err != nil {
		return Index{}, err
	}
	if ix.Projection.Type, err = str(proj["ProjectionType"], at+".Projection.ProjectionType"); err != nil {
		return Index{}, err
	}
	nonKey, err := list(proj["NonKeyAttributes"], at+".Projection.NonKeyAttributes")
	if err != nil {
		return Index{}, err
	}
	for j, raw := range nonKey {
		s, err := str(raw, fmt.Sprintf("%s.Projection.NonKeyAttributes[%d]", at, j))
		if err != nil {
			return Index{}, err
		}
		ix.Projection.NonKeyAttributes = append(ix.Projection.NonKeyAttributes, s)
	}
	return ix, nil
}

func parseKeySchema(raw any, at string) ([]KeyElement, error) {
	var keys []KeyElement
	err := eachMapping(raw, at, func(m map[string]any, eat string) error {
		name, typ, err := nameAndType(m, eat, "KeyType")
		if err == nil {
			keys = append(keys, KeyElement{Name: name, Type: typ})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 || len(keys) > 2 {
		return nil, fmt.Errorf("%s must have one or two elements", at)
	}
	if keys[0].Type != "HASH" {
		return nil, fmt.Errorf("%s must start with a HASH key", at)
	}
	return keys, nil
}

// nameAndType reads the AttributeName and the typeKey (AttributeType or
// KeyType) of an attribute definition or key schema element.
func nameAndType(m map[string]any, at, typeKey string) (name, typ string, err error) {
	if name, err = str(m["AttributeName"], at+".AttributeName"); err != nil {
		return "", "", err
	}
	if typ, err = str(m[typeKey], at+"."+typeKey); err != nil {
		return "", "", err
	}
	return name, typ, nil
}

func (t *Template) parseQueue(id string, props map[string]any) (Queue, error) {
	q := Queue{LogicalID: id, VisibilityTimeout: defaultVisibilityTimeout, MessageRetention: defaultRetention}
	if err := errors.Join(
		optional(props, "FifoQueue", &q.FIFO, t.boolean),
		optional(props, "ContentBasedDeduplication", &q.ContentBasedDeduplication, t.boolean),
		optional(props, "VisibilityTimeout", &q.VisibilityTimeout, t.seconds),
		optional(props, "MessageRetentionPeriod", &q.MessageRetention, t.seconds),
	); err != nil {
		return Queue{}, err
	}
	if v, ok := props["RedrivePolicy"]; ok {
		rp, err := mapping(v, "RedrivePolicy")
		if err != nil {
			return Queue{}, err
		}
		target, ok := getAttTarget(rp["deadLetterTargetArn"], "Arn")
		if !ok {
			return Queue{}, errors.New("RedrivePolicy.deadLetterTargetArn is not a !GetAtt <queue>.Arn")
		}
		n, err := t.integer(rp["maxReceiveCount"])
		if err != nil {
			return Queue{}, fmt.Errorf("RedrivePolicy.maxReceiveCount: %w", err)
		}
		if n < 1 {
			return Queue{}, fmt.Errorf("RedrivePolicy.maxReceiveCount %d is below 1", n)
		}
		q.Redrive = &Redrive{DeadLetterQueue: target, MaxReceiveCount: n}
	}
	return q, nil
}

func (t *Template) parseBucket(id string, props map[string]any) (Bucket, error) {
	b := Bucket{LogicalID: id}
	lc, err := mapping(props["LifecycleConfiguration"], "LifecycleConfiguration")
	if err != nil {
		return Bucket{}, err
	}
	err = eachMapping(lc["Rules"], "LifecycleConfiguration.Rules", func(m map[string]any, at string) error {
		if status, _ := m["Status"].(string); status != "Enabled" {
			return nil
		}
		days := 0
		if err := optional(m, "ExpirationInDays", &days, t.integer); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if days > 0 {
			b.ExpirationDays = append(b.ExpirationDays, days)
		}
		return nil
	})
	return b, err
}

// mapping returns v as a mapping; absent (nil) is an empty mapping.
func mapping(v any, at string) (map[string]any, error) {
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a mapping", at)
	}
	return m, nil
}

// list returns v as a sequence; absent (nil) is empty.
func list(v any, at string) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", at)
	}
	return l, nil
}

// optional sets *dst to the property key of m as parse reads it; an absent
// property leaves *dst (its default) as it is.
func optional[T any](m map[string]any, key string, dst *T, parse func(any) (T, error)) error {
	v, ok := m[key]
	if !ok {
		return nil
	}
	x, err := parse(v)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	*dst = x
	return nil
}

// eachMapping calls fn with each element of the list v (absent is empty)
// as a mapping, with its place ("at[i]") for error messages; it stops at
// the first error.
func eachMapping(v any, at string, fn func(m map[string]any, at string) error) error {
	l, err := list(v, at)
	if err != nil {
		return err
	}
	for i, raw := range l {
		eat := fmt.Sprintf("%s[%d]", at, i)
		m, err := mapping(raw, eat)
		if err != nil {
			return err
		}
		if err := fn(m, eat); err != nil {
			return err
		}
	}
	return nil
}

// str returns v as a literal string; an absent value is an error.
func str(v any, at string) (string, error) {
	if v == nil {
		return "", fmt.Errorf("%s is missing", at)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is not a string", at)
	}
	return s, nil
}

// scalarString formats a YAML scalar (string, number, bool) as a string.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// refTarget returns X for {"Ref": "X"}.
func refTarget(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	s, ok := m["Ref"].(string)
	return s, ok
}

// getAttTarget returns X for {"Fn::GetAtt": [X, attr]} or the long
// form's string variant {"Fn::GetAtt": "X.attr"}.
func getAttTarget(v any, attr string) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	switch args := m["Fn::GetAtt"].(type) {
	case string:
		res, a, ok := strings.Cut(args, ".")
		return res, ok && a == attr && res != ""
	case []any:
		if len(args) != 2 || args[1] != attr {
			return "", false
		}
		s, ok := args[0].(string)
		return s, ok && s != ""
	}
	return "", false
}
