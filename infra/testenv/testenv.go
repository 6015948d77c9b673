// Package testenv is the harness of reqtrace's integration tests: it
// gives each test its own DynamoDB tables and SQS queues, created from
// template.yaml in DynamoDB Local and moto_server, and counts DynamoDB
// calls for tests that assert them.
//
// A test package opts in with
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// and each test calls AWS(t). The stand-ins are started once per test
// binary, on first use, and stopped by Main; when the Makefile has
// started them for the whole run, REQTRACE_TEST_DYNAMODB_ENDPOINT and
// REQTRACE_TEST_SQS_ENDPOINT point at them and nothing is started. Tests
// never skip for want of a stand-in: they fail, saying why.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

// Environment variables through which a runner that started the
// stand-ins once (the Makefile, with infra/cmd/localdeps) hands them to
// every test binary.
const (
	DynamoDBEndpointEnv = "REQTRACE_TEST_DYNAMODB_ENDPOINT"
	SQSEndpointEnv      = "REQTRACE_TEST_SQS_ENDPOINT"
)

// Logical IDs in template.yaml that Env names directly.
const (
	wikiTable    = "WikiTable"
	trackerTable = "TrackerTable"
	authTable    = "AuthTable"
	outbound     = "OutboundQueue"
	outboundDLQ  = "OutboundDLQ"
	exportBucket = "ExportBucket"
)

// Env is one test's isolated AWS environment.
type Env struct {
	// Config reaches the stand-ins; clients built from it with
	// dynamodb.NewFromConfig or sqs.NewFromConfig need no more options.
	Config aws.Config
	// DynamoDB and SQS are clients built from Config, shared by all tests.
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	// Resources are the tables and queues of template.yaml created for
	// this test; Resources.Resolve fits samtemplate.Template.Env.
	Resources *localaws.Resources
	// Template is template.yaml, parsed once per test binary.
	Template *samtemplate.Template
	// WikiTable, TrackerTable and AuthTable are table names; QueueURL and
	// DLQURL are the outbound FIFO queue and its dead-letter queue.
	WikiTable, TrackerTable, AuthTable string
	QueueURL, DLQURL                   string
	// ExportBucket is the bucket of CSV exports, in moto (whose S3 shares
	// the SQS endpoint); clients built from Config reach it.
	ExportBucket string
	// DynamoDBEndpoint and SQSEndpoint are the stand-ins' base URLs, for
	// processes a test starts (see localaws.Environ).
	DynamoDBEndpoint, SQSEndpoint string
}

// Environ returns the variables a process started by the test needs to
// run function fn against this environment: the function's environment
// from template.yaml with this test's table names and queue URL and
// localaws.LocalEnv over it, and localaws.Environ's region, credentials and
// endpoints.
func (e *Env) Environ(fn string) []string {
	env := localaws.Environ(e.DynamoDBEndpoint, e.SQSEndpoint)
	for k, v := range localaws.WithLocalEnv(e.Template.Env(fn, e.Resources.Resolve)) {
		env = append(env, k+"="+v)
	}
	return env
}

// describe says where the stand-ins are and, if started here, how long
// they took.
func (s *stack) describe() string {
	ddb := "DynamoDB at " + s.dynamoEndpoint
	if s.dynamoStartedIn > 0 {
		ddb += fmt.Sprintf(" (started in %v)", s.dynamoStartedIn.Round(time.Millisecond))
	} else {
		ddb += " (from $" + DynamoDBEndpointEnv + ")"
	}
	q := "SQS at " + s.sqsEndpoint
	if s.sqsStartedIn > 0 {
		q += fmt.Sprintf(" (started in %v)", s.sqsStartedIn.Round(time.Millisecond))
	} else {
		q += " (from $" + SQSEndpointEnv + ")"
	}
	return ddb + ", " + q
}

// stack is what a test binary shares: the stand-ins and template.
type stack struct {
	cfg             aws.Config
	dynamo          *dynamodb.Client
	sqs             *sqs.Client
	tmpl            *samtemplate.Template
	dynamoEndpoint  string
	sqsEndpoint     string
	origin          string // where the endpoints came from, for errors
	started         []*localaws.Service
	dynamoStartedIn time.Duration
	sqsStartedIn    time.Duration
	logged          bool
}

var (
	mu       sync.Mutex
	shared   *stack
	startErr error

	// runID tells apart test binaries sharing stand-ins: every package
	// has its own counter and may reuse test names.
	runID   = newRunID()
	counter atomic.Int64
)

// Main runs the tests of m, stops the stand-ins it started and exits
// with the tests' exit code. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// stop stops whatever the package started. Later calls to AWS fail.
func stop() error {
	mu.Lock()
	defer mu.Unlock()
	var errs []error
	if shared != nil {
		for _, s := range shared.started {
			errs = append(errs, s.Stop())
		}
	}
	startErr = errors.New("testenv.Main has stopped the stand-ins")
	shared = nil
	return errors.Join(errs...)
}

// AWS returns a fresh environment for t: the shared stand-ins (started on
// first use) with every table and queue of template.yaml created under a
// prefix unique to this call, deleted again when t ends. It fails t if
// the stand-ins cannot start or the resources cannot be created. It is
// safe for parallel tests. Without Main the stand-ins live until the test
// binary exits (on Linux the kernel then kills them).
func AWS(t testing.TB) *Env {
	t.Helper()
	s, first, err := sharedStack()
	if err != nil {
		t.Fatalf("testenv: local AWS stand-ins unavailable: %v", err)
	}
	if first {
		t.Logf("testenv: %s", s.describe())
	}
	prefix := Prefix(t.Name())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := localaws.CreateResources(ctx, s.cfg, s.tmpl, prefix)
	if err != nil {
		t.Fatalf("testenv: create tables and queues (%s): %v", s.origin, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := res.Delete(ctx, s.cfg); err != nil {
			t.Logf("testenv: cleanup of %s: %v", prefix, err)
		}
	})
	return &Env{
		Config:           s.cfg,
		DynamoDB:         s.dynamo,
		SQS:              s.sqs,
		Resources:        res,
		Template:         s.tmpl,
		WikiTable:        res.Tables[wikiTable],
		TrackerTable:     res.Tables[trackerTable],
		AuthTable:        res.Tables[authTable],
		QueueURL:         res.Queues[outbound],
		DLQURL:           res.Queues[outboundDLQ],
		ExportBucket:     res.Buckets[exportBucket],
		DynamoDBEndpoint: s.dynamoEndpoint,
		SQSEndpoint:      s.sqsEndpoint,
	}
}

// Prefix returns a resource-name prefix for a test called name, unique
// within the process and across processes sharing the stand-ins: the
// name made safe and cut to 24 characters, a random run ID and a
// counter, e.g. "TestStore_Get-3f9a1c-7".
func Prefix(name string) string {
	safe := []byte(name)
	for i, c := range safe {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			safe[i] = '_'
		}
	}
	if len(safe) > 24 {
		safe = safe[:24]
	}
	return string(safe) + "-" + runID + "-" + strconv.FormatInt(counter.Add(1), 10)
}

func newRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}

// sharedStack starts or reuses the stand-ins. A failure is remembered:
// every later test fails with the same message rather than retrying a
// slow start.
func sharedStack() (s *stack, first bool, err error) {
	mu.Lock()
	defer mu.Unlock()
	if shared == nil && startErr == nil {
		shared, startErr = newStack(context.Background())
	}
	if startErr != nil {
		return nil, false, startErr
	}
	first = !shared.logged
	shared.logged = true
	return shared, first, nil
}

func newStack(ctx context.Context) (*stack, error) {
	root, err := localaws.ModuleRoot()
	if err != nil {
		return nil, err
	}
	tmpl, err := samtemplate.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	s := &stack{
		tmpl:           tmpl,
		dynamoEndpoint: os.Getenv(DynamoDBEndpointEnv),
		sqsEndpoint:    os.Getenv(SQSEndpointEnv),
	}
	var origins []string
	if s.dynamoEndpoint != "" {
		origins = append(origins, "DynamoDB from $"+DynamoDBEndpointEnv)
	} else {
		origins = append(origins, "DynamoDB Local started by testenv")
	}
	if s.sqsEndpoint != "" {
		origins = append(origins, "SQS from $"+SQSEndpointEnv)
	} else {
		origins = append(origins, "moto_server started by testenv")
	}
	s.origin = strings.Join(origins, ", ")

	// Start what is missing in parallel: the JVM and Python start-ups
	// overlap.
	var (
		wg             sync.WaitGroup
		ddb, mq        *localaws.Service
		ddbErr, sqsErr error
	)
	opts := localaws.Options{Root: root}
	if s.dynamoEndpoint == "" {
		wg.Go(func() {
			begin := time.Now()
			ddb, ddbErr = localaws.StartDynamoDB(ctx, opts)
			s.dynamoStartedIn = time.Since(begin)
		})
	}
	if s.sqsEndpoint == "" {
		wg.Go(func() {
			begin := time.Now()
			mq, sqsErr = localaws.StartSQS(ctx, opts)
			s.sqsStartedIn = time.Since(begin)
		})
	}
	wg.Wait()
	for _, svc := range []*localaws.Service{ddb, mq} {
		if svc != nil {
			s.started = append(s.started, svc)
		}
	}
	if err := errors.Join(ddbErr, sqsErr); err != nil {
		for _, svc := range s.started {
			_ = svc.Stop()
		}
		return nil, err
	}
	if ddb != nil {
		s.dynamoEndpoint = ddb.Endpoint
	}
	if mq != nil {
		s.sqsEndpoint = mq.Endpoint
	}

	if s.cfg, err = localaws.AWSConfig(ctx, s.dynamoEndpoint, s.sqsEndpoint); err != nil {
		for _, svc := range s.started {
			_ = svc.Stop()
		}
		return nil, err
	}
	s.dynamo = dynamodb.NewFromConfig(s.cfg)
	s.sqs = sqs.NewFromConfig(s.cfg)
	return s, nil
}
