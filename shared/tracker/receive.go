package tracker

import (
	"context"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// Receive handles a batch of version-4 messages sent by the wiki of applink
// applinkID (the caller's credential names it, so a wiki can only ever write
// its own applink of its own tenant).
//
// Each message is answered on its own: an invalid one is ERROR with the
// reason and does not stop the others. In AUTO mode valid messages are
// applied in order; in MANUAL mode they are stored as pending (OK,
// "pending") until a sync covering them; in DISABLED mode the whole batch is
// refused with a conflict, so the wiki keeps it queued. An unexpected
// (storage) error fails the whole request: the wiki retries the batch, and
// every effect is idempotent, so messages applied before the failure are
// simply applied again.
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
		if err := s.apply(ctx, tenant, applinkID, m); err != nil {
			if apperr.CodeOf(err) == apperr.Internal {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			results[i] = failed(m, err)
			continue
		}
		results[i].Message = Applied
	}
	if len(pending) > 0 {
		if err := s.pending.AddPending(ctx, tenant, pending); err != nil {
			return nil, fmt.Errorf("keep messages pending: %w", err)
		}
	}
	return results, nil
}

func failed(m Message, err error) Result {
	msg := "internal error"
	if e := apperr.As(err); e != nil {
		msg = e.Message
	}
	return Result{ID: m.ID, Status: Error, Message: msg}
}

// apply carries out one valid message. Every effect is idempotent: applying
// a message twice gives the state of applying it once.
func (s *Service) apply(ctx context.Context, tenant, applinkID string, m Message) error {
	ref := m.Ref(applinkID)
	switch m.Type {
	case Updated:
		// An UPDATED message carries the requirement's new state: an absent
		// excerpt is an empty one (the wiki omits empty fields), while an
		// absent URL keeps the stored one.
		excerpt := m.NewHTMLExcerpt
		if excerpt == nil {
			excerpt = new(string)
		}
		return s.changeRequirement(ctx, tenant, ref, func(r *Requirement) error {
			r.Deleted = false
			return s.setData(r, excerpt, m.NewURL)
		})
	case Deleted:
		// The links stay: the issue's users see the requirement flagged
		// deleted and decide what the issue should now point at. An UPDATED
		// message (the requirement restored) clears the flag.
		return s.changeRequirement(ctx, tenant, ref, func(r *Requirement) error {
			r.Deleted = true
			return nil
		})
	case Moved:
		return s.move(ctx, tenant, ref, m.Target(applinkID), m.NewHTMLExcerpt, m.NewURL)
	case LinkMessage:
		if m.NewHTMLExcerpt != nil || m.NewURL != nil {
			if err := s.changeRequirement(ctx, tenant, ref, func(r *Requirement) error {
				return s.setData(r, m.NewHTMLExcerpt, m.NewURL)
			}); err != nil {
				return err
			}
		}
		l := Link{IssueKey: m.ObjectKey, Req: ref, Relationship: m.Relationship}
		if err := s.links.PutLinks(ctx, tenant, []Link{l}); err != nil {
			return fmt.Errorf("link %s to %s: %w", m.ObjectKey, ref, err)
		}
		return nil
	}
	return apperr.Invalidf("unknown message type %q", m.Type)
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

// move re-keys every link of from to to, and carries the stored excerpt
// along (overridden by excerpt and url when given). The new links are
// written before the old ones are removed, so an interrupted move is
// completed by applying it again, and a second application finds nothing
// left at from.
func (s *Service) move(ctx context.Context, tenant string, from, to ReqRef, excerpt, url *string) error {
	links, err := s.links.RequirementLinks(ctx, tenant, from)
	if err != nil {
		return fmt.Errorf("move %s: %w", from, err)
	}
	got, err := s.links.GetRequirements(ctx, tenant, []ReqRef{from, to})
	if err != nil {
		return fmt.Errorf("move %s: %w", from, err)
	}
	src, hasSrc := got[from]
	dst := got[to]
	if hasSrc || excerpt != nil || url != nil {
		if hasSrc {
			dst.HTMLExcerpt, dst.GenericURL = src.HTMLExcerpt, src.GenericURL
		}
		dst.Ref, dst.Deleted = to, false // it lives on at its new key
		if err := s.setData(&dst, excerpt, url); err != nil {
			return err
		}
		dst.UpdatedAt = s.now().UTC()
		if err := s.links.PutRequirements(ctx, tenant, []Requirement{dst}); err != nil {
			return fmt.Errorf("move %s: %w", from, err)
		}
	}
	moved := make([]Link, len(links))
	for i, l := range links {
		moved[i] = Link{IssueKey: l.IssueKey, Req: to, Relationship: l.Relationship}
	}
	if err := s.links.PutLinks(ctx, tenant, moved); err != nil {
		return fmt.Errorf("move %s: %w", from, err)
	}
	if err := s.links.DeleteLinks(ctx, tenant, links); err != nil {
		return fmt.Errorf("move %s: %w", from, err)
	}
	if hasSrc {
		if err := s.links.DeleteRequirement(ctx, tenant, from); err != nil {
			return fmt.Errorf("move %s: %w", from, err)
		}
	}
	return nil
}
