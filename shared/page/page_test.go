package page

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

type (
	prop  = requirement.Property
	dep   = requirement.Dependency
	issue = requirement.IssueLink
)

func TestParseTables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want Result
	}{{
		name: "definition without type, description and property",
		body: table(
			th("Key", "Description", "Priority"),
			tr(def("REQ-001"), "<p>The system shall log in users.</p>", "<p> High </p>"),
		),
		want: Result{Definitions: []Definition{{
			Key: "REQ-001", Text: "The system shall log in users.",
			HTMLExcerpt: "<p>The system shall log in users.</p>",
			Properties:  []prop{{Key: "Priority", Value: "High"}},
		}}},
	}, {
		name: "explicit DEFINITION type in any case",
		body: table(th("Key", "Text"), tr(
			`<ac:structured-macro ac:name="REQUIREMENT"><ac:parameter ac:name="type">Definition</ac:parameter>`+
				`<ac:parameter ac:name="KEY"> R.1 </ac:parameter></ac:structured-macro>`, "text")),
		want: Result{Definitions: []Definition{{Key: "R.1", Text: "text", HTMLExcerpt: "<p>text</p>"}}},
	}, {
		name: "multi-valued property: paragraphs, list items and line breaks",
		body: table(th("Key", "Text", "Tags"),
			tr(def("A"), "", "<p>ui</p><ul><li>security</li><li> </li></ul>web<br/>mobile")),
		want: Result{Definitions: []Definition{{Key: "A", Properties: []prop{
			{Key: "Tags", Value: "ui"}, {Key: "Tags", Value: "security"},
			{Key: "Tags", Value: "web"}, {Key: "Tags", Value: "mobile"},
		}}}},
	}, {
		name: "property text is collapsed, inline formatting dropped",
		body: table(th("Key", "Text", " Main \n Category "),
			tr(def("A"), "", "<strong>Functional</strong>   and\n <em>visible</em>")),
		want: Result{Definitions: []Definition{{Key: "A", Properties: []prop{
			{Key: "Main Category", Value: "Functional and visible"},
		}}}},
	}, {
		name: "links in a property column use the normalised header",
		body: table(th("Key", "Text", "Business Rule"),
			tr(def("A"), "", link("RULES", "BR-1")+" and "+link("", "BR-2"))),
		want: Result{Definitions: []Definition{{Key: "A",
			Properties: []prop{{Key: "Business Rule", Value: "and"}},
			Dependencies: []dep{
				{SpaceKey: "RULES", Key: "BR-1", Relationship: "business_rule"},
				{Key: "BR-2", Relationship: "business_rule"},
			},
		}}},
	}, {
		name: "a cell with only links gives no property value",
		body: table(th("Key", "Text", "Refines"), tr(def("A"), "", "<p>"+link("", "B")+"</p>")),
		want: Result{Definitions: []Definition{{Key: "A",
			Dependencies: []dep{{Key: "B", Relationship: "refines"}},
		}}},
	}, {
		name: "links in the description and key cells are dependencies, shown as keys",
		body: table(th("Key", "Text"),
			tr(def("A")+link("", "K"), "<p>Extends "+link("OTHER", "B")+" and "+link("", "C")+".</p>")),
		want: Result{Definitions: []Definition{{Key: "A", Text: "Extends B and C.",
			HTMLExcerpt: "<p>Extends B and C.</p>",
			Dependencies: []dep{
				{Key: "K", Relationship: "dependency"},
				{SpaceKey: "OTHER", Key: "B", Relationship: "dependency"},
				{Key: "C", Relationship: "dependency"},
			},
		}}},
	}, {
		name: "the same link twice is one dependency",
		body: table(th("Key", "Text", "Refines"),
			tr(def("A"), "", link("", "B")+"<br/>"+link("", "B")+link("", "b"))),
		want: Result{Definitions: []Definition{{Key: "A", Dependencies: []dep{
			{Key: "B", Relationship: "refines"}, {Key: "b", Relationship: "refines"},
		}}}},
	}, {
		name: "issue macros: header relationship, serverId, description column",
		body: table(th("Key", "Requirement", "Implemented By", ""),
			tr(def("A"), "Shown in "+jira("PROJ-1", ""), jira("PROJ-2", "jira-1"), jira("PROJ-3", "jira-2"))),
		want: Result{
			Definitions: []Definition{{Key: "A", Text: "Shown in PROJ-1",
				HTMLExcerpt: "<p>Shown in PROJ-1</p>",
				Issues: []issue{
					{IssueKey: "PROJ-1", Relationship: "requirement"},
					{ServiceID: "jira-1", IssueKey: "PROJ-2", Relationship: "implemented_by"},
					{ServiceID: "jira-2", IssueKey: "PROJ-3", Relationship: "relates"},
				},
			}},
			Links: []IssueRef{
				{RequirementKey: "A", IssueKey: "PROJ-1", Relationship: "requirement"},
				{RequirementKey: "A", ServiceID: "jira-1", IssueKey: "PROJ-2", Relationship: "implemented_by"},
				{RequirementKey: "A", ServiceID: "jira-2", IssueKey: "PROJ-3", Relationship: "relates"},
			},
		},
	}, {
		name: "issue macros in the key cell relate",
		body: table(th("ID", "Text"), tr(def("A")+jira("PROJ-1", ""), "")),
		want: Result{
			Definitions: []Definition{{Key: "A", Issues: []issue{{IssueKey: "PROJ-1", Relationship: "relates"}}}},
			Links:       []IssueRef{{RequirementKey: "A", IssueKey: "PROJ-1", Relationship: "relates"}},
		},
	}, {
		name: "a jira macro without key (a query) links nothing",
		body: table(th("Key", "Text", "Issues"), tr(def("A"), "",
			`<ac:structured-macro ac:name="jira"><ac:parameter ac:name="jqlQuery">project = X</ac:parameter></ac:structured-macro>`)),
		want: Result{Definitions: []Definition{{Key: "A"}}},
	}, {
		name: "title=true makes a later column the description",
		body: table(th("Key", "Category", option("title")+"Statement", "Owner"),
			tr(def("A"), "Functional", "<p>The text.</p>"+link("", "B"), "Bob")),
		want: Result{Definitions: []Definition{{Key: "A", Text: "The text. B",
			HTMLExcerpt:  "<p>The text.<br>B</p>",
			Properties:   []prop{{Key: "Category", Value: "Functional"}, {Key: "Owner", Value: "Bob"}},
			Dependencies: []dep{{Key: "B", Relationship: "dependency"}},
		}}},
	}, {
		name: "ignore=true skips a column, links and issues included",
		body: table(th("Key", "Text", "Notes"+option("ignore"), "Owner"),
			tr(def("A"), "t", "secret "+link("", "B")+jira("X-1", ""), "Bob")),
		want: Result{
			Definitions: []Definition{{Key: "A", Text: "t", HTMLExcerpt: "<p>t</p>",
				Properties: []prop{{Key: "Owner", Value: "Bob"}}}},
			Links: []IssueRef{{IssueKey: "X-1"}},
		},
	}, {
		name: "a table whose first row defines a requirement has no header",
		body: table(tr(def("A"), "first", "p", link("", "B")+jira("X-1", "")), tr(def("B"), "second")),
		want: Result{
			Definitions: []Definition{
				{Key: "A", Text: "first", HTMLExcerpt: "<p>first</p>",
					Dependencies: []dep{{Key: "B", Relationship: "dependency"}},
					Issues:       []issue{{IssueKey: "X-1", Relationship: "relates"}}},
				{Key: "B", Text: "second", HTMLExcerpt: "<p>second</p>"},
			},
			Links: []IssueRef{{RequirementKey: "A", IssueKey: "X-1", Relationship: "relates"}},
		},
	}, {
		name: "rows without a definition are ordinary content",
		body: table(th("Key", "Text"), tr("General remarks", "<p>"+def("P")+" inside a cell</p>"), tr(def("A"), "a")),
		want: Result{Definitions: []Definition{
			{Key: "P", Text: "inside a cell", HTMLExcerpt: "<p>inside a cell</p>"},
			{Key: "A", Text: "a", HTMLExcerpt: "<p>a</p>"},
		}},
	}, {
		name: "a caption is ordinary content",
		body: "<table><caption>" + def("C") + " caption text</caption><tbody>" + th("Key", "Text") + tr(def("A"), "a") + "</tbody></table>",
		want: Result{Definitions: []Definition{
			{Key: "C", Text: "caption text", HTMLExcerpt: "<p>caption text</p>"},
			{Key: "A", Text: "a", HTMLExcerpt: "<p>a</p>"},
		}},
	}, {
		name: "thead and tbody, th cells in body rows",
		body: "<table><thead><tr><th>Key</th><th>Text</th><th>Risk</th></tr></thead><tbody>" +
			"<tr><th>" + def("A") + "</th><td>a</td><td>low</td></tr></tbody></table>",
		want: Result{Definitions: []Definition{{Key: "A", Text: "a", HTMLExcerpt: "<p>a</p>",
			Properties: []prop{{Key: "Risk", Value: "low"}}}}},
	}, {
		name: "colspan and rowspan keep cells under their header",
		body: table(
			`<tr><th>Key</th><th>Text</th><th colspan="2">Links</th><th>Risk</th></tr>`,
			`<tr><td>`+def("A")+`</td><td>a</td><td>`+link("", "X")+`</td><td>`+link("", "Y")+`</td><td rowspan="2">high</td></tr>`,
			`<tr><td>`+def("B")+`</td><td colspan="3">b</td></tr>`,
			`<tr><td>`+def("C")+`</td><td>c</td><td></td><td></td><td>low</td></tr>`,
		),
		want: Result{Definitions: []Definition{
			{Key: "A", Text: "a", HTMLExcerpt: "<p>a</p>",
				Properties:   []prop{{Key: "Risk", Value: "high"}},
				Dependencies: []dep{{Key: "X", Relationship: "links"}, {Key: "Y", Relationship: "links"}}},
			{Key: "B", Text: "b", HTMLExcerpt: "<p>b</p>"},
			{Key: "C", Text: "c", HTMLExcerpt: "<p>c</p>", Properties: []prop{{Key: "Risk", Value: "low"}}},
		}},
	}, {
		name: "a nested table in the description is text; its links belong to the row",
		body: table(th("Key", "Text"), tr(def("A"),
			"<p>Criteria:</p>"+table(th("Given", "Then"), tr("a user", "see "+link("", "B"))))),
		want: Result{Definitions: []Definition{{Key: "A",
			Text:         "Criteria: Given Then a user see B",
			HTMLExcerpt:  "<p>Criteria:<br>Given<br>Then<br>a user<br>see B</p>",
			Dependencies: []dep{{Key: "B", Relationship: "dependency"}},
		}}},
	}, {
		name: "tables inside macros and layouts are read",
		body: `<ac:layout><ac:layout-section><ac:layout-cell><ac:structured-macro ac:name="expand">` +
			`<ac:parameter ac:name="title">More</ac:parameter><ac:rich-text-body>` +
			table(th("Key", "Text"), tr(def("A"), "a")) +
			`</ac:rich-text-body></ac:structured-macro></ac:layout-cell></ac:layout-section></ac:layout>`,
		want: Result{Definitions: []Definition{{Key: "A", Text: "a", HTMLExcerpt: "<p>a</p>"}}},
	}, {
		name: "status macro is a property value",
		body: table(th("Key", "Text", "Status"), tr(def("A"), "",
			`<ac:structured-macro ac:name="status"><ac:parameter ac:name="colour">Green</ac:parameter>`+
				`<ac:parameter ac:name="title">Approved</ac:parameter></ac:structured-macro>`)),
		want: Result{Definitions: []Definition{{Key: "A", Properties: []prop{{Key: "Status", Value: "Approved"}}}}},
	}, {
		name: "a property column without a header gives no values but keeps links",
		body: table(th("Key", "Text"), tr(def("A"), "", "orphan "+link("", "B"))),
		want: Result{Definitions: []Definition{{Key: "A",
			Dependencies: []dep{{Key: "B", Relationship: "dependency"}}}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustParse(t, tt.body)
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Parse:\n got %s\nwant %s", asJSON(got), asJSON(tt.want))
			}
		})
	}
}

func TestParseParagraphs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want Result
	}{{
		name: "the rest of the paragraph is the text",
		body: "<p>Intro " + def("P-1") + " The user <strong>can</strong> log out.</p><p>Not part of it.</p>",
		want: Result{Definitions: []Definition{{Key: "P-1", Text: "The user can log out.",
			HTMLExcerpt: "<p>The user <strong>can</strong> log out.</p>"}}},
	}, {
		name: "inline elements around the macro are kept",
		body: "<p><em>" + def("P-1") + " Important</em> rule.</p>",
		want: Result{Definitions: []Definition{{Key: "P-1", Text: "Important rule.",
			HTMLExcerpt: "<p><em>Important</em> rule.</p>"}}},
	}, {
		name: "links are dependencies, issue macros relate",
		body: "<p>" + def("P-1") + " Like " + link("S", "X") + ", see " + jira("J-1", "jira-1") + ".</p>",
		want: Result{
			Definitions: []Definition{{Key: "P-1", Text: "Like X, see J-1.",
				HTMLExcerpt:  "<p>Like X, see J-1.</p>",
				Dependencies: []dep{{SpaceKey: "S", Key: "X", Relationship: "dependency"}},
				Issues:       []issue{{ServiceID: "jira-1", IssueKey: "J-1", Relationship: "relates"}}}},
			Links: []IssueRef{{RequirementKey: "P-1", ServiceID: "jira-1", IssueKey: "J-1", Relationship: "relates"}},
		},
	}, {
		name: "several definitions in one paragraph split it",
		body: "<p>" + def("A") + " first " + link("", "L") + def("B") + " second</p>",
		want: Result{Definitions: []Definition{
			{Key: "A", Text: "first L", HTMLExcerpt: "<p>first L</p>",
				Dependencies: []dep{{Key: "L", Relationship: "dependency"}}},
			{Key: "B", Text: "second", HTMLExcerpt: "<p>second</p>"},
		}},
	}, {
		name: "a macro alone defines a requirement without text",
		body: "<p>" + def("A") + "</p>",
		want: Result{Definitions: []Definition{{Key: "A"}}},
	}, {
		name: "list items and headings are paragraphs",
		body: "<ul><li>" + def("A") + " item</li><li>other</li></ul><h3>" + def("B") + " heading</h3>",
		want: Result{Definitions: []Definition{
			{Key: "A", Text: "item", HTMLExcerpt: "<p>item</p>"},
			{Key: "B", Text: "heading", HTMLExcerpt: "<p>heading</p>"},
		}},
	}, {
		name: "outside any block the text stops at a table",
		body: def("A") + " loose text " + table(th("Key", "Text"), tr(def("B"), "b")) + " after",
		want: Result{Definitions: []Definition{
			{Key: "A", Text: "loose text", HTMLExcerpt: "<p>loose text</p>"},
			{Key: "B", Text: "b", HTMLExcerpt: "<p>b</p>"},
		}},
	}, {
		name: "links outside definitions are ignored, issue macros listed",
		body: "<p>See " + link("", "A") + " and " + jira("J-2", "") + "</p>",
		want: Result{Links: []IssueRef{{IssueKey: "J-2"}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustParse(t, tt.body)
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Parse:\n got %s\nwant %s", asJSON(got), asJSON(tt.want))
			}
		})
	}
}

func TestParseDuplicates(t *testing.T) {
	t.Parallel()
	body := table(th("Key", "Text", "Risk"),
		tr(def("REQ-1"), "first", "low"),
		tr(def("req-1"), "second", "high"),
		tr(def("REQ-2"), "other", ""),
	) + "<p>" + def("REQ-1") + " third " + jira("J-1", "") + "</p><p>" + def("Req-1") + " fourth</p>" +
		"<p>" + def("req-1") + " fifth</p>"
	got := mustParse(t, body)
	want := Result{
		Definitions: []Definition{
			{Key: "REQ-1", Text: "first", HTMLExcerpt: "<p>first</p>", Properties: []prop{{Key: "Risk", Value: "low"}}},
			{Key: "REQ-2", Text: "other", HTMLExcerpt: "<p>other</p>"},
		},
		Duplicates: []string{"req-1", "REQ-1", "Req-1"},
		// The issue macro of a dropped duplicate belongs to no definition.
		Links: []IssueRef{{IssueKey: "J-1"}},
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Parse:\n got %s\nwant %s", asJSON(got), asJSON(want))
	}
}

func TestParseLenientMarkup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		wantText string
	}{
		{"void elements without slash", "<p>" + def("A") + " a<br>b<img src=\"x.png\"><hr></p>", "a b"},
		{"XHTML void end tags", "<p>" + def("A") + " a<br></br>b</p>", "a b"},
		{"HTML named entities", "<p>" + def("A") + " caf&eacute;&nbsp;&rsquo;s &amp; &lt;x&gt;</p>", "café ’s & <x>"},
		{"unknown entity kept", "<p>" + def("A") + " a &madeup; b</p>", "a &madeup; b"},
		{"comments, doctype, processing instruction", "<?xml version=\"1.0\"?><!DOCTYPE html><!-- c --><p>" + def("A") + " a</p>", "a"},
		{"upper-case tags", "<P>" + def("A") + " a</p>", "a"},
		{"self-closing non-void element", "<p>" + def("A") + " a<ri:user ri:userkey=\"42\"/> b</p>", "a b"},
		{"CDATA keeps entities as written", "<p>" + def("A") + " <![CDATA[a &amp; <b>]]></p>", "a &amp; <b>"},
		{"whole HTML document", "<html><head><title>T</title></head><body><p>" + def("A") + " a</p></body></html>", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustParse(t, tt.body)
			if len(got.Definitions) != 1 || got.Definitions[0].Text != tt.wantText {
				t.Errorf("Parse = %s, want one definition with text %q", asJSON(got), tt.wantText)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		wantMsg string // a part of the message
	}{
		{"invalid UTF-8", "<p>a\xff</p>", "not valid UTF-8 (line 1)"},
		{"NUL byte", "<p>a\n\x00</p>", "NUL byte (line 2)"},
		{"mismatched end tag", "<table>\n<tr><td><p>a</td></tr></table>", "</td> closes <p> opened at line 2 (line 2)"},
		{"stray end tag", "<p>a</p></div>", "</div> closes no element"},
		{"unclosed element", "<p>a</p>\n<table><tr><td>x", "<td> is never closed (line 2)"},
		{"unclosed macro", `<p><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">A</ac:parameter></p>`,
			"</p> closes <ac:structured-macro>"},
		{"unterminated tag", "<p>a</p><ac:structured-macro ac:name=", "unterminated tag"},
		{"unterminated comment", "<p>a</p><!-- note", "unterminated comment"},
		{"unterminated CDATA", "<p><![CDATA[a</p>", "unterminated CDATA"},
		{"self-closing script needs an end", "<script/>alert(1)", "<script> is never closed"},
		{"too deep", strings.Repeat("<span>", maxDepth+1) + strings.Repeat("</span>", maxDepth+1), "nested deeper than 256"},
		{"requirement macro without key", `<p><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="type">LINK</ac:parameter></ac:structured-macro></p>`,
			"requirement macro without a key parameter (line 1)"},
		{"empty key", "<p>" + def(" ") + "</p>", "without a key parameter"},
		{"invalid definition key", "\n<p>" + def("REQ 1") + "</p>", `invalid requirement key "REQ 1": use 1 to 255 letters, digits, '_', '-' or '.' (line 2)`},
		{"invalid link key", "<p>" + link("", "REQ/1") + "</p>", `invalid requirement key "REQ/1"`},
		{"invalid key in an ignored place", "<p><script>x</script></p>" + table(th("K", "T", "N"+option("ignore")), tr(def("A"), "", link("", "a b"))),
			`invalid requirement key "a b"`},
		{"long invalid key is clipped", "<p>" + def(strings.Repeat("x", 300)+"!") + "</p>", `"` + strings.Repeat("x", 64) + `…"`},
		{"invalid space key", "<p>" + link("MY-SPACE", "A") + "</p>", `invalid space key "MY-SPACE" in the link to "A"`},
		{"unknown type", `<ac:structured-macro ac:name="requirement"><ac:parameter ac:name="type">ANCHOR</ac:parameter><ac:parameter ac:name="key">A</ac:parameter></ac:structured-macro>`,
			`unknown type "ANCHOR"`},
		{"invalid issue key", "<p>" + jira("not an issue", "") + "</p>", `invalid issue key "not an issue"`},
		{"two definitions in a key cell", table(th("K", "T"), tr(def("A")+def("B"), "")), `requirement "B" is defined in the row of "A"`},
		{"definition in a description cell", table(th("K", "T"), tr(def("A"), "<p>"+def("B")+" text</p>")), `requirement "B" is defined in the row of "A"`},
		{"definition in a nested table of a row", table(th("K", "T", "P"), tr(def("A"), "", table(tr(def("B"), "")))),
			`requirement "B" is defined in the row of "A"`},
		{"header too long for a property or relationship", "<p>x</p>\n" + table(th("K", "T", strings.Repeat("a", 256)), tr(def("A"), "", link("", "B"))),
			"requirement A: the header of column 3 is 256 bytes long; a column of properties or links takes a header of at most 255 (line 2)"},
		{"description header too long (issue relationship)", table(th("K", strings.Repeat("é", 128)), tr(def("A"), jira("PROJ-1", ""))),
			"the header of column 2 is 256 bytes long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.body)
			if err == nil {
				t.Fatalf("Parse = %s, want an error", asJSON(got))
			}
			if !errors.Is(err, apperr.ErrInvalid) {
				t.Errorf("Parse error %v is not Invalid", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Parse error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestParseEmpty(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", "  \n", "<p>No requirements here.</p>"} {
		got := mustParse(t, body)
		if !reflect.DeepEqual(*got, Result{}) {
			t.Errorf("Parse(%q) = %s, want an empty result", body, asJSON(got))
		}
	}
}

// TestParseSpecsPage reads a realistic page: three tables (one inside an
// expand macro), a layout, headers with requirement-property options,
// cross-space links, jira macros with and without serverId, a status macro,
// a paragraph definition, and duplicates.
func TestParseSpecsPage(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/specs.xhtml")
	if err != nil {
		t.Fatal(err)
	}
	got := mustParse(t, string(body))
	want := Result{
		Definitions: []Definition{{
			Key:          "AUTH-001",
			Text:         "The system shall log in users with their e-mail address and password.",
			HTMLExcerpt:  "<p>The system shall log in users with their <strong>e-mail address</strong> and password.</p>",
			Properties:   []prop{{Key: "Priority", Value: "High"}},
			Dependencies: []dep{{SpaceKey: "RULES", Key: "BR-12", Relationship: "business_rule"}},
			Issues:       []issue{{ServiceID: "jira-1", IssueKey: "AUTH-101", Relationship: "implements"}},
		}, {
			Key: "AUTH-002",
			Text: "After five failed attempts the account is locked for 15 minutes. " +
				"The user is told how long to wait. See AUTH-001.",
			HTMLExcerpt: "<p>After <em>five</em> failed attempts the account is locked for 15 minutes.<br>" +
				"The user is told how long to wait.<br>See AUTH-001.</p>",
			Properties: []prop{{Key: "Priority", Value: "High"}, {Key: "Priority", Value: "Security"}},
			Dependencies: []dep{
				{Key: "AUTH-001", Relationship: "dependency"},
				{SpaceKey: "RULES", Key: "BR-12", Relationship: "business_rule"},
				{Key: "BR-13", Relationship: "business_rule"},
			},
			Issues: []issue{{IssueKey: "AUTH-102", Relationship: "implements"}},
		}, {
			Key:  "AUTH-003",
			Text: "Passwords are stored with a salted hash (OWASP), never in clear.",
			HTMLExcerpt: `<p>Passwords are stored with a salted hash (<a href="https://cheatsheetseries.owasp.org/">OWASP</a>), ` +
				`<span>never</span> in clear.</p>`,
			Properties: []prop{{Key: "Priority", Value: "Critical"}},
		}, {
			Key:          "NFR-1",
			Text:         "Login answers within 500 ms at the 95th percentile.",
			HTMLExcerpt:  `<p>Login answers within <code>500 ms</code> at the 95th percentile.<img src="https://example.com/latency.png"></p>`,
			Properties:   []prop{{Key: "Category", Value: "Performance"}},
			Dependencies: []dep{{SpaceKey: "QA", Key: "TEST-7", Relationship: "verified_by"}},
			Issues:       []issue{{ServiceID: "jira-2", IssueKey: "QA-7", Relationship: "verified_by"}},
		}, {
			Key:         "NFR-2",
			Text:        "The login service is available 99.9 % of the time.",
			HTMLExcerpt: "<p>The login service is available 99.9 % of the time.</p>",
			Properties:  []prop{{Key: "Category", Value: "Availability"}},
		}, {
			Key:         "legacy.login-1",
			Text:        "Users of the legacy portal log in with SSO, see SSO design.",
			HTMLExcerpt: "<p>Users of the legacy portal log in with SSO, see SSO design.</p>",
			Properties:  []prop{{Key: "Owner", Value: "Team Identity"}, {Key: "Owner", Value: "Team Platform"}},
		}, {
			Key:          "AUTH-010",
			Text:         "Sessions expire after 30 minutes of inactivity, see STD-4 and AUTH-110.",
			HTMLExcerpt:  "<p>Sessions expire after 30 minutes of inactivity, see STD-4 and AUTH-110.</p>",
			Dependencies: []dep{{SpaceKey: "SEC", Key: "STD-4", Relationship: "dependency"}},
			Issues:       []issue{{ServiceID: "jira-1", IssueKey: "AUTH-110", Relationship: "relates"}},
		}},
		Duplicates: []string{"AUTH-001", "auth-002"},
		Links: []IssueRef{
			{RequirementKey: "AUTH-001", ServiceID: "jira-1", IssueKey: "AUTH-101", Relationship: "implements"},
			{RequirementKey: "AUTH-002", IssueKey: "AUTH-102", Relationship: "implements"},
			{IssueKey: "OPS-1"}, // in the ignored column
			{RequirementKey: "NFR-1", ServiceID: "jira-2", IssueKey: "QA-7", Relationship: "verified_by"},
			{RequirementKey: "AUTH-010", ServiceID: "jira-1", IssueKey: "AUTH-110", Relationship: "relates"},
			{ServiceID: "jira-1", IssueKey: "AUTH-200"}, // outside requirements
		},
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Parse:\n got %s\nwant %s", asJSON(got), asJSON(want))
	}
}

// Long headers are refused only where a definition uses them: 255 bytes
// name a property; an ignored column or a table without definitions may
// say anything.
func TestLongHeadersAllowedWhereUnused(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 300)
	for name, body := range map[string]string{
		"255 bytes":                  table(th("K", "T", strings.Repeat("b", 255)), tr(def("A"), "", "v")),
		"ignored column":             table(th("K", "T", long+option("ignore")), tr(def("A"), "", "v")),
		"table without a definition": table(th("K", "T", long), tr("x", "y", "z")),
	} {
		if _, err := Parse(body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
