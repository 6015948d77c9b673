// Package trackertest provides a fake wiki for tests of the tracker side: an
// httptest server that speaks the parts of the wiki API the tracker calls
// (requirement read and search, the integration's version endpoint and the
// links callback), checks the bearer token, and records what it was sent
// (requirement reads, searches, links callbacks). The callback can be made
// to fail (SetLinksStatus) and the whole wiki to be down (SetDown).
package trackertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Requirement is a requirement the fake wiki serves.
type Requirement struct {
	SpaceKey    string `json:"spaceKey"`
	Key         string `json:"key"`
	Baseline    *int   `json:"baseline"`
	Status      string `json:"status"`
	HTMLExcerpt string `json:"htmlExcerpt"`
	GenericURL  string `json:"genericUrl"`
	NewSpaceKey string `json:"newSpaceKey,omitempty"`
	NewKey      string `json:"newKey,omitempty"`
}

// LinkSet is one requirement of a links callback, as the wiki receives it.
type LinkSet struct {
	SpaceKey string `json:"spaceKey"`
	Key      string `json:"key"`
	Baseline *int   `json:"baseline"`
	Links    []struct {
		IssueKey     string `json:"issueKey"`
		Relationship string `json:"relationship"`
	} `json:"links"`
}

// Wiki is a fake wiki. Set its fields through the methods; they are safe
// for concurrent use with the server.
type Wiki struct {
	// URL is the base URL to register in an applink.
	URL string

	token     string
	serviceID string
	srv       *httptest.Server

	mu           sync.Mutex
	requirements map[string]Requirement // "space/key" or "space/key@b"
	version, max int
	down         bool
	searches     []string // raw query strings
	linkCalls    [][]LinkSet
	linksStatus  int      // status of the links callback (0: 204)
	reads        []string // "space/key[@b]" of each requirement GET
	search       *cannedAnswer
}

// cannedAnswer is an answer set by SetSearchAnswer.
type cannedAnswer struct {
	status            int
	contentType, body string
}

// NewWiki starts a fake wiki that accepts bearer token and knows the
// tracker as integration serviceID, at API version 4 of at most 4. It
// stops when t ends.
func NewWiki(t testing.TB, token, serviceID string) *Wiki {
	w := &Wiki{token: token, serviceID: serviceID, requirements: map[string]Requirement{}, version: 4, max: 4}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	w.URL = w.srv.URL
	t.Cleanup(w.srv.Close)
	return w
}

// SetRequirement makes the wiki serve r (current version, status ACTIVE
// unless set) with excerpt html.
func (w *Wiki) SetRequirement(space, key, html string) {
	w.Put(Requirement{SpaceKey: space, Key: key, Status: "ACTIVE", HTMLExcerpt: html, GenericURL: "/requirements/" + space + "/" + key})
}

// Put makes the wiki serve r.
func (w *Wiki) Put(r Requirement) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requirements[reqKey(r.SpaceKey, r.Key, r.Baseline)] = r
}

// SetVersion sets the wiki's current and highest API version.
func (w *Wiki) SetVersion(current, max int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.version, w.max = current, max
}

// Version returns the wiki's current API version.
func (w *Wiki) Version() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.version
}

// SetDown makes every request answer 503 (down) or work again.
func (w *Wiki) SetDown(down bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down = down
}

// LinkCalls returns the bodies of the links callbacks received so far.
func (w *Wiki) LinkCalls() [][]LinkSet {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]LinkSet(nil), w.linkCalls...)
}

// SetLinksStatus makes the links callback answer status (a 403 is what a
// DISABLED integration answers); 0 restores 204. Refused calls are not
// recorded in LinkCalls.
func (w *Wiki) SetLinksStatus(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.linksStatus = status
}

// SetSearchAnswer makes every search answer status with this content type
// and body, as they are (a wiki answering something else than its API
// says); status 0 restores the wiki's own search.
func (w *Wiki) SetSearchAnswer(status int, contentType, body string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.search = nil
	if status != 0 {
		w.search = &cannedAnswer{status: status, contentType: contentType, body: body}
	}
}

// Delete makes the wiki forget a requirement (its GET answers 404).
func (w *Wiki) Delete(space, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.requirements, reqKey(space, key, nil))
}

// Reads returns the requirements read so far ("space/key", "@b" for a
// baseline), in order.
func (w *Wiki) Reads() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.reads...)
}

// Searches returns the query strings of the searches received so far.
func (w *Wiki) Searches() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.searches...)
}

func reqKey(space, key string, baseline *int) string {
	if baseline != nil && *baseline > 0 {
		return space + "/" + key + "@" + strconv.Itoa(*baseline)
	}
	return space + "/" + key
}

func answer(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

func fail(rw http.ResponseWriter, status int, msg string) {
	answer(rw, status, map[string]any{"status": status, "message": msg})
}

func (w *Wiki) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		fail(rw, http.StatusServiceUnavailable, "wiki under maintenance")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+w.token {
		fail(rw, http.StatusUnauthorized, "invalid bearer token")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/rest/reqs/1/"), "/")
	for i, p := range parts {
		parts[i], _ = url.PathUnescape(p)
	}
	switch {
	case len(parts) == 3 && parts[0] == "requirement2" && r.Method == http.MethodGet:
		var b *int
		if v := r.URL.Query().Get("v"); v != "" {
			n, _ := strconv.Atoi(v)
			b = &n
		}
		w.reads = append(w.reads, reqKey(parts[1], parts[2], b))
		req, ok := w.requirements[reqKey(parts[1], parts[2], b)]
		if !ok {
			fail(rw, http.StatusNotFound, "requirement "+parts[1]+"/"+parts[2]+" not found")
			return
		}
		answer(rw, http.StatusOK, req)
	case len(parts) == 2 && parts[0] == "requirement2" && r.Method == http.MethodGet:
		w.searches = append(w.searches, r.URL.RawQuery)
		if c := w.search; c != nil {
			rw.Header().Set("Content-Type", c.contentType)
			rw.WriteHeader(c.status)
			_, _ = io.WriteString(rw, c.body)
			return
		}
		if strings.Contains(r.URL.Query().Get("q"), "(((") {
			answer(rw, http.StatusBadRequest, map[string]any{"status": 400, "message": "unexpected end of query", "position": 3})
			return
		}
		var results []Requirement
		for _, q := range w.requirements {
			if q.Baseline == nil {
				results = append(results, q)
			}
		}
		answer(rw, http.StatusOK, map[string]any{"results": results, "offset": 0, "limit": 50, "count": len(results), "hasMore": false})
	case len(parts) == 3 && parts[0] == "integration" && parts[1] == w.serviceID && parts[2] == "version":
		switch r.Method {
		case http.MethodGet:
			answer(rw, http.StatusOK, map[string]int{"version": w.version, "max": w.max})
		case http.MethodPut:
			var v int
			if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
				fail(rw, http.StatusBadRequest, "body must be a JSON integer")
				return
			}
			w.version = min(v, w.max)
			answer(rw, http.StatusOK, map[string]any{"serviceId": w.serviceID, "version": w.version})
		default:
			fail(rw, http.StatusMethodNotAllowed, "method not allowed")
		}
	case len(parts) == 3 && parts[0] == "integration" && parts[1] == w.serviceID && parts[2] == "links" && r.Method == http.MethodPut:
		if w.linksStatus != 0 {
			fail(rw, w.linksStatus, "links refused with "+strconv.Itoa(w.linksStatus))
			return
		}
		body, _ := io.ReadAll(r.Body)
		var sets []LinkSet
		if err := json.Unmarshal(body, &sets); err != nil {
			fail(rw, http.StatusBadRequest, "malformed links: "+err.Error())
			return
		}
		w.linkCalls = append(w.linkCalls, sets)
		rw.WriteHeader(http.StatusNoContent)
	default:
		fail(rw, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	}
}
