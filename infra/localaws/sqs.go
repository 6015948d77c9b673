package localaws

import (
	"context"
	"errors"
	"os/exec"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// StartSQS starts moto_server (moto 5, which speaks the SQS JSON protocol
// of current SDKs, FIFO queues and redrive included) on a loopback port
// and waits until it answers ListQueues. moto_server must be on PATH.
func StartSQS(ctx context.Context, opts Options) (*Service, error) {
	moto, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, errors.New("start SQS: moto_server not found on PATH; install moto 5 with its server extra (pip install 'moto[server]==5.2.1')")
	}
	return start(ctx, launch{
		name: "moto_server (SQS)",
		command: func(port int) (string, []string) {
			return moto, []string{"-H", "127.0.0.1", "-p", strconv.Itoa(port)}
		},
		ready: func(ctx context.Context, endpoint string) error {
			_, err := probeSQS(endpoint).ListQueues(ctx, &sqs.ListQueuesInput{})
			return err
		},
	}, opts)
}

// probeSQS is a client that fails fast, for readiness checks.
func probeSQS(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		Credentials:  staticCredentials(),
		BaseEndpoint: aws.String(endpoint),
		Retryer:      aws.NopRetryer{},
	})
}
