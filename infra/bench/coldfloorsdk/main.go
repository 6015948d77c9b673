// Command coldfloorsdk is the second floor of the cold-start row of the
// bench (infra/bench, coldstart.go): coldfloor's bootstrap plus what every
// function of reqtrace needs before its first request, an AWS
// configuration and a DynamoDB client (aws-sdk-go-v2, whose service
// package builds its description of every shape at package init), and
// nothing of reqtrace's. The configuration is built as the functions build
// theirs (shared/lambdaapp: region and static credentials from the
// environment the Lambda runtime sets, without the SDK's config package
// and the credential providers it links). Its init over coldfloor's is
// the part of a function's cold start that is the SDK's, not the
// service's.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func main() {
	cfg := aws.Config{
		Region: os.Getenv("AWS_REGION"),
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(
			os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))),
	}
	if v := os.Getenv("AWS_ENDPOINT_URL"); v != "" {
		cfg.BaseEndpoint = aws.String(v)
	}
	db := dynamodb.NewFromConfig(cfg)
	lambda.Start(func(context.Context, json.RawMessage) (string, error) {
		if db == nil {
			return "", nil
		}
		return "ok", nil
	})
}
