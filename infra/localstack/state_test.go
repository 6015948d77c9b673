package localstack

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// make invoke and make admin reuse the stack `make run` recorded, but only while that
// process lives and its DynamoDB answers.
func TestStateFileOfARunningStack(t *testing.T) {
	ddb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ddb.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "localstack.json")

	if _, ok := Running(dir); ok {
		t.Fatal("no state file, yet a running stack was found")
	}
	live := State{DynamoDB: ddb.URL, SQS: "http://127.0.0.1:1", Prefix: "reqtrace-local", PID: os.Getpid()}
	remove, err := Record(dir, live)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := Running(dir); !ok || got != live {
		t.Fatalf("Running = %+v, %v; want %+v", got, ok, live)
	}
	remove()
	if _, ok := Running(dir); ok {
		t.Fatal("a removed record still names a running stack")
	}

	for name, st := range map[string]State{
		"dead process":       {DynamoDB: ddb.URL, Prefix: "p", PID: 1 << 22},
		"DynamoDB not there": {DynamoDB: "http://127.0.0.1:1", Prefix: "p", PID: os.Getpid()},
	} {
		if _, err := Record(dir, st); err != nil {
			t.Fatal(err)
		}
		if _, ok := Running(dir); ok {
			t.Errorf("%s: stale state accepted", name)
		}
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := Running(dir); ok {
		t.Error("corrupt state accepted")
	}
}
