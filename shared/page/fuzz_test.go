package page

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// FuzzParse checks that Parse never panics, that every error it returns is an
// Invalid error, and that what it returns keeps its promises. Its seed corpus
// is testdata/fuzz/FuzzParse, which plain `go test` runs.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, body string) {
		r, err := Parse(body)
		if err != nil {
			if !errors.Is(err, apperr.ErrInvalid) {
				t.Fatalf("Parse error %v is not Invalid", err)
			}
			return
		}
		checkResult(t, r)
	})
}

// checkResult checks the invariants of a Parse result.
func checkResult(t *testing.T, r *Result) {
	t.Helper()
	keys := make(map[string]bool)
	for _, d := range r.Definitions {
		if !requirement.ValidKey(d.Key) {
			t.Errorf("definition key %q is invalid", d.Key)
		}
		if keys[strings.ToUpper(d.Key)] {
			t.Errorf("key %q is defined twice", d.Key)
		}
		keys[strings.ToUpper(d.Key)] = true
		checkDefinition(t, d)
	}
	for _, k := range r.Duplicates {
		if !requirement.ValidKey(k) || !keys[strings.ToUpper(k)] {
			t.Errorf("duplicate %q is invalid or has no kept definition", k)
		}
	}
	for _, l := range r.Links {
		if l.IssueKey == "" {
			t.Errorf("issue link without key: %+v", l)
		}
		if l.RequirementKey != "" && !slices.ContainsFunc(r.Definitions, func(d Definition) bool { return d.Key == l.RequirementKey }) {
			t.Errorf("issue link to %q, which is not a definition", l.RequirementKey)
		}
	}
}

// checkDefinition checks the invariants of one definition.
func checkDefinition(t *testing.T, d Definition) {
	t.Helper()
	for _, dep := range d.Dependencies {
		if !requirement.ValidKey(dep.Key) || dep.SpaceKey != "" && !requirement.ValidSpaceKey(dep.SpaceKey) || dep.Relationship == "" {
			t.Errorf("%s: invalid dependency %+v", d.Key, dep)
		}
	}
	for _, is := range d.Issues {
		if is.IssueKey == "" || is.Relationship == "" {
			t.Errorf("%s: invalid issue link %+v", d.Key, is)
		}
	}
	for _, p := range d.Properties {
		if p.Key == "" || p.Value == "" || strings.Join(strings.Fields(p.Value), " ") != p.Value {
			t.Errorf("%s: property %+v is empty or not collapsed", d.Key, p)
		}
	}
	if strings.Join(strings.Fields(d.Text), " ") != d.Text {
		t.Errorf("%s: text %q is not collapsed", d.Key, d.Text)
	}
	if d.HTMLExcerpt != "" && (!strings.HasPrefix(d.HTMLExcerpt, "<p>") || !strings.HasSuffix(d.HTMLExcerpt, "</p>")) {
		t.Errorf("%s: excerpt %q is not one paragraph", d.Key, d.HTMLExcerpt)
	}
	if why := unsafeMarkup(d.HTMLExcerpt); why != "" {
		t.Errorf("%s: excerpt %q is unsafe: %s", d.Key, d.HTMLExcerpt, why)
	}
}

// FuzzSanitize checks that Sanitize output is safe, one paragraph, and a
// fixed point.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		`<p>a <b>b</b></p>`,
		`<img src=x onerror=alert(1)><a href="javascript:alert(1)">x</a>`,
		`<svg onload=alert(1)><style>*{}</style><table><tr><td>c</td></tr></table>`,
		`<a href="https://example.com/?a=1&amp;b='2'">it's</a>`,
		`<ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">P-1</ac:parameter></ac:structured-macro>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		if why := unsafeMarkup(got); why != "" {
			t.Fatalf("Sanitize(%q) = %q is unsafe: %s", s, got, why)
		}
		if got != "" && (!strings.HasPrefix(got, "<p>") || !strings.HasSuffix(got, "</p>")) {
			t.Fatalf("Sanitize(%q) = %q is not one paragraph", s, got)
		}
		if again := Sanitize(got); again != got {
			t.Fatalf("Sanitize is not idempotent on %q: %q then %q", s, got, again)
		}
	})
}

// FuzzSafeLink: a link SafeLink accepts, read the way a browser reads an
// href (leading spaces dropped, tabs and newlines removed, '\' as '/'),
// either has an http(s) scheme and a host, or resolves against the wiki's
// own address to that same host.
func FuzzSafeLink(f *testing.F) {
	for _, s := range []string{"/requirements/DEMO/REQ-1", "https://ok.example/p?q=1", "page.html#a", "//evil",
		"/\\evil", "jav&#x61;script:x", "java%0Ascript:x", "http:evil", "/%2F/evil", "\t//evil", "https://u@h/", ""} {
		f.Add(s)
	}
	base, _ := url.Parse("https://wiki.example/base/page")
	f.Fuzz(func(t *testing.T, s string) {
		if !SafeLink(s) {
			return
		}
		read := strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(strings.TrimLeft(s, " \x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f"))
		u, err := url.Parse(read)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", s, err)
		}
		if u.Scheme != "" {
			if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
				t.Fatalf("accepted %q: scheme %q host %q", s, u.Scheme, u.Host)
			}
			return
		}
		if r := base.ResolveReference(u); r.Host != base.Host || r.Scheme != base.Scheme {
			t.Fatalf("accepted %q, which leaves for %s://%s", s, r.Scheme, r.Host)
		}
	})
}
