package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// make invoke reuses the stack `make run` recorded, but only while that
// process lives and its DynamoDB answers.
func TestStateFileOfARunningStack(t *testing.T) {
	ddb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ddb.Close()
	path := filepath.Join(t.TempDir(), "localstack.json")

	if _, ok := readState(path); ok {
		t.Fatal("no state file, yet a running stack was found")
	}
	live := state{DynamoDB: ddb.URL, SQS: "http://127.0.0.1:1", Prefix: "reqtrace-local", PID: os.Getpid()}
	if err := writeState(path, live); err != nil {
		t.Fatal(err)
	}
	if got, ok := readState(path); !ok || got != live {
		t.Fatalf("readState = %+v, %v; want %+v", got, ok, live)
	}

	for name, st := range map[string]state{
		"dead process":       {DynamoDB: ddb.URL, Prefix: "p", PID: 1 << 22},
		"DynamoDB not there": {DynamoDB: "http://127.0.0.1:1", Prefix: "p", PID: os.Getpid()},
	} {
		if err := writeState(path, st); err != nil {
			t.Fatal(err)
		}
		if _, ok := readState(path); ok {
			t.Errorf("%s: stale state accepted", name)
		}
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := readState(path); ok {
		t.Error("corrupt state accepted")
	}
}
