package tracker_test

import (
	"errors"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want tracker.Mode
		ok   bool
	}{
		{"AUTO", tracker.Auto, true},
		{"MANUAL", tracker.Manual, true},
		{"DISABLED", tracker.Disabled, true},
		{"auto", "", false},
		{"", "", false},
		{"ENABLED", "", false},
		{" AUTO", "", false},
	} {
		got, err := tracker.ParseMode(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseMode(%q) = %q, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("ParseMode(%q): error %v is not invalid", tc.in, err)
		}
	}
}

func TestAcceptVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want int
		ok       bool
	}{
		{1, 1, true}, {2, 2, true}, {4, 4, true}, {5, 5, true}, {7, 5, true}, {0, 0, false}, {-3, 0, false},
	} {
		got, err := tracker.AcceptVersion(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("AcceptVersion(%d) = %d, %v", tc.in, got, err)
		}
	}
}

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
	}{
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"https://Wiki.Example.com/confluence/", "https://wiki.example.com/confluence"},
		{"  https://wiki.example.com  ", "https://wiki.example.com"},
		{"ftp://wiki.example.com", ""},
		{"/relative", ""},
		{"wiki.example.com", ""},
		{"https://user:pw@wiki.example.com", ""},
		{"https://wiki.example.com/?a=1", ""},
		{"https://wiki.example.com/#x", ""},
		{"javascript:alert(1)", ""},
		{"", ""},
	} {
		got, err := tracker.NormalizeURL(tc.in)
		if (tc.want == "") != (err != nil) || got != tc.want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestValidateApplinkID(t *testing.T) {
	t.Parallel()
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"wiki-1", true}, {"Wiki_2", true}, {"wiki.example", true}, {string(long[:64]), true},
		{"", false}, {string(long[:65]), false}, {"a#b", false}, {"a/b", false}, {"a b", false}, {"é", false},
		{".", false}, {"..", false}, {"a:b", false}, {"a\x00", false},
	} {
		if err := tracker.ValidateApplinkID(tc.in); (err == nil) != tc.ok {
			t.Errorf("ValidateApplinkID(%q) = %v", tc.in, err)
		}
	}
}

func TestLinkValidate(t *testing.T) {
	t.Parallel()
	good := tracker.Link{IssueKey: "PROJ-1", Req: ref("DEMO", "REQ-1"), Relationship: "implements"}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid link: %v", err)
	}
	for name, change := range map[string]func(*tracker.Link){
		"no issue":          func(l *tracker.Link) { l.IssueKey = "" },
		"hash in issue":     func(l *tracker.Link) { l.IssueKey = "A#B" },
		"issue without no.": func(l *tracker.Link) { l.IssueKey = "PROJ" },
		"issue number only": func(l *tracker.Link) { l.IssueKey = "1-2" },
		"slash in key":      func(l *tracker.Link) { l.Req.Key = "A/B" },
		"space in space":    func(l *tracker.Link) { l.Req.SpaceKey = "DE MO" },
		"no relationship":   func(l *tracker.Link) { l.Relationship = "" },
		"negative baseline": func(l *tracker.Link) { l.Req.Baseline = -1 },
		"bad applink":       func(l *tracker.Link) { l.Req.ApplinkID = "x y" },
		"control char":      func(l *tracker.Link) { l.Relationship = "a\x00" },
	} {
		l := good
		change(&l)
		if err := l.Validate(); !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("%s: Validate = %v, want invalid", name, err)
		}
	}
}

func TestMessageValidate(t *testing.T) {
	t.Parallel()
	id := ptr(int64(1))
	for _, tc := range []struct {
		name string
		m    tracker.Message
		ok   bool
	}{
		{"updated", tracker.Message{ID: id, Type: tracker.Updated, SpaceKey: "S", Key: "K", NewHTMLExcerpt: ptr("<p>x</p>")}, true},
		{"updated url only", tracker.Message{ID: id, Type: tracker.Updated, SpaceKey: "S", Key: "K", NewURL: ptr("/requirements/S/K")}, true},
		{"updated nothing", tracker.Message{ID: id, Type: tracker.Updated, SpaceKey: "S", Key: "K"}, false},
		{"updated js url", tracker.Message{ID: id, Type: tracker.Updated, SpaceKey: "S", Key: "K", NewURL: ptr("javascript:alert(1)")}, false},
		{"deleted", tracker.Message{ID: id, Type: tracker.Deleted, SpaceKey: "S", Key: "K", Estate: "_"}, true},
		{"deleted no key", tracker.Message{ID: id, Type: tracker.Deleted, SpaceKey: "S"}, false},
		{"wrong estate", tracker.Message{ID: id, Type: tracker.Deleted, SpaceKey: "S", Key: "K", Estate: "x"}, false},
		{"moved", tracker.Message{ID: id, Type: tracker.Moved, SpaceKey: "S", Key: "K", NewSpaceKey: "T", NewKey: "K"}, true},
		{"moved nowhere", tracker.Message{ID: id, Type: tracker.Moved, SpaceKey: "S", Key: "K", NewSpaceKey: "S", NewKey: "K"}, false},
		{"moved no new key", tracker.Message{ID: id, Type: tracker.Moved, SpaceKey: "S", Key: "K", NewSpaceKey: "T"}, false},
		{"link", tracker.Message{ID: id, Type: tracker.LinkMessage, SpaceKey: "S", Key: "K", ObjectKey: "P-1", Relationship: "implements"}, true},
		{"link no issue", tracker.Message{ID: id, Type: tracker.LinkMessage, SpaceKey: "S", Key: "K", Relationship: "implements"}, false},
		{"link no relationship", tracker.Message{ID: id, Type: tracker.LinkMessage, SpaceKey: "S", Key: "K", ObjectKey: "P-1"}, false},
		{"unknown type", tracker.Message{ID: id, Type: "RENAMED", SpaceKey: "S", Key: "K"}, false},
		{"no type", tracker.Message{ID: id, SpaceKey: "S", Key: "K"}, false},
		{"no id", tracker.Message{Type: tracker.Deleted, SpaceKey: "S", Key: "K"}, false},
		{"negative baseline", tracker.Message{ID: id, Type: tracker.Deleted, SpaceKey: "S", Key: "K", Baseline: -2}, false},
	} {
		err := tc.m.Validate("wiki-1")
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("%s: %v is not invalid", tc.name, err)
		}
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	a := tracker.Message{ID: ptr(int64(1)), Type: tracker.Updated, SpaceKey: "S", Key: "K", NewHTMLExcerpt: ptr("x")}
	b := a
	b.ID = ptr(int64(99))
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("the id changes the fingerprint")
	}
	c := a
	c.NewHTMLExcerpt = ptr("")
	d := a
	d.NewHTMLExcerpt = nil
	e := a
	e.Key, e.SpaceKey = "", "SK" // field boundaries matter
	for _, other := range []tracker.Message{c, d, e} {
		if other.Fingerprint() == a.Fingerprint() {
			t.Errorf("%+v has the fingerprint of %+v", other, a)
		}
	}
	if c.Fingerprint() == d.Fingerprint() {
		t.Error("empty and absent excerpts have the same fingerprint")
	}
}
