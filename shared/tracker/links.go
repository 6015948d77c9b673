package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// MaxLinkItems is the most items one issue-links request may carry.
const MaxLinkItems = 1000

// IssueLinks returns the links of an issue with their requirements'
// excerpts and origins, limited to one relationship when relationship is
// not empty.
func (s *Service) IssueLinks(ctx context.Context, tenant, issueKey, relationship string) ([]LinkView, error) {
	if err := ValidateIssueKey(issueKey); err != nil {
		return nil, err
	}
	links, err := s.links.IssueLinks(ctx, tenant, issueKey)
	if err != nil {
		return nil, fmt.Errorf("links of issue %s: %w", issueKey, err)
	}
	if relationship != "" {
		links = slices.DeleteFunc(links, func(l HeldLink) bool { return l.Relationship != relationship })
	}
	return s.views(ctx, tenant, links)
}

// CreateLinks links an issue to requirements (spec 2.6) on the tracker's
// side: each link gets the TRACKER hold (a link the page already holds
// keeps its PAGE hold too). Every requirement is first checked with its
// wiki (404 naming the first missing one, 502 when the wiki cannot be
// asked; nothing written either way). The excerpt and URL sent with an
// item replace the requirement's stored ones, which every issue linked to
// it shows.
func (s *Service) CreateLinks(ctx context.Context, tenant, issueKey string, items []LinkInput) ([]LinkView, error) {
	views, err := s.writeIssue(ctx, tenant, issueKey, items, func(map[Link]Holds) ([]Link, []Link) {
		return inputLinks(items), nil
	})
	if err != nil {
		return nil, fmt.Errorf("create links of issue %s: %w", issueKey, err)
	}
	return views, nil
}

// ReplaceLinks makes items the TRACKER links of an issue: the tracker's
// hold on the issue's other links is dropped (only those of relationship
// when it is not empty). Removing a link the page holds is refused at
// version 5 (409 naming the page; only the tracker's own hold on it is
// dropped) and done as before at version 4. The whole edit holds the
// issue's lease, so concurrent replaces leave exactly one of their sets.
func (s *Service) ReplaceLinks(ctx context.Context, tenant, issueKey, relationship string, items []LinkInput) ([]LinkView, error) {
	if relationship != "" {
		if err := validateName("relationship", relationship); err != nil {
			return nil, err
		}
	}
	views, err := s.writeIssue(ctx, tenant, issueKey, items, func(held map[Link]Holds) ([]Link, []Link) {
		// Read here: validation gave the items their issue key.
		keep := map[Link]bool{}
		for _, it := range items {
			keep[it.Link] = true
		}
		var remove []Link
		for l := range held {
			if !keep[l] && (relationship == "" || l.Relationship == relationship) {
				remove = append(remove, l)
			}
		}
		return inputLinks(items), remove
	})
	if err != nil {
		return nil, fmt.Errorf("replace links of issue %s: %w", issueKey, err)
	}
	return views, nil
}

// writeIssue is the flow of POST and PUT: validate the items, check their
// requirements with the wikis, then under the issue's lease change its
// holds as decide says, store the items' excerpts and answer the issue's
// links; the touched requirements' TRACKER sets are sent once the lease is
// given back.
func (s *Service) writeIssue(ctx context.Context, tenant, issueKey string, items []LinkInput,
	decide func(held map[Link]Holds) (add, remove []Link)) ([]LinkView, error) {
	applinks, err := s.checkInputs(ctx, tenant, issueKey, items)
	if err != nil {
		return nil, err
	}
	if err := s.checkWithWiki(ctx, items, applinks); err != nil {
		return nil, err
	}
	unlock, err := s.lockIssue(ctx, tenant, issueKey)
	if err != nil {
		return nil, err
	}
	marked, err := s.editIssue(ctx, tenant, issueKey, applinks, nil, decide)
	if err == nil {
		err = s.storeInputs(ctx, tenant, items)
	}
	var views []LinkView
	if err == nil {
		views, err = s.IssueLinks(ctx, tenant, issueKey, "")
	}
	unlock()
	s.sendMarked(ctx, tenant, marked)
	return views, err
}

// DeleteLinks removes the tracker's links of an issue (spec 2.7); absent
// links are not an error. A link the page holds is refused at version 5
// (409 naming the page; only the tracker's own hold on it is dropped). The
// requirements' excerpts stay: other issues may show them.
func (s *Service) DeleteLinks(ctx context.Context, tenant, issueKey string, refs []Link) error {
	items := make([]LinkInput, len(refs))
	for i, l := range refs {
		items[i] = LinkInput{Link: l}
	}
	applinks, err := s.checkInputs(ctx, tenant, issueKey, items)
	if err != nil {
		return err
	}
	unlock, err := s.lockIssue(ctx, tenant, issueKey)
	if err != nil {
		return err
	}
	marked, err := s.editIssue(ctx, tenant, issueKey, applinks, inputRefs(items), func(map[Link]Holds) ([]Link, []Link) {
		return nil, inputLinks(items)
	})
	unlock()
	s.sendMarked(ctx, tenant, marked)
	if err != nil {
		return fmt.Errorf("delete links of issue %s: %w", issueKey, err)
	}
	return nil
}

func inputLinks(items []LinkInput) []Link {
	out := make([]Link, len(items))
	for i, it := range items {
		out[i] = it.Link
	}
	return out
}

func inputRefs(items []LinkInput) []ReqRef {
	out := make([]ReqRef, len(items))
	for i, it := range items {
		out[i] = it.Req
	}
	return out
}

// editIssue changes the TRACKER holds of an issue's links: decide gets the
// issue's current links (with their holds) and answers the links to hold
// and the links to drop. Links the page holds cannot be dropped at version
// 5: then only the tracker's hold on them is dropped and the answer is a
// 409 naming the page. extra names requirements to read besides those of
// the issue's links and of the answer.
func (s *Service) editIssue(ctx context.Context, tenant, issueKey string, applinks map[string]Applink, extra []ReqRef,
	decide func(held map[Link]Holds) (add, remove []Link)) ([]ReqRef, error) {
	current, err := s.links.IssueLinks(ctx, tenant, issueKey)
	if err != nil {
		return nil, fmt.Errorf("links of issue %s: %w", issueKey, err)
	}
	refs := append([]ReqRef(nil), extra...)
	for _, l := range current {
		refs = append(refs, l.Req)
	}
	held := map[Link]Holds{}
	for _, l := range current {
		held[l.Link] = l.Holds
	}
	add, remove := decide(held)
	for _, l := range add {
		refs = append(refs, l.Req)
	}
	for _, l := range remove {
		refs = append(refs, l.Req)
	}
	// The applinks of every link removed, not only those the body names:
	// a PUT replaces away links of other applinks too, and a page link of
	// one at version 5 must be refused like any other.
	known := maps.Clone(applinks)
	if known == nil {
		known = map[string]Applink{}
	}
	for _, l := range remove {
		id := l.Req.ApplinkID
		if _, ok := known[id]; ok {
			continue
		}
		a, err := s.applinks.GetApplink(ctx, tenant, id)
		switch {
		case err == nil:
			known[id] = a
		case !isNotFound(err):
			return nil, fmt.Errorf("application link %s: %w", id, err)
		}
	}
	version := func(r ReqRef) int {
		if a, ok := known[r.ApplinkID]; ok {
			return a.Version
		}
		return DefaultVersion // an applink gone since: as version 4, the tracker decides alone
	}
	// A tracker-side edit reaches the wiki through the tracker-side outbox
	// whatever the version: the TRACKER set, said to be the tracker's.
	mark := func(_ ReqRef, o, n LinkState) bool { return markChange(o, n) }
	rel := func(l Link) IssueRelationship {
		return IssueRelationship{IssueKey: l.IssueKey, Relationship: l.Relationship}
	}
	return s.changeLinks(ctx, tenant, refs, mark, func(states map[ReqRef]*LinkState) error {
		var refused []Link
		for _, l := range remove {
			if states[l.Req].Page[rel(l)] && version(l.Req) >= LinksVersion {
				refused = append(refused, l)
			}
		}
		if len(refused) > 0 {
			// Nothing is written but the tracker's own hold on those links
			// (they stay, as PAGE links).
			for _, l := range refused {
				delete(states[l.Req].Tracker, rel(l))
			}
			return pageLinkRefused(states[refused[0].Req].Origin)
		}
		for _, l := range remove {
			states[l.Req].Set(rel(l), 0) // at version 4 the tracker removes page links too, as before
		}
		for _, l := range add {
			states[l.Req].Tracker[rel(l)] = true
		}
		return nil
	})
}

// pageLinkRefused is the 409 of removing a link a wiki page defines.
func pageLinkRefused(o PageOrigin) error {
	if o.PageID == "" && o.Title == "" {
		return apperr.Conflictf("defined on a wiki page: edit the page")
	}
	return apperr.Conflictf("defined on wiki page '%s' (%s): edit the page", o.Title, o.PageID)
}

// checkInputs validates items for issueKey (setting their IssueKey) and
// checks that each applink exists in the tenant; it returns the applinks.
func (s *Service) checkInputs(ctx context.Context, tenant, issueKey string, items []LinkInput) (map[string]Applink, error) {
	if err := ValidateIssueKey(issueKey); err != nil {
		return nil, err
	}
	if len(items) > MaxLinkItems {
		return nil, apperr.Invalidf("too many items: at most %d per request", MaxLinkItems)
	}
	applinks := map[string]Applink{}
	for i := range items {
		it := &items[i]
		it.IssueKey = issueKey
		if err := it.Validate(); err != nil {
			return nil, itemError(i, err)
		}
		if it.GenericURL != nil {
			if err := validateGenericURL(*it.GenericURL); err != nil {
				return nil, itemError(i, err)
			}
		}
		if it.HTMLExcerpt != nil {
			// Checked (and sanitized, which is idempotent) before anything
			// is written.
			clean, err := s.sanitizeExcerpt(*it.HTMLExcerpt)
			if err != nil {
				return nil, itemError(i, err)
			}
			it.HTMLExcerpt = &clean
		}
		if id := it.Req.ApplinkID; applinks[id].ID == "" {
			a, err := s.Applink(ctx, tenant, id)
			if err != nil {
				return nil, itemError(i, err)
			}
			applinks[id] = a
		}
	}
	return applinks, nil
}

// itemError names the item of a request an error is about.
func itemError(i int, err error) error {
	if e := apperr.As(err); e != nil && e.Code != apperr.Internal {
		c := *e
		c.Message = fmt.Sprintf("item %d: %s", i, e.Message)
		return &c
	}
	return err
}

// checkWithWiki asks each requirement of items from its wiki (the current
// version or the baseline given), a few at a time, before anything is
// written: the first requirement (in item order) the wiki does not have is
// a 404 naming it; a wiki that cannot answer is a 502.
func (s *Service) checkWithWiki(ctx context.Context, items []LinkInput, applinks map[string]Applink) error {
	refs := uniqueRefs(inputRefs(items))
	if len(refs) == 0 {
		return nil
	}
	for _, r := range refs {
		if a := applinks[r.ApplinkID]; a.WikiToken == "" {
			return apperr.Conflictf("application link %s has no wiki token, so links to its requirements cannot be checked: a tracker admin must PUT /rest/reqs/1/api/%s with \"token\"", a.ID, a.ID)
		}
	}
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, wikiParallelism)
	for i, r := range refs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, errs[i] = s.wiki.Requirement(ctx, applinks[r.ApplinkID].Wiki(), r.SpaceKey, r.Key, r.Baseline)
		}()
	}
	wg.Wait()
	for i, err := range errs { // in item order: the first missing one is named
		r := refs[i]
		switch {
		case err == nil:
		case isNotFound(err):
			if r.Baseline > 0 {
				return apperr.NotFoundf("requirement %s/%s (baseline %d) not found in wiki '%s'", r.SpaceKey, r.Key, r.Baseline, r.ApplinkID)
			}
			return apperr.NotFoundf("requirement %s/%s not found in wiki '%s'", r.SpaceKey, r.Key, r.ApplinkID)
		}
	}
	for i, err := range errs {
		if err != nil {
			r := refs[i]
			return wikiFailed(err, fmt.Sprintf("cannot check requirement %s/%s with the wiki of application link %s; nothing was changed", r.SpaceKey, r.Key, r.ApplinkID))
		}
	}
	return nil
}

// storeInputs writes the requirements' excerpts and URLs that items carry.
func (s *Service) storeInputs(ctx context.Context, tenant string, items []LinkInput) error {
	changes := map[ReqRef]LinkInput{}
	var order []ReqRef
	for _, it := range items {
		if it.HTMLExcerpt == nil && it.GenericURL == nil {
			continue
		}
		prev, ok := changes[it.Req]
		if !ok {
			order = append(order, it.Req)
		}
		if it.HTMLExcerpt == nil {
			it.HTMLExcerpt = prev.HTMLExcerpt
		}
		if it.GenericURL == nil {
			it.GenericURL = prev.GenericURL
		}
		changes[it.Req] = it
	}
	if len(order) == 0 {
		return nil
	}
	stored, err := s.links.GetRequirements(ctx, tenant, order)
	if err != nil {
		return err
	}
	reqs := make([]Requirement, 0, len(order))
	for _, ref := range order {
		r, ok := stored[ref]
		if !ok {
			r = Requirement{Ref: ref}
		}
		c := changes[ref]
		if c.HTMLExcerpt != nil {
			if r.HTMLExcerpt, err = s.sanitizeExcerpt(*c.HTMLExcerpt); err != nil {
				return err
			}
		}
		if c.GenericURL != nil {
			r.GenericURL = *c.GenericURL
		}
		r.UpdatedAt = s.now().UTC()
		reqs = append(reqs, r)
	}
	return s.links.PutRequirements(ctx, tenant, reqs)
}

// views joins links with their requirements, sorted by requirement then
// relationship.
func (s *Service) views(ctx context.Context, tenant string, links []HeldLink) ([]LinkView, error) {
	refs := make([]ReqRef, 0, len(links))
	seen := map[ReqRef]bool{}
	for _, l := range links {
		if !seen[l.Req] {
			seen[l.Req] = true
			refs = append(refs, l.Req)
		}
	}
	reqs := map[ReqRef]Requirement{}
	if len(refs) > 0 {
		var err error
		if reqs, err = s.links.GetRequirements(ctx, tenant, refs); err != nil {
			return nil, fmt.Errorf("read excerpts: %w", err)
		}
	}
	out := make([]LinkView, len(links))
	for i, l := range links {
		r := reqs[l.Req]
		url := r.GenericURL
		if url == "" {
			// Links made here, or by a message without newUrl, still point
			// at the requirement: the wiki's generic address of it.
			url = "/requirements/" + l.Req.SpaceKey + "/" + l.Req.Key
		}
		out[i] = LinkView{Link: l.Link, Holds: l.Holds, HTMLExcerpt: r.HTMLExcerpt, GenericURL: url, Deleted: r.Deleted,
			Suspect: r.SuspectOf(l.IssueKey)}
	}
	slices.SortFunc(out, func(a, b LinkView) int { return compareLinks(a.Link, b.Link) })
	return out, nil
}

func compareLinks(a, b Link) int {
	return cmp.Or(
		cmp.Compare(a.IssueKey, b.IssueKey),
		compareRefs(a.Req, b.Req),
		cmp.Compare(a.Relationship, b.Relationship),
	)
}

func compareRefs(a, b ReqRef) int {
	return cmp.Or(
		cmp.Compare(a.ApplinkID, b.ApplinkID),
		cmp.Compare(a.SpaceKey, b.SpaceKey),
		cmp.Compare(a.Key, b.Key),
		cmp.Compare(a.Baseline, b.Baseline),
	)
}

// isNotFound reports whether err is a not-found error.
func isNotFound(err error) bool { return errors.Is(err, apperr.ErrNotFound) }
