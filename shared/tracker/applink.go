package tracker

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Registration is what a tracker admin sends to create or update an applink.
type Registration struct {
	Name      string // "" means the applink id
	URL       string // required
	ServiceID string // "" means the applink id (spec 2.3: serviceId = applinkId for an application link)
	// WikiToken sets the wiki credential; nil keeps the stored one, "" clears it.
	WikiToken *string
	// Mode and Version, when not nil, set them as PUT .../mode and
	// PUT .../version would; a new applink defaults to AUTO and DefaultVersion.
	Mode    *string
	Version *int
	// RotateToken replaces the incoming token (a new applink always gets one).
	RotateToken bool
}

// Registered is the answer to a registration.
type Registered struct {
	Applink Applink
	Created bool
	// IncomingToken is the new credential for the wiki, set only when the
	// applink was created or the token rotated. It is shown once.
	IncomingToken string
}

const (
	maxAppName   = 200
	maxWikiToken = 512
)

// Register creates or updates applink id of a tenant. A new applink, or
// RotateToken, gets a fresh incoming token bound to the applink (an
// auth.Link principal of the tracker, Scope = id); the previous token is
// deleted on rotation.
func (s *Service) Register(ctx context.Context, tenant, id string, reg Registration) (Registered, error) {
	if err := ValidateApplinkID(id); err != nil {
		return Registered{}, err
	}
	u, err := NormalizeURL(reg.URL)
	if err != nil {
		return Registered{}, err
	}
	name := reg.Name
	if name == "" {
		name = id
	}
	if len(name) > maxAppName || !utf8.ValidString(name) {
		return Registered{}, apperr.Invalidf("name is too long: at most %d bytes", maxAppName)
	}
	if requirement.HasControl(name) {
		return Registered{}, apperr.InvalidField("name", "must not contain control characters")
	}
	serviceID := reg.ServiceID
	if serviceID == "" {
		serviceID = id
	}
	if err := validateLinkID("serviceId", serviceID); err != nil {
		return Registered{}, err
	}
	if reg.WikiToken != nil && len(*reg.WikiToken) > maxWikiToken {
		return Registered{}, apperr.Invalidf("token is too long: at most %d bytes", maxWikiToken)
	}
	if reg.WikiToken != nil && requirement.HasControl(*reg.WikiToken) {
		return Registered{}, apperr.InvalidField("token", "must not contain control characters (CR and LF included)")
	}
	var mode Mode
	if reg.Mode != nil {
		if mode, err = ParseMode(*reg.Mode); err != nil {
			return Registered{}, err
		}
	}
	var version int
	if reg.Version != nil {
		if version, err = AcceptVersion(*reg.Version); err != nil {
			return Registered{}, err
		}
	}

	prev, err := s.applinks.GetApplink(ctx, tenant, id)
	var prevp *Applink
	switch {
	case err == nil:
		prevp = &prev
	case errors.Is(err, apperr.ErrNotFound):
		prev = Applink{ID: id, Mode: Auto, Version: DefaultVersion, CreatedAt: s.now().UTC()}
	default:
		return Registered{}, fmt.Errorf("register applink %s: %w", id, err)
	}
	// A new url is checked against the outbound policy; one stored before
	// (a stricter policy since) can still be edited otherwise, for one to
	// set the applink DISABLED: calls to it are refused when made.
	if prevp == nil || u != prev.URL {
		if err := checkTarget(u, s.allowPrivate); err != nil {
			return Registered{}, err
		}
	}
	a := prev
	a.Name, a.URL, a.ServiceID = name, u, serviceID
	if reg.WikiToken != nil {
		a.WikiToken = *reg.WikiToken
	}
	if mode != "" {
		a.Mode = mode
	}
	if version != 0 {
		a.Version = version
	}
	a.UpdatedAt = s.now().UTC()

	out := Registered{Created: prevp == nil}
	if out.Created || reg.RotateToken {
		// The token exists before the applink points at it, so that a
		// failure never leaves an applink whose token cannot be shown again.
		token := auth.NewToken()
		a.IncomingTokenHash = auth.HashToken(token)
		p := auth.Principal{Tenant: tenant, App: auth.Tracker, Kind: auth.Link, User: "link:" + id, Scope: id}
		if err := s.tokens.PutToken(ctx, a.IncomingTokenHash, p); err != nil {
			return Registered{}, fmt.Errorf("register applink %s: store incoming token: %w", id, err)
		}
		out.IncomingToken = token
	}
	if out.Created {
		// A deleted applink of this id may have left links behind (an
		// edit that wrote them while it was being deleted): a new applink
		// starts with none.
		if _, err := s.applinks.PurgeApplink(ctx, tenant, id); err != nil {
			_ = s.tokens.DeleteToken(ctx, a.IncomingTokenHash) // best effort: the token is unusable anyway
			return Registered{}, fmt.Errorf("register applink %s: %w", id, err)
		}
	}
	if err := s.applinks.PutApplink(ctx, tenant, a, prevp); err != nil {
		if out.IncomingToken != "" {
			_ = s.tokens.DeleteToken(ctx, a.IncomingTokenHash) // best effort: the token is unusable anyway
		}
		return Registered{}, fmt.Errorf("register applink %s: %w", id, err)
	}
	if out.IncomingToken != "" && prevp != nil && prev.IncomingTokenHash != "" {
		if err := s.tokens.DeleteToken(ctx, prev.IncomingTokenHash); err != nil {
			return Registered{}, fmt.Errorf("register applink %s: delete the previous token: %w", id, err)
		}
	}
	out.Applink = a
	return out, nil
}

// Applinks returns the tenant's applinks ordered by id.
func (s *Service) Applinks(ctx context.Context, tenant string) ([]Applink, error) {
	all, err := s.applinks.ListApplinks(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("list applinks: %w", err)
	}
	return all, nil
}

// DeleteApplink deletes applink id of a tenant with everything it owns:
// its incoming credential first (the wiki's calls with it are refused from
// then on), then its links, requirement excerpts and link states, tracker
// outbox marks and pending messages, then the applink itself with its
// wiki credential, then once more what a concurrent edit wrote meanwhile.
// Every step is idempotent and the applink goes last, so a deletion that
// fails half way is finished by repeating it. Not found: a missing applink
// or another tenant's.
func (s *Service) DeleteApplink(ctx context.Context, tenant, id string) error {
	a, err := s.Applink(ctx, tenant, id)
	if err != nil {
		return err
	}
	if a.IncomingTokenHash != "" {
		if err := s.tokens.DeleteToken(ctx, a.IncomingTokenHash); err != nil {
			return fmt.Errorf("delete applink %s: its incoming token: %w", id, err)
		}
	}
	if _, err := s.applinks.PurgeApplink(ctx, tenant, id); err != nil {
		return fmt.Errorf("delete applink %s: %w", id, err)
	}
	err = s.applinks.DeleteApplink(ctx, tenant, id)
	if errors.Is(err, apperr.ErrNotFound) {
		return apperr.NotFoundf("application link %s not found", id) // deleted concurrently
	}
	if err != nil {
		return fmt.Errorf("delete applink %s: %w", id, err)
	}
	s.purge(ctx, tenant, id)
	return nil
}

// purge deletes what applink id owns, logging a failure: what is left is
// only read through an applink of that id, whose creation purges again.
func (s *Service) purge(ctx context.Context, tenant, id string) {
	if _, err := s.applinks.PurgeApplink(ctx, tenant, id); err != nil {
		s.logger.WarnContext(ctx, "cannot purge what a deleted applink left", "applinkId", id, "error", err.Error())
	}
}

// Applink returns applink id of a tenant, or a not-found error.
func (s *Service) Applink(ctx context.Context, tenant, id string) (Applink, error) {
	if err := ValidateApplinkID(id); err != nil {
		return Applink{}, err
	}
	a, err := s.applinks.GetApplink(ctx, tenant, id)
	if errors.Is(err, apperr.ErrNotFound) {
		return Applink{}, apperr.NotFoundf("application link %s not found", id)
	}
	if err != nil {
		return Applink{}, fmt.Errorf("get applink %s: %w", id, err)
	}
	return a, nil
}

// update reads applink id, lets change modify it, and writes it back unless
// the stored applink changed meanwhile (a 409 then).
func (s *Service) update(ctx context.Context, tenant, id string, change func(*Applink)) (Applink, error) {
	prev, err := s.Applink(ctx, tenant, id)
	if err != nil {
		return Applink{}, err
	}
	a := prev
	change(&a)
	if a == prev {
		return a, nil
	}
	a.UpdatedAt = s.now().UTC()
	if err := s.applinks.PutApplink(ctx, tenant, a, &prev); err != nil {
		return Applink{}, fmt.Errorf("update applink %s: %w", id, err)
	}
	return a, nil
}

// SetMode sets the mode of applink id (spec §3): mode must be AUTO, MANUAL
// or DISABLED exactly. Setting AUTO also applies the applink's pending
// (MANUAL) messages, in the order received, and drops them: a tracker taken
// back to AUTO converges without a sync. Other modes leave them pending.
func (s *Service) SetMode(ctx context.Context, tenant, id, mode string) (Applink, error) {
	m, err := ParseMode(mode)
	if err != nil {
		return Applink{}, err
	}
	a, err := s.update(ctx, tenant, id, func(a *Applink) { a.Mode = m })
	if err != nil || m != Auto || s.pending == nil {
		return a, err
	}
	if err := s.applyPending(ctx, tenant, a); err != nil {
		return Applink{}, fmt.Errorf("mode AUTO: %w", err)
	}
	return a, nil
}

// applyPending applies the pending messages of applink a in order and
// deletes them. A message that cannot apply (it was valid when received)
// never will: it is dropped with the others, as a sync does.
func (s *Service) applyPending(ctx context.Context, tenant string, a Applink) error {
	all, err := s.pending.ListPending(ctx, tenant)
	if err != nil {
		return fmt.Errorf("pending messages: %w", err)
	}
	var done []Pending
	var marked []ReqRef
	defer func() { s.sendMarked(ctx, tenant, marked) }()
	for _, p := range all {
		if p.ApplinkID != a.ID {
			continue
		}
		_, mk, err := s.apply(ctx, tenant, a, p.Message)
		marked = append(marked, mk...)
		if err != nil && apperr.CodeOf(err) == apperr.Internal {
			// What was applied goes; the rest stays pending for a retry.
			if derr := s.pending.DeletePending(ctx, tenant, done); derr != nil {
				return errors.Join(err, derr)
			}
			return fmt.Errorf("apply pending message: %w", err)
		}
		done = append(done, p)
	}
	if err := s.pending.DeletePending(ctx, tenant, done); err != nil {
		return fmt.Errorf("delete applied pending messages: %w", err)
	}
	return nil
}

// SetVersion sets the API version of applink id to the version the tracker
// accepts for v (AcceptVersion) and returns the applink with it.
func (s *Service) SetVersion(ctx context.Context, tenant, id string, v int) (Applink, error) {
	accepted, err := AcceptVersion(v)
	if err != nil {
		return Applink{}, err
	}
	return s.update(ctx, tenant, id, func(a *Applink) { a.Version = accepted })
}

// Recognize tells whether an applink with this id and/or wiki URL is known
// to the caller (at least one of them is non-empty; both must match the same
// applink when both are given). Only an authenticated caller can recognize
// anything: an anonymous caller has no tenant, and answering for any tenant
// would tell strangers which wikis a tenant links. A Link principal (a
// wiki's credential) recognizes only its own applink.
func (s *Service) Recognize(ctx context.Context, p *auth.Principal, applinkID, wikiURL string) (bool, error) {
	if p == nil {
		return false, nil
	}
	match := func(a Applink) bool {
		if applinkID != "" && a.ID != applinkID {
			return false
		}
		if wikiURL != "" {
			u, err := NormalizeURL(wikiURL)
			return err == nil && u == a.URL
		}
		return true
	}
	if p.Kind == auth.Link {
		a, err := s.applinks.GetApplink(ctx, p.Tenant, p.Scope)
		if errors.Is(err, apperr.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("recognize applink: %w", err)
		}
		return match(a), nil
	}
	if applinkID != "" {
		if ValidateApplinkID(applinkID) != nil {
			return false, nil
		}
		a, err := s.applinks.GetApplink(ctx, p.Tenant, applinkID)
		if errors.Is(err, apperr.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("recognize applink: %w", err)
		}
		return match(a), nil
	}
	all, err := s.applinks.ListApplinks(ctx, p.Tenant)
	if err != nil {
		return false, fmt.Errorf("recognize applink: %w", err)
	}
	for _, a := range all {
		if match(a) {
			return true, nil
		}
	}
	return false, nil
}
