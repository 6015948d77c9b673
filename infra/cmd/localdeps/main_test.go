package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/infra/localaws"
)

var exportRE = regexp.MustCompile(`^export REQTRACE_TEST_DYNAMODB_ENDPOINT=(http://127\.0\.0\.1:\d+) REQTRACE_TEST_SQS_ENDPOINT=(http://127\.0\.0\.1:\d+)\n$`)

func TestRun(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "localdeps.env")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-env-file", envFile}, nil, &stderr) }()

	var data []byte
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if data, err = os.ReadFile(envFile); err == nil && len(data) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before writing %s: %v\n%s", envFile, err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 90 s\n%s", envFile, stderr.String())
		}
	}
	m := exportRE.FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("env file = %q, want one export line", data)
	}
	dynamoEndpoint, sqsEndpoint := m[1], m[2]

	cfg, err := localaws.AWSConfig(t.Context(), dynamoEndpoint, sqsEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Errorf("DynamoDB at %s: %v", dynamoEndpoint, err)
	}
	if _, err := sqs.NewFromConfig(cfg).ListQueues(t.Context(), &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("SQS at %s: %v", sqsEndpoint, err)
	}

	cancel() // as SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if _, err := os.Stat(envFile); !os.IsNotExist(err) {
		t.Errorf("env file left behind: %v", err)
	}
	for _, ep := range []string{dynamoEndpoint, sqsEndpoint} {
		if c, err := net.DialTimeout("tcp", strings.TrimPrefix(ep, "http://"), time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after run returned", ep)
		}
	}
}

func TestRunStdout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, &stdout, &bytes.Buffer{}) }()
	for deadline := time.Now().Add(90 * time.Second); stdout.String() == "" && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !exportRE.MatchString(stdout.String()) {
		t.Errorf("stdout = %q, want one export line", stdout.String())
	}
}

func TestRunBadFlags(t *testing.T) {
	if err := run(context.Background(), []string{"extra"}, nil, &bytes.Buffer{}); err == nil {
		t.Error("run accepted a stray argument")
	}
}
