package requirement

import (
	"slices"
	"strings"
	"testing"
)

func TestCheckPropertyNameAndValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"Cost", true}, {"Main Category", true}, {"Größe", true}, {"a#b", true}, {"@x", true},
		{strings.Repeat("n", 255), true}, {strings.Repeat("n", 256), false},
		{"", false}, {"   ", false}, {" Cost", false}, {"Cost ", false}, {"Co\tst", false},
		{"Co\nst", false}, {"a\x00", false}, {"a\x7f", false},
	} {
		if got := CheckPropertyName(tc.name) == ""; got != tc.ok {
			t.Errorf("CheckPropertyName(%q) ok = %v, want %v (%s)", tc.name, got, tc.ok, CheckPropertyName(tc.name))
		}
	}
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"", true}, {"12", true}, {" spaced  out ", true}, {strings.Repeat("v", 2048), true},
		{strings.Repeat("v", 2049), false}, {"a\nb", false}, {"a\tb", false}, {"\x1b[31m", false},
	} {
		if got := CheckPropertyValue(tc.value) == ""; got != tc.ok {
			t.Errorf("CheckPropertyValue(%q) ok = %v, want %v", tc.value, got, tc.ok)
		}
	}
}

func TestApplyExternal(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	ext := func(kv ...string) []Property {
		var out []Property
		for i := 0; i < len(kv); i += 2 {
			out = append(out, Property{Key: kv[i], Value: kv[i+1], Type: External})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		current []Property
		changes []ExternalChange
		want    []Property
	}{
		{"add to none", nil, []ExternalChange{{"Owner", s("bob")}, {"Cost", s("12")}}, ext("Cost", "12", "Owner", "bob")},
		{"replace ignoring case, new spelling", ext("Cost", "12"), []ExternalChange{{"COST", s("13")}}, ext("COST", "13")},
		{"remove ignoring case", ext("Cost", "12", "Owner", "bob"), []ExternalChange{{"owner", nil}}, ext("Cost", "12")},
		{"remove absent", ext("Cost", "12"), []ExternalChange{{"Nope", nil}}, ext("Cost", "12")},
		{"remove all", ext("Cost", "12"), []ExternalChange{{"Cost", nil}}, nil},
		{"empty value is a value", nil, []ExternalChange{{"Flag", s("")}}, ext("Flag", "")},
		{"sorted by folded name", nil, []ExternalChange{{"b", s("1")}, {"A", s("2")}, {"a2", s("3")}}, ext("A", "2", "a2", "3", "b", "1")},
	} {
		if got := ApplyExternal(tc.current, tc.changes); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPageAndExternalProperties(t *testing.T) {
	t.Parallel()
	r := &Requirement{Properties: []Property{{Key: "Priority", Value: "High"}}}
	r.SetExternalProperties([]Property{{Key: "Owner", Value: "bob"}, {Key: "Cost", Value: "12"}})
	want := []Property{{Key: "Priority", Value: "High"}, {Key: "Cost", Value: "12", Type: External}, {Key: "Owner", Value: "bob", Type: External}}
	if !slices.Equal(r.Properties, want) {
		t.Fatalf("after SetExternalProperties: %v", r.Properties)
	}
	// A page save replaces the page's properties and keeps the external ones.
	r.SetPageProperties([]Property{{Key: "Priority", Value: "Low"}, {Key: "Priority", Value: "High"}})
	want = []Property{{Key: "Priority", Value: "Low"}, {Key: "Priority", Value: "High"}, want[1], want[2]}
	if !slices.Equal(r.Properties, want) {
		t.Fatalf("after SetPageProperties: %v", r.Properties)
	}
	if got := r.PageProperties(); len(got) != 2 || got[0].Type != Inline {
		t.Fatalf("PageProperties %v", got)
	}
	if got := r.ExternalProperties(); len(got) != 2 || got[0].Key != "Cost" {
		t.Fatalf("ExternalProperties %v", got)
	}
	r.DropExternalProperties()
	if !slices.Equal(r.Properties, want[:2]) {
		t.Fatalf("after DropExternalProperties: %v", r.Properties)
	}
	if Inline.String() != "INLINE" || External.String() != "EXTERNAL" {
		t.Fatal("API names")
	}
}
