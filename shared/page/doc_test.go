package page

import (
	"reflect"
	"testing"
)

// TestDocExamples keeps the examples of docs/storage-format.md true.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	t.Run("excerpt", func(t *testing.T) {
		t.Parallel()
		desc := `<p>The <strong onclick="x()">system</strong> <span style="color:red">shall</span>` + "\n" +
			`<a href="javascript:alert(1)">log in</a>:</p><ul><li>users</li></ul><script>alert(1)</script>`
		r := mustParse(t, table(th("Key", "Description"), tr(def("A"), desc)))
		d := r.Definitions[0]
		if want := `<p>The <strong>system</strong> <span>shall</span> log in:<br>users</p>`; d.HTMLExcerpt != want {
			t.Errorf("excerpt %q, want %q", d.HTMLExcerpt, want)
		}
		if want := "The system shall log in: users"; d.Text != want {
			t.Errorf("text %q, want %q", d.Text, want)
		}
	})
	t.Run("column options, header-less table", func(t *testing.T) {
		t.Parallel()
		body := "<table>" +
			`<tr><th>Ref</th><th>Category</th><th>` + option("title") + `Statement</th><th>Notes` + option("ignore") +
			`</th><th colspan="2">Verified by</th></tr>` +
			tr(def("NFR-1"), "Performance", "Answers within 500 ms.", "ask Bob "+link("", "X-9"),
				jira("QA-7", "jira-2"), link("QA", "TEST-7")) +
			"</table>" + table(tr(def("G-1"), "No header.", "dropped"))
		got := mustParse(t, body)
		want := Result{
			Definitions: []Definition{{
				Key: "NFR-1", Text: "Answers within 500 ms.", HTMLExcerpt: "<p>Answers within 500 ms.</p>",
				Properties:   []prop{{Key: "Category", Value: "Performance"}},
				Dependencies: []dep{{SpaceKey: "QA", Key: "TEST-7", Relationship: "verified_by"}},
				Issues:       []issue{{ServiceID: "jira-2", IssueKey: "QA-7", Relationship: "verified_by"}},
			}, {Key: "G-1", Text: "No header.", HTMLExcerpt: "<p>No header.</p>"}},
			Links: []IssueRef{{RequirementKey: "NFR-1", ServiceID: "jira-2", IssueKey: "QA-7", Relationship: "verified_by"}},
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("Parse:\n got %s\nwant %s", asJSON(got), asJSON(want))
		}
	})
	t.Run("title and ignore on one column: ignore wins", func(t *testing.T) {
		t.Parallel()
		got := mustParse(t, table(th("K", "Text", option("title")+option("ignore")+"Other"), tr(def("A"), "t", "o")))
		want := []Definition{{Key: "A", Text: "t", HTMLExcerpt: "<p>t</p>"}}
		if !reflect.DeepEqual(got.Definitions, want) {
			t.Errorf("Parse: got %s, want %s", asJSON(got.Definitions), asJSON(want))
		}
	})
	t.Run("lenient markup", func(t *testing.T) {
		t.Parallel()
		got := mustParse(t, table(th("K", "Text", "P"), `<tr><td>`+def("A")+`</td><td>a&#x2014;b <ac:link><ri:page ri:content-title="Design"/></ac:link> <a href="mailto:x@example.com">mail</a></td><td/></tr>`))
		d := got.Definitions[0]
		if want := "<p>a—b Design mail</p>"; d.HTMLExcerpt != want || d.Properties != nil {
			t.Errorf("got %s, want excerpt %q and no properties", asJSON(d), want)
		}
	})
}
