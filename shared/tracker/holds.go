package tracker

import (
	"cmp"
	"maps"
	"slices"
)

// Holds says who holds a link: a link exists while at least one side holds
// it ("origin"). The wiki is the master of PAGE holds (an issue
// macro in the requirement's row on a page; LINK and LINKS messages), the
// tracker of TRACKER holds (its issuelinks API).
type Holds uint8

// The holds.
const (
	PageHold Holds = 1 << iota
	TrackerHold
)

// The origins a link shows.
const (
	OriginPage    = "PAGE"
	OriginTracker = "TRACKER"
)

// Origin is "PAGE" when the page holds the link, else "TRACKER".
func (h Holds) Origin() string {
	if h&PageHold != 0 {
		return OriginPage
	}
	return OriginTracker
}

// HeldLink is a stored link with its holds.
type HeldLink struct {
	Link
	Holds Holds
}

// PageOrigin is the wiki page that defines a requirement's PAGE links, as
// the last LINKS message named it. Both fields may be empty (unknown).
type PageOrigin struct {
	PageID string
	Title  string
}

// LinkState is everything the tracker knows about the links of one
// requirement: the issues linked by the page (Page) and by the tracker
// (Tracker), the version of the last LINKS message applied (-1: none) and
// the page that defines the PAGE links.
type LinkState struct {
	Ref     ReqRef
	Page    map[IssueRelationship]bool
	Tracker map[IssueRelationship]bool
	Version int
	Origin  PageOrigin
	// Rev is the store's revision of this state (0: never written as a
	// state); writes are conditional on it.
	Rev int64
}

// EmptyLinkState is the state of a requirement without links.
func EmptyLinkState(ref ReqRef) LinkState {
	return LinkState{Ref: ref, Page: map[IssueRelationship]bool{}, Tracker: map[IssueRelationship]bool{}, Version: -1}
}

// Clone returns a deep copy of st.
func (st LinkState) Clone() LinkState {
	c := st
	c.Page, c.Tracker = maps.Clone(st.Page), maps.Clone(st.Tracker)
	if c.Page == nil {
		c.Page = map[IssueRelationship]bool{}
	}
	if c.Tracker == nil {
		c.Tracker = map[IssueRelationship]bool{}
	}
	return c
}

// Holds returns the holds of the link to issue rel.
func (st LinkState) Holds(rel IssueRelationship) Holds {
	var h Holds
	if st.Page[rel] {
		h |= PageHold
	}
	if st.Tracker[rel] {
		h |= TrackerHold
	}
	return h
}

// Set gives the link to rel exactly the holds h.
func (st *LinkState) Set(rel IssueRelationship, h Holds) {
	setMember(st.Page, rel, h&PageHold != 0)
	setMember(st.Tracker, rel, h&TrackerHold != 0)
}

func setMember(m map[IssueRelationship]bool, rel IssueRelationship, in bool) {
	if in {
		m[rel] = true
	} else {
		delete(m, rel)
	}
}

// Links returns every link of the requirement with its holds, sorted.
func (st LinkState) Links() []HeldLink {
	var out []HeldLink
	for rel := range st.all() {
		out = append(out, HeldLink{Link: Link{IssueKey: rel.IssueKey, Req: st.Ref, Relationship: rel.Relationship}, Holds: st.Holds(rel)})
	}
	slices.SortFunc(out, func(a, b HeldLink) int { return compareLinks(a.Link, b.Link) })
	return out
}

func (st LinkState) all() map[IssueRelationship]bool {
	all := maps.Clone(st.Page)
	if all == nil {
		all = map[IssueRelationship]bool{}
	}
	maps.Copy(all, st.Tracker)
	return all
}

// sameLinks reports whether a and b hold the same links with the same
// holds, version and origin.
func sameLinks(a, b LinkState) bool {
	return maps.Equal(a.Page, b.Page) && maps.Equal(a.Tracker, b.Tracker) && a.Version == b.Version && a.Origin == b.Origin
}

// sortedRels returns the members of a set, sorted.
func sortedRels(m map[IssueRelationship]bool) []IssueRelationship {
	out := make([]IssueRelationship, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b IssueRelationship) int {
		return cmp.Or(cmp.Compare(a.IssueKey, b.IssueKey), cmp.Compare(a.Relationship, b.Relationship))
	})
	return out
}

// LinkWrite changes one requirement's link state from Old (as read) to New.
type LinkWrite struct {
	Old, New LinkState
	// Mark marks the requirement dirty for the tracker outbox (its TRACKER
	// set must reach the wiki).
	Mark bool
}
