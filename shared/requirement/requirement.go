// Package requirement holds the wiki's requirement entity: what a page defines,
// its status life cycle, its links to other requirements and to issues. It has
// no AWS types; stores live in shared/dynamo.
package requirement

import (
	"regexp"
	"strings"
)

// Status is the life-cycle state of a requirement row.
type Status string

// The statuses of CONTRACT.md §3.
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

// Property is one property cell of a requirement: a column header and a value.
// A property may appear several times (a multi-valued property).
type Property struct {
	Key   string
	Value string
}

// Dependency is a link from one requirement to another.
type Dependency struct {
	SpaceKey     string
	Key          string
	Relationship string
}

// IssueLink is a link between a requirement and an issue of a tracker.
type IssueLink struct {
	ServiceID    string // the integration's serviceId ("" when the macro named none)
	IssueKey     string
	Relationship string
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
	// NewSpaceKey and NewKey are set when Status is Moved.
	NewSpaceKey string
	NewKey      string
}

// GenericURL is the address of the requirement relative to the wiki's base.
func (r *Requirement) GenericURL() string {
	return "/requirements/" + r.SpaceKey + "/" + r.Key
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,255}$`)

// ValidKey reports whether k is a valid requirement key: letters, digits,
// '_', '-', '.', 1 to 255 characters.
func ValidKey(k string) bool { return keyPattern.MatchString(k) }

// ValidSpaceKey reports whether s is a valid space key: letters, digits and
// '_', 1 to 255 characters.
func ValidSpaceKey(s string) bool { return spacePattern.MatchString(s) }

var spacePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,255}$`)

// NormalizeRelationship turns a column header into a relationship name:
// trimmed, lower case, runs of white space turned into '_'.
func NormalizeRelationship(header string) string {
	return strings.Join(strings.Fields(strings.ToLower(header)), "_")
}
