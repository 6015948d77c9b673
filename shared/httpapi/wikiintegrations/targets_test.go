package wikiintegrations_test

// The outbound policy through the HTTP API (docs/operations.md, "Security
// model"): which rpcUrls a wiki admin may save, which the wiki then calls,
// and what a failed call lets the caller see.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// post creates an integration with rpcUrl u and answers the status and body.
func (s *stack) post(t *testing.T, id, u string) (int, string) {
	t.Helper()
	return s.do(t, "POST", "/rest/reqs/1/integration", demoAdmin, fmt.Sprintf(`{"serviceId":%q,"rpcUrl":%q}`, id, u))
}

// Link-local, unspecified, multicast and broadcast targets are refused at
// save whatever the setting; loopback and private ones unless the operator
// allows them (ALLOW_PRIVATE_TARGETS), naming the field.
func TestRPCURLRefusedAtSave(t *testing.T) {
	t.Parallel()
	strict, open := newStackWith(t, true), newStack(t)
	never := []string{
		"http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "http://[fe80::1]/",
		"http://0.0.0.0:3001", "http://224.0.0.1/", "http://255.255.255.255/", "http://2852039166/",
		"http://user:pw@tracker.example.com/", "http://tracker.example.com:0/", "http://tracker.example.com:70000/", "ftp://tracker.example.com/",
	}
	// The answer names the field in errors, for clients that read it.
	if code, out := strict.post(t, "meta", "http://169.254.169.254/latest/meta-data/"); code != 400 || !strings.Contains(out, `"errors":{"rpcUrl":`) {
		t.Errorf("POST rpcUrl of the metadata address = %d %s, want errors naming rpcUrl", code, out)
	}
	private := []string{open.tracker.URL, "http://localhost:3001", "http://10.0.0.5/", "http://192.168.1.10/", "http://172.16.0.1/", "http://100.64.0.1/", "http://[::1]:3001", "http://[fd00::1]/"}
	for i, u := range never {
		for _, s := range []*stack{strict, open} {
			if code, out := s.post(t, fmt.Sprintf("never-%d", i), u); code != 400 || !strings.Contains(out, "rpcUrl") {
				t.Errorf("POST rpcUrl %s = %d %s, want 400 naming rpcUrl", u, code, out)
			}
		}
	}
	for i, u := range private {
		if code, out := strict.post(t, fmt.Sprintf("private-%d", i), u); code != 400 || !strings.Contains(out, "rpcUrl") || !strings.Contains(out, "ALLOW_PRIVATE_TARGETS") {
			t.Errorf("strict: POST rpcUrl %s = %d %s, want 400 naming rpcUrl and the setting", u, code, out)
		}
		if code, out := open.post(t, fmt.Sprintf("private-%d", i), u); code != 200 {
			t.Errorf("private targets allowed: POST rpcUrl %s = %d %s", u, code, out)
		}
	}
	// PUT too, when it changes rpcUrl.
	strict.createIntegration(t, demoAdmin, "jira-1")
	path := "/rest/reqs/1/integration/jira-1"
	for _, u := range []string{"http://169.254.169.254/", open.tracker.URL} {
		if code, out := strict.do(t, "PUT", path, demoAdmin, fmt.Sprintf(`{"rpcUrl":%q}`, u)); code != 400 || !strings.Contains(out, "rpcUrl") {
			t.Errorf("PUT rpcUrl %s = %d %s", u, code, out)
		}
	}
	var d map[string]any
	strict.json(t, "GET", path, demoAdmin, "", 200, &d)
	if d["rpcUrl"] != strict.trackerURL {
		t.Errorf("a refused PUT changed rpcUrl to %v", d["rpcUrl"])
	}
	// An rpcUrl stored before a stricter setting can still be edited
	// otherwise (to set it DISABLED).
	open.createIntegration(t, demoAdmin, "jira-1")
	open.json(t, "PUT", path, demoAdmin, `{"status":"DISABLED"}`, 200, nil)
}

// At connect time: a name that resolves to loopback is refused while
// private targets are off (the tracker is never called), and a redirect to
// the metadata address is refused even when they are on. The 502 names the
// refusal, and the message stays NEW.
func TestRPCURLRefusedAtConnect(t *testing.T) {
	t.Parallel()
	base := "/rest/reqs/1/integration/jira-1/queue/outbound/"
	for _, tc := range []struct {
		name   string
		strict bool
		status int // what the fake tracker answers
		want   string
	}{
		{"name resolving to loopback", true, 200, "refused: loopback and private addresses are called only when the operator sets ALLOW_PRIVATE_TARGETS=true"},
		{"redirect to 169.254.169.254", false, 307, "refused: link-local, unspecified, multicast and broadcast addresses are never called"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStackWith(t, tc.strict)
			s.createIntegration(t, demoAdmin, "jira-1")
			s.tracker.set(tc.status)
			msgs := s.write(t, 1, time.Now(), false)
			code, out := s.do(t, "PUT", base+msgs[0].ID, demoAdmin, "")
			var failed map[string]any
			_ = json.Unmarshal([]byte(out), &failed)
			if code != 502 || failed["message"] != "cannot reach the tracker: "+tc.want || failed["lastResponse"] != "error: "+tc.want {
				t.Fatalf("push = %d %s", code, out)
			}
			if strings.Contains(out, "127.0.0.1") || strings.Contains(out, "169.254") {
				t.Errorf("the 502 names an address: %s", out)
			}
			if m := s.message(t, msgs[0].ID); m.State != "NEW" {
				t.Errorf("message %s after a refused push", m.State)
			}
			wantPosts := 0
			if !tc.strict {
				wantPosts = 1 // the redirect itself
			}
			if n := len(s.tracker.posts()); n != wantPosts {
				t.Errorf("the tracker got %d POSTs, want %d", n, wantPosts)
			}
			// The sync run refuses it the same way.
			if rep := s.run(t); rep.Delivered != 0 {
				t.Errorf("sync run delivered %d messages", rep.Delivered)
			}
			if m := s.message(t, msgs[0].ID); m.State != "NEW" || !strings.Contains(m.LastResponse, strings.TrimPrefix(tc.want, "refused: ")) {
				t.Errorf("after the sync run: %s %q", m.State, m.LastResponse)
			}
			if n := len(s.tracker.posts()); n > 2*wantPosts {
				t.Errorf("the tracker got %d POSTs after the sync run", n)
			}
		})
	}
	// With private targets allowed, the same name is called.
	s := newStack(t)
	s.trackerURL = "http://" + trackerHost + ":" + strings.TrimPrefix(s.tracker.Listener.Addr().String(), "127.0.0.1:")
	s.createIntegration(t, demoAdmin, "jira-1")
	msgs := s.write(t, 1, time.Now(), false)
	if code, out := s.do(t, "PUT", base+msgs[0].ID, demoAdmin, ""); code != 200 || !strings.Contains(out, `"state":"DONE"`) {
		t.Fatalf("push with private targets allowed = %d %s", code, out)
	}
}

// A tracker's answer is never repeated in a 502: the push names the status
// only, while the queue listing (for admins) keeps the start of the body.
func TestRemoteBodyNotEchoed(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	msgs := s.write(t, 1, time.Now(), false)
	base := "/rest/reqs/1/integration/jira-1/queue/outbound"
	for _, status := range []int{500, 409} {
		s.tracker.set(status)
		code, out := s.do(t, "PUT", base+"/"+msgs[0].ID, demoAdmin, "")
		if code != 502 || !strings.Contains(out, fmt.Sprintf("tracker answered HTTP %d", status)) {
			t.Fatalf("push = %d %s", code, out)
		}
		for _, body := range []string{"database unavailable", "application link is DISABLED"} {
			if strings.Contains(out, body) {
				t.Errorf("the 502 repeats the tracker's body: %s", out)
			}
		}
	}
	var q []map[string]any
	s.json(t, "GET", base+"?includeLastRespnse=true", demoAdmin, "", 200, &q)
	if len(q) != 1 || !strings.Contains(q[0]["lastResponse"].(string), "application link is DISABLED") {
		t.Errorf("queue listing = %v", q)
	}
}
