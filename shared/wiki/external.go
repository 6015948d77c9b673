package wiki

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// External properties (PUT /rest/reqs/1/requirement2/{spaceKey}/{key}/external)
// are values the service stores on the current row of an ACTIVE
// requirement, beside the properties its page gives. Page operations carry
// them over: a save, reindex or page view keeps them on the rows it
// rewrites, a move takes them to the requirement's row in its new space,
// and a row that becomes DELETED (or MOVED) loses them. docs/indexing.md,
// "External properties", describes the rules and the writes.

// externalAttempts bounds the rounds of SetExternal: each reads the row and
// writes it on condition that neither it nor its page changed meanwhile.
const externalAttempts = 8

// SetExternal applies changes (sets, and removals for nil values) to the
// external properties of the current row of requirement space/key and
// returns the row as written. Names compare ignoring case: a set replaces
// the value (and the spelling) of the property of that name; removing an
// absent name does nothing. It answers:
//   - invalid (naming the property) for a name or value that breaks the
//     rules of a page property (requirement.CheckPropertyName,
//     CheckPropertyValue), a name given twice, or more than
//     requirement.MaxExternal properties in all;
//   - not found for a requirement that does not exist, a stub, and a
//     DELETED or MOVED one (whose properties live on the row it moved to);
//   - too large when the row would pass the size a requirement may take;
//   - conflict when the row or its page kept changing (a save of the page
//     holding its lease) during every attempt.
//
// Each attempt reads the row (strongly consistent) and writes it with
// Store.SetExternal, on condition that nothing changed since: a concurrent
// page save either came first (and the attempt reads what it wrote) or
// waits for this write to be read (it holds the page's lease from before
// it reads the rows), so neither change is lost.
func (s *Service) SetExternal(ctx context.Context, tenant, space, key string, changes []requirement.ExternalChange) (*requirement.Requirement, error) {
	if err := CheckSpaceKey(space); err != nil {
		return nil, err
	}
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	if err := checkExternalChanges(changes); err != nil {
		return nil, err
	}
	id := requirement.NewID(space, key, 0)
	for attempt := 1; ; attempt++ {
		rows, err := s.store.Requirements(ctx, tenant, []requirement.ID{id})
		if err != nil {
			return nil, fmt.Errorf("read requirement %s: %w", id, err)
		}
		r := rows[id]
		if err := externalTarget(r, space, key); err != nil {
			return nil, err
		}
		current := r.ExternalProperties()
		next := requirement.ApplyExternal(current, changes)
		if slices.Equal(next, current) {
			return r, nil
		}
		if len(next) > requirement.MaxExternal {
			return nil, apperr.Invalidf("requirement %s/%s would have %d external properties: a requirement holds at most %d",
				r.SpaceKey, r.Key, len(next), requirement.MaxExternal)
		}
		n := r.Clone()
		n.SetExternalProperties(next)
		err = s.store.SetExternal(ctx, tenant, r, n)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, apperr.ErrConflict) {
			return nil, fmt.Errorf("set external properties of %s: %w", id, err)
		}
		if attempt == externalAttempts {
			return nil, apperr.Wrap(apperr.Conflictf("requirement %s/%s or its page kept changing (a save of the page in progress) "+
				"during %d attempts; send its external properties again", r.SpaceKey, r.Key, attempt), err)
		}
		if err := pause(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// checkExternalChanges applies the rules of page properties to the names
// and values of changes; an error names the property.
func checkExternalChanges(changes []requirement.ExternalChange) error {
	if len(changes) > 2*requirement.MaxExternal {
		return apperr.Invalidf("%d external properties in one request: send at most %d", len(changes), 2*requirement.MaxExternal)
	}
	seen := make(map[string]bool, len(changes))
	for _, c := range changes {
		if detail := requirement.CheckPropertyName(c.Name); detail != "" {
			if c.Name == "" {
				return apperr.Invalidf("%s", detail) // no name to put in errors
			}
			return apperr.InvalidField(c.Name, "%s", detail)
		}
		if c.Value != nil {
			if detail := requirement.CheckPropertyValue(*c.Value); detail != "" {
				return apperr.InvalidField(c.Name, "%s", detail)
			}
		}
		folded := requirement.FoldPropertyName(c.Name)
		if seen[folded] {
			return apperr.InvalidField(c.Name, "given twice (property names compare ignoring case)")
		}
		seen[folded] = true
	}
	return nil
}

// externalTarget answers not found unless r is an ACTIVE current row.
func externalTarget(r *requirement.Requirement, space, key string) error {
	switch {
	case r == nil || r.Status == "":
		return apperr.NotFoundf("requirement %s/%s not found", space, key)
	case r.Status == requirement.Moved:
		return apperr.NotFoundf("requirement %s/%s not found: it moved to %s/%s, whose external properties are its own",
			r.SpaceKey, r.Key, r.NewSpaceKey, r.NewKey)
	case r.Status != requirement.Active:
		return apperr.NotFoundf("requirement %s/%s not found: it is %s (no page defines it), and only ACTIVE requirements "+
			"have external properties", r.SpaceKey, r.Key, r.Status)
	}
	return nil
}

// pause waits before attempt n+1: from 25 ms, doubling, at most 800 ms,
// with jitter, so that the attempts span a page save of a few seconds.
func pause(ctx context.Context, n int) error {
	d := min(25*time.Millisecond<<min(n-1, 5), 800*time.Millisecond)
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
