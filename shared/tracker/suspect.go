package tracker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// markSuspect marks suspect every issue link of r, the requirement of a
// suspect UPDATED message as read to be written back (its marks are
// written with it: one more read, of its link state, and no more write):
// one mark per issue linked now, by the page or the tracker; an issue
// already marked keeps its mark's time and gains the fields. Links made
// later are not suspect. Applying the message twice gives the same marks
// (docs/change-analysis.md, "Suspect links").
func (s *Service) markSuspect(ctx context.Context, tenant string, r *Requirement, m Message) error {
	ref := r.Ref
	states, err := s.links.LinkStates(ctx, tenant, []ReqRef{ref})
	if err != nil {
		return fmt.Errorf("read links of %s: %w", ref, err)
	}
	st := states[ref]
	issues := map[string]bool{}
	for rel := range st.Page {
		issues[strings.ToUpper(rel.IssueKey)] = true
	}
	for rel := range st.Tracker {
		issues[strings.ToUpper(rel.IssueKey)] = true
	}
	if len(issues) == 0 {
		return nil
	}
	marks := slices.Clone(r.Suspects)
	fields := m.SuspectFields
	if len(fields) == 0 {
		fields = m.ChangedFields
	}
	since := s.now().UTC()
	for _, issue := range slices.Sorted(maps.Keys(issues)) {
		i := slices.IndexFunc(marks, func(x SuspectMark) bool { return x.IssueKey == issue })
		if i < 0 {
			marks = append(marks, SuspectMark{IssueKey: issue, Since: since, Fields: slices.Clone(fields)})
			continue
		}
		for _, f := range fields {
			if !slices.Contains(marks[i].Fields, f) {
				marks[i].Fields = append(marks[i].Fields, f)
			}
		}
	}
	r.Suspects = marks
	return nil
}

// ClearSuspect clears the suspect marks of an issue's links (DELETE
// /rest/reqs/1/issuelinks/{issueKey}/suspect): the issue's users reviewed
// the requirements it links to. Other issues' marks stay.
func (s *Service) ClearSuspect(ctx context.Context, tenant, issueKey string) error {
	if err := ValidateIssueKey(issueKey); err != nil {
		return err
	}
	links, err := s.links.IssueLinks(ctx, tenant, issueKey)
	if err != nil {
		return fmt.Errorf("links of issue %s: %w", issueKey, err)
	}
	var refs []ReqRef
	for _, l := range links {
		if !slices.Contains(refs, l.Req) {
			refs = append(refs, l.Req)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	reqs, err := s.links.GetRequirements(ctx, tenant, refs)
	if err != nil {
		return fmt.Errorf("read requirements of issue %s: %w", issueKey, err)
	}
	for _, ref := range refs {
		r := reqs[ref]
		if r.SuspectOf(issueKey) == nil {
			continue
		}
		rest := slices.DeleteFunc(slices.Clone(r.Suspects), func(m SuspectMark) bool { return strings.EqualFold(m.IssueKey, issueKey) })
		if err := s.links.SetSuspects(ctx, tenant, ref, rest); err != nil {
			return fmt.Errorf("clear suspect links of issue %s: %w", issueKey, err)
		}
	}
	return nil
}
