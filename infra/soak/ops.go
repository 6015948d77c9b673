package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/page/pagetest"
)

const api = "/rest/reqs/1"

// serviceID names each tenant's tracker on the wiki (the jira macros'
// serverId) and the wiki on the tracker (the applink id): the same value,
// as docs/tracker.md allows.
const serviceID = "jira-1"

// issuePool are the issues pages and tracker edits link to.
var issuePool = []string{"PROJ-1", "PROJ-2", "PROJ-3", "PROJ-4", "PROJ-5", "PROJ-6", "PROJ-7", "PROJ-8"}

var priorities = []string{"High", "Medium", "Low"}

// tenantState is one development tenant and what the harness sent it.
type tenantState struct {
	name                                        string
	wikiUser, wikiAdmin, trackerUser, trackerAd string
	proxy                                       *TrackerProxy
	spaces                                      []string
	ceo                                         map[string]string // the page each space's baselines rename
	pages                                       []*pageState

	mu              sync.Mutex
	baselines       map[string]int // creates answered 200 or 202, by space
	failedBaselines map[string]int // the other creates, by space
}

// pageState is one page and every save of it the harness attempted.
type pageState struct {
	id, space string
	saving    sync.Mutex // one save of a page at a time, as one editor

	mu        sync.Mutex
	gens      []*generation
	confirmed int // index of the last save answered 200; -1 before
}

// generation is one attempted save of a page.
type generation struct {
	n          int
	rows       []rowSpec
	status     int
	start, end time.Time
}

// rowSpec is one requirement row as sent.
type rowSpec struct {
	key, text, priority, refines string
	issues                       []string // jira macros in the Implements column
}

func (g *generation) keys() []string {
	out := make([]string, len(g.rows))
	for i, r := range g.rows {
		out[i] = r.key
	}
	return out
}

// confirmedKeys returns the keys of the page's last confirmed save.
func (p *pageState) confirmedKeys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.confirmed < 0 {
		return nil
	}
	return p.gens[p.confirmed].keys()
}

// setup connects every development tenant's wiki to its tracker through a
// faulty proxy and creates the pages baselines rename.
func (h *harness) setup(ctx context.Context) error {
	for ti, name := range []string{"demo", "acme"} {
		proxy, err := NewTrackerProxy(h.st.TrackerURL, 3*time.Second)
		if err != nil {
			return err
		}
		tn := &tenantState{name: name, wikiUser: name + "-wiki-user", wikiAdmin: name + "-wiki-admin",
			trackerUser: name + "-tracker-user", trackerAd: name + "-tracker-admin", proxy: proxy,
			spaces: []string{"SOAKA", "SOAKB"}, ceo: map[string]string{}, baselines: map[string]int{},
			failedBaselines: map[string]int{}}
		h.tenants = append(h.tenants, tn)
		if err := h.connect(ctx, tn); err != nil {
			return fmt.Errorf("connect tenant %s: %w", name, err)
		}
		for si, space := range tn.spaces {
			id := fmt.Sprint(9000 + si)
			a := h.do(ctx, "PUT", h.st.WikiURL+api+"/content/"+id, tn.wikiUser, map[string]any{
				"spaceKey": space, "title": "Releases of " + space, "body": "<p>Baselines of the soak.</p>"})
			if a.status != 200 {
				return fmt.Errorf("create the baseline page of %s/%s: %s", name, space, a)
			}
			tn.ceo[space] = id
			for i := range 4 {
				tn.pages = append(tn.pages, &pageState{id: fmt.Sprint(5000 + 100*ti + 10*si + i), space: space, confirmed: -1})
			}
		}
	}
	return nil
}

// connect runs the three calls of docs/tracker.md, the integration's rpcUrl
// naming the tenant's faulty proxy.
func (h *harness) connect(ctx context.Context, tn *tenantState) error {
	W, T := h.st.WikiURL, h.st.TrackerURL
	a := h.do(ctx, "PUT", T+api+"/api/"+serviceID, tn.trackerAd, map[string]any{
		"name": "wiki of " + tn.name, "url": W, "serviceId": serviceID, "version": 5})
	var reg struct{ IncomingToken string }
	if a.status != 200 || json.Unmarshal([]byte(a.body), &reg) != nil || reg.IncomingToken == "" {
		return fmt.Errorf("register the applink: %s", a)
	}
	a = h.do(ctx, "POST", W+api+"/integration", tn.wikiAdmin, map[string]any{
		"serviceId": serviceID, "applinkId": serviceID, "label": "tracker", "rpcUrl": tn.proxy.URL,
		"displayUrl": tn.proxy.URL, "version": 5, "token": reg.IncomingToken})
	var integ struct{ IncomingToken string }
	if a.status != 200 || json.Unmarshal([]byte(a.body), &integ) != nil || integ.IncomingToken == "" {
		return fmt.Errorf("create the integration: %s", a)
	}
	a = h.do(ctx, "PUT", T+api+"/api/"+serviceID, tn.trackerAd, map[string]any{
		"name": "wiki of " + tn.name, "url": W, "serviceId": serviceID, "token": integ.IncomingToken})
	if a.status != 200 {
		return fmt.Errorf("give the applink the wiki's token: %s", a)
	}
	return nil
}

// answer is one HTTP answer; status 0 is a transport error.
type answer struct {
	status int
	body   string
	err    error
}

func (a answer) String() string {
	if a.err != nil {
		return a.err.Error()
	}
	b := a.body
	if len(b) > 300 {
		b = b[:300] + "..."
	}
	return fmt.Sprintf("%d %s", a.status, b)
}

func (h *harness) do(ctx context.Context, method, u, token string, body any) answer {
	var rd io.Reader
	if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			return answer{err: err}
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(b)}
}

// call is do, recorded under kind.
func (h *harness) call(ctx context.Context, kind, method, u, token string, body any) answer {
	start := time.Now()
	a := h.do(ctx, method, u, token, body)
	rec := record{kind: kind, status: a.status, start: start, end: time.Now(), target: method + " " + u}
	if a.err != nil {
		rec.err = a.err.Error()
	} else if a.status >= 500 {
		rec.err = a.String()
	}
	h.add(rec)
	return a
}

// operate runs one operation drawn from rng: the mix of a tenant's day.
func (h *harness) operate(ctx context.Context, rng *rand.Rand) {
	tn := h.tenants[rng.IntN(len(h.tenants))]
	p := tn.pages[rng.IntN(len(tn.pages))]
	W, T := h.st.WikiURL, h.st.TrackerURL
	keyOf := func() string {
		if keys := p.confirmedKeys(); len(keys) > 0 {
			return keys[rng.IntN(len(keys))]
		}
		return fmt.Sprintf("P%s-%d", p.id, 1+rng.IntN(10))
	}
	issue := issuePool[rng.IntN(len(issuePool))]
	switch k := rng.IntN(100); {
	case k < 14:
		h.savePage(ctx, tn, p, rng)
	case k < 40:
		kind, q := searchOf(rng, p, issue)
		h.call(ctx, "search:"+kind, "GET", W+api+"/requirement2/"+p.space+"?"+url.Values{
			"spaceKey": {p.space}, "q": {q}, "limit": {"50"}}.Encode(), tn.wikiUser, nil)
	case k < 62:
		h.call(ctx, "read", "GET", W+api+"/requirement2/"+p.space+"/"+keyOf(), tn.wikiUser, nil)
	case k < 68:
		h.call(ctx, "page-view", "GET", W+api+"/page/"+p.space+"/"+p.id, tn.wikiUser, nil)
	case k < 71:
		a := h.call(ctx, "baseline", "POST", W+api+"/baseline/"+p.space+"/1/create", tn.wikiUser,
			map[string]any{"name": fmt.Sprintf("Soak %d", rng.IntN(1e6)), "ceo": tn.ceo[p.space]})
		tn.mu.Lock()
		if a.status == 200 || a.status == 202 {
			tn.baselines[p.space]++
		} else {
			tn.failedBaselines[p.space]++
		}
		tn.mu.Unlock()
	case k < 82:
		method, kind := "POST", "tracker-link-add"
		if rng.IntN(3) == 0 {
			method, kind = "DELETE", "tracker-link-remove"
		}
		h.call(ctx, kind, method, T+api+"/issuelinks/"+issue, tn.trackerUser, []map[string]any{{
			"applinkId": serviceID, "spaceKey": p.space, "key": keyOf(), "baselineNumber": nil, "relationship": "tests"}})
	case k < 92:
		h.call(ctx, "link-dialog", "GET", T+api+"/api/"+serviceID+"/requirements?"+url.Values{
			"q": {fmt.Sprintf("key ~ 'P%s-%d%%'", p.id, 1+rng.IntN(9))}, "limit": {"20"}}.Encode(), tn.trackerUser, nil)
	default:
		other := issuePool[rng.IntN(len(issuePool))]
		h.call(ctx, "tracker-resync", "PUT", T+api+"/sync?issues="+issue+","+other, tn.trackerUser, nil)
	}
}

// searchOf draws one search of every kind the query language has an index
// for, and a full-text one.
func searchOf(rng *rand.Rand, p *pageState, issue string) (kind, q string) {
	switch rng.IntN(6) {
	case 0:
		return "key-prefix", fmt.Sprintf("key ~ 'P%s-%d%%'", p.id, 1+rng.IntN(9))
	case 1:
		return "property", fmt.Sprintf("@Priority = '%s'", priorities[rng.IntN(len(priorities))])
	case 2:
		return "page", "page = " + p.id
	case 3:
		return "issue", "jira = '" + issue + "'"
	case 4:
		return "text", fmt.Sprintf("text ~ '%%generation %d%%'", 1+rng.IntN(5))
	default:
		return "dependency", fmt.Sprintf("to = 'P%s-%d'", p.id, 1+rng.IntN(20))
	}
}

// pageSize draws a page's size: mostly small, sometimes up to max.
func pageSize(rng *rand.Rand, max int) int {
	switch k := rng.IntN(20); {
	case k < 14:
		return 10 + rng.IntN(41)
	case k < 19:
		return 50 + rng.IntN(min(max, 150)-49)
	default:
		return 150 + rng.IntN(max-149)
	}
}

// savePage saves a new generation of p: requirements with a property, a
// dependency and issue macros, every text naming the generation.
func (h *harness) savePage(ctx context.Context, tn *tenantState, p *pageState, rng *rand.Rand) {
	p.saving.Lock()
	defer p.saving.Unlock()
	n := pageSize(rng, h.cfg.MaxPage)
	if h.cfg.MaxPage < 150 {
		n = 10 + rng.IntN(h.cfg.MaxPage-9)
	}
	p.mu.Lock()
	g := &generation{n: len(p.gens) + 1}
	p.mu.Unlock()
	rows := []string{pagetest.TH("Key", "Description", "Priority", "Refines", "Implements")}
	for i := 1; i <= n; i++ {
		r := rowSpec{key: fmt.Sprintf("P%s-%d", p.id, i), priority: priorities[rng.IntN(len(priorities))]}
		r.text = fmt.Sprintf("Requirement %s of page %s, generation %d.", r.key, p.id, g.n)
		refines := ""
		if i > 1 && i%3 == 0 {
			r.refines = fmt.Sprintf("P%s-%d", p.id, i-1)
			refines = pagetest.Link("", r.refines)
		}
		var macros strings.Builder
		if rng.IntN(4) == 0 {
			for range 1 + rng.IntN(2) {
				is := issuePool[rng.IntN(len(issuePool))]
				if !slices.Contains(r.issues, is) {
					r.issues = append(r.issues, is)
					macros.WriteString(pagetest.Jira(is, serviceID))
				}
			}
		}
		g.rows = append(g.rows, r)
		rows = append(rows, pagetest.TR(pagetest.Def(r.key), "<p>"+html.EscapeString(r.text)+"</p>", r.priority, refines, macros.String()))
	}
	g.start = time.Now()
	p.mu.Lock()
	p.gens = append(p.gens, g)
	p.mu.Unlock()
	a := h.call(ctx, "page-save", "PUT", h.st.WikiURL+api+"/content/"+p.id, tn.wikiUser, map[string]any{
		"spaceKey": p.space, "title": "Specification " + p.id, "body": pagetest.Table(rows...)})
	p.mu.Lock()
	g.status, g.end = a.status, time.Now()
	if a.status == 200 {
		p.confirmed = len(p.gens) - 1
	}
	p.mu.Unlock()
}
