package trackerlinks_test

// What a failing or refused wiki lets the tracker's caller see
// (docs/operations.md, "Security model").

import (
	"testing"

	"github.com/reqtrace/reqtrace/infra/trackertest"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerlinks"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// A wiki's error answer never reaches the caller of the issue links and
// sync endpoints: the 502 names its status.
func TestWikiAnswerNotEchoed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	setupSyncRule(h)
	h.Wiki.SetDown(true) // every call answers 503 "wiki under maintenance"
	h.Expect("POST", "/rest/reqs/1/issuelinks/PROJ-9", demoUser, "["+item("R1", "tests", "")+"]", 502, "with 503", "nothing was changed")
	h.ExpectWithout("POST", "/rest/reqs/1/issuelinks/PROJ-9", demoUser, "["+item("R1", "tests", "")+"]", 502, "maintenance")
	h.ExpectWithout("PUT", "/rest/reqs/1/issuelinks/A-1", demoUser, "["+item("R1", "tests", "")+"]", 502, "maintenance")
	h.ExpectWithout("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 502, "maintenance")
	// The links callback of the sync (step 4) too.
	h.Wiki.SetDown(false)
	h.Wiki.SetLinksStatus(500)
	h.Expect("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 502, "with 500")
	h.ExpectWithout("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 502, "links refused")
}

// With private targets off, a wiki whose name resolves to loopback is
// refused when connecting: the edit and the sync answer 502 naming the
// refusal, and nothing reaches the wiki.
func TestWikiRefusedAtConnect(t *testing.T) {
	t.Parallel()
	h := trackertest.NewHarnessWith(t, trackertest.Options{StrictTargets: true}, func(rt *httpapi.Router, svc *tracker.Service) {
		(&trackerapi.Handler{Tracker: svc}).Register(rt)
		(&trackerlinks.Handler{Tracker: svc}).Register(rt)
	})
	h.Wiki.SetRequirement("DEMO", "R1", "<p>one</p>")
	h.Expect("POST", "/rest/reqs/1/issuelinks/A-1", demoUser, "["+item("R1", "tests", "")+"]", 502, "refused: loopback and private addresses")
	h.Expect("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 200) // no links: nothing to ask
	if r := h.Wiki.Reads(); len(r) != 0 {
		t.Errorf("the wiki was read: %q", r)
	}
}
