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
)

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
	case Updated, Deleted, Moved, LinkMessage:
	case "":
		return apperr.Invalidf("type is required: UPDATED, DELETED, MOVED or LINK")
	default:
		return apperr.Invalidf("unknown message type %q: use UPDATED, DELETED, MOVED or LINK", m.Type)
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
			return apperr.Invalidf("invalid newBaseline %d", *m.NewBaseline)
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
