package requirement

import (
	"slices"
	"strconv"
	"strings"
)

// ID names one requirement row: the current version (Baseline 0) or its
// archived copy in baseline Baseline. It carries no tenant: every store call
// takes the tenant apart.
//
// Keys are unique in a space ignoring case, so an ID is compared, used as a
// map key and stored in its folded form: build it with NewID or
// Requirement.ID, or fold one built from input with Fold. Nothing else
// upper-cases keys or joins them into strings.
type ID struct {
	SpaceKey string
	Key      string
	Baseline int
}

// FoldKey is the one case-folding rule of requirement keys: "req-1" and
// "REQ-1" name the same requirement.
func FoldKey(key string) string { return strings.ToUpper(key) }

// NewID returns the folded ID of a row.
func NewID(space, key string, baseline int) ID {
	return ID{SpaceKey: space, Key: FoldKey(key), Baseline: baseline}
}

// Fold returns id with its key folded: the form IDs are compared in.
func (id ID) Fold() ID {
	id.Key = FoldKey(id.Key)
	return id
}

// Current returns the ID of the current row of id's requirement.
func (id ID) Current() ID {
	id.Baseline = 0
	return id
}

// String names the row for messages: "SPACE/KEY", with "@<baseline>" for
// an archived copy.
func (id ID) String() string {
	if id.Baseline > 0 {
		return id.SpaceKey + "/" + id.Key + "@" + strconv.Itoa(id.Baseline)
	}
	return id.SpaceKey + "/" + id.Key
}

// ID returns the folded ID of r.
func (r *Requirement) ID() ID { return NewID(r.SpaceKey, r.Key, r.Baseline) }

// Target returns the folded ID of the current row d points at.
func (d Dependency) Target() ID { return NewID(d.SpaceKey, d.Key, 0) }

// Clone returns a deep copy of r: its slices are its own.
func (r *Requirement) Clone() *Requirement {
	if r == nil {
		return nil
	}
	c := *r
	c.Properties = slices.Clone(r.Properties)
	c.Dependencies = slices.Clone(r.Dependencies)
	c.ReverseDependencies = slices.Clone(r.ReverseDependencies)
	c.Issues = slices.Clone(r.Issues)
	c.Suspects = slices.Clone(r.Suspects)
	return &c
}
