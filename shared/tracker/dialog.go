package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/page"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Search is the link dialog's answer.
type Search struct {
	// Results is the answer to the tracker's caller: the wiki's search
	// answer rebuilt from its documented fields, each checked (see
	// dialogAnswer).
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
	if out.Results, err = s.dialogAnswer(res, q); err != nil {
		return Search{}, wikiFailed(err, fmt.Sprintf("the wiki of application link %s answered an unusable search result", applinkID))
	}
	return out, nil
}

// dialogAnswer rebuilds the wiki's search answer for the tracker's caller
// from the fields the wiki's API documents (shared/openapi/wiki.yaml,
// SearchResult and Requirement), each checked again: the wiki is another
// application, and what it answers reaches the tracker's users.
//
//   - The answer must be a JSON object with a "results" array (502
//     otherwise). offset and limit are the wiki's when they are numbers of
//     0 or more, else those asked; count is the number of results answered
//     (results dropped below are not counted). hasMore is the wiki's when
//     it is true or false; a wiki that does not say (one older than
//     hasMore) is taken to have more when its page was full.
//   - A result is dropped unless it is an object with a spaceKey and a key
//     the requirement package accepts and a baseline that is null, absent
//     or a positive integer.
//   - Every other documented field is kept when valid and dropped when not
//     (foundField): excerpts are sanitized, texts cleaned of control
//     characters, keys checked, links kept only when page.SafeLink says so;
//     list items that are not valid are dropped.
//   - Anything else (unknown members, members named in another case) is
//     not answered. Members are matched exactly; a member given twice is
//     read as Go reads it (the last), and only what was read is answered.
func (s *Service) dialogAnswer(raw json.RawMessage, asked WikiSearch) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, apperr.BadGatewayf("the answer is not a JSON object")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(top["results"], &items); err != nil || items == nil {
		return nil, apperr.BadGatewayf("the answer has no results array")
	}
	results := make([]map[string]any, 0, len(items))
	for _, item := range items {
		if r, ok := s.foundRequirement(item); ok {
			results = append(results, r)
		}
	}
	limit := count(top["limit"], asked.Limit)
	more := len(items) > 0 && len(items) >= limit
	if b, ok := top["hasMore"]; ok {
		var wiki *bool
		if json.Unmarshal(b, &wiki) == nil && wiki != nil {
			more = *wiki
		}
	}
	return marshalNoEscape(map[string]any{
		"results": results,
		"offset":  count(top["offset"], asked.Offset),
		"limit":   limit,
		"count":   len(results),
		"hasMore": more,
	})
}

// count reads a number of 0 or more, else answers def.
func count(raw json.RawMessage, def int) int {
	var n int
	if json.Unmarshal(raw, &n) != nil || n < 0 {
		return def
	}
	return n
}

// foundRequirement checks one result of the wiki's search; ok is false
// when it cannot be linked to (no valid identity).
func (s *Service) foundRequirement(raw json.RawMessage) (map[string]any, bool) {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil || in == nil {
		return nil, false
	}
	var space, key string
	if json.Unmarshal(in["spaceKey"], &space) != nil || !requirement.ValidSpaceKey(space) ||
		json.Unmarshal(in["key"], &key) != nil || !requirement.ValidKey(key) {
		return nil, false
	}
	var baseline *int
	if b, ok := in["baseline"]; ok && (json.Unmarshal(b, &baseline) != nil || baseline != nil && *baseline < 0) {
		return nil, false
	}
	if baseline != nil && *baseline == 0 {
		baseline = nil // 0 is the current version, as everywhere on the tracker
	}
	out := map[string]any{"spaceKey": space, "key": key, "baseline": baseline}
	for name, check := range foundFields {
		if v, ok := in[name]; ok {
			if clean, ok := check(s, v); ok {
				out[name] = clean
			}
		}
	}
	return out, true
}

// foundFields check the documented fields of a search result but its
// identity: each answers the value to pass on, or false to drop the field.
var foundFields = map[string]func(*Service, json.RawMessage) (any, bool){
	"status": func(_ *Service, raw json.RawMessage) (any, bool) {
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return nil, false
		}
		st, ok := requirement.ParseStatus(v)
		return st, ok
	},
	"text": func(_ *Service, raw json.RawMessage) (any, bool) { return foundText(raw, maxExcerpt) },
	"htmlExcerpt": func(s *Service, raw json.RawMessage) (any, bool) {
		var html string
		if json.Unmarshal(raw, &html) != nil {
			return nil, false
		}
		clean, err := s.sanitizeExcerpt(html)
		if err != nil {
			clean = "" // too large to show
		}
		return clean, true
	},
	"htmlNeedsUpdating": func(_ *Service, raw json.RawMessage) (any, bool) {
		var v bool
		return v, json.Unmarshal(raw, &v) == nil
	},
	"properties": func(_ *Service, raw json.RawMessage) (any, bool) {
		return foundList(raw, func(in map[string]json.RawMessage) (any, bool) {
			k, okK := foundText(in["key"], maxName)
			v, okV := foundText(in["value"], maxExcerpt)
			out := map[string]string{"key": k, "value": v}
			// The wiki says where a property comes from: the page
			// (INLINE) or its external properties API (EXTERNAL).
			var typ string
			if json.Unmarshal(in["type"], &typ) == nil && (typ == "INLINE" || typ == "EXTERNAL") {
				out["type"] = typ
			}
			return out, okK && okV
		})
	},
	"origin": func(_ *Service, raw json.RawMessage) (any, bool) {
		if string(raw) == "null" {
			return nil, true
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(raw, &in) != nil || in == nil {
			return nil, false
		}
		return foundPage(in)
	},
	"dependencies":        func(_ *Service, raw json.RawMessage) (any, bool) { return foundList(raw, foundDependency) },
	"reverseDependencies": func(_ *Service, raw json.RawMessage) (any, bool) { return foundList(raw, foundDependency) },
	"issues": func(_ *Service, raw json.RawMessage) (any, bool) {
		return foundList(raw, func(in map[string]json.RawMessage) (any, bool) {
			var issue, origin string
			var serviceID *string
			rel, ok := foundText(in["relationship"], maxName)
			if !ok || json.Unmarshal(in["issueKey"], &issue) != nil || ValidateIssueKey(issue) != nil {
				return nil, false
			}
			if sid, ok := in["serviceId"]; ok && (json.Unmarshal(sid, &serviceID) != nil || serviceID != nil && validateName("serviceId", *serviceID) != nil) {
				return nil, false
			}
			out := map[string]any{"serviceId": serviceID, "issueKey": issue, "relationship": rel}
			if json.Unmarshal(in["origin"], &origin) == nil && (origin == string(requirement.OriginPage) || origin == string(requirement.OriginTracker)) {
				out["origin"] = origin
			}
			return out, true
		})
	},
	"genericUrl": func(_ *Service, raw json.RawMessage) (any, bool) {
		var u string
		return u, json.Unmarshal(raw, &u) == nil && page.SafeLink(u)
	},
	"newSpaceKey": func(_ *Service, raw json.RawMessage) (any, bool) {
		var v string
		return v, json.Unmarshal(raw, &v) == nil && requirement.ValidSpaceKey(v)
	},
	"newKey": func(_ *Service, raw json.RawMessage) (any, bool) {
		var v string
		return v, json.Unmarshal(raw, &v) == nil && requirement.ValidKey(v)
	},
	"references": func(_ *Service, raw json.RawMessage) (any, bool) { return foundList(raw, foundPage) },
}

// foundList checks a list: not a list drops the field, an item that is
// not an object or that item refuses is dropped.
func foundList(raw json.RawMessage, item func(map[string]json.RawMessage) (any, bool)) (any, bool) {
	var in []json.RawMessage
	if json.Unmarshal(raw, &in) != nil || in == nil {
		return nil, false
	}
	out := make([]any, 0, len(in))
	for _, it := range in {
		var fields map[string]json.RawMessage
		if json.Unmarshal(it, &fields) != nil || fields == nil {
			continue
		}
		if v, ok := item(fields); ok {
			out = append(out, v)
		}
	}
	return out, true
}

func foundDependency(in map[string]json.RawMessage) (any, bool) {
	var space, key string
	rel, ok := foundText(in["relationship"], maxName)
	if !ok || json.Unmarshal(in["spaceKey"], &space) != nil || !requirement.ValidSpaceKey(space) ||
		json.Unmarshal(in["key"], &key) != nil || !requirement.ValidKey(key) {
		return nil, false
	}
	return map[string]string{"spaceKey": space, "key": key, "relationship": rel}, true
}

func foundPage(in map[string]json.RawMessage) (any, bool) {
	var id string
	title, ok := foundText(in["title"], maxName)
	if !ok || json.Unmarshal(in["pageId"], &id) != nil || validateName("pageId", id) != nil {
		return nil, false
	}
	return map[string]string{"pageId": id, "title": title}, true
}

// foundText reads a plain-text string of at most max bytes: invalid UTF-8
// and control characters but tab and newline are removed. Absent is empty.
func foundText(raw json.RawMessage, max int) (string, bool) {
	var s string
	if raw != nil && json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	s = strings.Map(func(r rune) rune {
		if r != '\t' && r != '\n' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	return s, len(s) <= max
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
