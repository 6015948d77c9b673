package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// Search is the link dialog's answer.
type Search struct {
	// Results is the wiki's search answer, passed on as it came.
	Results json.RawMessage
	// Version is the applink's API version after negotiation.
	Version int
	// NegotiationErr is why the version could not be negotiated, if so. The
	// search does not fail for it: the caller logs it.
	NegotiationErr error
}

// SearchRequirements is the link dialog (the tracker API (docs/tracker.md)): a tracker user
// searches the requirements of applink applinkID's wiki. Before searching it
// negotiates the API version (spec §3, §9): it reads the wiki's current and
// highest version, and when the highest version both sides support is
// above the version of either side, it sets the wiki's integration to it and
// the applink to the version the wiki accepted. Negotiation never
// downgrades, and a wiki without the version endpoint (404) is simply not
// upgraded.
func (s *Service) SearchRequirements(ctx context.Context, tenant, applinkID string, q WikiSearch) (Search, error) {
	a, err := s.Applink(ctx, tenant, applinkID)
	if err != nil {
		return Search{}, err
	}
	if a.Mode == Disabled {
		return Search{}, apperr.Conflictf("application link %s is DISABLED", applinkID)
	}
	if a.WikiToken == "" {
		return Search{}, apperr.Conflictf("application link %s has no wiki token: a tracker admin must PUT /rest/reqs/1/api/%s with \"token\"", a.ID, a.ID)
	}
	if q.SpaceKey != "" {
		if err := validateName("spaceKey", q.SpaceKey); err != nil {
			return Search{}, err
		}
	}
	out := Search{Version: a.Version}
	if v, err := s.negotiate(ctx, tenant, a); err != nil {
		out.NegotiationErr = err
	} else {
		out.Version = v
	}
	res, err := s.wiki.Search(ctx, a.Wiki(), q)
	if err != nil {
		if apperr.CodeOf(err) == apperr.Invalid {
			return Search{}, err // the user's query, refused by the wiki's parser
		}
		if isNotFound(err) {
			return Search{}, wikiFailed(err, fmt.Sprintf("the wiki of application link %s has no requirement search at %s", applinkID, a.URL))
		}
		return Search{}, wikiFailed(err, fmt.Sprintf("cannot search the wiki of application link %s", applinkID))
	}
	if out.Results, err = s.sanitizeResults(res); err != nil {
		return Search{}, wikiFailed(err, fmt.Sprintf("the wiki of application link %s answered an unusable search result", applinkID))
	}
	return out, nil
}

// sanitizeResults passes the wiki's search answer on with every result's
// excerpt sanitized like every excerpt the tracker stores: the wiki's HTML
// reaches the tracker's users. The answer is always re-encoded from what
// was parsed, so that no other reader of it can see what this one did not
// (a member given twice, of which Go keeps the last); a member named
// htmlExcerpt in any case is sanitized (and one that is not a string
// dropped). An answer that is not an object with a results array is
// refused.
func (s *Service) sanitizeResults(raw json.RawMessage) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, apperr.BadGatewayf("the answer is not a JSON object")
	}
	var results []map[string]json.RawMessage
	if r, ok := top["results"]; ok {
		if err := json.Unmarshal(r, &results); err != nil {
			return nil, apperr.BadGatewayf("results is not an array of objects")
		}
	}
	for _, r := range results {
		for name, v := range r {
			if !strings.EqualFold(name, "htmlExcerpt") {
				continue
			}
			var html string
			if err := json.Unmarshal(v, &html); err != nil {
				delete(r, name) // not a string: nothing to show
				continue
			}
			clean, err := s.sanitizeExcerpt(html)
			if err != nil {
				clean = "" // too large to show
			}
			if r[name], err = marshalNoEscape(clean); err != nil {
				return nil, err
			}
		}
	}
	for name := range top {
		if name != "results" && strings.EqualFold(name, "results") {
			delete(top, name) // only the member this reader used goes on
		}
	}
	if _, ok := top["results"]; ok {
		var err error
		if top["results"], err = marshalNoEscape(results); err != nil {
			return nil, err
		}
	}
	return marshalNoEscape(top)
}

// marshalNoEscape encodes v as JSON without escaping <, > and &.
func marshalNoEscape(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode the search answer: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// negotiate upgrades the API version of a and its wiki integration to the
// highest version both support, and returns the applink's version.
func (s *Service) negotiate(ctx context.Context, tenant string, a Applink) (int, error) {
	wv, err := s.wiki.Version(ctx, a.Wiki(), a.ServiceID)
	if isNotFound(err) {
		return a.Version, nil // a wiki without the endpoint, or not knowing us: nothing to negotiate
	}
	if err != nil {
		return a.Version, fmt.Errorf("read the wiki's API version: %w", err)
	}
	target := min(MaxVersion, wv.Max)
	if target <= a.Version && target <= wv.Version {
		return a.Version, nil
	}
	accepted := wv.Version
	if target > wv.Version {
		if accepted, err = s.wiki.SetVersion(ctx, a.Wiki(), a.ServiceID, target); err != nil {
			return a.Version, fmt.Errorf("set the wiki's API version to %d: %w", target, err)
		}
	}
	accepted = min(accepted, MaxVersion)
	if accepted <= a.Version {
		return a.Version, nil
	}
	up, err := s.update(ctx, tenant, a.ID, func(l *Applink) {
		if accepted > l.Version {
			l.Version = accepted
		}
	})
	if err != nil {
		return a.Version, fmt.Errorf("set the applink's API version to %d: %w", accepted, err)
	}
	return up.Version, nil
}
