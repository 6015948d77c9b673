package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/devseed"
	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
)

// StartOptions configure StartEnv.
type StartOptions struct {
	// Root is the module root; BuildDir holds the bootstraps (make build).
	Root, BuildDir string
	// Prefix names the tables and queues.
	Prefix string
	// Log receives the stand-ins' output (nil: discarded).
	Log io.Writer
}

// StartEnv starts DynamoDB Local and moto on free loopback ports, in
// parallel, and creates the tables and queues of template.yaml. stop
// stops both stand-ins; call it even when StartEnv fails.
func StartEnv(ctx context.Context, opts StartOptions) (env *Env, stop func() error, err error) {
	var started []*localaws.Service
	stop = func() error {
		var errs []error
		for _, s := range started {
			errs = append(errs, s.Stop())
		}
		started = nil
		return errors.Join(errs...)
	}
	// Throughput: a benchmark is sustained load, so DynamoDB Local's JVM runs
	// with its full JIT rather than the tests' start-up flags.
	lopts := localaws.Options{Root: opts.Root, Log: opts.Log, StartTimeout: 2 * time.Minute, Throughput: true}
	type result struct {
		svc *localaws.Service
		err error
	}
	ddbc, sqsc := make(chan result, 1), make(chan result, 1)
	go func() { s, err := localaws.StartDynamoDB(ctx, lopts); ddbc <- result{s, err} }()
	go func() { s, err := localaws.StartSQS(ctx, lopts); sqsc <- result{s, err} }()
	ddb, sq := <-ddbc, <-sqsc
	for _, r := range []result{ddb, sq} {
		if r.svc != nil {
			started = append(started, r.svc)
		}
	}
	if err := errors.Join(ddb.err, sq.err); err != nil {
		return nil, stop, err
	}

	cfg, err := localaws.AWSConfig(ctx, ddb.svc.Endpoint, sq.svc.Endpoint)
	if err != nil {
		return nil, stop, err
	}
	tmpl, err := samtemplate.Load(filepath.Join(opts.Root, "template.yaml"))
	if err != nil {
		return nil, stop, err
	}
	res, err := localaws.CreateResources(ctx, cfg, tmpl, opts.Prefix)
	if err != nil {
		return nil, stop, fmt.Errorf("create tables and queues: %w", err)
	}
	if err := devseed.Seed(ctx, authtable.NewAuthStore(dynamodb.NewFromConfig(cfg), res.Tables["AuthTable"])); err != nil {
		return nil, stop, err
	}
	return &Env{
		Template:         tmpl,
		Config:           cfg,
		DynamoDBEndpoint: ddb.svc.Endpoint,
		DynamoDBPID:      findDynamoDBLocal(ddb.svc.Endpoint),
		SQSEndpoint:      sq.svc.Endpoint,
		Prefix:           opts.Prefix,
		WikiTable:        res.Tables["WikiTable"],
		AuthTable:        res.Tables["AuthTable"],
		QueueURL:         res.Queues["OutboundQueue"],
		Root:             opts.Root,
		BuildDir:         opts.BuildDir,
	}, stop, nil
}

// Resources creates another set of the template's tables and queues,
// named "<Prefix>-<suffix>-<LogicalId>", for a measurement that must not
// share data with the others.
func (e *Env) Resources(ctx context.Context, suffix string) (*localaws.Resources, error) {
	res, err := localaws.CreateResources(ctx, e.Config, e.Template, e.Prefix+"-"+suffix)
	if err != nil {
		return nil, fmt.Errorf("create tables and queues %s-%s: %w", e.Prefix, suffix, err)
	}
	return res, nil
}

// FunctionTimeout returns the timeout of function logicalID in
// template.yaml (0 if there is no such function).
func (e *Env) FunctionTimeout(logicalID string) time.Duration {
	for _, f := range e.Template.Functions {
		if f.LogicalID == logicalID {
			return f.Timeout
		}
	}
	return 0
}
