package integration

import (
	"regexp"
	"slices"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// issueKeyPattern is the shape of an issue key: project key, '-', number.
var issueKeyPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*-[0-9]+$`)

// MaxLinkSets bounds the requirements of one links callback.
const MaxLinkSets = 1000

// CheckLinkSets validates and normalizes the body of a links callback for
// serviceID: valid space keys, keys and issue keys, baselines ≥ 0,
// relationships normalized (requirement.NormalizeRelationship), the links
// of one requirement deduplicated, and several entries for one requirement
// merged. Every entry has a links array (nil, from "links": null or no
// "links", is refused: [] says "no links"), and every link a relationship
// that is not empty once normalized and has no control characters. Every
// error is a 400 naming the entry.
func CheckLinkSets(serviceID string, sets []LinkSet) ([]LinkSet, error) {
	if len(sets) > MaxLinkSets {
		return nil, apperr.Invalidf("at most %d requirements per call, got %d", MaxLinkSets, len(sets))
	}
	index := map[requirement.ID]int{}
	var out []LinkSet
	for i, s := range sets {
		if !requirement.ValidSpaceKey(s.SpaceKey) {
			return nil, apperr.Invalidf("entry %d: invalid spaceKey %q", i, s.SpaceKey)
		}
		if !requirement.ValidKey(s.Key) {
			return nil, apperr.Invalidf("entry %d: invalid key %q", i, s.Key)
		}
		if s.Baseline < 0 {
			return nil, apperr.Invalidf("entry %d: baseline must be null or a positive number, got %d", i, s.Baseline)
		}
		if s.Links == nil {
			return nil, apperr.InvalidField("links", "entry %d (%s/%s): links is required: an array of links, [] for none", i, s.SpaceKey, s.Key)
		}
		k := requirement.NewID(s.SpaceKey, s.Key, s.Baseline)
		j, seen := index[k]
		if !seen {
			j = len(out)
			index[k] = j
			out = append(out, LinkSet{SpaceKey: s.SpaceKey, Key: s.Key, Baseline: s.Baseline, Links: []requirement.IssueLink{},
				TrackerHolds: s.TrackerHolds})
		}
		out[j].TrackerHolds = out[j].TrackerHolds && s.TrackerHolds
		for _, l := range s.Links {
			key := strings.TrimSpace(l.IssueKey)
			if !issueKeyPattern.MatchString(key) || len(key) > 255 {
				return nil, apperr.Invalidf("entry %d (%s/%s): invalid issueKey %q: want PROJECT-123", i, s.SpaceKey, s.Key, l.IssueKey)
			}
			rel := requirement.NormalizeRelationship(l.Relationship)
			switch {
			case rel == "":
				return nil, apperr.InvalidField("relationship", "entry %d (%s/%s): relationship is required", i, s.SpaceKey, s.Key)
			case len(rel) > 255:
				return nil, apperr.Invalidf("entry %d (%s/%s): relationship is longer than 255 characters", i, s.SpaceKey, s.Key)
			case requirement.HasControl(rel):
				return nil, apperr.InvalidField("relationship", "entry %d (%s/%s): relationship must not contain control characters", i, s.SpaceKey, s.Key)
			}
			link := requirement.IssueLink{ServiceID: serviceID, IssueKey: key, Relationship: rel}
			if !slices.ContainsFunc(out[j].Links, func(o requirement.IssueLink) bool { return sameLink(o, link) }) {
				out[j].Links = append(out[j].Links, link)
			}
		}
	}
	return out, nil
}

func sameLink(a, b requirement.IssueLink) bool {
	return a.ServiceID == b.ServiceID && strings.EqualFold(a.IssueKey, b.IssueKey) && a.Relationship == b.Relationship
}

// ReplaceLinks makes links the issue links the tracker of serviceID holds
// on r: the tracker's hold is added to those links (a link the page also
// holds keeps the page's hold) and taken from its other links of
// serviceID, and a link left with no hold goes. The links the page holds
// are never changed: the wiki is their master (a link a macro without
// serverId holds is the page's, whatever the tracker says). It reports
// whether r changed. The store derives the search index items to write and
// delete from r before and after, as the page indexing does.
//
// With whole (a tracker below version 5 sends its whole set), a link the
// page holds is the page's: it gets no tracker hold.
func ReplaceLinks(r *requirement.Requirement, serviceID string, links []requirement.IssueLink, whole bool) bool {
	next := make([]requirement.IssueLink, 0, len(r.Issues)+len(links))
	for _, l := range r.Issues {
		if l.ServiceID == serviceID {
			l.Tracker = false
			if !l.Page {
				continue
			}
		}
		next = append(next, l)
	}
	for _, l := range links {
		l.ServiceID, l.Tracker, l.Page = serviceID, true, false
		i := slices.IndexFunc(next, func(o requirement.IssueLink) bool { return sameLink(o, l) })
		if i >= 0 {
			next[i].Tracker = !whole || !next[i].Page
			continue
		}
		if whole && slices.ContainsFunc(next, func(o requirement.IssueLink) bool {
			return o.Page && o.ServiceID == "" && strings.EqualFold(o.IssueKey, l.IssueKey) && o.Relationship == l.Relationship
		}) {
			continue // a macro naming no integration holds it
		}
		next = append(next, l)
	}
	if slices.Equal(r.Issues, next) {
		return false
	}
	r.Issues = next
	return true
}
