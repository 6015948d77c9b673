package tracker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// Limits of one sync request.
const (
	MaxSyncIssues       = 100
	MaxSyncRequirements = 1000
	// wikiParallelism bounds concurrent calls to one wiki.
	wikiParallelism = 8
)

// SyncResult is what a sync sent to the wikis.
type SyncResult struct {
	// Links is exactly the link set sent to the wikis' links callbacks.
	Links []Link
	// Requirements counts the requirements whose excerpt was refreshed from
	// the wiki.
	Requirements int
}

// syncReq is one requirement a sync works on.
type syncReq struct {
	ref     ReqRef
	wiki    WikiRequirement
	found   bool // the wiki answered it (not 404)
	applink Applink
}

// Sync resynchronises issues with their wikis (spec §4.2 "PUT /sync").
//
// Every requirement linked to one of the issues is synchronised with all
// of its links, also those to issues not listed (issue A with R1 and R2, R2
// also linked to B: A-R1, A-R2 and B-R2 are sent). The order is chosen so
// that a failing wiki leaves nothing half done:
//
//  1. read the links of the issues and find the pending (MANUAL) messages
//     that cover those issues or their requirements;
//  2. fetch the latest version of every requirement from its wiki; any
//     failure other than 404 stops here with a 502, before any local change;
//  3. apply the covered pending messages, then store the fetched excerpts
//     and URLs (a requirement the wiki no longer has, 404, or reports
//     DELETED is flagged deleted; one it reports MOVED is re-keyed);
//  4. send each wiki the link set of each of its requirements: at version
//     5 its TRACKER links (the wiki keeps the PAGE links itself), at
//     version 4 all of them. A failure here is a 502 too; the tracker's own
//     state is then already correct and a new sync sends the links again.
//
// Applinks in DISABLED mode are left out (their pending messages stay). A
// requirement the wiki does not know (404) is not sent.
func (s *Service) Sync(ctx context.Context, tenant string, issues []string) (SyncResult, error) {
	issues, err := cleanIssues(issues)
	if err != nil {
		return SyncResult{}, err
	}
	listed := map[string]bool{}
	for _, k := range issues {
		listed[k] = true
	}

	// 1. Requirements of the issues, and the pending messages covering them.
	want := map[ReqRef]bool{}
	var refs []ReqRef
	add := func(r ReqRef) {
		if !want[r] {
			want[r] = true
			refs = append(refs, r)
		}
	}
	for _, k := range issues {
		links, err := s.links.IssueLinks(ctx, tenant, k)
		if err != nil {
			return SyncResult{}, fmt.Errorf("sync: links of issue %s: %w", k, err)
		}
		for _, l := range links {
			add(l.Req)
		}
	}
	all, err := s.pending.ListPending(ctx, tenant)
	if err != nil {
		return SyncResult{}, fmt.Errorf("sync: pending messages: %w", err)
	}
	covered := make([]bool, len(all))
	for changed := true; changed; {
		changed = false
		for i, p := range all {
			m := p.Message
			if covered[i] || !(want[m.Ref(p.ApplinkID)] || (m.Type == LinkMessage && listed[m.ObjectKey])) {
				continue
			}
			covered[i], changed = true, true
			add(m.Ref(p.ApplinkID))
			if m.Type == Moved {
				add(m.Target(p.ApplinkID))
			}
		}
	}

	// Applinks: DISABLED ones are left out; the others need a wiki token.
	applinks := map[string]*Applink{}
	for _, r := range refs {
		if _, ok := applinks[r.ApplinkID]; ok {
			continue
		}
		a, err := s.Applink(ctx, tenant, r.ApplinkID)
		switch {
		case isNotFound(err):
			applinks[r.ApplinkID] = nil
			continue
		case err != nil:
			return SyncResult{}, fmt.Errorf("sync: %w", err)
		case a.Mode == Disabled:
			applinks[r.ApplinkID] = nil
			continue
		case a.WikiToken == "":
			return SyncResult{}, apperr.Conflictf("application link %s has no wiki token: a tracker admin must PUT /rest/reqs/1/api/%s with \"token\"", a.ID, a.ID)
		}
		applinks[r.ApplinkID] = &a
	}
	refs = slices.DeleteFunc(refs, func(r ReqRef) bool { return applinks[r.ApplinkID] == nil })
	if len(refs) > MaxSyncRequirements {
		return SyncResult{}, apperr.Invalidf("these issues link %d requirements: a sync handles at most %d; sync fewer issues", len(refs), MaxSyncRequirements)
	}

	// 2. Fetch everything before changing anything.
	reqs := make([]syncReq, len(refs))
	for i, r := range refs {
		reqs[i] = syncReq{ref: r, applink: *applinks[r.ApplinkID]}
	}
	if err := s.fetch(ctx, reqs); err != nil {
		return SyncResult{}, err
	}

	// 3. Local changes: pending messages first, then the wiki's latest data.
	var done []Pending
	var marked []ReqRef
	defer func() { s.sendMarked(ctx, tenant, marked) }()
	for i, p := range all {
		if !covered[i] || applinks[p.ApplinkID] == nil {
			continue
		}
		_, mk, err := s.apply(ctx, tenant, *applinks[p.ApplinkID], p.Message)
		marked = append(marked, mk...)
		if err != nil && apperr.CodeOf(err) == apperr.Internal {
			return SyncResult{}, fmt.Errorf("sync: apply pending message: %w", err)
		}
		// A message that cannot apply (it was valid when received) never
		// will: it is dropped with the others.
		done = append(done, p)
	}
	if err := s.pending.DeletePending(ctx, tenant, done); err != nil {
		return SyncResult{}, fmt.Errorf("sync: delete applied pending messages: %w", err)
	}
	var res SyncResult
	sets := map[string][]RequirementLinks{}
	sent := map[ReqRef]bool{}
	for _, q := range reqs {
		st, err := s.linkState(ctx, tenant, q.ref)
		if err != nil {
			return SyncResult{}, fmt.Errorf("sync: links of %s: %w", q.ref, err)
		}
		if len(st.Links()) == 0 {
			continue // moved away by a pending message: nothing to refresh or send
		}
		final, mk, err := s.refresh(ctx, tenant, q)
		marked = append(marked, mk...)
		if err != nil {
			return SyncResult{}, fmt.Errorf("sync: refresh %s: %w", q.ref, err)
		}
		if !q.found || sent[final] {
			continue
		}
		res.Requirements++
		if final != q.ref {
			if st, err = s.linkState(ctx, tenant, final); err != nil {
				return SyncResult{}, fmt.Errorf("sync: links of %s: %w", final, err)
			}
		}
		sent[final] = true
		// At version 5 the wiki's links callback replaces the TRACKER links
		// only: the tracker sends its own set. At version 4 it sends them
		// all, as before.
		trackerOnly := q.applink.Version >= LinksVersion
		set := RequirementLinks{SpaceKey: final.SpaceKey, Key: final.Key, Baseline: final.Baseline, Links: []IssueRelationship{},
			TrackerHolds: trackerOnly}
		for _, l := range st.Links() {
			if trackerOnly && l.Holds&TrackerHold == 0 {
				continue
			}
			set.Links = append(set.Links, IssueRelationship{IssueKey: l.IssueKey, Relationship: l.Relationship})
			res.Links = append(res.Links, l.Link)
		}
		sets[final.ApplinkID] = append(sets[final.ApplinkID], set)
	}

	// 4. Tell each wiki.
	ids := make([]string, 0, len(sets))
	for id := range sets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := applinks[id]
		slices.SortFunc(sets[id], func(x, y RequirementLinks) int {
			return cmp.Or(cmp.Compare(x.SpaceKey, y.SpaceKey), cmp.Compare(x.Key, y.Key), cmp.Compare(x.Baseline, y.Baseline))
		})
		if err := s.wiki.PutLinks(ctx, a.Wiki(), a.ServiceID, sets[id]); err != nil {
			return SyncResult{}, wikiFailed(err, fmt.Sprintf("the wiki of application link %s did not take the link set (the tracker's excerpts are refreshed; sync again)", id))
		}
	}
	slices.SortFunc(res.Links, func(a, b Link) int {
		return cmp.Or(compareRefs(a.Req, b.Req), cmp.Compare(a.IssueKey, b.IssueKey), cmp.Compare(a.Relationship, b.Relationship))
	})
	if res.Links == nil {
		res.Links = []Link{}
	}
	return res, nil
}

// cleanIssues validates and de-duplicates the issue keys of a sync.
func cleanIssues(issues []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, k := range issues {
		k = strings.TrimSpace(k)
		if k == "" || seen[k] {
			continue
		}
		if err := ValidateIssueKey(k); err != nil {
			return nil, err
		}
		seen[k] = true
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, apperr.Invalidf("issues is required: PUT /rest/reqs/1/sync?issues=A,B")
	}
	if len(out) > MaxSyncIssues {
		return nil, apperr.Invalidf("too many issues: at most %d per sync", MaxSyncIssues)
	}
	return out, nil
}

// fetch reads every requirement from its wiki, a few at a time. A 404 marks
// the requirement not found; any other failure is returned.
func (s *Service) fetch(ctx context.Context, reqs []syncReq) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, wikiParallelism)
		once  sync.Once
		first error
	)
	for i := range reqs {
		q := &reqs[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			w, err := s.wiki.Requirement(ctx, q.applink.Wiki(), q.ref.SpaceKey, q.ref.Key, q.ref.Baseline)
			switch {
			case err == nil:
				q.wiki, q.found = w, true
			case isNotFound(err):
			default:
				once.Do(func() {
					first = wikiFailed(err, fmt.Sprintf("cannot read requirement %s/%s from the wiki of application link %s; nothing was changed", q.ref.SpaceKey, q.ref.Key, q.ref.ApplinkID))
					cancel()
				})
			}
		}()
	}
	wg.Wait()
	return first
}

// refresh stores what the wiki answered for a requirement and returns where
// the requirement now is (its new key when the wiki reports it MOVED) and
// the requirements marked for the outbox.
func (s *Service) refresh(ctx context.Context, tenant string, q syncReq) (ReqRef, []ReqRef, error) {
	if !q.found {
		return q.ref, nil, s.changeRequirement(ctx, tenant, q.ref, func(r *Requirement) error {
			r.Deleted = true
			return nil
		})
	}
	w := q.wiki
	url := optional(w.GenericURL)
	if url != nil && validateGenericURL(*url) != nil {
		url = nil // never store a URL the tracker would not accept from a client
	}
	if strings.EqualFold(w.Status, "MOVED") && w.NewSpaceKey != "" && w.NewKey != "" {
		to := ReqRef{ApplinkID: q.ref.ApplinkID, SpaceKey: w.NewSpaceKey, Key: w.NewKey, Baseline: q.ref.Baseline}
		if to.Validate() == nil && to != q.ref {
			marked, err := s.move(ctx, tenant, q.applink, q.ref, to, &w.HTMLExcerpt, url)
			return to, marked, err
		}
	}
	return q.ref, nil, s.changeRequirement(ctx, tenant, q.ref, func(r *Requirement) error {
		r.Deleted = strings.EqualFold(w.Status, "DELETED")
		return s.setData(r, &w.HTMLExcerpt, url)
	})
}

// linkState reads one requirement's link state.
func (s *Service) linkState(ctx context.Context, tenant string, ref ReqRef) (LinkState, error) {
	got, err := s.links.LinkStates(ctx, tenant, []ReqRef{ref})
	if err != nil {
		return LinkState{}, err
	}
	if st, ok := got[ref]; ok {
		return st, nil
	}
	return EmptyLinkState(ref), nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// wikiFailed describes a failed wiki call for the tracker's user, keeping
// the wiki's own message and the 502 status.
func wikiFailed(err error, what string) error {
	msg := what
	if e := apperr.As(err); e != nil && e.Message != "" {
		msg += ": " + e.Message
	}
	return apperr.Wrap(apperr.BadGatewayf("%s", msg), err)
}
