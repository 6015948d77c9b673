package localstack

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// State is what a running `make run` stack records in
// <build-dir>/localstack.json, for the commands that work against it
// (`make invoke`, `make admin`).
type State struct {
	DynamoDB string `json:"dynamodb"`
	SQS      string `json:"sqs"`
	Prefix   string `json:"prefix"`
	PID      int    `json:"pid"`
}

func stateFile(buildDir string) string { return filepath.Join(buildDir, "localstack.json") }

// Record writes st for buildDir; the function it returns removes it.
func Record(buildDir string, st State) (func(), error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	path := stateFile(buildDir)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(path) }, nil
}

// Running returns the stack recorded in buildDir when its process is still
// alive and its DynamoDB endpoint answers.
func Running(buildDir string) (State, bool) {
	var st State
	b, err := os.ReadFile(stateFile(buildDir))
	if err != nil || json.Unmarshal(b, &st) != nil || st.PID <= 0 {
		return st, false
	}
	if syscall.Kill(st.PID, 0) != nil {
		return st, false
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(st.DynamoDB)
	if err != nil {
		return st, false
	}
	resp.Body.Close()
	return st, true
}
