package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/infra/lambdashim"
)

// The invariants, checked after the faults stop and one sync run passes.
const (
	invSyncPasses   = "a sync run passes once the faults stop"
	invPageIndexed  = "every page is indexed at one saved version: the last save answered 200, or a later one whose answer was lost (nothing of a failed save half visible)"
	invPageContent  = "each requirement of a page reads back as it was sent (text, property, dependency, issue macros)"
	invNoDuplicate  = "no requirement exists twice"
	invBaselines    = "baseline numbers are unique and dense per space, one at least per create answered 200/202"
	invLinksAgree   = "the tracker's links equal the wiki's for every ACTIVE requirement (each outbox message delivered exactly once in effect)"
	invNo5xx        = "every 500/502 answer and every failed scheduled run is explained by an injected fault (a kill while it ran)"
	invNoFDGrowth   = "no file-descriptor growth in function processes that survived the run"
	invNoGoroutines = "no goroutine growth: each idle function process at the end lists at most as many goroutines as an idle one before the load, and the idle connections of its pools"
	maxSyncRounds   = 6
	// maxProgressRounds bounds the rounds that still make progress.
	maxProgressRounds = 30
	fdGrowthAllowed   = 32
	// goroutineGrowthAllowed is what idle keep-alive connections (two
	// goroutines each) to DynamoDB, SQS and trackers may add after a
	// process served requests concurrently.
	goroutineGrowthAllowed = 40
	faultExplainSkew       = 500 * time.Millisecond
	// syncLeaseAfterKill is how long a killed sync run's lease may hold
	// back an integration: its TrackerBudget (1 minute), the lease's 30 s
	// grace, and a margin.
	syncLeaseAfterKill = 95 * time.Second
	// pageLeaseAfterKill is how long a killed page operation's lease holds
	// its page (a minute) and a margin; then a sync run recovers the page.
	pageLeaseAfterKill = 62 * time.Second
)

// wikiReq is the part of a wiki requirement the checks read.
type wikiReq struct {
	SpaceKey   string `json:"spaceKey"`
	Key        string `json:"key"`
	Status     string `json:"status"`
	Text       string `json:"text"`
	Properties []struct {
		Key, Value string
	} `json:"properties"`
	Origin *struct {
		PageID string `json:"pageId"`
	} `json:"origin"`
	Dependencies []struct {
		SpaceKey, Key, Relationship string
	} `json:"dependencies"`
	Issues []struct {
		ServiceID    *string `json:"serviceId"`
		IssueKey     string  `json:"issueKey"`
		Relationship string  `json:"relationship"`
		Origin       string  `json:"origin"`
	} `json:"issues"`
}

type checker struct {
	h   *harness
	rep *Report
	inv map[string]*Invariant
}

func (c *checker) checked(name string, n int) {
	c.get(name).Checked += n
}

func (c *checker) violate(name, format string, args ...any) {
	inv := c.get(name)
	inv.Violated++
	if len(inv.Examples) < 10 {
		inv.Examples = append(inv.Examples, fmt.Sprintf(format, args...))
	}
}

func (c *checker) get(name string) *Invariant {
	if inv, ok := c.inv[name]; ok {
		return inv
	}
	inv := &Invariant{Name: name}
	c.inv[name] = inv
	c.rep.Invariants = append(c.rep.Invariants, inv)
	return inv
}

// check lets the sync converge, checks every invariant and builds the report.
func (h *harness) check(ctx context.Context) *Report {
	rep := h.report()
	c := &checker{h: h, rep: rep, inv: map[string]*Invariant{}}
	for _, name := range []string{invSyncPasses, invPageIndexed, invPageContent, invNoDuplicate, invBaselines, invLinksAgree, invNo5xx, invNoFDGrowth, invNoGoroutines} {
		c.get(name)
	}

	// A page operation killed half way holds its page's lease until it
	// expires; the first sync run after that recovers the page (redoes its
	// stored version). Operations that failed without a kill are due at
	// once.
	h.mu.Lock()
	recoverAfter := time.Time{}
	for _, k := range h.kills {
		if k.fn != "Sync" && strings.HasPrefix(k.fn, "Wiki") && k.at.Add(pageLeaseAfterKill).After(recoverAfter) {
			recoverAfter = k.at.Add(pageLeaseAfterKill)
		}
	}
	h.mu.Unlock()
	if d := time.Until(recoverAfter); d > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("waited %s for the page leases of killed operations to expire", d.Round(time.Second)))
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	// One sync run must pass now that the faults stopped; later rounds let
	// the reconcile of the two sides finish (a tracker edit answered while
	// the tracker's outbox was failing is delivered by its next run).
	c.checked(invSyncPasses, 1)
	for _, fn := range scheduledFunctions {
		if _, ok := h.st.Runners[fn]; ok && !h.invokeScheduled(ctx, fn, 0) {
			c.violate(invSyncPasses, "%s failed after the faults stopped", fn)
		}
	}
	// Messages a killed sync run had received stay invisible for the
	// queue's visibility timeout: the rounds go on at least that long.
	var reqs map[string][]wikiReq // by tenant, ACTIVE requirements of the harness's pages
	var linkDiff []string
	// A sync run killed while serving an integration holds its lease for
	// the integration's budget in a run (1 minute) and 30 s more.
	waitUntil := time.Now().Add(2*h.cfg.Visibility + 5*time.Second)
	h.mu.Lock()
	for _, k := range h.kills {
		if k.fn == "Sync" && k.at.Add(syncLeaseAfterKill).After(waitUntil) {
			waitUntil = k.at.Add(syncLeaseAfterKill)
		}
	}
	h.mu.Unlock()
	lastDiff := 0
	for round := 1; ; round++ {
		reqs = h.readRequirements(ctx, c)
		linkDiff = h.compareLinks(ctx, reqs)
		rep.SyncRoundsToConverge = round
		// Rounds go on while they make progress (fewer disagreements than
		// the round before: a loaded machine delivers slowly, and its
		// tracker may time out some POSTs, which the next round sends
		// again), at least maxSyncRounds and until waitUntil, at most
		// maxProgressRounds.
		progress := round > 1 && len(linkDiff) < lastDiff
		lastDiff = len(linkDiff)
		if len(linkDiff) == 0 || (round >= maxSyncRounds && time.Now().After(waitUntil) && (!progress || round >= maxProgressRounds)) {
			break
		}
		time.Sleep(h.cfg.SyncEvery)
		for _, fn := range scheduledFunctions {
			if _, ok := h.st.Runners[fn]; ok {
				h.invokeScheduled(ctx, fn, 0)
			}
		}
	}
	for _, tn := range h.tenants {
		c.checked(invLinksAgree, len(reqs[tn.name]))
	}
	for _, d := range linkDiff {
		c.violate(invLinksAgree, "%s", d)
	}
	if len(linkDiff) > 0 {
		for _, tn := range h.tenants {
			rep.Notes = append(rep.Notes, tn.name+" outbound queue at the end: "+h.queueSummary(ctx, tn))
		}
	}
	h.checkPages(c, reqs)
	h.checkDuplicates(ctx, c)
	h.checkBaselines(ctx, c)
	h.checkFailures(c)
	h.checkFDs(c)
	h.checkGoroutines(c)
	for _, inv := range rep.Invariants {
		rep.Violations += inv.Violated
	}
	return rep
}

// queueSummary counts a tenant's outbox messages by state and type, with
// the last responses of those not DONE.
func (h *harness) queueSummary(ctx context.Context, tn *tenantState) string {
	a := h.do(ctx, "GET", h.st.WikiURL+api+"/integration/"+serviceID+"/queue/outbound?includeDone=true&includeLastRespnse=true&limit=1000", tn.wikiAdmin, nil)
	var msgs []struct{ State, Type, Key, LastResponse string }
	if a.status != 200 || json.Unmarshal([]byte(a.body), &msgs) != nil {
		return a.String()
	}
	byState := map[string]int{}
	var pending []string
	for _, m := range msgs {
		byState[m.State+" "+m.Type]++
		if m.State != "DONE" && len(pending) < 5 {
			pending = append(pending, fmt.Sprintf("%s %s %.120s", m.Type, m.Key, m.LastResponse))
		}
	}
	return fmt.Sprintf("%v; not done: %v", byState, pending)
}

// readRequirements reads the ACTIVE requirements of every page the harness
// saved, by tenant, through the search API.
func (h *harness) readRequirements(ctx context.Context, c *checker) map[string][]wikiReq {
	out := map[string][]wikiReq{}
	for _, tn := range h.tenants {
		for _, p := range tn.pages {
			rs, err := h.search(ctx, tn, p.space, fmt.Sprintf("page = %s AND status = 'ACTIVE'", p.id))
			if err != nil {
				c.violate(invPageIndexed, "%s page %s: %v", tn.name, p.id, err)
				continue
			}
			out[tn.name] = append(out[tn.name], rs...)
		}
	}
	return out
}

// search reads every result of q in space.
func (h *harness) search(ctx context.Context, tn *tenantState, space, q string) ([]wikiReq, error) {
	var all []wikiReq
	for offset := 0; ; {
		a := h.do(ctx, "GET", h.st.WikiURL+api+"/requirement2/"+space+"?"+url.Values{
			"spaceKey": {space}, "q": {q}, "limit": {"500"}, "offset": {fmt.Sprint(offset)}}.Encode(), tn.wikiUser, nil)
		if a.status != 200 {
			return nil, fmt.Errorf("search %q: %s", q, a)
		}
		var page struct {
			Results []wikiReq `json:"results"`
			HasMore bool      `json:"hasMore"`
		}
		if err := json.Unmarshal([]byte(a.body), &page); err != nil {
			return nil, fmt.Errorf("search %q: %w", q, err)
		}
		all = append(all, page.Results...)
		if !page.HasMore || len(page.Results) == 0 {
			return all, nil
		}
		offset += len(page.Results)
	}
}

// compareLinks compares, for every ACTIVE requirement, the links the wiki
// shows for the tenant's tracker with those the tracker shows for the wiki.
func (h *harness) compareLinks(ctx context.Context, reqs map[string][]wikiReq) []string {
	var diffs []string
	for _, tn := range h.tenants {
		active := map[string]bool{}
		wiki := map[string]bool{}
		for _, r := range reqs[tn.name] {
			active[r.SpaceKey+"/"+r.Key] = true
			for _, is := range r.Issues {
				if is.ServiceID != nil && *is.ServiceID == serviceID {
					wiki[fmt.Sprintf("%s/%s %s %s %s", r.SpaceKey, r.Key, is.IssueKey, is.Relationship, is.Origin)] = true
				}
			}
		}
		tracker := map[string]bool{}
		for _, issue := range issuePool {
			a := h.do(ctx, "GET", h.st.TrackerURL+api+"/issuelinks/"+issue, tn.trackerUser, nil)
			var links []struct {
				IssueKey, ApplinkID, SpaceKey, Key, Relationship, Origin string
				BaselineNumber                                           *int
			}
			if a.status != 200 || json.Unmarshal([]byte(a.body), &links) != nil {
				diffs = append(diffs, fmt.Sprintf("%s: tracker issuelinks/%s: %s", tn.name, issue, a))
				continue
			}
			for _, l := range links {
				if l.ApplinkID == serviceID && l.BaselineNumber == nil && active[l.SpaceKey+"/"+l.Key] {
					tracker[fmt.Sprintf("%s/%s %s %s %s", l.SpaceKey, l.Key, l.IssueKey, l.Relationship, l.Origin)] = true
				}
			}
		}
		for k := range wiki {
			if !tracker[k] {
				diffs = append(diffs, tn.name+": on the wiki only: "+k)
			}
		}
		for k := range tracker {
			if !wiki[k] {
				diffs = append(diffs, tn.name+": on the tracker only: "+k)
			}
		}
	}
	sort.Strings(diffs)
	return diffs
}

// checkPages compares each page's ACTIVE requirements with the saves sent.
func (h *harness) checkPages(c *checker, reqs map[string][]wikiReq) {
	for _, tn := range h.tenants {
		byPage := map[string][]wikiReq{}
		for _, r := range reqs[tn.name] {
			if r.Origin != nil {
				byPage[r.Origin.PageID] = append(byPage[r.Origin.PageID], r)
			}
		}
		for _, p := range tn.pages {
			p.mu.Lock()
			gens, confirmed := slices.Clone(p.gens), p.confirmed
			p.mu.Unlock()
			if len(gens) == 0 {
				continue
			}
			c.checked(invPageIndexed, 1)
			got := byPage[p.id]
			// The generations the page may show: the last confirmed save and
			// every later one whose answer was not a 4xx (a 5xx or a lost
			// answer may still have committed); before any confirmed save,
			// also no requirement at all.
			allowed := map[int]*generation{}
			for i, g := range gens {
				if i == confirmed || (i > confirmed && (g.status == 0 || g.status >= 500)) {
					allowed[g.n] = g
				}
			}
			seen := map[int]bool{}
			for _, r := range got {
				seen[genOf(r.Text)] = true
			}
			if len(got) == 0 && confirmed < 0 {
				continue
			}
			if len(seen) != 1 {
				c.violate(invPageIndexed, "%s page %s shows requirements of generations %v at once; %s", tn.name, p.id, slices.Sorted(maps.Keys(seen)), history(gens))
				continue
			}
			var gn int
			for n := range seen {
				gn = n
			}
			g, ok := allowed[gn]
			if !ok {
				c.violate(invPageIndexed, "%s page %s shows generation %d, not one the answers allow; %s", tn.name, p.id, gn, history(gens))
				continue
			}
			want := map[string]rowSpec{}
			for _, r := range g.rows {
				want[r.key] = r
			}
			if len(got) != len(want) {
				c.violate(invPageIndexed, "%s page %s generation %d: %d ACTIVE requirements, %d sent; %s", tn.name, p.id, gn, len(got), len(want), history(gens))
			}
			for _, r := range got {
				c.checked(invPageContent, 1)
				w, ok := want[r.Key]
				if !ok {
					c.violate(invPageContent, "%s page %s: %s/%s was not in generation %d", tn.name, p.id, r.SpaceKey, r.Key, gn)
					continue
				}
				if d := diffRequirement(r, w); d != "" {
					c.violate(invPageContent, "%s page %s generation %d: %s/%s %s", tn.name, p.id, gn, r.SpaceKey, r.Key, d)
				}
			}
		}
	}
}

// genOf reads the generation a requirement's text names.
func genOf(text string) int {
	_, after, ok := strings.Cut(text, "generation ")
	if !ok {
		return -1
	}
	n := 0
	for _, ch := range after {
		if ch < '0' || ch > '9' {
			break
		}
		n = n*10 + int(ch-'0')
	}
	return n
}

func diffRequirement(r wikiReq, w rowSpec) string {
	var d []string
	if strings.TrimSpace(r.Text) != w.text {
		d = append(d, fmt.Sprintf("text %q, sent %q", r.Text, w.text))
	}
	prio := ""
	for _, p := range r.Properties {
		if p.Key == "Priority" {
			prio = p.Value
		}
	}
	if prio != w.priority {
		d = append(d, fmt.Sprintf("Priority %q, sent %q", prio, w.priority))
	}
	refines := ""
	for _, dep := range r.Dependencies {
		if dep.Relationship == "refines" {
			refines = dep.Key
		}
	}
	if refines != w.refines {
		d = append(d, fmt.Sprintf("refines %q, sent %q", refines, w.refines))
	}
	var page []string
	for _, is := range r.Issues {
		if is.ServiceID != nil && *is.ServiceID == serviceID && is.Relationship == "implements" && strings.Contains(is.Origin, "PAGE") {
			page = append(page, is.IssueKey)
		}
	}
	sort.Strings(page)
	sent := slices.Sorted(slices.Values(w.issues))
	if !slices.Equal(page, sent) {
		d = append(d, fmt.Sprintf("page issue links %v, sent %v", page, sent))
	}
	return strings.Join(d, "; ")
}

// history is the shortest history that shows a page violation: the page's
// saves with their answers.
func history(gens []*generation) string {
	var b strings.Builder
	b.WriteString("history:")
	for _, g := range gens {
		fmt.Fprintf(&b, " [save %d: %d requirements, answer %d, %s +%dms]", g.n, len(g.rows), g.status,
			g.start.Format("15:04:05.000"), g.end.Sub(g.start).Milliseconds())
	}
	return b.String()
}

func (h *harness) checkDuplicates(ctx context.Context, c *checker) {
	for _, tn := range h.tenants {
		for _, space := range tn.spaces {
			rs, err := h.search(ctx, tn, space, "key ~ 'P%'")
			if err != nil {
				c.violate(invNoDuplicate, "%s %s: %v", tn.name, space, err)
				continue
			}
			seen := map[string]int{}
			for _, r := range rs {
				seen[strings.ToUpper(r.SpaceKey+"/"+r.Key)]++
			}
			c.checked(invNoDuplicate, len(seen))
			for k, n := range seen {
				if n > 1 {
					c.violate(invNoDuplicate, "%s: %s found %d times", tn.name, k, n)
				}
			}
		}
	}
}

func (h *harness) checkBaselines(ctx context.Context, c *checker) {
	for _, tn := range h.tenants {
		for _, space := range tn.spaces {
			a := h.do(ctx, "GET", h.st.WikiURL+api+"/baseline/"+space, tn.wikiUser, nil)
			var list []struct{ Number int }
			if a.status != 200 || json.Unmarshal([]byte(a.body), &list) != nil {
				c.violate(invBaselines, "%s %s: list baselines: %s", tn.name, space, a)
				continue
			}
			nums := make([]int, len(list))
			for i, b := range list {
				nums[i] = b.Number
			}
			sort.Ints(nums)
			c.checked(invBaselines, len(nums))
			tn.mu.Lock()
			ok, failed := tn.baselines[space], tn.failedBaselines[space]
			tn.mu.Unlock()
			// Numbers are dense (docs/baselines.md, "Numbering"): a number
			// is taken only with a job the worker finishes.
			gaps, prev := 0, 0
			for _, n := range nums {
				switch {
				case n == prev:
					c.violate(invBaselines, "%s %s: baseline number %d listed twice: %v", tn.name, space, n, nums)
				case n > prev+1:
					gaps += n - prev - 1
				}
				prev = n
			}
			if gaps > 0 {
				c.violate(invBaselines, "%s %s: baseline numbers %v have %d gaps (%d creates failed)", tn.name, space, nums, gaps, failed)
			}
			c.rep.BaselineGaps += gaps
			if len(nums) < ok {
				c.violate(invBaselines, "%s %s: %d baselines listed, %d creates answered 200/202", tn.name, space, len(nums), ok)
			}
		}
	}
}

// checkFailures explains every 5xx and every failed invocation by a kill
// of a function's process while it ran.
func (h *harness) checkFailures(c *checker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		// 503 and 504 are the gateway's integration timeout (30 s): a
		// matter of load on a shared machine, reported by status but not an
		// invariant. A 500, a 502 and a failed scheduled run are.
		failed := r.status == 500 || r.status == 502 || r.status > 504 || r.status == -1
		if !failed {
			continue
		}
		c.checked(invNo5xx, 1)
		explained := false
		for _, k := range h.kills {
			if !k.at.Before(r.start.Add(-faultExplainSkew)) && !k.at.After(r.end.Add(faultExplainSkew)) {
				explained = true
				break
			}
		}
		if !explained {
			c.violate(invNo5xx, "%s %s at %s: %s", r.kind, r.target, r.start.Format("15:04:05.000"), r.err)
		}
	}
}

// sampleFDs counts the open file descriptors of every running function
// process (Linux /proc); nil where /proc is missing.
func (h *harness) sampleFDs() map[int]int {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil
	}
	out := map[int]int{}
	for _, r := range h.st.Runners {
		for _, p := range r.Stats().Processes {
			if !p.Exited.IsZero() {
				continue
			}
			if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.PID)); err == nil {
				out[p.PID] = len(ents)
			}
		}
	}
	return out
}

func (h *harness) checkFDs(c *checker) {
	end := h.sampleFDs()
	if h.fdStart == nil || end == nil {
		c.rep.Notes = append(c.rep.Notes, "file descriptors not measured (no /proc, or the run ended before the warm-up sample)")
		return
	}
	for pid, before := range h.fdStart {
		after, ok := end[pid]
		if !ok {
			continue
		}
		c.checked(invNoFDGrowth, 1)
		c.rep.FDs = append(c.rep.FDs, FDSample{PID: pid, Before: before, After: after})
		if after > before+fdGrowthAllowed {
			c.violate(invNoFDGrowth, "process %d: %d open files after the warm-up, %d at the end", pid, before, after)
		}
	}
	sort.Slice(c.rep.FDs, func(i, j int) bool { return c.rep.FDs[i].PID < c.rep.FDs[j].PID })
}

// quitIdle asks every idle function process for its goroutines (SIGQUIT:
// the Go runtime lists them and the process exits), by function.
func (h *harness) quitIdle() map[string][]lambdashim.Goroutines {
	out := map[string][]lambdashim.Goroutines{}
	for fn, r := range h.st.Runners {
		if gs := r.QuitIdle(10 * time.Second); len(gs) > 0 {
			out[fn] = gs
		}
	}
	return out
}

// checkGoroutines compares each idle process at the end with the idle ones
// of the same function before the load: a goroutine leaked per request
// grows with the invocations a process served.
func (h *harness) checkGoroutines(c *checker) {
	for fn, gs := range h.quitIdle() {
		fresh, ok := h.goroutinesFresh[fn]
		for _, g := range gs {
			c.rep.Goroutines = append(c.rep.Goroutines, GoroutineSample{Function: fn, PID: g.PID, Invocations: g.Invocations, Fresh: fresh, End: g.Count})
			if !ok || g.Count < 0 {
				continue
			}
			c.checked(invNoGoroutines, 1)
			if g.Count > fresh+goroutineGrowthAllowed {
				c.violate(invNoGoroutines, "%s process %d: %d goroutines after %d invocations, an idle one had %d before the load", fn, g.PID, g.Count, g.Invocations, fresh)
			}
		}
	}
	sort.Slice(c.rep.Goroutines, func(i, j int) bool { return c.rep.Goroutines[i].PID < c.rep.Goroutines[j].PID })
}
