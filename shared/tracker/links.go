package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// MaxLinkItems is the most items one issue-links request may carry.
const MaxLinkItems = 1000

// IssueLinks returns the links of an issue with their requirements'
// excerpts, limited to one relationship when relationship is not empty.
func (s *Service) IssueLinks(ctx context.Context, tenant, issueKey, relationship string) ([]LinkView, error) {
	if err := ValidateIssueKey(issueKey); err != nil {
		return nil, err
	}
	links, err := s.links.IssueLinks(ctx, tenant, issueKey)
	if err != nil {
		return nil, fmt.Errorf("links of issue %s: %w", issueKey, err)
	}
	if relationship != "" {
		links = slices.DeleteFunc(links, func(l Link) bool { return l.Relationship != relationship })
	}
	return s.views(ctx, tenant, links)
}

// CreateLinks links an issue to requirements (spec 2.6). Existing links stay
// (a link cannot exist twice); the excerpt and URL sent with an item replace
// the requirement's stored ones, which every issue linked to it shows.
func (s *Service) CreateLinks(ctx context.Context, tenant, issueKey string, items []LinkInput) ([]LinkView, error) {
	if err := s.checkInputs(ctx, tenant, issueKey, items); err != nil {
		return nil, err
	}
	if err := s.storeInputs(ctx, tenant, items); err != nil {
		return nil, fmt.Errorf("create links of issue %s: %w", issueKey, err)
	}
	return s.IssueLinks(ctx, tenant, issueKey, "")
}

// ReplaceLinks makes items the links of an issue: the issue's other links
// are removed, only those of relationship when it is not empty. New links
// are written before old ones are removed, so a failure never leaves the
// issue with fewer links than either its old or its new set.
func (s *Service) ReplaceLinks(ctx context.Context, tenant, issueKey, relationship string, items []LinkInput) ([]LinkView, error) {
	if relationship != "" {
		if err := validateName("relationship", relationship); err != nil {
			return nil, err
		}
	}
	if err := s.checkInputs(ctx, tenant, issueKey, items); err != nil {
		return nil, err
	}
	old, err := s.links.IssueLinks(ctx, tenant, issueKey)
	if err != nil {
		return nil, fmt.Errorf("replace links of issue %s: %w", issueKey, err)
	}
	keep := make(map[Link]bool, len(items))
	for _, it := range items {
		keep[it.Link] = true
	}
	var remove []Link
	for _, l := range old {
		if !keep[l] && (relationship == "" || l.Relationship == relationship) {
			remove = append(remove, l)
		}
	}
	if err := s.storeInputs(ctx, tenant, items); err != nil {
		return nil, fmt.Errorf("replace links of issue %s: %w", issueKey, err)
	}
	if err := s.links.DeleteLinks(ctx, tenant, remove); err != nil {
		return nil, fmt.Errorf("replace links of issue %s: %w", issueKey, err)
	}
	return s.IssueLinks(ctx, tenant, issueKey, "")
}

// DeleteLinks removes links of an issue (spec 2.7); absent links are not an
// error. The requirements' excerpts stay: other issues may show them.
func (s *Service) DeleteLinks(ctx context.Context, tenant, issueKey string, refs []Link) error {
	items := make([]LinkInput, len(refs))
	for i, l := range refs {
		items[i] = LinkInput{Link: l}
	}
	if err := s.checkInputs(ctx, tenant, issueKey, items); err != nil {
		return err
	}
	for i := range refs {
		refs[i].IssueKey = issueKey
	}
	if err := s.links.DeleteLinks(ctx, tenant, refs); err != nil {
		return fmt.Errorf("delete links of issue %s: %w", issueKey, err)
	}
	return nil
}

// checkInputs validates items for issueKey (setting their IssueKey) and
// checks that each applink exists in the tenant.
func (s *Service) checkInputs(ctx context.Context, tenant, issueKey string, items []LinkInput) error {
	if err := ValidateIssueKey(issueKey); err != nil {
		return err
	}
	if len(items) > MaxLinkItems {
		return apperr.Invalidf("too many items: at most %d per request", MaxLinkItems)
	}
	seen := map[string]bool{}
	for i := range items {
		it := &items[i]
		it.IssueKey = issueKey
		if err := it.Validate(); err != nil {
			return itemError(i, err)
		}
		if it.GenericURL != nil {
			if err := validateGenericURL(*it.GenericURL); err != nil {
				return itemError(i, err)
			}
		}
		if id := it.Req.ApplinkID; !seen[id] {
			if _, err := s.Applink(ctx, tenant, id); err != nil {
				return itemError(i, err)
			}
			seen[id] = true
		}
	}
	return nil
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

// storeInputs writes the requirements' excerpts, then the links.
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
	if len(order) > 0 {
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
		if err := s.links.PutRequirements(ctx, tenant, reqs); err != nil {
			return err
		}
	}
	links := make([]Link, len(items))
	for i, it := range items {
		links[i] = it.Link
	}
	return s.links.PutLinks(ctx, tenant, links)
}

// views joins links with their requirements, sorted by requirement then
// relationship.
func (s *Service) views(ctx context.Context, tenant string, links []Link) ([]LinkView, error) {
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
		out[i] = LinkView{Link: l, HTMLExcerpt: r.HTMLExcerpt, GenericURL: url, Deleted: r.Deleted}
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
