package diff

import (
	"cmp"
	"slices"
	"strings"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Field names of a Change (docs/change-analysis.md): the fixed ones, and a
// property's name after "@" (a page property) or "ext@" (an external one).
const (
	FieldText         = "text"
	FieldStatus       = "status"
	FieldOrigin       = "origin"
	FieldDependencies = "dependencies"
	FieldIssues       = "issues"
	pagePrefix        = "@"
	externalPrefix    = "ext@"
)

// Value is one side of a field's change. The zero Value is absent (the
// requirement is not on that side, or has no such property); which other
// member is meaningful depends on the field: Text for text, status and a
// property with one value, Values for a property with several (in page
// order), Page for origin, Dependencies and Issues for the links (sorted,
// possibly empty when Set).
type Value struct {
	Set          bool
	Text         string
	Values       []string
	Page         requirement.PageRef
	Dependencies []requirement.Dependency
	Issues       []requirement.IssueLink
}

// Field is the change of one field: its name and its old and new values.
type Field struct {
	Name     string
	From, To Value
}

// view is what the diff compares of one row, normalised so that equal
// requirements compare equal on both kinds of side.
type view struct {
	text, status string
	origin       requirement.PageRef
	page, ext    []property // by folded name
	deps         []requirement.Dependency
	issues       []requirement.IssueLink
}

// property is a property's values under one folded name, with the name's
// spelling of its first occurrence.
type property struct {
	name, folded string
	values       []string
}

// statusOf is the status a row shows in a diff: an archived copy was
// ACTIVE when its baseline froze it (only ACTIVE requirements are
// frozen), so it compares as ACTIVE with the current row it was copied
// from.
func statusOf(r *requirement.Requirement) requirement.Status {
	if r.Status == requirement.Archived {
		return requirement.Active
	}
	return r.Status
}

// viewOf normalises r. Dependencies are kept within r's space: a baseline
// keeps only the dependencies among its own copies (docs/baselines.md), so
// one across spaces can never be on a baseline's side and would show as a
// change of every current row that has one.
func viewOf(r *requirement.Requirement) view {
	v := view{text: r.Text, status: string(statusOf(r)), origin: r.Origin}
	v.page = groupProperties(r.PageProperties())
	v.ext = groupProperties(r.ExternalProperties())
	for _, d := range r.Dependencies {
		if d.SpaceKey != "" && d.SpaceKey != r.SpaceKey {
			continue
		}
		d.SpaceKey = r.SpaceKey
		v.deps = append(v.deps, d)
	}
	slices.SortFunc(v.deps, compareDeps)
	v.deps = slices.CompactFunc(v.deps, func(a, b requirement.Dependency) bool { return compareDeps(a, b) == 0 })
	for _, l := range r.Issues {
		v.issues = append(v.issues, requirement.IssueLink{ServiceID: l.ServiceID, IssueKey: l.IssueKey, Relationship: l.Relationship})
	}
	slices.SortFunc(v.issues, compareIssues)
	v.issues = slices.CompactFunc(v.issues, requirement.SameIssueLink)
	return v
}

func compareDeps(a, b requirement.Dependency) int {
	return cmp.Or(strings.Compare(requirement.FoldKey(a.Key), requirement.FoldKey(b.Key)), strings.Compare(a.Relationship, b.Relationship))
}

func compareIssues(a, b requirement.IssueLink) int {
	return cmp.Or(strings.Compare(a.ServiceID, b.ServiceID), strings.Compare(strings.ToUpper(a.IssueKey), strings.ToUpper(b.IssueKey)),
		strings.Compare(a.Relationship, b.Relationship))
}

// groupProperties gathers props by folded name (names are
// case-insensitive), in folded-name order, values in page order.
func groupProperties(props []requirement.Property) []property {
	var out []property
	for _, p := range props {
		folded := requirement.FoldPropertyName(p.Key)
		i := slices.IndexFunc(out, func(q property) bool { return q.folded == folded })
		if i < 0 {
			out = append(out, property{name: p.Key, folded: folded})
			i = len(out) - 1
		}
		out[i].values = append(out[i].values, p.Value)
	}
	slices.SortFunc(out, func(a, b property) int { return strings.Compare(a.folded, b.folded) })
	return out
}

// Compare returns the fields in which a and b differ, in a fixed order:
// text, status, origin, page properties and then external properties by
// folded name, dependencies, issues. Either may be nil (the requirement is
// not on that side): every field the other has is then a change from or
// to an absent value. Origins compare by page id (a page's new title is
// not a change of its requirements), dependencies by folded key and
// relationship, issue links by integration, issue key ignoring case and
// relationship (who holds a link is not compared), property names ignoring
// case, property values in page order.
func Compare(a, b *requirement.Requirement) []Field {
	var va, vb *view
	if a != nil {
		v := viewOf(a)
		va = &v
	}
	if b != nil {
		v := viewOf(b)
		vb = &v
	}
	var out []Field
	add := func(name string, from, to Value, equal bool) {
		if !equal {
			out = append(out, Field{Name: name, From: from, To: to})
		}
	}
	text := func(v *view, get func(*view) string) Value {
		if v == nil {
			return Value{}
		}
		return Value{Set: true, Text: get(v)}
	}
	getText := func(v *view) string { return v.text }
	getStatus := func(v *view) string { return v.status }
	if va == nil || vb == nil || va.text != vb.text {
		if va != nil && va.text != "" || vb != nil && vb.text != "" {
			add(FieldText, text(va, getText), text(vb, getText), false)
		}
	}
	if va == nil || vb == nil || va.status != vb.status {
		add(FieldStatus, text(va, getStatus), text(vb, getStatus), false)
	}
	origin := func(v *view) Value {
		if v == nil || v.origin.PageID == "" {
			return Value{}
		}
		return Value{Set: true, Page: v.origin}
	}
	oa, ob := origin(va), origin(vb)
	add(FieldOrigin, oa, ob, oa.Set == ob.Set && oa.Page.PageID == ob.Page.PageID)
	pick := func(v *view, ext bool) []property {
		switch {
		case v == nil:
			return nil
		case ext:
			return v.ext
		}
		return v.page
	}
	for _, ext := range []bool{false, true} {
		prefix := pagePrefix
		if ext {
			prefix = externalPrefix
		}
		pa, pb := pick(va, ext), pick(vb, ext)
		for _, name := range propertyNames(pa, pb) {
			from, to := propertyValue(pa, name), propertyValue(pb, name)
			add(prefix+name.name, from, to, slices.Equal(valuesOf(from), valuesOf(to)))
		}
	}
	deps := func(v *view) Value {
		if v == nil {
			return Value{}
		}
		return Value{Set: true, Dependencies: v.deps}
	}
	da, db := deps(va), deps(vb)
	add(FieldDependencies, da, db, (da.Set && db.Set || len(da.Dependencies)+len(db.Dependencies) == 0) &&
		slices.EqualFunc(da.Dependencies, db.Dependencies, func(x, y requirement.Dependency) bool { return compareDeps(x, y) == 0 }))
	issues := func(v *view) Value {
		if v == nil {
			return Value{}
		}
		return Value{Set: true, Issues: v.issues}
	}
	ia, ib := issues(va), issues(vb)
	add(FieldIssues, ia, ib, (ia.Set && ib.Set || len(ia.Issues)+len(ib.Issues) == 0) &&
		slices.EqualFunc(ia.Issues, ib.Issues, requirement.SameIssueLink))
	return out
}

// propertyNames merges the folded names of a and b, in folded order, with
// the spelling of b (the newer side) when both have one.
func propertyNames(a, b []property) []property {
	out := slices.Clone(b)
	for _, p := range a {
		if !slices.ContainsFunc(out, func(q property) bool { return q.folded == p.folded }) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(x, y property) int { return strings.Compare(x.folded, y.folded) })
	return out
}

// propertyValue is the value of the property named like name in props:
// absent, one text, or several values.
func propertyValue(props []property, name property) Value {
	i := slices.IndexFunc(props, func(p property) bool { return p.folded == name.folded })
	switch {
	case i < 0:
		return Value{}
	case len(props[i].values) == 1:
		return Value{Set: true, Text: props[i].values[0]}
	}
	return Value{Set: true, Values: props[i].values}
}

// valuesOf lists a property Value's values (none when absent).
func valuesOf(v Value) []string {
	switch {
	case !v.Set:
		return nil
	case v.Values != nil:
		return v.Values
	}
	return []string{v.Text}
}
