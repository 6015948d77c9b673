package convergence_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	flagHistories = flag.Int("convergence.histories", 3, "random histories TestConvergence runs")
	flagOps       = flag.Int("convergence.ops", 50, "operations per history")
	flagSeed      = flag.Uint64("convergence.seed", 1, "seed of the first history (history i uses seed+i)")
	flagTenants   = flag.Int("convergence.tenants", 2, "tenants per history")
)

// history is one random history being run: its seed, its tenants, the log
// of what was done and the contract violations seen on the way.
type history struct {
	t          *testing.T
	e          *env
	seed       uint64
	rng        *rand.Rand
	tenants    []*tenantModel
	log        []string
	violations []string
	ops, syncs int
}

func (h *history) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf("%3d ", h.ops)+fmt.Sprintf(format, args...))
}

func (h *history) violate(format string, args ...any) {
	msg := fmt.Sprintf("op %d: ", h.ops) + fmt.Sprintf(format, args...)
	h.violations = append(h.violations, msg)
	h.log = append(h.log, "    !! "+msg)
}

// TestConvergence runs random histories of page saves, macro removals, page
// moves and deletions, tracker-side link edits, integration creation,
// DISABLE/ACTIVE, version upgrades, tracker mode changes, deleted queued
// messages, tracker and wiki outages and sync runs over several tenants;
// then lets everything recover (proxies pass, applinks AUTO, integrations
// ACTIVE at version 5, reconcile where messages were deleted, the tracker
// outbox, one sync run) and requires, for every ACTIVE requirement and
// integration, the wiki's issues to equal the tracker's links, origins
// included, and both to equal what the model says each master decided.
func TestConvergence(t *testing.T) {
	e := startStack(t)
	totalOps, totalSyncs, failed := 0, 0, 0
	begin := time.Now()
	for i := range *flagHistories {
		seed := *flagSeed + uint64(i)
		h := &history{t: t, e: e, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
		divergences := h.run(i)
		totalOps += h.ops
		totalSyncs += h.syncs
		if len(divergences)+len(h.violations) > 0 {
			failed++
			var b strings.Builder
			fmt.Fprintf(&b, "history %d (seed %d): %d divergences, %d contract violations on the way\n", i, seed, len(divergences), len(h.violations))
			for _, d := range divergences {
				b.WriteString("  DIVERGENCE " + d + "\n")
			}
			for _, v := range h.violations {
				b.WriteString("  VIOLATION " + v + "\n")
			}
			if len(divergences) > 0 {
				b.WriteString("  still queued after recovery:\n")
				for _, line := range h.queued() {
					b.WriteString("    " + line + "\n")
				}
			}
			b.WriteString("  history:\n")
			for _, l := range h.log {
				b.WriteString("    " + l + "\n")
			}
			t.Error(b.String())
		}
	}
	summary := fmt.Sprintf("convergence: %d histories (seeds %d..%d), %d operations, %d sync runs, %d tenants each, %d failed, %v",
		*flagHistories, *flagSeed, *flagSeed+uint64(*flagHistories)-1, totalOps, totalSyncs, *flagTenants, failed, time.Since(begin).Round(time.Second))
	t.Log(summary)
	if testing.Verbose() {
		fmt.Fprintln(os.Stdout, summary)
	}
}

// queued describes what is still NEW in every integration's outbound queue
// (for the diagnosis of a divergence).
func (h *history) queued() []string {
	var out []string
	for _, m := range h.tenants {
		for _, l := range m.sortedLinks() {
			q, err := h.e.queue(m.tn, l.id, false)
			if err != nil {
				out = append(out, fmt.Sprintf("%s %s: %v", m.tn.name, l.id, err))
				continue
			}
			for _, msg := range q {
				out = append(out, fmt.Sprintf("%s %s: %s %s %s/%s NEW, last response %q", m.tn.name, l.id, msg.ID, msg.Type, msg.SpaceKey, msg.Key, msg.LastResponse))
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "nothing")
	}
	return out
}

// run plays one history and returns the divergences found after recovery.
func (h *history) run(i int) []string {
	t, e := h.t, h.e
	for j := range *flagTenants {
		tn := e.newTenant(t, fmt.Sprintf("h%d-%c", i, 'a'+j))
		wp := newFaultProxy(e.st.WikiURL, 4*httpTimeout)
		t.Cleanup(wp.close)
		m := newTenantModel(tn, wp)
		h.tenants = append(h.tenants, m)
		h.createIntegration(m) // every tenant starts with one integration
	}
	for h.ops < *flagOps {
		h.ops++
		h.step()
	}
	h.recover()
	return h.compare()
}

func (h *history) pick(weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := h.rng.IntN(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// step runs one random operation.
func (h *history) step() {
	m := h.tenants[h.rng.IntN(len(h.tenants))]
	switch h.pick(26, 8, 4, 3, 18, 5, 4, 3, 4, 4, 6, 5, 10, 3) {
	case 0:
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
	case 1:
		h.removeMacro(m)
	case 2:
		h.movePage(m)
	case 3:
		h.deletePage(m)
	case 4:
		h.trackerEdit(m)
	case 5:
		h.createIntegration(m)
	case 6:
		h.toggleStatus(m)
	case 7:
		h.upgrade(m)
	case 8:
		h.changeMode(m)
	case 9:
		h.deleteMessage(m)
	case 10:
		h.outage(m)
	case 11:
		h.heal(m)
	case 12:
		h.syncRun()
	case 13:
		h.trackerOutboxRun()
	}
}

func (h *history) savePage(m *tenantModel, p *pageModel, space string) {
	if space == "" {
		space = p.space
		if !p.exists && h.rng.IntN(3) == 0 {
			space = spaces[h.rng.IntN(len(spaces))]
		}
	}
	rows := randomRows(h.rng, p)
	h.save(m, p, space, rows, "save")
}

// save stores rows on page p in space and checks the answer's warnings.
func (h *history) save(m *tenantModel, p *pageModel, space string, rows []row, what string) {
	old := map[string]bool{}
	if p.exists {
		for _, r := range p.rows {
			old[r.Key] = true
		}
	}
	a, err := h.e.savePage(m.tn, p.id, space, p.title, rows)
	h.logf("%s %s page %s in %s: %s -> %v", m.tn.name, what, p.id, space, describeRows(rows), statusOf(a, err))
	if err != nil || a.status != 200 {
		h.violate("page save answered %v", statusOf(a, err))
		return
	}
	var ans saveAnswer
	if err := json.Unmarshal([]byte(a.body), &ans); err != nil {
		h.violate("page save answer: %v", err)
	}
	unknown := map[string]bool{}
	for _, r := range rows {
		for _, mc := range append(slices.Clone(r.Implements), r.Tests...) {
			if _, ok := m.links[mc.Server]; !ok && mc.Server != "" {
				unknown[mc.Server] = true
			}
		}
	}
	if got := warned(ans); setString(got) != setString(unknown) {
		h.violate("page save warnings name %s, want %s: %s", setString(got), setString(unknown), a)
	}
	// Requirements that leave the page, or change space, are no longer
	// comparable holds-wise.
	if p.exists && p.space != space {
		for _, r := range p.rows {
			m.uncertain[reqKey{p.space, r.Key}] = true
			m.uncertain[reqKey{space, r.Key}] = true
		}
	}
	now := map[string]bool{}
	for _, r := range rows {
		now[r.Key] = true
		m.keys[reqKey{space, r.Key}] = true
	}
	for k := range old {
		if !now[k] {
			m.uncertain[reqKey{p.space, k}] = true
		}
	}
	p.exists, p.space, p.rows = true, space, rows
	p.saves++
}

func describeRows(rows []row) string {
	var parts []string
	for _, r := range rows {
		var ms []string
		for _, mc := range r.Implements {
			ms = append(ms, "impl:"+mc.Issue+"@"+mc.Server)
		}
		for _, mc := range r.Tests {
			ms = append(ms, "tests:"+mc.Issue+"@"+mc.Server)
		}
		parts = append(parts, r.Key+"{"+strings.Join(ms, ",")+"}")
	}
	return strings.Join(parts, " ")
}

func statusOf(a answer, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	if a.status >= 300 {
		return a.String()
	}
	return fmt.Sprint(a.status)
}

func (h *history) removeMacro(m *tenantModel) {
	var cands []*pageModel
	for _, p := range m.existingPages() {
		for _, r := range p.rows {
			if len(r.Implements)+len(r.Tests) > 0 {
				cands = append(cands, p)
				break
			}
		}
	}
	if len(cands) == 0 {
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
		return
	}
	p := cands[h.rng.IntN(len(cands))]
	rows := make([]row, len(p.rows))
	var slots [][2]int // row, index (negative: Tests)
	for i, r := range p.rows {
		rows[i] = row{Key: r.Key, Description: r.Description, Implements: slices.Clone(r.Implements), Tests: slices.Clone(r.Tests)}
		for j := range r.Implements {
			slots = append(slots, [2]int{i, j})
		}
		for j := range r.Tests {
			slots = append(slots, [2]int{i, -j - 1})
		}
	}
	s := slots[h.rng.IntN(len(slots))]
	if s[1] >= 0 {
		rows[s[0]].Implements = slices.Delete(rows[s[0]].Implements, s[1], s[1]+1)
	} else {
		j := -s[1] - 1
		rows[s[0]].Tests = slices.Delete(rows[s[0]].Tests, j, j+1)
	}
	h.save(m, p, p.space, rows, "remove a macro:")
}

func (h *history) movePage(m *tenantModel) {
	pages := m.existingPages()
	if len(pages) == 0 {
		h.savePage(m, m.pages[pageIDs[0]], "")
		return
	}
	p := pages[h.rng.IntN(len(pages))]
	to := spaces[0]
	if p.space == to {
		to = spaces[1]
	}
	h.save(m, p, to, p.rows, "move")
}

func (h *history) deletePage(m *tenantModel) {
	pages := m.existingPages()
	if len(pages) == 0 {
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
		return
	}
	p := pages[h.rng.IntN(len(pages))]
	a, err := do("DELETE", h.e.st.WikiURL+api+"/content/"+p.id, m.tn.wikiUser, nil)
	h.logf("%s delete page %s -> %s", m.tn.name, p.id, statusOf(a, err))
	if err != nil || a.status != 204 {
		h.violate("page delete answered %s", statusOf(a, err))
		return
	}
	for _, r := range p.rows {
		m.uncertain[reqKey{p.space, r.Key}] = true
	}
	p.exists = false
}

func (h *history) createIntegration(m *tenantModel) {
	var id string
	for _, s := range serviceIDs {
		if _, ok := m.links[s]; !ok {
			id = s
			break
		}
	}
	if id == "" {
		h.toggleStatus(m)
		return
	}
	v := 4 + h.rng.IntN(2)
	l, err := h.e.connect(h.t, m.tn, id, m.wiki.URL(), v)
	h.logf("%s create integration %s at version %d -> %v", m.tn.name, id, v, err)
	if err != nil {
		h.violate("%v", err)
		return
	}
	m.links[id] = &linkModel{link: l, status: "ACTIVE", version: v, mode: "AUTO"}
}

func (h *history) randomLink(m *tenantModel) *linkModel {
	ls := m.sortedLinks()
	if len(ls) == 0 {
		return nil
	}
	return ls[h.rng.IntN(len(ls))]
}

func (h *history) toggleStatus(m *tenantModel) {
	l := h.randomLink(m)
	if l == nil {
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
		return
	}
	to := "DISABLED"
	if l.status == "DISABLED" {
		to = "ACTIVE"
	}
	err := h.e.setStatus(m.tn, l.id, to)
	h.logf("%s integration %s -> %s: %v", m.tn.name, l.id, to, err)
	if err != nil {
		h.violate("%v", err)
		return
	}
	l.status, l.statusAt = to, time.Now()
}

func (h *history) upgrade(m *tenantModel) {
	l := h.randomLink(m)
	if l == nil || l.version == 5 {
		h.changeMode(m)
		return
	}
	err := h.e.setVersion(m.tn, l.id, 5)
	h.logf("%s upgrade %s to version 5: %v", m.tn.name, l.id, err)
	if err != nil {
		h.violate("%v", err)
		return
	}
	l.version = 5
}

func (h *history) changeMode(m *tenantModel) {
	l := h.randomLink(m)
	if l == nil {
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
		return
	}
	to := []string{"AUTO", "MANUAL", "DISABLED"}[h.pick(2, 1, 1)]
	err := h.e.setMode(m.tn, l.id, to)
	h.logf("%s applink %s mode %s: %v", m.tn.name, l.id, to, err)
	if err != nil {
		h.violate("%v", err)
		return
	}
	l.mode = to
}

func (h *history) deleteMessage(m *tenantModel) {
	l := h.randomLink(m)
	if l == nil {
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
		return
	}
	q, err := h.e.queue(m.tn, l.id, false)
	if err != nil {
		h.logf("%s list queue of %s: %v", m.tn.name, l.id, err)
		h.violate("%v", err)
		return
	}
	if len(q) == 0 {
		h.logf("%s queue of %s is empty: nothing to delete", m.tn.name, l.id)
		return
	}
	msg := q[h.rng.IntN(len(q))]
	a, err := do("DELETE", h.e.st.WikiURL+api+"/integration/"+l.id+"/queue/outbound/"+msg.ID, m.tn.wikiAdmin, nil)
	h.logf("%s admin deletes queued %s %s %s/%s of %s -> %s", m.tn.name, msg.ID, msg.Type, msg.SpaceKey, msg.Key, l.id, statusOf(a, err))
	if err != nil || a.status != 204 {
		h.violate("delete queued message answered %s", statusOf(a, err))
		return
	}
	m.deleted[l.id] = true
}

func (h *history) outage(m *tenantModel) {
	if h.rng.IntN(8) == 0 {
		m.wiki.set(fail500)
		h.logf("%s wiki outage: 500", m.tn.name)
		return
	}
	l := h.randomLink(m)
	if l == nil {
		h.savePage(m, m.pages[pageIDs[h.rng.IntN(len(pageIDs))]], "")
		return
	}
	md := []mode{fail500, htmlLogin, noResults, hang}[h.pick(3, 3, 3, 1)]
	l.tracker.set(md)
	h.logf("%s tracker %s outage: %s", m.tn.name, l.id, md)
}

func (h *history) heal(m *tenantModel) {
	var down []*faultProxy
	var names []string
	if m.wiki.mode() != pass {
		down, names = append(down, m.wiki), append(names, "wiki")
	}
	for _, l := range m.sortedLinks() {
		if l.tracker.mode() != pass {
			down, names = append(down, l.tracker), append(names, "tracker "+l.id)
		}
	}
	if len(down) == 0 {
		h.syncRun()
		return
	}
	i := h.rng.IntN(len(down))
	down[i].set(pass)
	h.logf("%s %s answers again", m.tn.name, names[i])
}

func (h *history) syncRun() {
	h.syncs++
	begin := time.Now()
	err := h.e.invoke(context.Background(), "Sync")
	h.logf("sync run (%v): %v", time.Since(begin).Round(time.Millisecond), err)
}

func (h *history) trackerOutboxRun() {
	if !h.e.has("TrackerOutbox") {
		h.logf("TrackerOutbox run: no such function")
		return
	}
	err := h.e.invoke(context.Background(), "TrackerOutbox")
	h.logf("TrackerOutbox run: %v", err)
}
