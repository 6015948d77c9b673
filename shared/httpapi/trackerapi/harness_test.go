package trackerapi_test

import (
	"testing"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/infra/trackertest"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerapi"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Tokens of the test principals (seeded by trackertest.NewHarness).
const (
	demoAdmin = trackertest.DemoAdmin
	demoUser  = trackertest.DemoUser
	acmeAdmin = trackertest.AcmeAdmin
	acmeUser  = trackertest.AcmeUser
	wikiUser  = trackertest.WikiUser
	wikiToken = trackertest.WikiToken
)

// newHarness serves the tracker API's route groups as the gateway does.
func newHarness(t *testing.T) *trackertest.Harness {
	t.Helper()
	return trackertest.NewHarness(t, func(rt *httpapi.Router, svc *tracker.Service) {
		(&trackerapi.Handler{Tracker: svc}).Register(rt)
	})
}
