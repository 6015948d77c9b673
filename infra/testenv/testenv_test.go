package testenv_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/infra/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// helperEnv selects a helper role when the test binary runs itself.
const helperEnv = "REQTRACE_TESTENV_HELPER"

func item(pk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: pk},
		"sk": &ddbtypes.AttributeValueMemberS{Value: "v0"},
	}
}

func TestAWS(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := t.Context()

	for name, v := range map[string]string{
		"WikiTable": env.WikiTable, "TrackerTable": env.TrackerTable, "AuthTable": env.AuthTable,
		"QueueURL": env.QueueURL, "DLQURL": env.DLQURL,
		"DynamoDBEndpoint": env.DynamoDBEndpoint, "SQSEndpoint": env.SQSEndpoint,
	} {
		if v == "" {
			t.Errorf("Env.%s is empty", name)
		}
	}
	if !strings.HasSuffix(env.QueueURL, "-OutboundQueue.fifo") || !strings.HasSuffix(env.DLQURL, "-OutboundDLQ.fifo") {
		t.Errorf("QueueURL, DLQURL = %s, %s", env.QueueURL, env.DLQURL)
	}

	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.WikiTable), Item: item("TENANT#demo")}); err != nil {
		t.Fatal(err)
	}
	got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.WikiTable), Key: item("TENANT#demo")})
	if err != nil || got.Item == nil {
		t.Fatalf("GetItem = %v, %v", got, err)
	}

	if _, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(env.QueueURL), MessageBody: aws.String("hi"),
		MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d"),
	}); err != nil {
		t.Fatal(err)
	}
	out, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(env.QueueURL)})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "hi" {
		t.Fatalf("ReceiveMessage = %+v, %v", out, err)
	}
}

// TestIsolation checks that parallel tests writing the same keys do not
// see each other's items.
func TestIsolation(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		tables []string
	)
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			env := testenv.AWS(t)
			mu.Lock()
			tables = append(tables, env.WikiTable)
			mu.Unlock()
			ctx := t.Context()
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.WikiTable), Item: item("same")}); err != nil {
				t.Fatal(err)
			}
			out, err := env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(env.WikiTable)})
			if err != nil {
				t.Fatal(err)
			}
			if out.Count != 1 {
				t.Errorf("table %s holds %d items, want only this test's one", env.WikiTable, out.Count)
			}
		})
	}
	t.Cleanup(func() {
		slices.Sort(tables)
		if len(slices.Compact(tables)) != 4 {
			t.Errorf("tables not distinct: %v", tables)
		}
	})
}

func TestCleanupDeletes(t *testing.T) {
	t.Parallel()
	var env *testenv.Env
	t.Run("user", func(t *testing.T) { env = testenv.AWS(t) })
	if env == nil {
		t.Fatal("subtest did not run")
	}
	ctx := t.Context()
	_, err := env.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env.TrackerTable)})
	var notFound *ddbtypes.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("DescribeTable after the test ended: %v, want ResourceNotFoundException", err)
	}
	if _, err := env.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(env.QueueURL)}); err == nil {
		t.Error("queue still exists after the test ended")
	}
}

func TestEnviron(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	got := env.Environ("Sync")
	for _, want := range []string{
		"WIKI_TABLE=" + env.WikiTable,
		"OUTBOUND_QUEUE_URL=" + env.QueueURL,
		"ERROR_EMAIL_FROM=",
		"ALLOW_PRIVATE_TARGETS=true", // localaws.LocalEnv over the template's "false"
		"AWS_ENDPOINT_URL_DYNAMODB=" + env.DynamoDBEndpoint,
		"AWS_ENDPOINT_URL_SQS=" + env.SQSEndpoint,
		"AWS_REGION=us-east-1",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("Environ(Sync) lacks %q: %v", want, got)
		}
	}
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
	seen := map[string]bool{}
	for _, name := range []string{"TestX", "TestX", "TestStore/get item#1", strings.Repeat("TestLong", 20)} {
		p := testenv.Prefix(name)
		if !valid.MatchString(p) {
			t.Errorf("Prefix(%q) = %q, not a short safe name", name, p)
		}
		if seen[p] {
			t.Errorf("Prefix(%q) = %q repeats", name, p)
		}
		seen[p] = true
	}
}

// runHelper runs this test binary's TestHelper with role and extra
// environment variables, returning its combined output and error.
func runHelper(t *testing.T, role string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHelper is not a test: it is the child process of TestReuseEndpoints
// and TestFailsWithoutJava.
func TestHelper(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "reuse":
		env := testenv.AWS(t)
		fmt.Printf("endpoints %s %s\n", env.DynamoDBEndpoint, env.SQSEndpoint)
	case "fail":
		testenv.AWS(t)
		fmt.Println("AWS returned")
	}
}

// TestReuseEndpoints checks that a binary reuses stand-ins named in the
// environment instead of starting its own.
func TestReuseEndpoints(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	out, err := runHelper(t, "reuse",
		testenv.DynamoDBEndpointEnv+"="+env.DynamoDBEndpoint,
		testenv.SQSEndpointEnv+"="+env.SQSEndpoint)
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("endpoints %s %s\n", env.DynamoDBEndpoint, env.SQSEndpoint); !strings.Contains(out, want) {
		t.Errorf("helper output lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, "from $"+testenv.DynamoDBEndpointEnv) {
		t.Errorf("helper did not report reused endpoints:\n%s", out)
	}
}

// TestFailsWithoutJava checks that a test fails, and says why, when a
// stand-in cannot start.
func TestFailsWithoutJava(t *testing.T) {
	t.Parallel()
	out, err := runHelper(t, "fail", "PATH="+t.TempDir(), testenv.DynamoDBEndpointEnv+"=", testenv.SQSEndpointEnv+"=")
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("helper: %v, want a failing exit\n%s", err, out)
	}
	for _, want := range []string{"--- FAIL: TestHelper", "local AWS stand-ins unavailable", "java not found"} {
		if !strings.Contains(out, want) {
			t.Errorf("helper output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "AWS returned") || strings.Contains(out, "SKIP") {
		t.Errorf("helper went on or skipped:\n%s", out)
	}
}
