package samtemplate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// evaluator computes the local value of template values: literals,
// parameters (their defaults), conditions, !If, !Sub and !Join. Refs to
// resources go to resource; anything else (GetAtt, pseudo parameters,
// imports) has no local value.
type evaluator struct {
	t        *Template
	resource func(logicalID string) (string, bool)
	// conds memoises conditions (shared DAGs stay linear) and marks those
	// being evaluated (a cycle has no value).
	conds map[string]condState
}

type condState int

const (
	condEvaluating condState = iota + 1
	condTrue
	condFalse
	condUnknown
)

func newEvaluator(t *Template, resource func(string) (string, bool)) evaluator {
	return evaluator{t: t, resource: resource, conds: map[string]condState{}}
}

// value returns v as a string and whether it could be resolved locally.
func (e evaluator) value(v any, depth int) (string, bool) {
	if depth > maxDepth {
		return "", false
	}
	if m, ok := v.(map[string]any); ok {
		if len(m) != 1 {
			return "", false
		}
		for fn, arg := range m {
			return e.intrinsic(fn, arg, depth+1)
		}
	}
	return scalarString(v)
}

func (e evaluator) intrinsic(fn string, arg any, depth int) (string, bool) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			return "", false
		}
		return e.ref(name)
	case "Fn::If":
		args, ok := fixedArgs(arg, 3)
		if !ok {
			return "", false
		}
		name, ok := args[0].(string)
		if !ok {
			return "", false
		}
		cond, ok := e.condition(name, depth+1)
		if !ok {
			return "", false
		}
		if cond {
			return e.value(args[1], depth+1)
		}
		return e.value(args[2], depth+1)
	case "Fn::Join":
		args, ok := fixedArgs(arg, 2)
		if !ok {
			return "", false
		}
		sep, ok := args[0].(string)
		items, ok2 := args[1].([]any)
		if !ok || !ok2 {
			return "", false
		}
		parts := make([]string, 0, len(items))
		for _, it := range items {
			s, ok := e.value(it, depth+1)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, sep), true
	case "Fn::Sub":
		return e.sub(arg, depth+1)
	}
	return "", false
}

// fixedArgs returns arg as the argument list of an intrinsic that takes
// exactly n arguments.
func fixedArgs(arg any, n int) ([]any, bool) {
	args, ok := arg.([]any)
	return args, ok && len(args) == n
}

// ref resolves !Ref name: a parameter gives its default, a table, queue
// or bucket asks e.resource, everything else (other resources, AWS::Region,
// AWS::NoValue) has no local value.
func (e evaluator) ref(name string) (string, bool) {
	if p, ok := e.t.params[name]; ok {
		return p.Default, p.HasDefault
	}
	if e.resource == nil {
		return "", false
	}
	if _, ok := e.t.Table(name); ok {
		return e.resource(name)
	}
	if _, ok := e.t.Queue(name); ok {
		return e.resource(name)
	}
	if slices.ContainsFunc(e.t.Buckets, func(b Bucket) bool { return b.LogicalID == name }) {
		return e.resource(name)
	}
	return "", false
}

// sub expands Fn::Sub: "${Name}" is a Ref, "${!Literal}" stays literal,
// "${A.B}" (GetAtt) has no local value.
func (e evaluator) sub(arg any, depth int) (string, bool) {
	var (
		format string
		vars   map[string]any
	)
	switch x := arg.(type) {
	case string:
		format = x
	case []any:
		if len(x) != 2 {
			return "", false
		}
		s, ok := x[0].(string)
		m, ok2 := x[1].(map[string]any)
		if !ok || !ok2 {
			return "", false
		}
		format, vars = s, m
	default:
		return "", false
	}
	var b strings.Builder
	for {
		i := strings.Index(format, "${")
		if i < 0 {
			b.WriteString(format)
			return b.String(), true
		}
		b.WriteString(format[:i])
		rest := format[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return "", false
		}
		name := rest[:j]
		format = rest[j+1:]
		if strings.HasPrefix(name, "!") {
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		var (
			s  string
			ok bool
		)
		if v, found := vars[name]; found {
			s, ok = e.value(v, depth+1)
		} else if !strings.Contains(name, ".") {
			s, ok = e.ref(name)
		}
		if !ok {
			return "", false
		}
		b.WriteString(s)
	}
}

// condition evaluates the named condition with parameter defaults.
func (e evaluator) condition(name string, depth int) (bool, bool) {
	switch e.conds[name] {
	case condEvaluating, condUnknown:
		return false, false
	case condTrue:
		return true, true
	case condFalse:
		return false, true
	}
	v, ok := e.t.conditions[name]
	if !ok {
		return false, false
	}
	e.conds[name] = condEvaluating
	b, ok := e.boolean(v, depth+1)
	switch {
	case !ok:
		e.conds[name] = condUnknown
	case b:
		e.conds[name] = condTrue
	default:
		e.conds[name] = condFalse
	}
	return b, ok
}

func (e evaluator) boolean(v any, depth int) (bool, bool) {
	if depth > maxDepth {
		return false, false
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false, false
	}
	for fn, arg := range m {
		if fn == "Condition" {
			name, ok := arg.(string)
			if !ok {
				return false, false
			}
			return e.condition(name, depth+1)
		}
		args, ok := arg.([]any)
		if !ok {
			return false, false
		}
		switch fn {
		case "Fn::Equals":
			if len(args) != 2 {
				return false, false
			}
			a, ok := e.value(args[0], depth+1)
			b, ok2 := e.value(args[1], depth+1)
			return a == b, ok && ok2
		case "Fn::Not":
			if len(args) != 1 {
				return false, false
			}
			b, ok := e.boolean(args[0], depth+1)
			return !b, ok
		case "Fn::And", "Fn::Or":
			if len(args) == 0 {
				return false, false
			}
			and := fn == "Fn::And"
			result := and
			for _, a := range args {
				b, ok := e.boolean(a, depth+1)
				if !ok {
					return false, false
				}
				if and {
					result = result && b
				} else {
					result = result || b
				}
			}
			return result, true
		}
	}
	return false, false
}

// str evaluates v with parameters only; it is for properties such as
// VisibilityTimeout that must be known to create a resource.
func (t *Template) str(v any) (string, error) {
	s, ok := newEvaluator(t, nil).value(v, 0)
	if !ok {
		return "", fmt.Errorf("%v cannot be resolved locally", v)
	}
	return s, nil
}

func (t *Template) integer(v any) (int, error) {
	s, err := t.str(v)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

// seconds reads a number of seconds, as Timeout and VisibilityTimeout are.
func (t *Template) seconds(v any) (time.Duration, error) {
	n, err := t.integer(v)
	return time.Duration(n) * time.Second, err
}

func (t *Template) boolean(v any) (bool, error) {
	s, err := t.str(v)
	if err != nil {
		return false, err
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean", s)
	}
	return b, nil
}
