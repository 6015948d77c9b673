// Package baseline holds the wiki's baselines: frozen, numbered copies of
// the ACTIVE requirements of a space (spec §2.2, §4.1; the wiki API (shared/openapi/wiki.yaml)).
//
// A baseline is created by freezing: the selected requirements are copied
// into archived copies (status ARCHIVED, Baseline = the number) that keep
// only the dependencies whose target is frozen in the same baseline, and
// the baseline record is written last, so that a baseline exists exactly
// when its record does. Numbers are sequential per space and never reused.
// docs/baselines.md describes the endpoints, the freeze algorithm, the
// visibility rule for searches and the measured limits.
//
// The package has no AWS types: Store and Source are implemented by
// shared/wikitable.BaselineStore.
package baseline

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Limits of the baseline fields and sizes.
const (
	// MaxNumber is the highest baseline number: numbers are 8-digit sort keys.
	MaxNumber = 99999999
	// MaxName is the longest name, in characters (a page title's limit).
	MaxName = 255
	// MaxLabel is the longest label, in characters.
	MaxLabel = 255
	// MaxRequirements is the most requirements one baseline may hold
	// (the performance target). It bounds the memory of a freeze: every
	// selected row and its copy are held at once, so that dependencies can
	// be checked against the whole baseline.
	MaxRequirements = 100_000
)

// Baseline is one frozen baseline of a space.
type Baseline struct {
	SpaceKey string
	// Number is sequential per space, starting at 1, never reused.
	Number int
	// Name is given at creation; the baseline page's title is set to it.
	Name string
	// Label is free text, changeable; "" until set.
	Label string
	// CEO is the id of the baseline page: the page named by create, or the
	// page whose requirements create-instant froze.
	CEO string
	// Instant is true for a baseline made by create-instant (no baseline
	// page of its own: CEO is the frozen page, whose title is left alone).
	Instant   bool
	CreatedAt time.Time
	CreatedBy string
	// Count is the number of requirements frozen in the baseline (while
	// it is FREEZING: the copies written so far).
	Count int
	// Status is StatusComplete for a committed baseline, StatusFreezing
	// while its copies are being written (in the request or by the
	// background job), StatusFailed when the job gave up.
	Status string
	// Total is the number of requirements selected (FREEZING and FAILED).
	Total int
	// Message says why a FAILED freeze gave up.
	Message string
}

// The statuses of a baseline.
const (
	StatusComplete = "COMPLETE"
	StatusFreezing = "FREEZING"
	StatusFailed   = "FAILED"
)

// PageCount is one page holding requirements of a baseline: the origin
// page of frozen copies, with its title at freeze time.
type PageCount struct {
	PageID string
	Title  string
	Count  int
}

// PageLink is the link to the baseline page, relative to the wiki's base
// address (the address a Confluence wiki uses for a page id).
func (b *Baseline) PageLink() string {
	return "/pages/viewpage.action?pageId=" + b.CEO
}

// ParseNumber reads a {baseline} path segment: a decimal integer between 1
// and MaxNumber, else an invalid error.
func ParseNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxNumber || strings.HasPrefix(s, "+") {
		return 0, apperr.InvalidNamed("baseline", "invalid baseline %q: use a baseline number between 1 and %d", clip(s), MaxNumber)
	}
	return n, nil
}

// CheckName returns an invalid error unless name has 1 to MaxName
// characters and is not only white space.
func CheckName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return apperr.Invalidf("name is required: give the baseline a non-empty name")
	case utf8.RuneCountInString(name) > MaxName:
		return apperr.Invalidf("name is longer than %d characters", MaxName)
	case !utf8.ValidString(name) || requirement.HasControl(name):
		return apperr.InvalidField("name", "must be valid text without control characters")
	}
	return nil
}

// CheckLabel returns an invalid error unless label has at most MaxLabel
// characters of valid text without control characters ("" clears a label).
func CheckLabel(label string) error {
	switch {
	case utf8.RuneCountInString(label) > MaxLabel:
		return apperr.Invalidf("label is longer than %d characters", MaxLabel)
	case !utf8.ValidString(label) || requirement.HasControl(label):
		return apperr.InvalidField("label", "must be valid text without control characters")
	}
	return nil
}

// clip shortens a client value quoted in an error message.
func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
