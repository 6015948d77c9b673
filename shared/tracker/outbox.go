package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// The tracker outbox: a tracker-side edit of links marks each requirement
// whose TRACKER set changed (at version 5), in the same write as the edit.
// The set is sent to the wiki's links callback right after the edit and,
// while that fails, by the scheduled TrackerOutbox function; the mark goes
// only when the wiki accepted (2xx) the set read after it was made.
const (
	// markLease bounds how long one sender owns a mark: longer than a wiki
	// call's timeout, so that two sends of one requirement never overlap
	// (the later state always reaches the wiki last).
	markLease = 60 * time.Second
	// OutboxBatch is the most requirements one links callback carries.
	OutboxBatch = 100
	// outboxScan is the most marks one outbox run reads.
	outboxScan = 5000
	// outboxParallelism bounds the wikis one outbox run calls at once.
	outboxParallelism = 8
)

// OutboxReport says what an outbox run did.
type OutboxReport struct {
	Marks   int // pending marks found
	Sent    int // requirements whose set the wikis accepted
	Failed  int // requirements whose send failed (kept for the next run)
	Skipped int // kept without sending: leased by another sender, applink DISABLED or without wiki token
}

// sendMarked sends the TRACKER sets of requirements just marked (best
// effort: a failure leaves the marks to the scheduled outbox).
func (s *Service) sendMarked(ctx context.Context, tenant string, refs []ReqRef) {
	if s.outbox == nil || len(refs) == 0 {
		return
	}
	// A fresh deadline: the edit is done whatever happens here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	rep := s.sendMarks(ctx, tenant, uniqueRefs(refs))
	if rep.Failed > 0 {
		s.logger.WarnContext(ctx, "tracker outbox: sending link sets failed; the scheduled outbox retries",
			"tenant", tenant, "failed", rep.Failed)
	}
}

// RunOutbox sends every pending mark of every tenant (the TrackerOutbox
// function, every minute). Wikis are called concurrently, a few at a time,
// so one slow wiki costs only its own marks.
func (s *Service) RunOutbox(ctx context.Context) (OutboxReport, error) {
	marks, err := s.outbox.PendingMarks(ctx, outboxScan)
	if err != nil {
		return OutboxReport{}, fmt.Errorf("tracker outbox: list marks: %w", err)
	}
	type group struct {
		tenant, applink string
		refs            []ReqRef
	}
	byKey := map[[2]string]*group{}
	var groups []*group
	for _, m := range marks {
		k := [2]string{m.Tenant, m.Ref.ApplinkID}
		g := byKey[k]
		if g == nil {
			g = &group{tenant: m.Tenant, applink: m.Ref.ApplinkID}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.refs = append(g.refs, m.Ref)
	}
	rep := OutboxReport{Marks: len(marks)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, outboxParallelism)
	for _, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := s.sendMarks(ctx, g.tenant, g.refs)
			mu.Lock()
			rep.Sent += r.Sent
			rep.Failed += r.Failed
			rep.Skipped += r.Skipped
			mu.Unlock()
		}()
	}
	wg.Wait()
	return rep, ctx.Err()
}

// sendMarks sends the TRACKER sets of the marked requirements refs of one
// tenant, one links callback per applink and batch.
func (s *Service) sendMarks(ctx context.Context, tenant string, refs []ReqRef) OutboxReport {
	var rep OutboxReport
	byApplink := map[string][]ReqRef{}
	for _, r := range refs {
		byApplink[r.ApplinkID] = append(byApplink[r.ApplinkID], r)
	}
	ids := make([]string, 0, len(byApplink))
	for id := range byApplink {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		refs := byApplink[id]
		slices.SortFunc(refs, compareRefs)
		for chunk := range slices.Chunk(refs, OutboxBatch) {
			r := s.sendChunk(ctx, tenant, id, chunk)
			rep.Sent += r.Sent
			rep.Failed += r.Failed
			rep.Skipped += r.Skipped
		}
	}
	return rep
}

func (s *Service) sendChunk(ctx context.Context, tenant, applinkID string, refs []ReqRef) OutboxReport {
	var rep OutboxReport
	a, err := s.applinks.GetApplink(ctx, tenant, applinkID)
	owner := s.owner + "-" + randomID()
	now := s.now()
	// Take the marks first: only their owner sends, and it reads the
	// sets after taking them.
	var taken []Mark
	for _, r := range refs {
		m, terr := s.outbox.TakeMark(ctx, tenant, r, owner, now, now.Add(markLease))
		if terr != nil {
			if !errors.Is(terr, apperr.ErrConflict) {
				s.logger.WarnContext(ctx, "tracker outbox: take mark", "tenant", tenant, "requirement", r.String(), "error", terr.Error())
			}
			rep.Skipped++
			continue
		}
		taken = append(taken, m)
	}
	if len(taken) == 0 {
		return rep
	}
	release := func(reason string) {
		for _, m := range taken {
			if err := s.outbox.ReleaseMark(ctx, tenant, m, owner, reason); err != nil {
				s.logger.WarnContext(ctx, "tracker outbox: release mark", "tenant", tenant, "requirement", m.Ref.String(), "error", err.Error())
			}
		}
	}
	switch {
	case isNotFound(err):
		// No applink: nothing will ever be sent for these marks.
		for _, m := range taken {
			if _, err := s.outbox.ClearMark(ctx, tenant, m, owner); err != nil {
				s.logger.WarnContext(ctx, "tracker outbox: clear mark", "error", err.Error())
			}
		}
		rep.Skipped += len(taken)
		return rep
	case err != nil:
		release("read application link: " + err.Error())
		rep.Failed += len(taken)
		return rep
	case a.Mode == Disabled || a.WikiToken == "":
		reason := "application link is DISABLED"
		if a.Mode != Disabled {
			reason = "application link has no wiki token"
		}
		release(reason)
		rep.Skipped += len(taken)
		return rep
	}
	takenRefs := make([]ReqRef, len(taken))
	for i, m := range taken {
		takenRefs[i] = m.Ref
	}
	states, err := s.links.LinkStates(ctx, tenant, takenRefs)
	if err != nil {
		release("read link sets: " + err.Error())
		rep.Failed += len(taken)
		return rep
	}
	sets := make([]RequirementLinks, len(taken))
	for i, m := range taken {
		st, ok := states[m.Ref]
		if !ok {
			st = EmptyLinkState(m.Ref)
		}
		// The TRACKER set, said so ("holds": "TRACKER"), whatever the
		// version: the wiki replaces its record of the tracker's holds,
		// and the links it got from the page stay the page's.
		set := RequirementLinks{SpaceKey: m.Ref.SpaceKey, Key: m.Ref.Key, Baseline: m.Ref.Baseline,
			Links: []IssueRelationship{}, TrackerHolds: true}
		set.Links = append(set.Links, sortedRels(st.Tracker)...)
		sets[i] = set
	}
	slices.SortFunc(sets, func(x, y RequirementLinks) int {
		return cmp.Or(cmp.Compare(x.SpaceKey, y.SpaceKey), cmp.Compare(x.Key, y.Key), cmp.Compare(x.Baseline, y.Baseline))
	})
	if err := s.wiki.PutLinks(ctx, a.Wiki(), a.ServiceID, sets); err != nil {
		msg := err.Error()
		if e := apperr.As(err); e != nil && e.Message != "" {
			msg = e.Message
		}
		release(msg)
		rep.Failed += len(taken)
		return rep
	}
	for _, m := range taken {
		if _, err := s.outbox.ClearMark(ctx, tenant, m, owner); err != nil {
			s.logger.WarnContext(ctx, "tracker outbox: clear mark", "tenant", tenant, "requirement", m.Ref.String(), "error", err.Error())
		}
	}
	rep.Sent += len(taken)
	return rep
}
