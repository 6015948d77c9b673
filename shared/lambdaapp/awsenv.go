package lambdaapp

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"
)

// awsConfig builds the AWS configuration of a function from the variables
// the Lambda runtime sets (AWS_REGION, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) and the standard endpoint
// variables (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>, which the local
// stack sets), and nothing else. The SDK's config loader would also link
// and initialise the providers a function never uses (shared config files,
// SSO, STS web identity, the EC2 metadata service): a bigger bootstrap and
// a slower cold start for nothing.
func awsConfig(getenv func(string) (string, bool), logger logging.Logger) (aws.Config, error) {
	get := func(k string) string { v, _ := getenv(k); return v }
	region := get("AWS_REGION")
	if region == "" {
		region = get("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, errors.New("AWS_REGION is not set (the Lambda runtime sets it)")
	}
	id, secret := get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return aws.Config{}, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (the Lambda runtime sets them)")
	}
	cfg := aws.Config{
		Region:        region,
		Credentials:   aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, get("AWS_SESSION_TOKEN"))),
		Logger:        logger,
		ConfigSources: []any{envEndpoints(get)},
	}
	if v := get("AWS_ENDPOINT_URL"); v != "" {
		cfg.BaseEndpoint = aws.String(v)
	}
	return cfg, nil
}

// envEndpoints resolves AWS_ENDPOINT_URL_<SERVICE> (the SDK service id in
// upper case, spaces as '_') as the SDK's environment config does: it
// satisfies the interface service clients ask their config sources for.
type envEndpoints func(string) string

// GetServiceBaseEndpoint returns the endpoint set for the service sdkID.
func (e envEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := e("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return v, v != "", nil
}
