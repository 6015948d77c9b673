// Command trackerapi is the TrackerApiFunction Lambda: the issue tracker's
// resource information and message receipt (GET|POST /rest/reqs/1/api),
// application link registration, deletion, mode and version
// (/rest/reqs/1/api/{applinkId}[/mode|/version]) and listing
// (GET /rest/reqs/1/applinks), the link dialog's search
// (GET /rest/reqs/1/api/{applinkId}/requirements) and the tracker's OpenAPI
// document (GET /rest/reqs/1/openapi).
//
// Trigger: the TrackerApi HTTP API (payload 2.0). Environment:
// TRACKER_TABLE, AUTH_TABLE (required); HTTP_TIMEOUT (calls to wikis),
// LOG_LEVEL, AUTH_CACHE_TTL, TENANT_RATE. Writes: applinks, issue links,
// requirement excerpts and pending messages in TRACKER_TABLE (and deletes
// an applink's with it); applinks' incoming tokens and the rate limit's
// window counters in AUTH_TABLE. Calls each applink's wiki over
// HTTP (version negotiation, search, and the links callback when a MOVED
// message merges TRACKER links). PUT .../mode "AUTO" applies the applink's
// pending messages.
package main

import (
	"context"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/trackertable"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerapi"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/tracker"
	"github.com/reqtrace/reqtrace/shared/wikiclient"
)

func main() {
	if err := run(context.Background()); err != nil {
		lambdaapp.Exit(err)
	}
}

func run(ctx context.Context) error {
	deps, err := lambdaapp.Setup(ctx, "TRACKER_TABLE", "AUTH_TABLE")
	if err != nil {
		return err
	}
	store := trackertable.NewTrackerStore(deps.DynamoDB, deps.Config.TrackerTable)
	svc := tracker.New(tracker.Deps{
		Applinks: store,
		Tokens:   authtable.NewAuthStore(deps.DynamoDB, deps.Config.AuthTable),
		Links:    store,
		Pending:  store,
		Outbox:   store,
		Wiki:     wikiclient.New(outbound.FromConfig(deps.Config, wikiclient.MaxAnswer)),
		Logger:   deps.Logger,
		// Applink urls: loopback and private addresses only when allowed.
		AllowPrivateTargets: deps.Config.AllowPrivateTargets,
	})
	router := deps.Router(auth.Tracker)
	(&trackerapi.Handler{Tracker: svc}).Register(router) // includes GET /rest/reqs/1/openapi
	lambdaapp.ServeHTTP(router)
	return nil
}
