package tracker

import (
	"context"
	"errors"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// Receive handles a batch of messages sent by the wiki of applink applinkID
// (the caller's credential names it, so a wiki can only ever write its own
// applink of its own tenant).
//
// Each message is answered on its own: an invalid one is ERROR with the
// reason and does not stop the others. In AUTO mode valid messages are
// applied in order; in MANUAL mode they are stored as pending (OK,
// "pending") until a sync covering them or the applink's return to AUTO;
// in DISABLED mode the whole batch is refused with a conflict, so the wiki
// keeps it queued. An unexpected (storage) error fails the whole request:
// the wiki retries the batch, and every effect is idempotent, so messages
// applied before the failure are simply applied again.
func (s *Service) Receive(ctx context.Context, tenant, applinkID string, msgs []Message) ([]Result, error) {
	if len(msgs) > MaxBatch {
		return nil, apperr.Invalidf("too many messages: at most %d per request", MaxBatch)
	}
	a, err := s.Applink(ctx, tenant, applinkID)
	if err != nil {
		return nil, err
	}
	if a.Mode == Disabled {
		return nil, apperr.Conflictf("application link %s is DISABLED: messages are refused; keep them queued", applinkID)
	}
	results := make([]Result, len(msgs))
	var pending []Pending
	var marked []ReqRef
	now := s.now().UTC()
	for i, m := range msgs {
		results[i] = Result{ID: m.ID, Status: OK}
		if err := m.Validate(applinkID); err != nil {
			results[i] = failed(m, err)
			continue
		}
		if a.Mode == Manual {
			pending = append(pending, Pending{ApplinkID: applinkID, ReceivedAt: now, Index: i, Message: m})
			results[i].Message = PendingNotice
			continue
		}
		msg, mk, err := s.apply(ctx, tenant, a, m)
		marked = append(marked, mk...)
		if err != nil {
			if apperr.CodeOf(err) == apperr.Internal {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			results[i] = failed(m, err)
			continue
		}
		results[i].Message = msg
	}
	if len(pending) > 0 {
		if err := s.pending.AddPending(ctx, tenant, pending); err != nil {
			return nil, fmt.Errorf("keep messages pending: %w", err)
		}
	}
	s.sendMarked(ctx, tenant, marked)
	return results, nil
}

func failed(m Message, err error) Result {
	msg := "internal error"
	if e := apperr.As(err); e != nil {
		msg = e.Message
	}
	return Result{ID: m.ID, Status: Error, Message: msg}
}

// marksFor says which requirements' TRACKER sets go to the wiki after a
// change: those of applink a, at every version (the outbox sends them as
// the tracker's holds, which any version of the wiki records as such).
func marksFor(a Applink) func(ReqRef) bool {
	return func(r ReqRef) bool { return r.ApplinkID == a.ID }
}

// apply carries out one valid message of applink a and returns the result
// message and the requirements it marked for the outbox. Every effect is
// idempotent: applying a message twice gives the state of applying it once.
func (s *Service) apply(ctx context.Context, tenant string, a Applink, m Message) (string, []ReqRef, error) {
	ref := m.Ref(a.ID)
	switch m.Type {
	case Updated:
		// An UPDATED message carries the requirement's new state: an absent
		// excerpt is an empty one (the wiki omits empty fields), while an
		// absent URL keeps the stored one.
		excerpt := m.NewHTMLExcerpt
		if excerpt == nil {
			excerpt = new(string)
		}
		return Applied, nil, s.changeRequirement(ctx, tenant, ref, func(r *Requirement) error {
			r.Deleted = false
			if m.Suspect != nil && *m.Suspect {
				if err := s.markSuspect(ctx, tenant, r, m); err != nil {
					return err
				}
			}
			return s.setData(r, excerpt, m.NewURL)
		})
	case Deleted:
		// The links stay: the issue's users see the requirement flagged
		// deleted and decide what the issue should now point at. An UPDATED
		// message (the requirement restored) clears the flag.
		return Applied, nil, s.changeRequirement(ctx, tenant, ref, func(r *Requirement) error {
			r.Deleted = true
			return nil
		})
	case Moved:
		marked, err := s.move(ctx, tenant, a, ref, m.Target(a.ID), m.NewHTMLExcerpt, m.NewURL)
		return Applied, marked, err
	case LinkMessage:
		if err := s.messageData(ctx, tenant, ref, m); err != nil {
			return "", nil, err
		}
		// A page link, at any version: a later LINKS (version 5) can
		// remove it.
		rel := IssueRelationship{IssueKey: m.ObjectKey, Relationship: m.Relationship}
		if _, err := s.changeLinks(ctx, tenant, []ReqRef{ref}, nil, func(st map[ReqRef]*LinkState) error {
			st[ref].Page[rel] = true
			if m.Origin != (PageOrigin{}) {
				st[ref].Origin = m.Origin // the page to name in a 409
			}
			return nil
		}); err != nil {
			return "", nil, fmt.Errorf("link %s to %s: %w", m.ObjectKey, ref, err)
		}
		return Applied, nil, nil
	case LinksMessage:
		return s.applyLinks(ctx, tenant, ref, m)
	}
	return "", nil, apperr.Invalidf("unknown message type %q", m.Type)
}

// errOlder stops a LINKS older than the applied one.
type errOlder struct{ version int }

func (e errOlder) Error() string { return fmt.Sprintf("ignored: older than version %d", e.version) }

// applyLinks makes the requirement's PAGE links exactly m.Links (version
// 5), unless a newer LINKS was applied already; TRACKER holds are never
// touched. Links left without a hold are deleted.
func (s *Service) applyLinks(ctx context.Context, tenant string, ref ReqRef, m Message) (string, []ReqRef, error) {
	want := make(map[IssueRelationship]bool, len(m.Links))
	for _, l := range m.Links {
		want[l] = true
	}
	_, err := s.changeLinks(ctx, tenant, []ReqRef{ref}, nil, func(states map[ReqRef]*LinkState) error {
		st := states[ref]
		if *m.LinksVersion < st.Version {
			return errOlder{st.Version}
		}
		st.Page = want
		st.Version = *m.LinksVersion
		if m.Origin != (PageOrigin{}) {
			st.Origin = m.Origin
		}
		return nil
	})
	var older errOlder
	if errors.As(err, &older) {
		return older.Error(), nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("links of %s: %w", ref, err)
	}
	if err := s.messageData(ctx, tenant, ref, m); err != nil {
		return "", nil, err
	}
	return Applied, nil, nil
}

// messageData stores a LINK or LINKS message's excerpt and URL, when given.
func (s *Service) messageData(ctx context.Context, tenant string, ref ReqRef, m Message) error {
	if m.NewHTMLExcerpt == nil && m.NewURL == nil {
		return nil
	}
	return s.changeRequirement(ctx, tenant, ref, func(r *Requirement) error {
		return s.setData(r, m.NewHTMLExcerpt, m.NewURL)
	})
}

// setData sets the excerpt (sanitized) and the URL when given.
func (s *Service) setData(r *Requirement, excerpt, url *string) error {
	if excerpt != nil {
		clean, err := s.sanitizeExcerpt(*excerpt)
		if err != nil {
			return err
		}
		r.HTMLExcerpt = clean
	}
	if url != nil {
		r.GenericURL = *url
	}
	return nil
}

// changeRequirement reads (or starts) the requirement ref, changes it and
// writes it back.
func (s *Service) changeRequirement(ctx context.Context, tenant string, ref ReqRef, change func(*Requirement) error) error {
	got, err := s.links.GetRequirements(ctx, tenant, []ReqRef{ref})
	if err != nil {
		return fmt.Errorf("read requirement %s: %w", ref, err)
	}
	r, ok := got[ref]
	if !ok {
		r = Requirement{Ref: ref}
	}
	if err := change(&r); err != nil {
		return err
	}
	r.UpdatedAt = s.now().UTC()
	if err := s.links.PutRequirements(ctx, tenant, []Requirement{r}); err != nil {
		return fmt.Errorf("write requirement %s: %w", ref, err)
	}
	return nil
}

// move re-keys every link of from to to, with its holds, and carries the
// stored excerpt along (overridden by excerpt and url when given). The
// target keeps the higher LINKS version of both; the source keeps its
// version (with no links), so a late LINKS for the old key changes nothing.
// Links and holds move in one write, so an interrupted move is completed by
// applying it again.
func (s *Service) move(ctx context.Context, tenant string, a Applink, from, to ReqRef, excerpt, url *string) ([]ReqRef, error) {
	got, err := s.links.GetRequirements(ctx, tenant, []ReqRef{from, to})
	if err != nil {
		return nil, fmt.Errorf("move %s: %w", from, err)
	}
	src, hasSrc := got[from]
	dst := got[to]
	if hasSrc || excerpt != nil || url != nil {
		if hasSrc {
			dst.HTMLExcerpt, dst.GenericURL = src.HTMLExcerpt, src.GenericURL
		}
		dst.Ref, dst.Deleted = to, false // it lives on at its new key
		if err := s.setData(&dst, excerpt, url); err != nil {
			return nil, err
		}
		dst.UpdatedAt = s.now().UTC()
		if err := s.links.PutRequirements(ctx, tenant, []Requirement{dst}); err != nil {
			return nil, fmt.Errorf("move %s: %w", from, err)
		}
	}
	// Only the target's TRACKER set is news for the wiki (the source keeps
	// none).
	markTo := func(r ReqRef, o, n LinkState) bool {
		return r == to && marksFor(a)(r) && !sameSet(o.Tracker, n.Tracker)
	}
	marked, err := s.changeLinks(ctx, tenant, []ReqRef{from, to}, markTo, func(states map[ReqRef]*LinkState) error {
		f, t := states[from], states[to]
		for rel := range f.Page {
			t.Page[rel] = true
		}
		for rel := range f.Tracker {
			t.Tracker[rel] = true
		}
		t.Version = max(t.Version, f.Version)
		if t.Origin == (PageOrigin{}) {
			t.Origin = f.Origin
		}
		f.Page, f.Tracker = map[IssueRelationship]bool{}, map[IssueRelationship]bool{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("move %s: %w", from, err)
	}
	return marked, nil
}
