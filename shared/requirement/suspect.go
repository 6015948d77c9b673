package requirement

import (
	"slices"
	"strings"
	"time"
)

// Suspect marks the links of a requirement to one target as suspect: its
// dependencies on the requirement Target (then IssueKey is "") or its issue
// links to the issue IssueKey (then Target is zero), because the target
// changed in Fields (names of the admin setting suspectFields) at Since.
// A mark outlives nothing: it matches a link only while the link exists,
// and clearing removes it (docs/change-analysis.md, "Suspect links").
type Suspect struct {
	Target   ID     // folded, current version
	IssueKey string // upper case
	Since    time.Time
	Fields   []string
	// Page and Version name the operation that made the mark: the page
	// saved (or deleted) and the version it wrote. The recovery of a page
	// whose operation failed drops the marks it made (docs/change-analysis.md).
	Page    string
	Version int
}

// MadeAfter reports whether the mark was made by an operation on page
// after its version (a failed one, when version is the stored one).
func (m Suspect) MadeAfter(page string, version int) bool {
	return m.Page == page && m.Version > version
}

// DefaultSuspectFields are the fields whose change makes links suspect when
// the admin never set suspectFields.
var DefaultSuspectFields = []string{"text", "properties"}

// ValidSuspectField reports whether f may be named in suspectFields: text,
// properties, dependencies, status, or "@Name" for one property.
func ValidSuspectField(f string) bool {
	switch f {
	case "text", "properties", "dependencies", "status":
		return true
	}
	name, ok := strings.CutPrefix(f, "@")
	return ok && strings.TrimSpace(name) != "" && !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// SuspectCause returns the fields among fields (suspectFields) in which n
// differs from old, in the order of fields; none when either is nil.
func SuspectCause(old, n *Requirement, fields []string) []string {
	if old == nil || n == nil {
		return nil
	}
	var out []string
	for _, f := range fields {
		changed := false
		switch f {
		case "text":
			changed = old.Text != n.Text || old.HTMLExcerpt != n.HTMLExcerpt
		case "properties":
			changed = !slices.Equal(old.Properties, n.Properties)
		case "dependencies":
			changed = !slices.Equal(old.Dependencies, n.Dependencies)
		case "status":
			changed = old.Status != n.Status
		default:
			name, ok := strings.CutPrefix(f, "@")
			changed = ok && !slices.Equal(old.PropertyValues(name), n.PropertyValues(name))
		}
		if changed && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// PropertyValues returns the values of the properties named name (ignoring
// case), in row order.
func (r *Requirement) PropertyValues(name string) []string {
	var out []string
	for _, p := range r.Properties {
		if strings.EqualFold(p.Key, name) {
			out = append(out, p.Value)
		}
	}
	return out
}

// DependencySuspect returns the mark of the dependency d, nil when it is
// not suspect.
func (r *Requirement) DependencySuspect(d Dependency) *Suspect {
	t := d.Target()
	for i := range r.Suspects {
		if r.Suspects[i].IssueKey == "" && r.Suspects[i].Target == t {
			return &r.Suspects[i]
		}
	}
	return nil
}

// IssueSuspect returns the mark of the issue link l, nil when it is not
// suspect.
func (r *Requirement) IssueSuspect(l IssueLink) *Suspect {
	k := strings.ToUpper(l.IssueKey)
	for i := range r.Suspects {
		if r.Suspects[i].IssueKey == k {
			return &r.Suspects[i]
		}
	}
	return nil
}

// IsSuspect reports whether one of r's dependencies or issue links is
// suspect (the query's `suspect IS TRUE`).
func (r *Requirement) IsSuspect() bool {
	for _, d := range r.Dependencies {
		if r.DependencySuspect(d) != nil {
			return true
		}
	}
	for _, l := range r.Issues {
		if r.IssueSuspect(l) != nil {
			return true
		}
	}
	return false
}

// MergeSuspects returns the marks of a and b with one mark per target: the
// earliest Since, the union of the fields; sorted, nil when none. Marks are
// added without reading the row (a set member each), so a row may hold
// several for one target until it is written again.
func MergeSuspects(a, b []Suspect) []Suspect {
	var out []Suspect
	for _, m := range slices.Concat(a, b) {
		i := slices.IndexFunc(out, func(o Suspect) bool { return o.Target == m.Target && o.IssueKey == m.IssueKey })
		if i < 0 {
			m.Fields = slices.Clone(m.Fields)
			out = append(out, m)
			continue
		}
		if m.Since.Before(out[i].Since) {
			out[i].Since, out[i].Page, out[i].Version = m.Since, m.Page, m.Version
		}
		for _, f := range m.Fields {
			if !slices.Contains(out[i].Fields, f) {
				out[i].Fields = append(out[i].Fields, f)
			}
		}
	}
	slices.SortFunc(out, func(x, y Suspect) int {
		return strings.Compare(x.Target.SpaceKey+"/"+x.Target.Key+"#"+x.IssueKey, y.Target.SpaceKey+"/"+y.Target.Key+"#"+y.IssueKey)
	})
	return out
}

// KeepLiveSuspects returns the marks of r that match one of its current
// dependencies or issue links, merged: a link removed takes its mark along.
func (r *Requirement) KeepLiveSuspects() []Suspect {
	live := slices.DeleteFunc(slices.Clone(r.Suspects), func(m Suspect) bool {
		if m.IssueKey != "" {
			return !slices.ContainsFunc(r.Issues, func(l IssueLink) bool { return strings.EqualFold(l.IssueKey, m.IssueKey) })
		}
		return !slices.ContainsFunc(r.Dependencies, func(d Dependency) bool { return d.Target() == m.Target })
	})
	return MergeSuspects(live, nil)
}

// SameSuspects reports whether a and b hold the same marks.
func SameSuspects(a, b []Suspect) bool {
	return slices.EqualFunc(MergeSuspects(a, nil), MergeSuspects(b, nil), func(x, y Suspect) bool {
		return x.Target == y.Target && x.IssueKey == y.IssueKey && x.Since.Equal(y.Since) && slices.Equal(x.Fields, y.Fields) &&
			x.Page == y.Page && x.Version == y.Version
	})
}
