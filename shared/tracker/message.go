package tracker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// MessageType is the type of a version-4 message (spec 2.5, §6).
type MessageType string

// The message types.
const (
	// Updated: the requirement's excerpt (newHtmlExcerpt) and URL (newUrl)
	// changed.
	Updated MessageType = "UPDATED"
	// Deleted: the requirement was deleted in the wiki.
	Deleted MessageType = "DELETED"
	// Moved: the requirement is now newSpaceKey/newKey.
	Moved MessageType = "MOVED"
	// LinkMessage: a wiki page links the requirement to issue objectKey with
	// relationship.
	LinkMessage MessageType = "LINK"
	// LinksMessage (version 5): Links is the whole set of the requirement's
	// PAGE links to this tracker, at version LinksVersion.
	LinksMessage MessageType = "LINKS"
)

// MaxMessageLinks is the most links one LINKS message may carry.
const MaxMessageLinks = 1000

// Estate is the only estate of an issue tracker (spec 2.5).
const Estate = "_"

// MaxBatch is the most messages one POST may carry.
const MaxBatch = 1000

// Message is one version-4 message from a wiki. Optional values are
// pointers, so that "absent" and "empty" differ.
type Message struct {
	ID             *int64 // arbitrary, local to the request; echoed in the result
	Type           MessageType
	AuthorKey      string
	AuthorName     string
	SpaceKey       string
	Key            string
	Baseline       int // 0 (null on the wire) for the current version
	Estate         string
	ObjectKey      string // issue key
	Relationship   string
	NewHTMLExcerpt *string
	NewSpaceKey    string
	NewKey         string
	NewBaseline    *int
	NewURL         *string
	// LINKS (version 5): the PAGE links (nil when absent, which is an
	// error), their version and the page defining them.
	Links        []IssueRelationship
	LinksVersion *int
	Origin       PageOrigin
	// UPDATED (version 5): which fields changed, and whether the change
	// makes the requirement's issue links suspect (suspect.go).
	ChangedFields []string
	Suspect       *bool
	// SuspectFields are the wiki's suspectCause fields of a suspect
	// UPDATED (changedFields when it sends none).
	SuspectFields []string
}

// Ref returns the requirement the message is about, on applink applinkID.
func (m Message) Ref(applinkID string) ReqRef {
	return ReqRef{ApplinkID: applinkID, SpaceKey: m.SpaceKey, Key: m.Key, Baseline: m.Baseline}
}

// Target returns where a MOVED message moves the requirement.
func (m Message) Target(applinkID string) ReqRef {
	t := ReqRef{ApplinkID: applinkID, SpaceKey: m.NewSpaceKey, Key: m.NewKey, Baseline: m.Baseline}
	if m.NewBaseline != nil {
		t.Baseline = *m.NewBaseline
	}
	return t
}

// Validate checks that m has what its type needs. A message that fails is
// answered ERROR on its own; the rest of its batch is still processed.
func (m Message) Validate(applinkID string) error {
	if m.ID == nil {
		return apperr.Invalidf("id is required")
	}
	switch m.Type {
	case Updated, Deleted, Moved, LinkMessage, LinksMessage:
	case "":
		return apperr.Invalidf("type is required: UPDATED, DELETED, MOVED, LINK or LINKS")
	default:
		return apperr.Invalidf("unknown message type %q: use UPDATED, DELETED, MOVED, LINK or LINKS", m.Type)
	}
	if m.Estate != "" && m.Estate != Estate {
		return apperr.Invalidf("estate %q is not the issue tracker's: want %q", m.Estate, Estate)
	}
	if err := m.Ref(applinkID).Validate(); err != nil {
		return err
	}
	if m.NewURL != nil {
		if err := validateGenericURL(*m.NewURL); err != nil {
			return err
		}
	}
	switch m.Type {
	case Updated:
		if m.NewHTMLExcerpt == nil && m.NewURL == nil {
			return apperr.Invalidf("an UPDATED message needs newHtmlExcerpt or newUrl")
		}
	case Moved:
		if err := validateName("newSpaceKey", m.NewSpaceKey); err != nil {
			return err
		}
		if err := validateName("newKey", m.NewKey); err != nil {
			return err
		}
		if m.NewBaseline != nil && *m.NewBaseline < 0 {
			return apperr.InvalidNamed("newBaseline", "invalid newBaseline %d", *m.NewBaseline)
		}
		if m.Target(applinkID) == m.Ref(applinkID) {
			return apperr.Invalidf("a MOVED message must name a new space or key")
		}
	case LinkMessage:
		if err := validateIssue("objectKey", m.ObjectKey); err != nil {
			return err
		}
		if err := validateName("relationship", m.Relationship); err != nil {
			return err
		}
	case LinksMessage:
		if m.Links == nil {
			return apperr.Invalidf("a LINKS message needs links (an empty array when the page links no issue)")
		}
		if len(m.Links) > MaxMessageLinks {
			return apperr.Invalidf("too many links: at most %d per LINKS message", MaxMessageLinks)
		}
		for i, l := range m.Links {
			if err := validateIssue("objectKey", l.IssueKey); err != nil {
				return apperr.Invalidf("links[%d]: %s", i, apperr.As(err).Message)
			}
			if err := validateName("relationship", l.Relationship); err != nil {
				return apperr.Invalidf("links[%d]: %s", i, apperr.As(err).Message)
			}
		}
		if m.LinksVersion == nil || *m.LinksVersion < 0 {
			return apperr.Invalidf("a LINKS message needs version, an integer >= 0")
		}
	}
	if len(m.Origin.PageID) > maxName || len(m.Origin.Title) > maxName*4 {
		return apperr.Invalidf("origin is too long")
	}
	return nil
}

// Fingerprint identifies the content of a message (everything but its id):
// two deliveries of the same message have the same fingerprint.
func (m Message) Fingerprint() string {
	h := sha256.New()
	opt := func(p *string) string {
		if p == nil {
			return "\x00"
		}
		return "\x01" + *p
	}
	nb := "\x00"
	if m.NewBaseline != nil {
		nb = strconv.Itoa(*m.NewBaseline)
	}
	for _, f := range []string{string(m.Type), m.AuthorKey, m.AuthorName, m.SpaceKey, m.Key,
		strconv.Itoa(m.Baseline), m.Estate, m.ObjectKey, m.Relationship, opt(m.NewHTMLExcerpt),
		m.NewSpaceKey, m.NewKey, nb, opt(m.NewURL)} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	if m.Type == LinksMessage {
		// Two LINKS differ by their set, version and origin.
		lv := "\x00"
		if m.LinksVersion != nil {
			lv = strconv.Itoa(*m.LinksVersion)
		}
		fmt.Fprintf(h, "%d:%s;%d:%s;%d:%s;%d;", len(lv), lv, len(m.Origin.PageID), m.Origin.PageID, len(m.Origin.Title), m.Origin.Title, len(m.Links))
		for _, l := range m.Links {
			fmt.Fprintf(h, "%d:%s;%d:%s;", len(l.IssueKey), l.IssueKey, len(l.Relationship), l.Relationship)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Result is the answer to one message.
type Result struct {
	ID      *int64
	Status  ResultStatus
	Message string
}

// ResultStatus is OK or ERROR.
type ResultStatus string

// The result statuses.
const (
	OK    ResultStatus = "OK"
	Error ResultStatus = "ERROR"
)

// The messages of an OK result.
const (
	Applied       = "applied"
	PendingNotice = "pending"
)
