// Command coldfloorsdk is the second floor of the cold-start row of the
// bench (infra/bench, coldstart.go): coldfloor's bootstrap plus what every
// function of reqtrace needs before its first request, the AWS
// configuration and a DynamoDB client (aws-sdk-go-v2, whose service
// package builds its description of every shape at package init), and
// nothing of reqtrace's. Its init over coldfloor's is the part of a
// function's cold start that is the SDK's, not the service's.
package main

import (
	"context"
	"encoding/json"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	lambda.Start(func(context.Context, json.RawMessage) (string, error) {
		if db == nil {
			return "", nil
		}
		return "ok", nil
	})
}
