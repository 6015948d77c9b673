package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/auth/authtest"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

func ptr[T any](v T) *T { return &v }

func TestValidate(t *testing.T) {
	t.Parallel()
	base := func() *Descriptor {
		return &Descriptor{ServiceID: "jira-1", RPCURL: "https://jira.example.com", Version: 4, Status: Active, SendErrorsToEmailThrottle: 60}
	}
	tests := []struct {
		name   string
		change func(d *Descriptor)
		want   string // substring of the 400 message; "" = valid
	}{
		{"valid", func(*Descriptor) {}, ""},
		{"version 0 clears the endpoint", func(d *Descriptor) { d.Version, d.Endpoint = 0, "/x" }, ""},
		{"bad service id", func(d *Descriptor) { d.ServiceID = "a#b" }, "invalid serviceId"},
		{"applink differs", func(d *Descriptor) { d.ApplinkID = "other" }, "applinkId"},
		{"rpc missing", func(d *Descriptor) { d.RPCURL = "" }, "rpcUrl is required"},
		{"rpc relative", func(d *Descriptor) { d.RPCURL = "/jira" }, "rpcUrl: must be an absolute http or https URL"},
		{"rpc ftp", func(d *Descriptor) { d.RPCURL = "ftp://jira" }, "rpcUrl: must be an absolute"},
		{"rpc with credentials", func(d *Descriptor) { d.RPCURL = "https://u:p@jira" }, "credentials"},
		{"display bad", func(d *Descriptor) { d.DisplayURL = "jira.example.com" }, "displayUrl: must be an absolute"},
		{"display port out of range", func(d *Descriptor) { d.DisplayURL = "https://jira.example.com:99999" }, "displayUrl: port 99999 is not in 1-65535"},
		{"version 6", func(d *Descriptor) { d.Version = 6 }, "version must be between 0 and 5"},
		{"version -1", func(d *Descriptor) { d.Version = -1 }, "version must be between 0 and 5"},
		{"endpoint not a path", func(d *Descriptor) { d.Endpoint = "api" }, "endpoint must be a path"},
		{"email", func(d *Descriptor) { d.SendErrorsToEmail = "not-an-email" }, "sendErrorsToEmail"},
		{"email with name", func(d *Descriptor) { d.SendErrorsToEmail = "Bob <bob@example.com>" }, "sendErrorsToEmail"},
		{"email ok", func(d *Descriptor) { d.SendErrorsToEmail = "bob@example.com" }, ""},
		{"throttle negative", func(d *Descriptor) { d.SendErrorsToEmailThrottle = -1 }, "minutes"},
		{"status", func(d *Descriptor) { d.Status = "PAUSED" }, "use ACTIVE or DISABLED"},
		{"service id ..", func(d *Descriptor) { d.ServiceID = ".." }, "invalid serviceId"},
		{"service id .", func(d *Descriptor) { d.ServiceID = "." }, "invalid serviceId"},
		{"service id with ':'", func(d *Descriptor) { d.ServiceID = "a:b" }, "invalid serviceId"},
		{"service id 65 characters", func(d *Descriptor) { d.ServiceID = strings.Repeat("a", 65) }, "invalid serviceId"},
		{"service id with dots", func(d *Descriptor) { d.ServiceID = "jira.example" }, ""},
		{"token with CR LF", func(d *Descriptor) { d.Token = "secret\r\nX-Injected: 1" }, "token: must not contain control characters"},
		{"token with NUL", func(d *Descriptor) { d.Token = "sec\x00ret" }, "token: must not contain control characters"},
		{"label with ESC", func(d *Descriptor) { d.Label = "Jira\x1b[2J" }, "label: must not contain control characters"},
		{"username with DEL", func(d *Descriptor) { d.Username = "bob\x7f" }, "username: must not contain control characters"},
		{"user key with LF", func(d *Descriptor) { d.UserKey = "bob\n" }, "userKey: must not contain control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := base()
			tt.change(d)
			d.Normalize()
			err := d.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want a 400 containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url            string
		strict, permit bool // accepted without and with private targets
	}{
		{"https://jira.example.com", true, true},
		{"http://127.0.0.1:3001", false, true},
		{"http://localhost:3001", false, true},
		{"http://10.2.3.4/jira", false, true},
		{"http://100.64.0.9", false, true},
		{"http://169.254.169.254/latest/meta-data/", false, false},
		{"http://[fe80::1]/", false, false},
		{"http://0.0.0.0/", false, false},
		{"http://jira.example.com:0/", false, false},
		{"http://2130706433/", false, false},
	} {
		d := &Descriptor{RPCURL: tc.url}
		for allow, want := range map[bool]bool{false: tc.strict, true: tc.permit} {
			err := d.CheckTarget(allow)
			if (err == nil) != want || err != nil && (!errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), "rpcUrl")) {
				t.Errorf("CheckTarget(%s, private %v) = %v", tc.url, allow, err)
			}
		}
	}
}

func TestNormalizeEndpoint(t *testing.T) {
	t.Parallel()
	d := &Descriptor{RPCURL: "https://jira.example.com/", Version: 1}
	d.Normalize()
	if d.Endpoint != DefaultEndpoint || d.DisplayURL != d.RPCURL || d.Label != "jira.example.com" || d.Status != Active {
		t.Fatalf("Normalize = %+v", d)
	}
	if got := d.URL(); got != "https://jira.example.com/rest/reqs/1/api" {
		t.Fatalf("URL = %q", got)
	}
	d.Version = 0
	d.Normalize()
	if d.Endpoint != "" {
		t.Fatalf("version 0 endpoint = %q", d.Endpoint)
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	if s, err := ParseStatus("disabled"); err != nil || s != Disabled {
		t.Fatalf("ParseStatus(disabled) = %v, %v", s, err)
	}
	if _, err := ParseStatus("OFF"); !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), "ACTIVE or DISABLED") {
		t.Fatalf("ParseStatus(OFF) = %v", err)
	}
}

func newTestService() (*Service, *fakeStore, *fakeOutbox, *authtest.Tokens) {
	st, ob, tok := newFakeStore(), newFakeOutbox(), &authtest.Tokens{}
	svc := New(Deps{Store: st, Outbox: ob, Tokens: tok, Settings: &fakeSettings{}, Now: newClock().Now})
	return svc, st, ob, tok
}

func TestCreateUpdateTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, ob, tok := newTestService()
	v, incoming, err := svc.Create(ctx, "demo", Patch{ApplinkID: ptr("jira-1"), RPCURL: ptr("https://jira.example.com"), Token: ptr("secret")})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if v.ServiceID != "jira-1" || v.Version != 4 || v.Endpoint != DefaultEndpoint || v.Status != Active || v.SendErrorsToEmailThrottle != DefaultThrottle {
		t.Fatalf("created %+v", v.Descriptor)
	}
	p, ok := tok.Token(auth.HashToken(incoming))
	if !ok || p != (auth.Principal{Tenant: "demo", App: auth.Wiki, Kind: auth.Link, User: "link:jira-1", Scope: "jira-1"}) {
		t.Fatalf("incoming token principal = %+v, %v", p, ok)
	}
	if _, _, err := svc.Create(ctx, "demo", Patch{ServiceID: ptr("jira-1"), RPCURL: ptr("https://x.example.com")}); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("duplicate Create = %v, want conflict", err)
	}
	if _, _, err := svc.Create(ctx, "demo", Patch{ServiceID: ptr("x"), RPCURL: ptr("https://x.example.com"), Status: ptr("ON")}); !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("bad status Create = %v, want 400", err)
	}
	if tok.Len() != 1 {
		t.Fatalf("a refused create left tokens: %d", tok.Len())
	}

	// A generated serviceId without applinkId.
	v2, _, err := svc.Create(ctx, "demo", Patch{RPCURL: ptr("https://y.example.com")})
	if err != nil || len(v2.ServiceID) != 36 || v2.ApplinkID != "" {
		t.Fatalf("Create without ids = %+v, %v", v2.Descriptor, err)
	}

	// Update merges, keeps the token unless given, rotates on demand.
	ob.put("demo", &outbox.Message{ID: "0000000000000001aaaaaaaa", ServiceID: "jira-1", State: outbox.New})
	v, again, err := svc.Update(ctx, "demo", "jira-1", Patch{Label: ptr("Jira"), Version: ptr(0)})
	if err != nil || again != "" {
		t.Fatalf("Update: %v %q", err, again)
	}
	if v.Label != "Jira" || v.Endpoint != "" || v.Token != "secret" || v.RPCURL != "https://jira.example.com" || v.CountMessagesInQueue != 1 {
		t.Fatalf("updated %+v count %d", v.Descriptor, v.CountMessagesInQueue)
	}
	v, rotated, err := svc.Update(ctx, "demo", "jira-1", Patch{RotateToken: true, Token: ptr("new-secret")})
	if err != nil || rotated == "" || rotated == incoming {
		t.Fatalf("rotate: %v %q", err, rotated)
	}
	if _, ok := tok.Token(auth.HashToken(incoming)); ok {
		t.Fatal("the old incoming token still exists")
	}
	if _, ok := tok.Token(auth.HashToken(rotated)); !ok {
		t.Fatal("the new incoming token is missing")
	}
	if got, _ := st.Get(ctx, "demo", "jira-1"); got.Token != "new-secret" {
		t.Fatalf("token = %q", got.Token)
	}
	if _, _, err := svc.Update(ctx, "demo", "jira-1", Patch{ServiceID: ptr("other")}); !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("changing serviceId = %v, want 400", err)
	}
	if _, _, err := svc.Update(ctx, "acme", "jira-1", Patch{}); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("other tenant = %v, want 404", err)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, _, _ := newTestService()
	if _, _, err := svc.Create(ctx, "demo", Patch{ServiceID: ptr("j"), RPCURL: ptr("https://j.example.com"), Version: ptr(0)}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ ask, want int }{{7, 5}, {2, 2}, {0, 0}, {4, 4}, {5, 5}} {
		got, err := svc.SetVersion(ctx, "demo", "j", tt.ask)
		if err != nil || got != tt.want {
			t.Fatalf("SetVersion(%d) = %d, %v; want %d", tt.ask, got, err, tt.want)
		}
		v, _ := svc.Get(ctx, "demo", "j")
		if v.Version != tt.want || (tt.want == 0) != (v.Endpoint == "") {
			t.Fatalf("after SetVersion(%d): version %d endpoint %q", tt.ask, v.Version, v.Endpoint)
		}
	}
	if _, err := svc.SetVersion(ctx, "demo", "j", -1); !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("SetVersion(-1) = %v", err)
	}
	if _, err := svc.Version(ctx, "demo", "nope"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("Version(unknown) = %v", err)
	}
}

func TestCheckLinkSets(t *testing.T) {
	t.Parallel()
	got, err := CheckLinkSets("jira-1", []LinkSet{
		{SpaceKey: "DEMO", Key: "REQ-1", Links: []requirement.IssueLink{{IssueKey: "PROJ-1", Relationship: "Is Implemented By"}, {IssueKey: "proj-1", Relationship: "is implemented by"}}},
		{SpaceKey: "DEMO", Key: "req-1", Links: []requirement.IssueLink{{IssueKey: "PROJ-2", Relationship: "tests"}}},
		{SpaceKey: "DEMO", Key: "REQ-2", Links: []requirement.IssueLink{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Links) != 2 || got[0].Links[0] != (requirement.IssueLink{ServiceID: "jira-1", IssueKey: "PROJ-1", Relationship: "is_implemented_by"}) || len(got[1].Links) != 0 {
		t.Fatalf("CheckLinkSets = %+v", got)
	}
	for _, bad := range []LinkSet{
		{SpaceKey: "DE MO", Key: "R"},
		{SpaceKey: "DEMO", Key: "R#1"},
		{SpaceKey: "DEMO", Key: "R", Baseline: -2},
		{SpaceKey: "DEMO", Key: "R", Links: []requirement.IssueLink{{IssueKey: "PROJ"}}},
	} {
		if _, err := CheckLinkSets("j", []LinkSet{bad}); !errors.Is(err, apperr.ErrInvalid) {
			t.Fatalf("CheckLinkSets(%+v) = %v, want 400", bad, err)
		}
	}
	// The field at fault is named in the answer's errors.
	for _, tc := range []struct {
		set   LinkSet
		field string
	}{
		{LinkSet{SpaceKey: "DEMO", Key: "R"}, "links"}, // "links": null or absent
		{LinkSet{SpaceKey: "DEMO", Key: "R", Links: []requirement.IssueLink{{IssueKey: "PROJ-1"}}}, "relationship"},
		{LinkSet{SpaceKey: "DEMO", Key: "R", Links: []requirement.IssueLink{{IssueKey: "PROJ-1", Relationship: " \t "}}}, "relationship"},
		{LinkSet{SpaceKey: "DEMO", Key: "R", Links: []requirement.IssueLink{{IssueKey: "PROJ-1", Relationship: "tests\x00"}}}, "relationship"},
		{LinkSet{SpaceKey: "DEMO", Key: "R", Links: []requirement.IssueLink{{IssueKey: "PROJ-1", Relationship: "te\x7fsts"}}}, "relationship"},
	} {
		_, err := CheckLinkSets("j", []LinkSet{tc.set})
		if e := apperr.As(err); e == nil || e.Code != apperr.Invalid || e.Field != tc.field {
			t.Errorf("CheckLinkSets(%+v) = %v, want a 400 naming %q", tc.set, err, tc.field)
		}
	}
}

func TestReplaceLinks(t *testing.T) {
	t.Parallel()
	page := func(sid, ik, rel string) requirement.IssueLink {
		return requirement.IssueLink{ServiceID: sid, IssueKey: ik, Relationship: rel, Page: true}
	}
	tracker := func(sid, ik, rel string) requirement.IssueLink {
		return requirement.IssueLink{ServiceID: sid, IssueKey: ik, Relationship: rel, Tracker: true}
	}
	both := func(sid, ik, rel string) requirement.IssueLink {
		return requirement.IssueLink{ServiceID: sid, IssueKey: ik, Relationship: rel, Page: true, Tracker: true}
	}
	r := &requirement.Requirement{Issues: []requirement.IssueLink{
		page("", "PROJ-1", "implements"),
		tracker("jira-1", "PROJ-1", "tests"),    // the tracker drops it: gone
		both("jira-1", "PROJ-2", "tests"),       // the tracker drops its hold: stays, the page's
		page("jira-1", "PROJ-4", "tests"),       // the tracker adds its hold
		tracker("jira-2", "OTHER-1", "tests"),   // another integration's: untouched
		tracker("jira-1", "PROJ-5", "verifies"), // kept by the tracker
	}}
	sent := []requirement.IssueLink{
		{IssueKey: "PROJ-3", Relationship: "tests"},
		{IssueKey: "proj-4", Relationship: "tests"},
		{IssueKey: "PROJ-5", Relationship: "verifies"},
	}
	if !ReplaceLinks(r, "jira-1", sent, false) {
		t.Fatal("not changed")
	}
	want := []requirement.IssueLink{
		page("", "PROJ-1", "implements"),
		page("jira-1", "PROJ-2", "tests"),
		both("jira-1", "PROJ-4", "tests"),
		tracker("jira-2", "OTHER-1", "tests"),
		tracker("jira-1", "PROJ-3", "tests"),
		tracker("jira-1", "PROJ-5", "verifies"),
	}
	if !slices.Equal(r.Issues, want) {
		t.Fatalf("issues =\n%+v\nwant\n%+v", r.Issues, want)
	}
	if ReplaceLinks(r, "jira-1", sent, false) {
		t.Fatal("the same links again changed the requirement")
	}
	if !ReplaceLinks(r, "jira-1", nil, false) {
		t.Fatal("an empty set changed nothing")
	}
	want = []requirement.IssueLink{
		page("", "PROJ-1", "implements"),
		page("jira-1", "PROJ-2", "tests"),
		page("jira-1", "PROJ-4", "tests"),
		tracker("jira-2", "OTHER-1", "tests"),
	}
	if !slices.Equal(r.Issues, want) {
		t.Fatalf("after an empty set: %+v", r.Issues)
	}
	// A tracker below version 5 sends its whole set: the links it got from
	// the page (LINK messages) come back, and stay the page's alone.
	if !ReplaceLinks(r, "jira-1", []requirement.IssueLink{
		{IssueKey: "PROJ-1", Relationship: "implements"}, {IssueKey: "PROJ-2", Relationship: "tests"}, {IssueKey: "PROJ-8", Relationship: "tests"},
	}, true) {
		t.Fatal("a whole set changed nothing")
	}
	want = []requirement.IssueLink{
		page("", "PROJ-1", "implements"),
		page("jira-1", "PROJ-2", "tests"),
		page("jira-1", "PROJ-4", "tests"),
		tracker("jira-2", "OTHER-1", "tests"),
		tracker("jira-1", "PROJ-8", "tests"),
	}
	if !slices.Equal(r.Issues, want) {
		t.Fatalf("after a whole set: %+v", r.Issues)
	}
}

func TestLinksService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, _, _ := newTestService()
	links := &fakeLinks{reqs: map[string]*requirement.Requirement{"DEMO/REQ-1": {SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active}}}
	svc.d.Links = links
	if _, _, err := svc.Create(ctx, "demo", Patch{ServiceID: ptr("j"), RPCURL: ptr("https://j.example.com")}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.ReplaceLinks(ctx, "demo", "j", []LinkSet{
		{SpaceKey: "DEMO", Key: "REQ-1", Links: []requirement.IssueLink{{IssueKey: "PROJ-1", Relationship: "tests"}}},
		{SpaceKey: "DEMO", Key: "REQ-9", Links: []requirement.IssueLink{}},
	})
	if !errors.Is(err, apperr.ErrNotFound) || !strings.Contains(err.Error(), "DEMO/REQ-9") {
		t.Fatalf("unknown requirement = %v", err)
	}
	if len(links.reqs["DEMO/REQ-1"].Issues) != 0 {
		t.Fatal("a failed callback wrote links")
	}
	n, err := svc.ReplaceLinks(ctx, "demo", "j", []LinkSet{{SpaceKey: "DEMO", Key: "REQ-1", Links: []requirement.IssueLink{{IssueKey: "PROJ-1", Relationship: "tests"}}}})
	if err != nil || n != 1 || links.reqs["DEMO/REQ-1"].Issues[0].ServiceID != "j" {
		t.Fatalf("ReplaceLinks = %d, %v; issues %+v", n, err, links.reqs["DEMO/REQ-1"].Issues)
	}
	if _, err := svc.ReplaceLinks(ctx, "demo", "nope", nil); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("unknown integration = %v", err)
	}
}
