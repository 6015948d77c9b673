package lambdaapp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestAWSConfigFromTheLambdaEnvironment(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		auth.Store(r.Header.Get("Authorization") + " " + r.Header.Get("X-Amz-Security-Token"))
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"TableNames":[]}`))
	}))
	defer srv.Close()
	env := map[string]string{"AWS_REGION": "eu-west-3", "AWS_ACCESS_KEY_ID": "AKIDLAMBDA", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_SESSION_TOKEN": "tok", "AWS_ENDPOINT_URL_DYNAMODB": srv.URL}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := awsConfig(getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if a, _ := auth.Load().(string); hits.Load() != 1 || !strings.Contains(a, "Credential=AKIDLAMBDA/") || !strings.Contains(a, "/eu-west-3/dynamodb/") || !strings.HasSuffix(a, " tok") {
		t.Fatalf("DynamoDB reached the endpoint variable %d times, signed %q", hits.Load(), a)
	}
	// Another service's variable is its own: S3 has none here.
	if v, ok, _ := cfg.ConfigSources[0].(envEndpoints).GetServiceBaseEndpoint(context.Background(), s3.ServiceID); ok || v != "" {
		t.Fatalf("S3 endpoint %q", v)
	}

	for _, missing := range []string{"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		saved := env[missing]
		delete(env, missing)
		if _, err := awsConfig(getenv, nil); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: %v", missing, err)
		}
		env[missing] = saved
	}
}
