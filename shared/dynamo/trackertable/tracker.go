// Package trackertable implements the tracker's stores on the TrackerTable:
// the issue-tracker side's application links, issue links,
// requirement excerpts and pending messages. Key design (every pk starts
// with "T#<tenant>#"; "-" is the baseline of a current version):
//
//	applink      pk T#t#APPLINK                       sk <applinkId>
//	link         pk T#t#ISSUE#<issueKey>              sk L#<applinkId>#<space>#<key>#<baseline|->#<relationship>
//	             gsi1pk T#t#REQ#<applinkId>#<space>#<key>#<baseline|->   gsi1sk <issueKey>#<relationship>
//	requirement  pk T#t#REQ#<applinkId>#<space>#<key>#<baseline|->     sk REQ
//	             gsi1pk T#t#AREQ#<applinkId>   gsi1sk <applinkId>#<space>#<key>#<baseline|->
//	issue lease  pk T#t#ISSUE#<issueKey>              sk LOCK
//	outbox mark  pk T#t#TOUTBOX                       sk <applinkId>#<space>#<key>#<baseline|->
//	             gsi1pk TOUTBOX#PENDING#<nn> (sparse, by tenant)  gsi1sk <tenant>#<sk>
//	pending      pk T#t#PENDING                       sk <applinkId>#<message fingerprint>
//
// The links of an issue are one Query of its partition. A requirement item
// holds the excerpt and the link state (PAGE and TRACKER sets, LINKS
// version, origin page, rev); link items mirror it (holds) and are written
// in the same transactions, conditional on rev. gsi1 (links by requirement)
// is read only for requirements whose state was never written, and (an
// applink's requirements) only when the applink is deleted. A link's key
// holds its whole identity, so the same link can never be stored twice.
// Key components never contain '#' (the tracker package refuses it), so
// keys cannot collide.
package trackertable

import (
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// TrackerStore keeps the tracker's data in the TrackerTable.
type TrackerStore struct {
	db    dynamo.API
	table string
}

var (
	_ tracker.ApplinkStore   = (*TrackerStore)(nil)
	_ tracker.LinkStore      = (*TrackerStore)(nil)
	_ tracker.PendingStore   = (*TrackerStore)(nil)
	_ tracker.IssueLockStore = (*TrackerStore)(nil)
	_ tracker.OutboxStore    = (*TrackerStore)(nil)
)

// NewTrackerStore returns a TrackerStore on table.
func NewTrackerStore(db dynamo.API, table string) *TrackerStore {
	return &TrackerStore{db: db, table: table}
}
