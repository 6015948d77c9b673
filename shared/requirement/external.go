package requirement

import (
	"cmp"
	"slices"
	"strings"
)

// External properties are values the service stores for a current ACTIVE
// requirement, set through the API rather than on its page. They follow the
// same name and value rules as page properties (CheckPropertyName,
// CheckPropertyValue), hold one value per name (names compare ignoring
// case), survive page saves, reindexes and moves of the requirement, go
// when it is DELETED, and are frozen with it into baselines.

// Limits of external properties. A requirement row must stay under
// DynamoDB's 400 KB item size with its page content: at most MaxExternal
// properties of MaxPropertyName + MaxExternalValue bytes take about 230 KB.
const (
	// MaxExternal is the most external properties one requirement holds.
	MaxExternal = 100
	// MaxPropertyName is the longest property name, in bytes: the longest
	// column header a page property may have.
	MaxPropertyName = 255
	// MaxExternalValue is the longest external property value, in bytes.
	MaxExternalValue = 2048
)

// ExternalChange sets one external property (Value not nil) or removes it
// (Value nil).
type ExternalChange struct {
	Name  string
	Value *string
}

// FoldPropertyName is the case folding of property names: "cost" and "Cost"
// name the same external property, and `@Cost`/`ext@Cost` match both (the
// query language's query.Fold is the same rule).
func FoldPropertyName(name string) string { return strings.ToUpper(name) }

// CheckPropertyName returns what is wrong with name as the name of an
// external property ("" when nothing): the rules of a page property's name
// (a column header, white space collapsed): 1 to MaxPropertyName bytes, not
// blank, no control characters, no white space at either end.
func CheckPropertyName(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "a property name must not be empty or blank"
	case len(name) > MaxPropertyName:
		return "a property name takes at most 255 bytes"
	case HasControl(name):
		return "a property name must not contain control characters"
	case strings.TrimSpace(name) != name:
		return "a property name must not start or end with white space"
	}
	return ""
}

// CheckPropertyValue returns what is wrong with v as the value of an
// external property ("" when nothing): at most MaxExternalValue bytes and,
// like a page property's value (one line of a cell), no control characters.
func CheckPropertyValue(v string) string {
	switch {
	case len(v) > MaxExternalValue:
		return "a value takes at most 2048 bytes"
	case HasControl(v):
		return "a value must not contain control characters"
	}
	return ""
}

// PageProperties returns the page properties of r (Inline), in page order.
func (r *Requirement) PageProperties() []Property {
	return r.propertiesOf(Inline)
}

// ExternalProperties returns the external properties of r, in name order.
func (r *Requirement) ExternalProperties() []Property {
	return r.propertiesOf(External)
}

func (r *Requirement) propertiesOf(t PropertyType) []Property {
	var out []Property
	for _, p := range r.Properties {
		if p.Type == t {
			out = append(out, p)
		}
	}
	return out
}

// SetPageProperties replaces the page properties of r with props (made
// Inline), keeping its external properties after them.
func (r *Requirement) SetPageProperties(props []Property) {
	r.Properties = joinProperties(props, r.ExternalProperties())
}

// SetExternalProperties replaces the external properties of r with props
// (made External, in name order), after its page properties.
func (r *Requirement) SetExternalProperties(props []Property) {
	r.Properties = joinProperties(r.PageProperties(), props)
}

// DropExternalProperties removes the external properties of r: what
// happens when it stops being ACTIVE (DELETED, or MOVED: they follow the
// requirement to its new row).
func (r *Requirement) DropExternalProperties() {
	r.Properties = joinProperties(r.PageProperties(), nil)
}

// joinProperties returns page (made Inline) followed by ext (made External,
// sorted by SortExternal); nil when both are empty.
func joinProperties(page, ext []Property) []Property {
	if len(page)+len(ext) == 0 {
		return nil
	}
	out := make([]Property, 0, len(page)+len(ext))
	for _, p := range page {
		p.Type = Inline
		out = append(out, p)
	}
	start := len(out)
	for _, p := range ext {
		p.Type = External
		out = append(out, p)
	}
	SortExternal(out[start:])
	return out
}

// SortExternal sorts external properties by folded name, then name.
func SortExternal(props []Property) {
	slices.SortStableFunc(props, func(a, b Property) int {
		return cmp.Or(strings.Compare(FoldPropertyName(a.Key), FoldPropertyName(b.Key)), strings.Compare(a.Key, b.Key))
	})
}

// ApplyExternal returns the external properties current with changes
// applied in order, sorted by SortExternal: a set replaces the value of the
// property of that name ignoring case (and takes the name's new spelling)
// or adds it; a removal drops it, and does nothing when it is absent.
func ApplyExternal(current []Property, changes []ExternalChange) []Property {
	out := make([]Property, 0, len(current)+len(changes))
	for _, p := range current {
		p.Type = External
		out = append(out, p)
	}
	for _, c := range changes {
		folded := FoldPropertyName(c.Name)
		i := slices.IndexFunc(out, func(p Property) bool { return FoldPropertyName(p.Key) == folded })
		switch {
		case c.Value == nil && i >= 0:
			out = slices.Delete(out, i, i+1)
		case c.Value == nil:
		case i >= 0:
			out[i] = Property{Key: c.Name, Value: *c.Value, Type: External}
		default:
			out = append(out, Property{Key: c.Name, Value: *c.Value, Type: External})
		}
	}
	SortExternal(out)
	if len(out) == 0 {
		return nil
	}
	return out
}
