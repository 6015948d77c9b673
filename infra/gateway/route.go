package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// methods are the route methods HTTP APIs accept; ANY matches every method.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "ANY"}

type segmentKind int

// Kinds in order of specificity: a literal beats a variable, which beats a
// greedy variable.
const (
	literal segmentKind = iota
	variable
	greedy
)

type segment struct {
	kind segmentKind
	text string // the literal as written, or the variable's name
	lit  string // the literal, decoded
}

// route is a validated Route.
type route struct {
	Route
	key     string // route key: "GET /pets/{id}"
	shape   string // key with variable names erased, to find conflicts
	segs    []segment
	timeout time.Duration
}

// parsePath parses a route path: "/", or "/"-separated non-empty segments,
// each a literal, a {variable}, or, last only, a greedy {variable+}.
func parsePath(path string) ([]segment, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, errors.New("path must start with /")
	}
	if path == "/" {
		return nil, nil
	}
	parts := strings.Split(path[1:], "/")
	segs := make([]segment, 0, len(parts))
	names := map[string]bool{}
	for i, part := range parts {
		switch {
		case part == "":
			return nil, errors.New("empty path segment")
		case strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}"):
			name := part[1 : len(part)-1]
			kind := variable
			if n, ok := strings.CutSuffix(name, "+"); ok {
				if i != len(parts)-1 {
					return nil, fmt.Errorf("greedy variable %s must be the last segment", part)
				}
				name, kind = n, greedy
			}
			if !validName(name) {
				return nil, fmt.Errorf("bad variable name in %s", part)
			}
			if names[name] {
				return nil, fmt.Errorf("variable %s used twice", name)
			}
			names[name] = true
			segs = append(segs, segment{kind: kind, text: name})
		case strings.ContainsAny(part, "{}"):
			return nil, fmt.Errorf("segment %q mixes text and a variable", part)
		default:
			lit, err := url.PathUnescape(part)
			if err != nil {
				return nil, fmt.Errorf("segment %q: %w", part, err)
			}
			segs = append(segs, segment{kind: literal, text: part, lit: lit})
		}
	}
	return segs, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// shapeOf writes segs with variable names erased: two routes of one method
// and one shape would match the same requests, which API Gateway refuses.
func shapeOf(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		switch s.kind {
		case literal:
			b.WriteString(s.text)
		case variable:
			b.WriteString("{}")
		case greedy:
			b.WriteString("{+}")
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// match reports whether the decoded request path segments match rt and
// returns the path parameters.
func (rt *route) match(parts []string) (map[string]string, bool) {
	var params map[string]string
	set := func(k, v string) {
		if params == nil {
			params = make(map[string]string, len(rt.segs))
		}
		params[k] = v
	}
	for i, s := range rt.segs {
		if s.kind == greedy {
			rest := strings.Join(parts[min(i, len(parts)):], "/")
			if rest == "" {
				return nil, false
			}
			set(s.text, rest)
			return params, true
		}
		if i >= len(parts) {
			return nil, false
		}
		switch s.kind {
		case literal:
			if parts[i] != s.lit {
				return nil, false
			}
		case variable:
			if parts[i] == "" {
				return nil, false
			}
			set(s.text, parts[i])
		}
	}
	return params, len(parts) == len(rt.segs)
}

// moreSpecific reports whether a should win over b when both match a
// request: the first segment where their kinds differ decides (literal over
// variable over greedy), then a method beats ANY.
func moreSpecific(a, b *route) bool {
	for i := range min(len(a.segs), len(b.segs)) {
		if a.segs[i].kind != b.segs[i].kind {
			return a.segs[i].kind < b.segs[i].kind
		}
	}
	return a.Method != "ANY" && b.Method == "ANY"
}

// splitRequestPath splits an escaped request path into decoded segments; a
// %2F stays inside its segment.
func splitRequestPath(escaped string) ([]string, bool) {
	p, ok := strings.CutPrefix(escaped, "/")
	if !ok {
		return nil, false
	}
	if p == "" {
		return nil, true
	}
	parts := strings.Split(p, "/")
	for i, part := range parts {
		d, err := url.PathUnescape(part)
		if err != nil {
			return nil, false
		}
		parts[i] = d
	}
	return parts, true
}
