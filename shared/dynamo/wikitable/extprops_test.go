package wikitable_test

// Tests of external properties on DynamoDB Local: their index items, the
// conditions of WikiStore.SetExternal, and concurrent page saves.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func strp(s string) *string { return &s }

// externalIndexed returns the ids found in an external property's index
// partition.
func (e *saveEnv) externalIndexed(t *testing.T, tenant, name, value string) []string {
	t.Helper()
	var got []string
	err := e.reqs.QueryExternalIndex(context.Background(), tenant, name, value, "", 0, func(id requirement.ID) bool {
		got = append(got, id.SpaceKey+"/"+id.Key)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (e *saveEnv) setExternal(t *testing.T, space, key string, changes ...requirement.ExternalChange) *requirement.Requirement {
	t.Helper()
	r, err := e.service.SetExternal(context.Background(), "demo", space, key, changes)
	if err != nil {
		t.Fatalf("SetExternal %s/%s: %v", space, key, err)
	}
	return r
}

func extOf(r *requirement.Requirement) []string {
	var out []string
	for _, p := range r.ExternalProperties() {
		out = append(out, p.Key+"="+p.Value)
	}
	return out
}

// TestSetExternalIndex: the index holds exactly the external values of
// ACTIVE rows, under a kind of its own, through sets, changes, removals,
// a change of many values at once (past one transaction), a move and a
// deletion.
func TestSetExternalIndex(t *testing.T) {
	t.Parallel()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", saveSpecs(wt.TR(wt.Def("REQ-1"), "<p>One</p>", "High", ""), wt.TR(wt.Def("REQ-2"), "<p>Two</p>", "", "")))
	e.setExternal(t, "DEMO", "REQ-1", requirement.ExternalChange{Name: "Priority", Value: strp("Low")}, requirement.ExternalChange{Name: "Cost", Value: strp("12")})
	e.setExternal(t, "DEMO", "REQ-2", requirement.ExternalChange{Name: "cost", Value: strp("12")})
	if got := e.externalIndexed(t, "demo", "COST", "12"); !slices.Equal(got, []string{"DEMO/REQ-1", "DEMO/REQ-2"}) {
		t.Fatalf("ext Cost=12: %v", got)
	}
	// Page and external properties of one name are different partitions.
	if got := e.indexed(t, "demo", "Priority", "Low"); len(got) != 0 {
		t.Fatalf("page index holds an external value: %v", got)
	}
	if got := e.externalIndexed(t, "demo", "Priority", "High"); len(got) != 0 {
		t.Fatalf("external index holds a page value: %v", got)
	}
	// A change moves the item; a removal deletes it.
	e.setExternal(t, "DEMO", "REQ-1", requirement.ExternalChange{Name: "Cost", Value: strp("13")}, requirement.ExternalChange{Name: "Priority"})
	for _, tc := range []struct{ name, value, want string }{
		{"Cost", "12", "DEMO/REQ-2"}, {"Cost", "13", "DEMO/REQ-1"}, {"Priority", "Low", ""},
	} {
		if got := strings.Join(e.externalIndexed(t, "demo", tc.name, tc.value), ","); got != tc.want {
			t.Errorf("%s=%s: %q, want %q", tc.name, tc.value, got, tc.want)
		}
	}

	// 60 values changed at once: 60 puts and 60 deletes do not fit one
	// transaction with the row; the index ends exact all the same.
	var set, change []requirement.ExternalChange
	for i := range 60 {
		set = append(set, requirement.ExternalChange{Name: fmt.Sprintf("P%02d", i), Value: strp("a")})
		change = append(change, requirement.ExternalChange{Name: fmt.Sprintf("P%02d", i), Value: strp("b")})
	}
	e.setExternal(t, "DEMO", "REQ-2", set...)
	e.calls.Reset()
	e.setExternal(t, "DEMO", "REQ-2", change...)
	if c := e.calls.Counts(); c["TransactWriteItems"] != 1 || c["BatchWriteItem"] != 6 {
		t.Errorf("many values changed: calls %v, want 1 TransactWriteItems and 3+3 BatchWriteItem", c)
	}
	for i := range 60 {
		name := fmt.Sprintf("p%02d", i)
		if a, b := e.externalIndexed(t, "demo", name, "a"), e.externalIndexed(t, "demo", name, "b"); len(a) != 0 || !slices.Equal(b, []string{"DEMO/REQ-2"}) {
			t.Fatalf("%s: a %v, b %v", name, a, b)
		}
	}
	// A few values: one BatchGetItem (the row, strongly consistent) and
	// one TransactWriteItems (lease check, row, index items).
	e.calls.Reset()
	e.setExternal(t, "DEMO", "REQ-1", requirement.ExternalChange{Name: "Cost", Value: strp("14")})
	if c := e.calls.Counts(); len(c) != 2 || c["BatchGetItem"] != 1 || c["TransactWriteItems"] != 1 {
		t.Errorf("one value changed: calls %v", c)
	}

	// A move takes the items to the new space; a deletion removes them.
	e.save(t, "demo", "100", "NEW", saveSpecs(wt.TR(wt.Def("REQ-1"), "<p>One</p>", "High", ""), wt.TR(wt.Def("REQ-2"), "<p>Two</p>", "", "")))
	if got := e.externalIndexed(t, "demo", "Cost", "14"); !slices.Equal(got, []string{"NEW/REQ-1"}) {
		t.Fatalf("after the move: %v", got)
	}
	if got := extOf(e.get(t, "demo", "NEW", "REQ-1")); !slices.Equal(got, []string{"Cost=14"}) {
		t.Fatalf("moved row %v", got)
	}
	if err := e.service.DeletePage(context.Background(), "demo", "bob", "100"); err != nil {
		t.Fatal(err)
	}
	if got := e.externalIndexed(t, "demo", "Cost", "14"); len(got) != 0 {
		t.Fatalf("after the deletion: %v", got)
	}
	if got := extOf(e.get(t, "demo", "NEW", "REQ-2")); len(got) != 0 {
		t.Fatalf("deleted row keeps %v", got)
	}
}

// TestSetExternalConditions: WikiStore.SetExternal writes nothing of the
// row while the page's lease is held (a save between its row reads and its
// writes), nor over a row that changed since it was read.
func TestSetExternalConditions(t *testing.T) {
	t.Parallel()
	e := saveNew(t)
	ctx := context.Background()
	e.save(t, "demo", "100", "DEMO", saveSpecs(wt.TR(wt.Def("REQ-1"), "<p>One</p>", "High", "")))
	read := func() *requirement.Requirement {
		t.Helper()
		rows, err := e.store.Requirements(ctx, "demo", []requirement.ID{{SpaceKey: "DEMO", Key: "REQ-1"}})
		if err != nil {
			t.Fatal(err)
		}
		return rows[requirement.NewID("DEMO", "REQ-1", 0)]
	}
	with := func(r *requirement.Requirement, kv ...string) *requirement.Requirement {
		n := r.Clone()
		var ext []requirement.Property
		for i := 0; i < len(kv); i += 2 {
			ext = append(ext, requirement.Property{Key: kv[i], Value: kv[i+1]})
		}
		n.SetExternalProperties(ext)
		return n
	}

	// A save holds the lease and has read the row: the external write is
	// refused, so the save's write of the row loses nothing.
	lease, err := e.store.LeasePage(ctx, "demo", "100", 1)
	if err != nil {
		t.Fatal(err)
	}
	old := read()
	if err := e.store.SetExternal(ctx, "demo", old, with(old, "Cost", "1")); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("while the lease is held: %v", err)
	}
	if got := extOf(read()); len(got) != 0 {
		t.Fatalf("written under a lease: %v", got)
	}
	if got := e.externalIndexed(t, "demo", "Cost", "1"); len(got) != 0 {
		t.Fatalf("index written under a lease: %v", got)
	}
	if err := e.store.ReleasePage(ctx, "demo", lease); err != nil {
		t.Fatal(err)
	}
	if err := e.store.SetExternal(ctx, "demo", old, with(old, "Cost", "1")); err != nil {
		t.Fatalf("after the release: %v", err)
	}
	// The row as read before that write is stale now.
	if err := e.store.SetExternal(ctx, "demo", old, with(old, "Cost", "2")); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("stale row: %v", err)
	}
	if got := extOf(read()); !slices.Equal(got, []string{"Cost=1"}) {
		t.Fatalf("after a stale write: %v", got)
	}
	// A row that is no longer ACTIVE on that page.
	cur := read()
	e.save(t, "demo", "100", "DEMO", saveSpecs(wt.TR(wt.Def("REQ-2"), "<p>Two</p>", "", "")))
	if err := e.store.SetExternal(ctx, "demo", cur, with(cur, "Cost", "3")); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("deleted row: %v", err)
	}

	// A row past DynamoDB's item size: 413, nothing written.
	long := strings.Repeat("word ", 30000) // 150 KB of text, as much excerpt
	e.save(t, "demo", "200", "DEMO", saveSpecs(wt.TR(wt.Def("BIG-1"), "<p>"+long+"</p>", "", "")))
	var many []requirement.ExternalChange
	for i := range 60 {
		many = append(many, requirement.ExternalChange{Name: fmt.Sprintf("P%02d", i), Value: strp(strings.Repeat("v", 2000))})
	}
	_, err = e.service.SetExternal(ctx, "demo", "DEMO", "BIG-1", many)
	if !errors.Is(err, apperr.ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if got := extOf(e.get(t, "demo", "DEMO", "BIG-1")); len(got) != 0 {
		t.Fatalf("too large row written: %v", got)
	}
}

// TestSetExternalAndSaveConcurrently: external properties set on
// requirements of a page while the page is saved again and again, at the
// same time: every save and every external write succeeds, and each row
// ends with both the page's last values and its last external values.
func TestSetExternalAndSaveConcurrently(t *testing.T) {
	t.Parallel()
	e := saveNew(t)
	ctx := context.Background()
	const n, rounds = 40, 12
	body := func(round int) string {
		rows := make([]string, 0, n)
		for i := range n {
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("REQ-%02d", i)), fmt.Sprintf("<p>Round %d</p>", round), fmt.Sprintf("P%d", round), ""))
		}
		return saveSpecs(rows...)
	}
	e.save(t, "demo", "100", "DEMO", body(0))
	targets := []string{"REQ-00", "REQ-17", "REQ-39"}
	e.calls.Reset()
	var resent atomic.Int64
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, 1+len(targets))
		wg.Go(func() {
			// External writes never make a save fail (they take no lease).
			if _, err := e.service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Specs", Body: body(round)}); err != nil {
				errs <- fmt.Errorf("save round %d: %w", round, err)
			}
		})
		for _, key := range targets {
			wg.Go(func() {
				v := fmt.Sprint(round)
				// A write that meets the save's lease for longer than its
				// retries last (a loaded machine) answers 409 "send again",
				// and the client sends it again: neither change may be lost.
				for attempt := 1; ; attempt++ {
					_, err := e.service.SetExternal(ctx, "demo", "DEMO", key, []requirement.ExternalChange{{Name: "Cost", Value: &v}})
					if errors.Is(err, apperr.ErrConflict) && attempt < 20 {
						resent.Add(1)
						time.Sleep(100 * time.Millisecond)
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("set %s round %d: %w", key, round, err)
					}
					return
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, key := range targets {
			r := e.get(t, "demo", "DEMO", key)
			if r.Text != fmt.Sprintf("Round %d", round) || !slices.Equal(r.PageProperties(), []requirement.Property{{Key: "Priority", Value: fmt.Sprintf("P%d", round)}}) {
				t.Fatalf("round %d: %s lost the save: %q %v", round, key, r.Text, r.PageProperties())
			}
			if got := extOf(r); !slices.Equal(got, []string{fmt.Sprintf("Cost=%d", round)}) {
				t.Fatalf("round %d: %s lost its external property: %v", round, key, got)
			}
			if got := e.externalIndexed(t, "demo", "Cost", fmt.Sprint(round)); !slices.Contains(got, "DEMO/"+key) {
				t.Fatalf("round %d: %s not indexed: %v", round, key, got)
			}
		}
	}
	// Transactions beyond one per external write are attempts that met a
	// save holding the page's lease (or a row it had just written).
	t.Logf("%d external writes took %d TransactWriteItems (%d sent again after a 409); calls %v", rounds*len(targets), e.calls.Counts()["TransactWriteItems"], resent.Load(), e.calls.Counts())
}
