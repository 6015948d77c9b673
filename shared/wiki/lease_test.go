package wiki_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// Every operation that writes a page's rows takes its lease before reading
// them; while another request holds it, saves, deletes and reindexes are
// refused having read nothing more and written nothing.
func TestLeaseRefusesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	other, err := mem.LeasePage(ctx, tenant, "100", 1)
	if err != nil {
		t.Fatal(err)
	}
	commits, reads := len(mem.Commits), mem.Calls["Requirements"]
	_, err = svc.SavePage(ctx, tenant, "bob", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "x", Body: specs(req("REQ-1", "Two", "Low"))})
	if a := apperr.As(err); a == nil || a.Code != apperr.Conflict || a.Message != "page 100 is being saved by another request; retry" {
		t.Fatalf("save: %v", err)
	}
	if err := svc.DeletePage(ctx, tenant, "bob", "100"); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("delete: %v", err)
	}
	if _, err := svc.Reindex(ctx, tenant, "bob", "100"); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("reindex: %v", err)
	}
	if len(mem.Commits) != commits || mem.Calls["Requirements"] != reads {
		t.Fatalf("refused requests read rows or committed: %v", mem.Calls)
	}
	if mustRow(t, mem, "DEMO", "REQ-1").Text != "One" {
		t.Fatal("row changed")
	}
	if err := mem.ReleasePage(ctx, tenant, other); err != nil {
		t.Fatal(err)
	}
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Two", "Low")))
	if mem.Leased(tenant, "100") {
		t.Fatal("the save's commit did not end its lease")
	}
}

// A request that fails after taking the lease gives it back; a lease that
// is never given back expires.
func TestLeaseReleasedOrExpires(t *testing.T) {
	ctx := context.Background()
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	mem.Fail = func(*wiki.Change) error { return errors.New("network down") }
	if _, err := svc.SavePage(ctx, tenant, "bob", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "x", Body: "<p>x</p>"}); err == nil {
		t.Fatal("no error")
	}
	if _, err := svc.SavePage(ctx, tenant, "bob", wiki.PageInput{ID: "200", SpaceKey: "DEMO", Title: "x", Body: "<p>x</p>"}); err == nil {
		t.Fatal("no error")
	}
	if mem.Leased(tenant, "100") || mem.Leased(tenant, "200") {
		t.Fatal("lease kept after a failure")
	}
	mem.Fail = nil

	now := time.Now()
	mem.Now = func() time.Time { return now }
	if _, err := mem.LeasePage(ctx, tenant, "100", 1); err != nil { // and crashes
		t.Fatal(err)
	}
	if _, err := svc.SavePage(ctx, tenant, "bob", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "x", Body: "<p>x</p>"}); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("save under a live lease: %v", err)
	}
	now = now.Add(wt.MemLeaseFor + time.Second)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Two", "Low")))
}

// A clear of suspect marks waits for a save of the row's page (which may
// be writing back the marks it read) and clears after it; a page that stays
// leased through every attempt is a conflict, and the other rows are
// cleared.
func TestClearSuspectsWaitsForTheLease(t *testing.T) {
	ctx := context.Background()
	svc, mem := newService(t)
	target := func(v string) string {
		return wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("T-1"), "<p>Target "+v+".</p>"))
	}
	save(t, svc, "1", "DEMO", target("1"))
	save(t, svc, "2", "DEMO", wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("R-1"), "<p>Refines "+wt.Link("", "T-1")+".</p>")))
	save(t, svc, "3", "DEMO", wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("R-2"), "<p>Refines "+wt.Link("", "T-1")+".</p>")))
	save(t, svc, "1", "DEMO", target("2"))
	r1, r2 := mustRow(t, mem, "DEMO", "R-1"), mustRow(t, mem, "DEMO", "R-2")
	if len(r1.Suspects) == 0 || len(r2.Suspects) == 0 {
		t.Fatalf("not marked: %+v %+v", r1.Suspects, r2.Suspects)
	}

	// Page 2 leased for a moment: the clear waits, then clears both.
	l, err := mem.LeasePage(ctx, tenant, "2", 1)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = mem.ReleasePage(ctx, tenant, l)
	}()
	if n, err := svc.ClearSuspects(ctx, tenant, []*requirement.Requirement{r1, r2}); err != nil || n != 2 {
		t.Fatalf("clear: %d %v, want 2", n, err)
	}
	if len(mustRow(t, mem, "DEMO", "R-1").Suspects) != 0 || len(mustRow(t, mem, "DEMO", "R-2").Suspects) != 0 {
		t.Fatal("marks left after the lease was released")
	}

	// Page 2 leased throughout: conflict, R-2 cleared, R-1 kept.
	save(t, svc, "1", "DEMO", target("3"))
	r1, r2 = mustRow(t, mem, "DEMO", "R-1"), mustRow(t, mem, "DEMO", "R-2")
	if _, err := mem.LeasePage(ctx, tenant, "2", 1); err != nil {
		t.Fatal(err)
	}
	_, err = svc.ClearSuspects(ctx, tenant, []*requirement.Requirement{r1, r2})
	if a := apperr.As(err); a == nil || a.Code != apperr.Conflict {
		t.Fatalf("clear with page 2 leased throughout: %v, want conflict", err)
	}
	if len(mustRow(t, mem, "DEMO", "R-1").Suspects) == 0 || len(mustRow(t, mem, "DEMO", "R-2").Suspects) != 0 {
		t.Fatal("want R-1 still marked (its page leased) and R-2 cleared")
	}
}
