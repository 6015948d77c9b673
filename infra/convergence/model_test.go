package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The model of one tenant in a history: what the test did and what each
// side must therefore show once the trackers recover.
//
// The wiki is the master of PAGE holds: after recovery a requirement's
// PAGE links for integration S are exactly the jira macros naming S in its
// row, whatever happened in between. The tracker is the master of TRACKER
// holds: the model replays each tracker-side edit by the status the tracker
// answered. Where the contract leaves a detail open (a 409 that drops only
// some holds, an edit through a version-4 applink, a requirement moved or
// deleted while linked, an edit of a requirement that is not ACTIVE) the
// requirement's TRACKER holds are marked uncertain and only the agreement
// of the two sides is checked for them; agreement (origins included) is
// checked for every ACTIVE requirement and every integration.

var (
	serviceIDs = []string{"jira-1", "jira-2", "jira-3"}
	spaces     = []string{"SPA", "SPB"}
	relations  = []string{"implements", "tests"}
	issuePool  = []string{"PROJ-1", "PROJ-2", "PROJ-3", "PROJ-4", "PROJ-5", "PROJ-6"}
	pageIDs    = []string{"101", "102", "103"}
	pageKeys   = map[string][]string{"101": {"A-1", "A-2", "A-3"}, "102": {"B-1", "B-2", "B-3"}, "103": {"C-1", "C-2"}}
	missingReq = reqKey{"SPA", "NOPE-1"}
)

type reqKey struct{ Space, Key string }

func (r reqKey) String() string { return r.Space + "/" + r.Key }

// il is an issue link of a requirement through one applink, without origin.
type il struct{ Issue, Rel string }

type linkModel struct {
	*link
	status  string // wiki integration: ACTIVE | DISABLED
	version int    // both sides
	mode    string // tracker applink: AUTO | MANUAL | DISABLED
}

type pageModel struct {
	id, title, space string
	exists           bool
	rows             []row
	saves            int
}

type tenantModel struct {
	tn        *tenant
	wiki      *faultProxy // in front of the wiki: every applink's url
	links     map[string]*linkModel
	pages     map[string]*pageModel
	thold     map[string]map[reqKey]map[il]bool // tracker holds by applink, requirement
	uncertain map[reqKey]bool
	deleted   map[string]bool // integrations an admin deleted a queued message of
	keys      map[reqKey]bool // every requirement the history named
}

func newTenantModel(tn *tenant, wiki *faultProxy) *tenantModel {
	m := &tenantModel{tn: tn, wiki: wiki, links: map[string]*linkModel{}, pages: map[string]*pageModel{},
		thold: map[string]map[reqKey]map[il]bool{}, uncertain: map[reqKey]bool{}, deleted: map[string]bool{},
		keys: map[reqKey]bool{missingReq: true}}
	for i, id := range pageIDs {
		m.pages[id] = &pageModel{id: id, title: fmt.Sprintf("Specs %d", i+1), space: spaces[i%len(spaces)]}
	}
	return m
}

// active returns the current ACTIVE requirements: every row of every
// existing page.
func (m *tenantModel) active() map[reqKey][]macroRel {
	out := map[reqKey][]macroRel{}
	for _, p := range m.pages {
		if !p.exists {
			continue
		}
		for _, r := range p.rows {
			var ms []macroRel
			for _, mc := range r.Implements {
				ms = append(ms, macroRel{mc, "implements"})
			}
			for _, mc := range r.Tests {
				ms = append(ms, macroRel{mc, "tests"})
			}
			out[reqKey{p.space, r.Key}] = ms
		}
	}
	return out
}

type macroRel struct {
	macro
	rel string
}

// pageSet is the PAGE links of requirement r through integration s.
func (m *tenantModel) pageSet(r reqKey, s string) map[il]bool {
	out := map[il]bool{}
	for _, mr := range m.active()[r] {
		if mr.Server == s {
			out[il{mr.Issue, mr.rel}] = true
		}
	}
	return out
}

func (m *tenantModel) holds(s string, r reqKey) map[il]bool {
	if m.thold[s] == nil {
		m.thold[s] = map[reqKey]map[il]bool{}
	}
	if m.thold[s][r] == nil {
		m.thold[s][r] = map[il]bool{}
	}
	return m.thold[s][r]
}

func (m *tenantModel) sortedLinks() []*linkModel {
	out := make([]*linkModel, 0, len(m.links))
	for _, id := range serviceIDs {
		if l, ok := m.links[id]; ok {
			out = append(out, l)
		}
	}
	return out
}

func (m *tenantModel) existingPages() []*pageModel {
	var out []*pageModel
	for _, id := range pageIDs {
		if m.pages[id].exists {
			out = append(out, m.pages[id])
		}
	}
	return out
}

// randomRows draws the rows of page p: most of its keys, each with up to
// two macros per relationship column naming random issues and integrations
// (created or not).
func randomRows(rng *rand.Rand, p *pageModel) []row {
	var rows []row
	for _, k := range pageKeys[p.id] {
		if rng.IntN(100) < 15 {
			continue
		}
		rows = append(rows, row{Key: k, Description: fmt.Sprintf("%s does thing %d.", k, rng.IntN(4)),
			Implements: randomMacros(rng), Tests: randomMacros(rng)})
	}
	if len(rows) == 0 {
		k := pageKeys[p.id][0]
		rows = append(rows, row{Key: k, Description: k + " does thing.", Implements: randomMacros(rng)})
	}
	return rows
}

func randomMacros(rng *rand.Rand) []macro {
	n := rng.IntN(3)
	var out []macro
	for range n {
		s := serviceIDs[0]
		switch x := rng.IntN(10); {
		case x >= 8:
			s = serviceIDs[2]
		case x >= 5:
			s = serviceIDs[1]
		}
		m := macro{Issue: issuePool[rng.IntN(len(issuePool))], Server: s}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

var warningRE = regexp.MustCompile(`no integration '([^']*)'`)

// warned returns the serviceIds the save answer's warnings name.
func warned(a saveAnswer) map[string]bool {
	out := map[string]bool{}
	for _, w := range a.Warnings {
		if m := warningRE.FindStringSubmatch(w.Message); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

func setString(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}
