// Package wiki holds the wiki side's page services: storing the pages pushed
// through the content API and indexing the requirements they define
// (statuses, reverse dependencies, outbound messages for the trackers), the
// status-only reindex, the page view that gathers flagged excerpts, and
// requirement reads. It computes what changes; the Store it consumes
// (implemented in shared/dynamo) writes it. It has no AWS types.
//
// docs/indexing.md describes the rules this package implements.
package wiki

import (
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Page is a wiki page as the content API stores it.
type Page struct {
	ID       string
	SpaceKey string
	Title    string
	// ParentID is the parent page ("" for a root page); it gives page trees
	// (baselines of a page with its children).
	ParentID string
	// Version starts at 1 and grows by one on every save.
	Version int
	// Body is the page in Confluence storage format.
	Body string
	// Keys are the keys of the requirements the page defines and owns (their
	// current row is ACTIVE with this page as origin), in page order. Page
	// view, reindex and search by page read them instead of an index.
	Keys      []string
	UpdatedAt time.Time
	UpdatedBy string
}

// Ref returns the page as a requirement origin.
func (p *Page) Ref() requirement.PageRef {
	return requirement.PageRef{PageID: p.ID, Title: p.Title}
}

// PageInput is what a client sends to store a page.
type PageInput struct {
	ID       string
	SpaceKey string
	Title    string
	ParentID string
	Body     string
}

// MaxTitle is the longest page title accepted, in characters.
const MaxTitle = 255

// contentIDPattern, with the length checked apart (a bounded repetition
// compiles to one copy per repetition at package init).
var contentIDPattern = regexp.MustCompile(`^[A-Za-z0-9]+$`)

// ValidContentID reports whether id is a valid page id: 1 to 64 letters or
// digits (Confluence page ids are numbers; letters are allowed for tests
// and other wikis).
func ValidContentID(id string) bool { return len(id) <= 64 && contentIDPattern.MatchString(id) }

// CheckContentID returns an invalid error naming the parameter when id is not
// a valid page id.
func CheckContentID(name, id string) error {
	if !ValidContentID(id) {
		return apperr.InvalidNamed(name, "invalid %s %q: use 1 to 64 letters or digits", name, clip(id))
	}
	return nil
}

// CheckSpaceKey returns an invalid error when s is not a valid space key.
func CheckSpaceKey(s string) error {
	if !requirement.ValidSpaceKey(s) {
		return apperr.InvalidNamed("spaceKey", "invalid spaceKey %q: use 1 to 255 letters, digits or _", clip(s))
	}
	return nil
}

// CheckKey returns an invalid error when k is not a valid requirement key.
func CheckKey(k string) error {
	if !requirement.ValidKey(k) {
		return apperr.InvalidNamed("key", "invalid requirement key %q: use 1 to 255 letters, digits, _, - or .", clip(k))
	}
	return nil
}

// Validate checks the input; the error names the first wrong field.
func (in *PageInput) Validate() error {
	if err := CheckContentID("contentId", in.ID); err != nil {
		return err
	}
	if in.SpaceKey == "" {
		return apperr.Invalidf("spaceKey is required")
	}
	if err := CheckSpaceKey(in.SpaceKey); err != nil {
		return err
	}
	if strings.TrimSpace(in.Title) == "" {
		return apperr.InvalidNamed("title", "title is required and must not be blank")
	}
	if !utf8.ValidString(in.Title) || utf8.RuneCountInString(in.Title) > MaxTitle {
		return apperr.InvalidNamed("title", "title must be valid UTF-8 of at most %d characters", MaxTitle)
	}
	if requirement.HasControl(in.Title) {
		return apperr.InvalidField("title", "must not contain control characters")
	}
	if requirement.HasControlExceptWhitespace(in.Body) {
		return apperr.InvalidField("body", "must not contain control characters other than tab, LF and CR")
	}
	if in.ParentID != "" {
		if err := CheckContentID("parentId", in.ParentID); err != nil {
			return err
		}
		if in.ParentID == in.ID {
			return apperr.InvalidNamed("parentId", "parentId must not be the page itself")
		}
	}
	return nil
}

// clip shortens a client value quoted in an error message.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	i := 80
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// KeyStatus is the state of one requirement after a page operation.
type KeyStatus struct {
	SpaceKey          string
	Key               string
	Status            requirement.Status
	HTMLNeedsUpdating bool
}

// Result is the outcome of storing or reindexing a page.
type Result struct {
	Page *Page
	// Requirements lists the requirements the page defines (ACTIVE), then
	// those the operation made DELETED or MOVED.
	Requirements []KeyStatus
	// Duplicates lists keys defined more than once on the page, or already
	// defined by another page of the space: only the first definition counts.
	Duplicates []string
	// Warnings name the issue macros whose serverId names no integration
	// of the wiki (or, without serverId, when there is none): their links
	// are kept as the page's, and reach the tracker once the integration
	// exists, without the page being saved again.
	Warnings []Warning
}

// Warning is something a page save wants its author to know that did not
// stop it.
type Warning struct {
	Key     string // the requirement it is about
	Message string
}
