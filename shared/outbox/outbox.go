// Package outbox holds the outbound message entity: a change a tracker must
// hear about, written in the same commit as the change itself, right after
// it (an outbox), and then delivered by the sync function. The
// DynamoDB item is the record of truth; SQS only carries a reference to it.
package outbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Type is the message type of spec 2.5 / §6.
type Type string

// The message types.
const (
	Updated Type = "UPDATED" // a requirement's excerpt or url changed
	Deleted Type = "DELETED" // a requirement is no longer defined
	Moved   Type = "MOVED"   // a requirement's page moved to another space
	Link    Type = "LINK"    // a page links a requirement to an issue
	// Links (API version 5) carries the complete set of a requirement's
	// PAGE links to one integration: the tracker makes that requirement's
	// PAGE links exactly this set and never touches its TRACKER links.
	Links Type = "LINKS"
)

// LinkRef is one issue link of a LINKS message.
type LinkRef struct {
	IssueKey     string // objectKey on the wire
	Relationship string
}

// State is the delivery state of a message.
type State string

// The states.
const (
	New  State = "NEW"
	Done State = "DONE"
)

// Message is one outbound message for one integration.
type Message struct {
	ID             string // sortable: creation time then randomness
	ServiceID      string // the integration it goes to
	State          State
	CreatedAt      time.Time
	Type           Type
	AuthorKey      string
	AuthorName     string
	SpaceKey       string
	Key            string
	Baseline       int // 0 = current version (null on the wire)
	ObjectKey      string
	Relationship   string
	NewHTMLExcerpt string
	NewSpaceKey    string
	NewKey         string
	NewBaseline    int
	NewURL         string
	// Links is the PAGE link set of a LINKS message (empty: none).
	Links []LinkRef
	// LinksVersion grows with every change of the requirement's PAGE links
	// (LINKS "version"): a tracker ignores a LINKS older than the last one
	// it applied for the requirement.
	LinksVersion int64
	// ChangedFields are the fields an UPDATED message reports as changed
	// at version 5 ("text", "properties", "dependencies", "status").
	ChangedFields []string
	// SuspectFields are the fields of the change that made the
	// requirement's links suspect (a version-5 UPDATED message then says
	// "suspect": true); none when it made none.
	SuspectFields []string
	// OriginPageID and OriginTitle name the page that defines the
	// requirement (LINKS "origin"), so that a tracker can tell its users
	// where to edit a PAGE link.
	OriginPageID string
	OriginTitle  string
	LastResponse string
	Enqueued     bool // a reference reached SQS
}

// NewID returns a message id that sorts by creation time: 16 hex digits of
// nanoseconds, then 8 random hex digits.
func NewID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x%s", now.UnixNano(), hex.EncodeToString(b[:]))
}

// IDPrefix returns the prefix of the ids of messages created at t: every
// id of a message created before t sorts below it.
func IDPrefix(t time.Time) string { return fmt.Sprintf("%016x", t.UnixNano()) }

// LinksOf returns the LINKS message that tells integration serviceID the
// page links of r as they are now: those naming it and those of macros
// naming none, each issue and relationship once.
func LinksOf(actor string, r *requirement.Requirement, serviceID string) Message {
	m := Message{
		ServiceID: serviceID, State: New, Type: Links, AuthorKey: actor, AuthorName: actor,
		SpaceKey: r.SpaceKey, Key: r.Key, LinksVersion: r.LinksVersion,
		OriginPageID: r.Origin.PageID, OriginTitle: r.Origin.Title,
		NewHTMLExcerpt: r.HTMLExcerpt, NewURL: r.GenericURL(), Links: []LinkRef{},
	}
	for _, l := range r.PageLinksFor(serviceID) {
		m.Links = append(m.Links, LinkRef{IssueKey: l.IssueKey, Relationship: l.Relationship})
	}
	return m
}

// LinkOf returns the version-4 LINK message of one issue link of r.
func LinkOf(actor string, r *requirement.Requirement, serviceID string, l requirement.IssueLink) Message {
	return Message{
		ServiceID: serviceID, State: New, Type: Link, AuthorKey: actor, AuthorName: actor,
		SpaceKey: r.SpaceKey, Key: r.Key, ObjectKey: l.IssueKey, Relationship: l.Relationship,
		NewHTMLExcerpt: r.HTMLExcerpt, NewURL: r.GenericURL(),
		OriginPageID: r.Origin.PageID, OriginTitle: r.Origin.Title,
	}
}
