package tracker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// maxStateAttempts bounds the read-change-write rounds of one link change
// that meets concurrent writers of the same requirements.
const maxStateAttempts = 8

// changeLinks reads the link states of refs, lets plan change copies of
// them, and writes those that changed, marking for the outbox those whose
// change mark says the wiki must hear of (see markChange). When a
// concurrent writer changed one of the requirements meanwhile it reads and
// plans again. plan's error is returned after writing what plan changed
// (a plan that refuses changes nothing, or only what it must keep). It
// returns the marked requirements.
func (s *Service) changeLinks(ctx context.Context, tenant string, refs []ReqRef, mark func(r ReqRef, o, n LinkState) bool,
	plan func(states map[ReqRef]*LinkState) error) ([]ReqRef, error) {
	refs = uniqueRefs(refs)
	for attempt := 1; ; attempt++ {
		old, err := s.links.LinkStates(ctx, tenant, refs)
		if err != nil {
			return nil, fmt.Errorf("read link states: %w", err)
		}
		states := make(map[ReqRef]*LinkState, len(refs))
		for _, r := range refs {
			st, ok := old[r]
			if !ok {
				st = EmptyLinkState(r)
			}
			old[r] = st
			c := st.Clone()
			states[r] = &c
		}
		planErr := plan(states)
		var writes []LinkWrite
		var marked []ReqRef
		for _, r := range refs {
			o, n := old[r], *states[r]
			if sameLinks(o, n) {
				continue
			}
			w := LinkWrite{Old: o, New: n}
			if mark != nil && mark(r, o, n) {
				w.Mark = true
				marked = append(marked, r)
			}
			writes = append(writes, w)
		}
		if len(writes) == 0 {
			return nil, planErr
		}
		err = s.links.WriteLinks(ctx, tenant, writes)
		if errors.Is(err, apperr.ErrConflict) && attempt < maxStateAttempts {
			if err := sleep(ctx, time.Duration(attempt)*15*time.Millisecond); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("write links: %w", err)
		}
		return marked, planErr
	}
}

func sameSet(a, b map[IssueRelationship]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func uniqueRefs(refs []ReqRef) []ReqRef {
	seen := map[ReqRef]bool{}
	out := make([]ReqRef, 0, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// randomID returns a random identifier for lease owners.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// Issue leases: an edit of an issue's links holds the issue's lease from
// reading its links to writing them, so concurrent edits of one issue run
// one after the other.
const (
	issueLease     = 30 * time.Second
	issueLockWait  = 8 * time.Second
	issueLockRetry = 40 * time.Millisecond
)

// lockIssue takes the lease of issueKey, waiting a few seconds for a
// concurrent edit to finish; it returns the function that releases it.
func (s *Service) lockIssue(ctx context.Context, tenant, issueKey string) (func(), error) {
	if s.locks == nil {
		return func() {}, nil
	}
	owner := s.owner + "-" + randomID()
	deadline := time.Now().Add(issueLockWait)
	for wait := issueLockRetry; ; wait = min(wait*2, 500*time.Millisecond) {
		now := s.now()
		err := s.locks.LockIssue(ctx, tenant, issueKey, owner, now, now.Add(issueLease))
		if err == nil {
			return func() {
				// A fresh context: the lease must go even when the request's
				// context is done (else it blocks the issue for 30 s).
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := s.locks.UnlockIssue(ctx, tenant, issueKey, owner); err != nil {
					s.logger.WarnContext(ctx, "release issue lease", "issueKey", issueKey, "error", err.Error())
				}
			}, nil
		}
		if !errors.Is(err, apperr.ErrConflict) {
			return nil, fmt.Errorf("lock issue %s: %w", issueKey, err)
		}
		if time.Now().After(deadline) {
			return nil, apperr.Conflictf("the links of issue %s are being changed by another request: try again", issueKey)
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// markChange says whether a tracker-side change of a requirement's holds
// from o to n must reach the wiki: a change of its TRACKER set, whatever
// the version (the outbox sends it as the tracker's holds, which a wiki
// records as such at every version).
func markChange(o, n LinkState) bool { return !sameSet(o.Tracker, n.Tracker) }
