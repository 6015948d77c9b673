package localaws

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region and the dummy credentials the local stack signs with. The
// stand-ins check neither.
const (
	Region          = "us-east-1"
	AccessKeyID     = "local"
	SecretAccessKey = "local"
)

func staticCredentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, "")
}

// AWSConfig returns a config for the stand-ins at dynamoEndpoint and
// sqsEndpoint (either may be empty; moto serves S3 there too): region us-east-1, dummy static
// credentials, and per-service endpoints that every client built with
// dynamodb.NewFromConfig or sqs.NewFromConfig picks up. It is hermetic:
// it reads neither ~/.aws nor AWS_PROFILE, AWS_REGION or
// AWS_ENDPOINT_URL_*, so a developer's AWS setup cannot point tests at a
// real account.
//
// The endpoints travel the same way AWS_ENDPOINT_URL_DYNAMODB and
// AWS_ENDPOINT_URL_SQS do (a service-specific base endpoint source), so
// code under test resolves them exactly as it does in a process started
// with Environ. AWSConfig fails if the global AWS_ENDPOINT_URL is set,
// because the SDK then ignores service-specific sources.
func AWSConfig(ctx context.Context, dynamoEndpoint, sqsEndpoint string) (aws.Config, error) {
	if err := ctx.Err(); err != nil {
		return aws.Config{}, err
	}
	if _, ok := os.LookupEnv("AWS_ENDPOINT_URL"); ok {
		return aws.Config{}, errors.New("local AWS config: unset AWS_ENDPOINT_URL; it overrides the per-service local endpoints")
	}
	return aws.Config{
		Region:      Region,
		Credentials: aws.NewCredentialsCache(staticCredentials()),
		ConfigSources: []any{endpoints{
			"DYNAMODB": dynamoEndpoint,
			"SQS":      sqsEndpoint,
			"S3":       sqsEndpoint, // moto serves S3 on the same endpoint
		}},
	}, nil
}

// endpoints maps an SDK service ID, normalised as for
// AWS_ENDPOINT_URL_<SERVICE>, to a base endpoint. It satisfies the SDK's
// internal ServiceBaseEndpointProvider, the interface its environment
// config implements for those variables.
type endpoints map[string]string

// GetServiceBaseEndpoint returns the endpoint for the service sdkID.
func (e endpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := e[strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_")]
	return v, v != "", nil
}

// LocalEnv is what the local stack (make run, make invoke, the tests that
// run the functions' bootstraps) sets over template.yaml's environment:
// there the wiki and the tracker call each other on 127.0.0.1, which a
// deployed stack refuses (ALLOW_PRIVATE_TARGETS defaults to false;
// docs/operations.md, "Security model").
var LocalEnv = map[string]string{"ALLOW_PRIVATE_TARGETS": "true"}

// WithLocalEnv returns vars, a function's environment from template.yaml,
// with LocalEnv over it.
func WithLocalEnv(vars map[string]string) map[string]string {
	out := make(map[string]string, len(vars)+len(LocalEnv))
	maps.Copy(out, vars)
	maps.Copy(out, LocalEnv)
	return out
}

// Environ returns the environment variables ("KEY=value") that make
// application code, which loads its config with config.LoadDefaultConfig
// and has no local branch, talk to the stand-ins: AWS_REGION, dummy
// credentials and AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS (and
// AWS_ENDPOINT_URL_S3, moto's S3 on the SQS endpoint). Empty endpoints are
// left out.
func Environ(dynamoEndpoint, sqsEndpoint string) []string {
	env := []string{
		"AWS_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=" + AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + SecretAccessKey,
	}
	if dynamoEndpoint != "" {
		env = append(env, "AWS_ENDPOINT_URL_DYNAMODB="+dynamoEndpoint)
	}
	if sqsEndpoint != "" {
		// moto_server serves S3 (the export bucket) on the same endpoint.
		env = append(env, "AWS_ENDPOINT_URL_SQS="+sqsEndpoint, "AWS_ENDPOINT_URL_S3="+sqsEndpoint)
	}
	return env
}
