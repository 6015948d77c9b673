package diff

import (
	"strings"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// ValueText writes one side of a field's change as text (a CSV cell, a
// web page's table cell): a property's
// values, links and pages one per line ("" when absent).
func ValueText(field string, v Value) string {
	if !v.Set {
		return ""
	}
	switch field {
	case FieldOrigin:
		return requirement.PageText(v.Page)
	case FieldDependencies:
		return requirement.DependenciesText(v.Dependencies)
	case FieldIssues:
		return requirement.IssuesText(v.Issues)
	}
	if v.Values != nil {
		return strings.Join(v.Values, "\n")
	}
	return v.Text
}
