// Package requirement holds the wiki's requirement entity: what a page defines,
// its status life cycle, its links to other requirements and to issues. It has
// no AWS types; stores live in shared/dynamo/wikitable. A requirement row is
// named by one ID (id.go), with one case-folding rule for keys.
package requirement

import (
	"slices"
	"strings"
)

// Status is the life-cycle state of a requirement row.
type Status string

// The statuses of the wiki API (shared/openapi/wiki.yaml).
const (
	Active   Status = "ACTIVE"
	Deleted  Status = "DELETED"
	Moved    Status = "MOVED"
	Archived Status = "ARCHIVED"
)

// ParseStatus returns the status named s (case-insensitive).
func ParseStatus(s string) (Status, bool) {
	switch st := Status(strings.ToUpper(s)); st {
	case Active, Deleted, Moved, Archived:
		return st, true
	}
	return "", false
}

// Property is one property of a requirement: a name and a value. A page
// property (Inline) is a cell of the requirement's row, named by its column
// header, and may appear several times (a multi-valued property); an
// external property (External) is stored by the service, set through the
// API, and has one value per name (external.go).
type Property struct {
	Key   string
	Value string
	Type  PropertyType
}

// PropertyType says where a property comes from. The zero value is Inline.
type PropertyType int

// The property types; their API names are "INLINE" and "EXTERNAL".
const (
	// Inline is a property of the page: a cell of the requirement's row.
	Inline PropertyType = iota
	// External is a property the service stores, set through the external
	// properties API, not on the page.
	External
)

// String returns the API name of the type: INLINE or EXTERNAL.
func (t PropertyType) String() string {
	if t == External {
		return "EXTERNAL"
	}
	return "INLINE"
}

// Dependency is a link from one requirement to another.
type Dependency struct {
	SpaceKey     string
	Key          string
	Relationship string
}

// IssueLink is a link between a requirement and an issue of a tracker.
//
// A link is held by the page (an issue macro in the requirement's row), by
// the tracker (made through the tracker's issue links API and reported by
// its links callback), or by both; it exists while either holds it. Each
// side is the master of its own holds (docs/integrations.md, "Who owns a
// link").
type IssueLink struct {
	ServiceID    string // the integration's serviceId ("" when the macro named none)
	IssueKey     string
	Relationship string
	// Page and Tracker are the holds.
	Page    bool
	Tracker bool
}

// Origin says who made the link, as the API shows it: PAGE while the page
// holds it, else TRACKER.
func (l IssueLink) Origin() Origin {
	if l.Page {
		return OriginPage
	}
	return OriginTracker
}

// Origin is who made an issue link.
type Origin string

// The origins an issue link shows (docs/integrations.md, "Who owns a link").
const (
	OriginPage    Origin = "PAGE"
	OriginTracker Origin = "TRACKER"
)

// SameIssueLink reports whether a and b are the same link (integration,
// issue key ignoring case, relationship), whatever their holds.
func SameIssueLink(a, b IssueLink) bool {
	return a.ServiceID == b.ServiceID && strings.EqualFold(a.IssueKey, b.IssueKey) && a.Relationship == b.Relationship
}

// PageLinksFor returns the links the page holds that go to integration
// serviceID: those naming it and those of macros naming none (which go to
// every integration), in row order, each issue and relationship once.
func (r *Requirement) PageLinksFor(serviceID string) []IssueLink {
	var out []IssueLink
	for _, l := range r.Issues {
		if !l.Page || (l.ServiceID != serviceID && l.ServiceID != "") {
			continue
		}
		if !slices.ContainsFunc(out, func(o IssueLink) bool {
			return strings.EqualFold(o.IssueKey, l.IssueKey) && o.Relationship == l.Relationship
		}) {
			out = append(out, l)
		}
	}
	return out
}

// PageRef names a page.
type PageRef struct {
	PageID string
	Title  string
}

// Requirement is one requirement row: the current version (Baseline == 0) or
// an archived copy in a baseline (Baseline > 0, Status Archived).
type Requirement struct {
	SpaceKey          string
	Key               string
	Baseline          int // 0 = the current version
	Status            Status
	Text              string
	HTMLExcerpt       string
	HTMLNeedsUpdating bool
	Properties        []Property
	Origin            PageRef
	Dependencies      []Dependency
	// ReverseDependencies are the requirements that reference this one.
	ReverseDependencies []Dependency
	Issues              []IssueLink
	// Suspects are the suspect marks of the requirement's dependencies and
	// issue links (suspect.go).
	Suspects []Suspect
	// LinksVersion grows by one with every change of the links the page
	// holds (the version of the LINKS messages sent to trackers).
	LinksVersion int64
	// NewSpaceKey and NewKey are set when Status is Moved.
	NewSpaceKey string
	NewKey      string
}

// GenericURL is the address of the requirement relative to the wiki's base.
func (r *Requirement) GenericURL() string {
	return "/requirements/" + r.SpaceKey + "/" + r.Key
}

// ValidKey reports whether k is a valid requirement key: letters, digits,
// '_', '-', '.', 1 to 255 characters.
func ValidKey(k string) bool { return validChars(k, 255, "_-.") }

// ValidSpaceKey reports whether s is a valid space key: letters, digits and
// '_', 1 to 255 characters.
func ValidSpaceKey(s string) bool { return validChars(s, 255, "_") }

// validChars reports whether s has 1 to max ASCII letters, digits and
// characters of extra. (A regular expression with a {1,255} repetition
// compiles to a program of 255 copies at package init: half a megabyte and
// milliseconds of every cold start.)
func validChars(s string, max int, extra string) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// NormalizeRelationship turns a column header into a relationship name:
// trimmed, lower case, runs of white space turned into '_'.
func NormalizeRelationship(header string) string {
	return strings.Join(strings.Fields(strings.ToLower(header)), "_")
}
