// Package tracker is the issue-tracker side of reqtrace: application links to
// wikis (with their mode and API version), links between issues and wiki
// requirements, the requirement excerpts the tracker keeps (once per
// requirement, so every linked issue shows the same text), the version-4
// messages a wiki sends, the resynchronisation of issues with the wiki, and
// the link dialog's search with automatic version negotiation.
//
// The package holds entities, validation and the Service; it declares the
// stores (ApplinkStore, LinkStore, PendingStore, TokenStore) and the
// WikiClient it consumes. It has no AWS or HTTP types: shared/dynamo
// implements the stores, shared/wikiclient the WikiClient, and the route
// groups in shared/httpapi/trackerapi and shared/httpapi/trackerlinks speak
// JSON. docs/tracker.md explains the behaviour and the decisions taken where
// the spec is silent.
package tracker

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/netpolicy"
	"github.com/reqtrace/reqtrace/shared/page"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Mode says what the tracker does with the messages of an application link
// (spec §3, "API mode of an application link").
type Mode string

// The modes.
const (
	// Auto applies messages when they arrive.
	Auto Mode = "AUTO"
	// Manual keeps messages pending until a sync covering their issues or
	// requirements applies them.
	Manual Mode = "MANUAL"
	// Disabled refuses messages (409), so the wiki keeps them queued.
	Disabled Mode = "DISABLED"
)

// ParseMode returns the mode named s. Names are exact and upper-case, as the
// spec writes them: "auto" is an unknown value (400), not a spelling of
// AUTO, so that every client sends the same wire value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Manual, Disabled:
		return m, nil
	}
	return "", apperr.Invalidf("unknown mode %q: use AUTO, MANUAL or DISABLED", s)
}

// The API versions the tracker supports. Version 0 (an integration without
// endpoint, spec §9) is meaningless for a tracker that is being called at its
// endpoint, so the tracker accepts 1 to MaxVersion.
//
// Version 5 (reqtrace's extension) adds the LINKS message, link holds and
// the tracker outbox; a new applink starts at DefaultVersion and moves to 5
// through the link dialog's negotiation or PUT .../version.
const (
	MinVersion     = 1
	MaxVersion     = 5
	DefaultVersion = 4
	// LinksVersion is the first version with LINKS messages, the 409 on
	// removing a PAGE link and the tracker outbox.
	LinksVersion = 5
)

// AcceptVersion returns the version the tracker accepts when asked for v:
// the highest it supports, at most v. A version below MinVersion is invalid.
func AcceptVersion(v int) (int, error) {
	if v < MinVersion {
		return 0, apperr.Invalidf("API version %d is not supported: the tracker supports versions %d to %d", v, MinVersion, MaxVersion)
	}
	return min(v, MaxVersion), nil
}

// Applink is an application link: the tracker's registration of one wiki.
type Applink struct {
	ID        string
	Name      string
	URL       string // the wiki's base URL, without trailing slash
	ServiceID string // the wiki's id for this tracker (its integration serviceId)
	Mode      Mode
	Version   int
	// WikiToken is the credential the tracker sends to the wiki (the wiki
	// integration's incomingToken). It is write-only: never returned or logged.
	WikiToken string
	// IncomingTokenHash is the hash of the credential the wiki uses to call
	// this tracker (an auth.Link principal with Scope = ID).
	IncomingTokenHash string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// LogValue keeps the wiki token out of logs.
func (a Applink) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", a.ID), slog.String("url", a.URL),
		slog.String("serviceId", a.ServiceID), slog.String("mode", string(a.Mode)), slog.Int("version", a.Version))
}

// Wiki returns where and how the tracker calls this applink's wiki.
func (a Applink) Wiki() WikiEndpoint { return WikiEndpoint{BaseURL: a.URL, Token: a.WikiToken} }

// ValidateApplinkID checks an applinkId: 1 to 64 letters, digits, '.',
// '_' or '-', and neither "." nor ".." (requirement.ValidLinkID).
func ValidateApplinkID(id string) error { return validateLinkID("applinkId", id) }

// validateLinkID checks an applinkId or serviceId (requirement.ValidLinkID);
// the 400 names field.
func validateLinkID(field, id string) error {
	if !requirement.ValidLinkID(id) {
		return apperr.InvalidField(field, "use 1 to 64 letters, digits, '.', '_' or '-', not \".\" or \"..\"")
	}
	return nil
}

// NormalizeURL checks that s is an absolute http or https URL without user
// info, query or fragment, and returns it without trailing slashes.
func NormalizeURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", apperr.InvalidNamed("url", "invalid url %q: want an absolute http or https URL such as https://wiki.example.com", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", apperr.InvalidNamed("url", "invalid url %q: the wiki's base URL has no user info, query or fragment", s)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	return strings.TrimRight(u.String(), "/"), nil
}

// checkTarget checks an applink url against the outbound policy
// (shared/netpolicy): never a link-local, unspecified, multicast or
// broadcast address, and no loopback or private one unless allowPrivate
// (ALLOW_PRIVATE_TARGETS). The error is a 400 naming the field. Calls are
// checked again when they are made, after DNS resolution (shared/outbound).
func checkTarget(u string, allowPrivate bool) error {
	if _, err := (netpolicy.Policy{AllowPrivate: allowPrivate}).ParseURL(u); err != nil {
		return apperr.InvalidField("url", "%q is refused: %s", u, err.Error())
	}
	return nil
}

// maxName is the longest key component (issue key, space key, requirement
// key, relationship) accepted.
const maxName = 255

// validateName checks one component of a link's identity. Components become
// parts of DynamoDB keys and wiki URLs, so '#', '/', spaces and control
// characters are refused; everything else is kept exactly (keys are
// case-sensitive on the tracker).
func validateName(field, s string) error {
	if s == "" {
		return apperr.InvalidNamed(field, "%s is required", field)
	}
	if len(s) > maxName || !utf8.ValidString(s) {
		return apperr.InvalidNamed(field, "invalid %s: at most %d bytes of UTF-8", field, maxName)
	}
	for _, r := range s {
		if r == '#' || r == '/' || r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return apperr.InvalidNamed(field, "invalid %s %q: '#', '/', '\\', spaces and control characters are not allowed", field, s)
		}
	}
	return nil
}

// issueKeyPattern is the shape of an issue key: a project key, '-' and a
// number (PROJ-123), as the wiki's links callback requires.
var issueKeyPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*-[0-9]+$`)

// ValidateIssueKey checks an issue key: PROJECT-123, at most 255 bytes.
func ValidateIssueKey(key string) error { return validateIssue("issueKey", key) }

func validateIssue(field, key string) error {
	if key == "" {
		return apperr.InvalidNamed(field, "%s is required", field)
	}
	if len(key) > maxName || !issueKeyPattern.MatchString(key) {
		return apperr.InvalidNamed(field, "invalid %s %q: want a project key, '-' and a number, such as PROJ-123", field, key)
	}
	return nil
}

// ReqRef identifies a wiki requirement from the tracker: the applink of its
// wiki, its space, its key and its baseline (0 for the current version).
type ReqRef struct {
	ApplinkID string
	SpaceKey  string
	Key       string
	Baseline  int
}

// String names r for messages: "wiki-1:DEMO/REQ-1", with "@<baseline>" for
// a baseline copy.
func (r ReqRef) String() string {
	if r.Baseline > 0 {
		return fmt.Sprintf("%s:%s/%s@%d", r.ApplinkID, r.SpaceKey, r.Key, r.Baseline)
	}
	return fmt.Sprintf("%s:%s/%s", r.ApplinkID, r.SpaceKey, r.Key)
}

// Validate checks every component of r.
func (r ReqRef) Validate() error {
	if err := ValidateApplinkID(r.ApplinkID); err != nil {
		return err
	}
	if err := validateName("spaceKey", r.SpaceKey); err != nil {
		return err
	}
	if err := validateName("key", r.Key); err != nil {
		return err
	}
	if r.Baseline < 0 {
		return apperr.InvalidNamed("baseline", "invalid baseline %d: null for the current version, or a positive number", r.Baseline)
	}
	return nil
}

// Link is a link between an issue and a requirement. Its identity is all of
// its fields, so the same link can never exist twice.
type Link struct {
	IssueKey     string
	Req          ReqRef
	Relationship string
}

// Validate checks every component of l.
func (l Link) Validate() error {
	if err := ValidateIssueKey(l.IssueKey); err != nil {
		return err
	}
	if err := l.Req.Validate(); err != nil {
		return err
	}
	return validateName("relationship", l.Relationship)
}

// Requirement is what the tracker keeps of a wiki requirement, once for all
// the issues linked to it.
type Requirement struct {
	Ref         ReqRef
	HTMLExcerpt string // sanitized HTML
	GenericURL  string // relative to the wiki's base URL
	// Deleted is set when the wiki deleted the requirement: its links are
	// kept, so that issue users see which links need attention.
	Deleted   bool
	UpdatedAt time.Time
	// Suspects mark the requirement's links to some issues suspect: the
	// wiki reported a change of it (an UPDATED message with "suspect":
	// true) since those issues' users last reviewed it.
	Suspects []SuspectMark
}

// SuspectMark says that the links of a requirement to issue IssueKey are
// suspect since Since, because of a change of the requirement in Fields.
type SuspectMark struct {
	IssueKey string // upper case
	Since    time.Time
	Fields   []string
}

// SuspectOf returns the mark of the requirement's links to issueKey, nil
// when they are not suspect.
func (r Requirement) SuspectOf(issueKey string) *SuspectMark {
	for i := range r.Suspects {
		if strings.EqualFold(r.Suspects[i].IssueKey, issueKey) {
			return &r.Suspects[i]
		}
	}
	return nil
}

// LinkView is a link with its requirement's excerpt, as issue users see it.
type LinkView struct {
	Link
	Holds       Holds
	HTMLExcerpt string
	GenericURL  string
	Deleted     bool
	// Suspect is the link's suspect mark, nil when it is not suspect.
	Suspect *SuspectMark
}

// LinkInput is a link to create, with the requirement data the client sends
// (spec 2.6). Nil excerpt or URL leaves the stored value unchanged.
type LinkInput struct {
	Link
	HTMLExcerpt *string
	GenericURL  *string
}

// maxExcerpt bounds a stored excerpt (after sanitizing), far below
// DynamoDB's 400 KB item limit.
const maxExcerpt = 200_000

func (s *Service) sanitizeExcerpt(html string) (string, error) {
	clean := s.sanitize(html)
	if len(clean) > maxExcerpt {
		return "", apperr.Invalidf("htmlExcerpt is too large: %d bytes after sanitizing, at most %d", len(clean), maxExcerpt)
	}
	return clean, nil
}

// validateGenericURL accepts what page.SafeLink does: a URL relative to the
// wiki ("/requirements/…") or an absolute http(s) URL. The tracker's UI
// renders it as a link, so javascript: and other schemes, protocol-relative
// addresses (//host, /\host) and user info are refused, in any encoding.
func validateGenericURL(s string) error {
	if s == "" {
		return nil
	}
	if len(s) > page.MaxLink {
		return apperr.Invalidf("genericUrl is too long: at most %d bytes", page.MaxLink)
	}
	if !page.SafeLink(s) {
		return apperr.InvalidNamed("genericUrl", "invalid genericUrl %q: want a path relative to the wiki or an http(s) URL", s)
	}
	return nil
}
