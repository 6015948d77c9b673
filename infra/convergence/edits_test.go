package convergence_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// trackerEdit is a tracker user's POST, PUT or DELETE of an issue's links,
// checked against the statuses the contract allows in the current state
// (404 for a requirement the wiki does not have, 502 when the wiki cannot
// be asked, 409 for taking away a link a page defines at version 5) and
// replayed into the model by the status actually answered.
func (h *history) trackerEdit(m *tenantModel) {
	l := h.randomLink(m)
	if l == nil {
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
		return
	}
	issue := issuePool[h.rng.IntN(len(issuePool))]
	before, err := h.e.issueLinks(m.tn, issue)
	if err != nil {
		h.logf("%s read %s: %v", m.tn.name, issue, err)
		h.violate("%v", err)
		return
	}
	active := m.active()
	activeKeys := slices.SortedFunc(maps.Keys(active), cmpReq)
	var inactive []reqKey
	for _, r := range slices.SortedFunc(maps.Keys(m.keys), cmpReq) {
		if _, ok := active[r]; !ok && r != missingReq {
			inactive = append(inactive, r)
		}
	}
	newItem := func() linkItem {
		r := missingReq
		switch x := h.rng.IntN(100); {
		case x < 8:
		case x < 14 && len(inactive) > 0:
			r = inactive[h.rng.IntN(len(inactive))]
		case len(activeKeys) > 0:
			r = activeKeys[h.rng.IntN(len(activeKeys))]
		}
		app := l.id
		if h.rng.IntN(4) == 0 {
			app = h.randomLink(m).id
		}
		return linkItem{ApplinkID: app, SpaceKey: r.Space, Key: r.Key, Relationship: relations[h.rng.IntN(len(relations))]}
	}
	var current []linkItem
	for _, b := range before {
		if b.BaselineNumber == nil {
			current = append(current, linkItem{ApplinkID: b.ApplinkID, SpaceKey: b.SpaceKey, Key: b.Key, Relationship: b.Relationship})
		}
	}
	method := []string{"POST", "PUT", "DELETE"}[h.pick(45, 30, 25)]
	var items []linkItem
	switch method {
	case "POST":
		for range 1 + h.rng.IntN(2) {
			items = append(items, newItem())
		}
	case "PUT":
		for _, c := range current {
			if h.rng.IntN(2) == 0 {
				items = append(items, c)
			}
		}
		for range h.rng.IntN(3) {
			items = append(items, newItem())
		}
	case "DELETE":
		if len(current) > 0 && h.rng.IntN(10) < 8 {
			items = append(items, current[h.rng.IntN(len(current))])
		} else {
			it := newItem()
			if it.SpaceKey == missingReq.Space && it.Key == missingReq.Key && len(activeKeys) > 0 {
				it.SpaceKey, it.Key = activeKeys[0].Space, activeKeys[0].Key
			}
			items = append(items, it)
		}
	}
	if items == nil {
		items = []linkItem{}
	}

	// What the contract allows here.
	inBody := map[linkItem]bool{}
	missing, notActive, disabled, v4, toggled := false, false, false, false, false
	for _, it := range items {
		inBody[it] = true
		r := reqKey{it.SpaceKey, it.Key}
		if _, ok := active[r]; !ok {
			if r == missingReq || !m.keys[r] {
				missing = true
			} else {
				notActive = true
			}
		}
		lm := m.links[it.ApplinkID]
		if lm.status == "DISABLED" {
			disabled = true
		}
		if time.Since(lm.statusAt) < authCacheTTL+time.Second {
			toggled = true // the wiki may still answer for its token as before
		}
		if m.links[it.ApplinkID].version < 5 {
			v4 = true
		}
	}
	var pageRemoved []linkItem // links a page defines that the edit takes away (version 5)
	for _, b := range before {
		c := linkItem{ApplinkID: b.ApplinkID, SpaceKey: b.SpaceKey, Key: b.Key, Relationship: b.Relationship}
		if b.BaselineNumber != nil || b.Origin != "PAGE" || m.links[b.ApplinkID].version < 5 {
			continue
		}
		if (method == "PUT" && !inBody[c]) || (method == "DELETE" && inBody[c]) {
			pageRemoved = append(pageRemoved, c)
		}
	}
	allowed := map[int]bool{}
	if method == "DELETE" {
		if len(pageRemoved) > 0 {
			allowed[409] = true
		} else {
			allowed[204] = true
		}
	} else {
		checkFails := m.wiki.mode() != pass || disabled
		switch {
		case checkFails:
			allowed[502] = true
			if missing || notActive {
				allowed[404] = true
			}
		case missing:
			allowed[404] = true
		case notActive:
			allowed[200] = true
			allowed[404] = true
		default:
			allowed[200] = true
		}
		if toggled {
			allowed[502] = true
			if !missing && len(pageRemoved) == 0 {
				allowed[200] = true
			}
		}
		if len(pageRemoved) > 0 {
			delete(allowed, 200)
			allowed[409] = true
		}
	}

	a, err := do(method, h.e.st.TrackerURL+api+"/issuelinks/"+issue, m.tn.trackUser, items)
	body, _ := json.Marshal(items)
	var pre []string
	for _, b := range before {
		pre = append(pre, fmt.Sprintf("%s:%s/%s:%s:%s", b.ApplinkID, b.SpaceKey, b.Key, b.Relationship, b.Origin))
	}
	h.logf("%s tracker %s issuelinks/%s %s -> %s (allowed %v; links before: %v; page links taken away: %v)", m.tn.name, method, issue, body,
		statusOf(a, err), sortedInts(allowed), pre, pageRemoved)
	if err != nil {
		h.violate("%v", err)
		return
	}
	if !allowed[a.status] {
		h.violate("tracker %s issuelinks/%s answered %s, the contract allows %v", method, issue, a, sortedInts(allowed))
	}
	// The 409 names the page (as the last LINKS named it; a link a
	// version-4 LINK made has no page on record: "defined on a wiki page").
	if a.status == 409 && !strings.Contains(a.body, "defined on wiki page") && !strings.Contains(a.body, "defined on a wiki page") {
		h.violate("409 does not say a wiki page defines the link: %s", a)
	}

	// Replay into the model by what was answered.
	uncertain := func(it linkItem) {
		m.uncertain[reqKey{it.SpaceKey, it.Key}] = true
	}
	if v4 || notActive {
		for _, it := range items {
			uncertain(it)
		}
	}
	switch {
	case a.status == 200 && method == "POST":
		for _, it := range items {
			m.holds(it.ApplinkID, reqKey{it.SpaceKey, it.Key})[il{issue, it.Relationship}] = true
		}
	case a.status == 200 && method == "PUT":
		for app, byReq := range m.thold {
			for r, set := range byReq {
				for x := range set {
					if x.Issue == issue && !inBody[linkItem{ApplinkID: app, SpaceKey: r.Space, Key: r.Key, Relationship: x.Rel}] {
						delete(set, x)
						if m.links[app].version < 5 {
							m.uncertain[r] = true
						}
					}
				}
			}
		}
		for _, c := range current { // links taken away at version 4 (pages' included)
			if !inBody[c] && m.links[c.ApplinkID].version < 5 {
				uncertain(c)
			}
		}
		for _, it := range items {
			m.holds(it.ApplinkID, reqKey{it.SpaceKey, it.Key})[il{issue, it.Relationship}] = true
		}
	case a.status == 204:
		for _, it := range items {
			delete(m.holds(it.ApplinkID, reqKey{it.SpaceKey, it.Key}), il{issue, it.Relationship})
		}
	case a.status == 409:
		// Only the tracker's own holds on the page's links are dropped.
		for _, c := range pageRemoved {
			delete(m.holds(c.ApplinkID, reqKey{c.SpaceKey, c.Key}), il{issue, c.Relationship})
		}
	}
}

func cmpReq(a, b reqKey) int { return strings.Compare(a.String(), b.String()) }

func sortedInts(m map[int]bool) []int {
	out := slices.Collect(maps.Keys(m))
	sort.Ints(out)
	return out
}

// recover makes every part answer again and sets every integration to
// what the convergence statement compares: proxies pass, applinks AUTO,
// integrations ACTIVE at version 5, a reconcile where a queued message was
// deleted, then the tracker's outbox, one sync run right away, the
// tracker's outbox.
func (h *history) recover() {
	h.ops++
	h.logf("RECOVERY")
	for _, m := range h.tenants {
		m.wiki.set(pass)
		for _, l := range m.sortedLinks() {
			l.tracker.set(pass)
			if l.mode != "AUTO" {
				if err := h.e.setMode(m.tn, l.id, "AUTO"); err != nil {
					h.violate("recovery: %v", err)
				}
				l.mode = "AUTO"
			}
			if l.status != "ACTIVE" {
				if err := h.e.setStatus(m.tn, l.id, "ACTIVE"); err != nil {
					h.violate("recovery: %v", err)
				}
				l.status = "ACTIVE"
			}
			if l.version != 5 {
				if err := h.e.setVersion(m.tn, l.id, 5); err != nil {
					h.violate("recovery: %v", err)
				}
				l.version = 5
			}
			h.logf("%s %s: AUTO, ACTIVE, version 5", m.tn.name, l.id)
		}
		for _, l := range m.sortedLinks() {
			if !m.deleted[l.id] {
				continue
			}
			a, err := do("POST", h.e.st.WikiURL+api+"/integration/"+l.id+"/reconcile", m.tn.wikiAdmin, nil)
			h.logf("%s reconcile %s -> %s", m.tn.name, l.id, statusOf(a, err))
			var q struct {
				Queued *int `json:"queued"`
			}
			if err != nil || a.status != 200 || json.Unmarshal([]byte(a.body), &q) != nil || q.Queued == nil {
				h.violate("recovery: reconcile %s answered %s", l.id, statusOf(a, err))
			}
		}
	}
	h.recoveryRun("TrackerOutbox")
	h.recoveryRun("Sync")
	h.recoveryRun("TrackerOutbox")
}

func (h *history) recoveryRun(fn string) {
	if !h.e.has(fn) {
		h.violate("recovery: no %s function in the stack", fn)
		return
	}
	if fn == "Sync" {
		h.syncs++
	}
	err := h.e.invoke(h.t.Context(), fn)
	h.logf("%s run: %v", fn, err)
	if err != nil {
		h.violate("recovery: %s run: %v", fn, err)
	}
}

// compare reads both sides and returns every divergence: between the wiki
// and the tracker, and between either and the model.
func (h *history) compare() []string {
	var out []string
	for _, m := range h.tenants {
		tr := map[string]map[reqKey]map[held]bool{}
		for _, issue := range issuePool {
			links, err := h.e.issueLinks(m.tn, issue)
			if err != nil {
				out = append(out, err.Error())
				continue
			}
			for _, l := range links {
				if l.BaselineNumber != nil {
					continue
				}
				r := reqKey{l.SpaceKey, l.Key}
				if tr[l.ApplinkID] == nil {
					tr[l.ApplinkID] = map[reqKey]map[held]bool{}
				}
				if tr[l.ApplinkID][r] == nil {
					tr[l.ApplinkID][r] = map[held]bool{}
				}
				tr[l.ApplinkID][r][held{l.IssueKey, l.Relationship, l.Origin}] = true
				m.keys[r] = true
			}
		}
		active := m.active()
		for _, r := range slices.SortedFunc(maps.Keys(m.keys), cmpReq) {
			wr, found, err := h.e.requirement(m.tn, r.Space, r.Key)
			if err != nil {
				out = append(out, err.Error())
				continue
			}
			_, modelActive := active[r]
			wikiActive := found && wr.Status == "ACTIVE"
			if modelActive != wikiActive {
				out = append(out, fmt.Sprintf("%s %s: wiki status %q (found %v), the model says ACTIVE=%v", m.tn.name, r, wr.Status, found, modelActive))
			}
			if !wikiActive {
				if !found {
					for _, l := range m.sortedLinks() {
						if len(tr[l.id][r]) > 0 {
							out = append(out, fmt.Sprintf("%s %s via %s: the tracker links a requirement the wiki does not have: %v", m.tn.name, r, l.id, sortedHelds(tr[l.id][r])))
						}
					}
				}
				continue
			}
			for _, l := range m.sortedLinks() {
				w, k := wikiSet(wr, l.id), tr[l.id][r]
				if k == nil {
					k = map[held]bool{}
				}
				exp := map[held]bool{}
				page := m.pageSet(r, l.id)
				for x := range page {
					exp[held{x.Issue, x.Rel, "PAGE"}] = true
				}
				if m.uncertain[r] {
					for x := range w {
						if x.Origin == "TRACKER" {
							exp[x] = true
						}
					}
				} else {
					for x := range m.holds(l.id, r) {
						if !page[x] {
							exp[held{x.Issue, x.Rel, "TRACKER"}] = true
						}
					}
				}
				if !maps.Equal(w, k) {
					out = append(out, fmt.Sprintf("%s %s via %s: wiki %v, tracker %v (model %v)", m.tn.name, r, l.id, sortedHelds(w), sortedHelds(k), sortedHelds(exp)))
				} else if !maps.Equal(w, exp) {
					out = append(out, fmt.Sprintf("%s %s via %s: both sides %v, the model says %v (tracker holds certain: %v)", m.tn.name, r, l.id, sortedHelds(w), sortedHelds(exp), !m.uncertain[r]))
				}
			}
		}
	}
	return out
}
