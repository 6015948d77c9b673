// Command trackerlinks is the TrackerLinks Lambda: links between issues and
// wiki requirements (GET /rest/reqs/1/issuelinks and GET|POST|PUT|DELETE
// /rest/reqs/1/issuelinks/{issueKey}) and the resynchronisation of issues
// with their wikis (PUT /rest/reqs/1/sync).
//
// Trigger: the TrackerApi HTTP API (payload 2.0). Environment:
// TRACKER_TABLE, AUTH_TABLE (required; AUTH_TABLE written only for the
// rate limit's window counters); HTTP_TIMEOUT (calls to wikis), LOG_LEVEL,
// AUTH_CACHE_TTL, TENANT_RATE. Writes: issue links and their holds,
// requirement link states and excerpts, issue leases, tracker outbox marks
// and (applying them) pending messages in TRACKER_TABLE. Calls each applink's wiki over
// HTTP: requirement reads (checking new links, sync) and the links callback
// (sync, and the TRACKER set of each requirement an edit changed).
package main

import (
	"context"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/trackertable"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerlinks"
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
		// No Tokens: this function never registers applinks (and may only
		// read AUTH_TABLE).
		Links:   store,
		Pending: store,
		Locks:   store,
		Outbox:  store, // sends TRACKER link sets right after an edit
		Wiki:    wikiclient.New(outbound.FromConfig(deps.Config, wikiclient.MaxAnswer)),
		Logger:  deps.Logger,
	})
	router := deps.Router(auth.Tracker)
	(&trackerlinks.Handler{Tracker: svc}).Register(router)
	lambdaapp.ServeHTTP(router)
	return nil
}
