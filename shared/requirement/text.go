package requirement

import "strings"

// Plain-text forms of a requirement's parts, one item per line: the cells
// of CSV exports and of the web pages' tables.

// PageText is "Title (pageId)".
func PageText(p PageRef) string {
	if p.PageID == "" {
		return ""
	}
	return p.Title + " (" + p.PageID + ")"
}

// DependenciesText is one "SPACE/KEY (relationship)" per line.
func DependenciesText(deps []Dependency) string {
	lines := make([]string, 0, len(deps))
	for _, d := range deps {
		lines = append(lines, d.SpaceKey+"/"+d.Key+" ("+d.Relationship+")")
	}
	return strings.Join(lines, "\n")
}

// IssuesText is one "ISSUE (relationship)" per line, with ", serviceId"
// in the parentheses when the link names its integration.
func IssuesText(issues []IssueLink) string {
	lines := make([]string, 0, len(issues))
	for _, l := range issues {
		s := l.IssueKey + " (" + l.Relationship
		if l.ServiceID != "" {
			s += ", " + l.ServiceID
		}
		lines = append(lines, s+")")
	}
	return strings.Join(lines, "\n")
}
