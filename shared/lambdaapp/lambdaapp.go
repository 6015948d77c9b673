// Package lambdaapp is the composition every function's main shares: JSON
// slog logging, typed config, AWS clients built once, the authenticator, and
// the Lambda adapter that turns API Gateway v2 events into http.Requests for
// a route group (httpadapter.NewV2). Nothing here holds business logic.
package lambdaapp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/config"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/ratelimit"
)

// Deps are the clients a function builds once, before lambda.Start.
type Deps struct {
	Config   config.Config
	AWS      aws.Config
	DynamoDB *dynamodb.Client
	Auth     *auth.Authenticator
	// Limiter is the per-tenant rate limit every router of the function
	// shares (set with AUTH_TABLE: its counts live there).
	Limiter *ratelimit.Limiter
	Logger  *slog.Logger
}

// Setup loads the configuration (failing when a required variable is
// missing), sets up JSON logging and builds the AWS clients. Endpoints come
// from the standard AWS_ENDPOINT_URL_<SERVICE> variables, so the local stack
// needs no code path of its own.
func Setup(ctx context.Context, required ...string) (*Deps, error) {
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if err := cfg.Require(required...); err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// The default logger (what domain packages log with, through
	// slog.*Context) adds the request's id, route, tenant and user; the
	// request's own logger (httpapi.Logger) already has them.
	slog.SetDefault(slog.New(httpapi.ContextHandler{Handler: logger.Handler()}))
	awsCfg, err := awsConfig(os.LookupEnv, sdkLogger{log: logger})
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	db := dynamodb.NewFromConfig(awsCfg)
	d := &Deps{Config: cfg, AWS: awsCfg, DynamoDB: db, Logger: logger}
	if cfg.AuthTable != "" {
		d.Auth = auth.NewAuthenticator(authtable.NewAuthStore(db, cfg.AuthTable), cfg.AuthCacheTTL)
		d.Limiter = ratelimit.New(authtable.NewRateStore(db, cfg.AuthTable),
			ratelimit.Options{Rate: cfg.TenantRate, RateTTL: cfg.AuthCacheTTL})
	}
	return d, nil
}

// Router returns a route group router for app with the configured
// authenticator, per-tenant rate limit and logger.
func (d *Deps) Router(app auth.App) *httpapi.Router {
	rt := httpapi.NewRouter(app, d.Auth)
	if d.Limiter != nil { // a nil *Limiter in the interface would not be nil
		rt.Limiter = d.Limiter
	}
	rt.Logger = d.Logger
	return rt
}

// ServeHTTP runs h as the Lambda handler of an HTTP API (payload v2.0).
func ServeHTTP(h http.Handler) {
	lambda.Start(httpadapter.NewV2(h).ProxyWithContext)
}

// Exit logs a start-up error and exits non-zero (Lambda reports an init
// error); it is only for main.
func Exit(err error) {
	slog.Error("start-up failed", "error", err.Error())
	os.Exit(1)
}
