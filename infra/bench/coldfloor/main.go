// Command coldfloor is the floor of the cold-start row of the bench
// (infra/bench, coldstart.go): the smallest Go Lambda bootstrap, the
// aws-lambda-go runtime client and a handler that answers at once, built
// with the flags of `make build`. Its init on the Runtime API shim (process
// start → first poll) is the least any function of reqtrace could take.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
}
