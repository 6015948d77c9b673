package wiki_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
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
