package samtemplate

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxDepth bounds nesting so that a hostile or broken document (for
// example an alias that refers to its own ancestor) cannot recurse forever.
const maxDepth = 64

// maxNodes bounds the nodes visited while expanding aliases, so that a
// "billion laughs" document fails instead of exhausting memory.
const maxNodes = 1 << 20

// shortTags maps CloudFormation short-form intrinsic tags to the key of
// their long form, so that "!Ref X" and "Ref: X" parse to the same value.
var shortTags = map[string]string{
	"!Ref":          "Ref",
	"!Condition":    "Condition",
	"!GetAtt":       "Fn::GetAtt",
	"!Sub":          "Fn::Sub",
	"!If":           "Fn::If",
	"!Not":          "Fn::Not",
	"!Equals":       "Fn::Equals",
	"!And":          "Fn::And",
	"!Or":           "Fn::Or",
	"!Join":         "Fn::Join",
	"!Select":       "Fn::Select",
	"!Split":        "Fn::Split",
	"!FindInMap":    "Fn::FindInMap",
	"!Base64":       "Fn::Base64",
	"!Cidr":         "Fn::Cidr",
	"!GetAZs":       "Fn::GetAZs",
	"!ImportValue":  "Fn::ImportValue",
	"!Transform":    "Fn::Transform",
	"!Length":       "Fn::Length",
	"!ToJsonString": "Fn::ToJsonString",
}

// toValue converts a YAML node into plain Go values: map[string]any,
// []any, string, int, float64, bool and nil. Intrinsic functions become
// single-key maps in their long form ({"Ref": "X"}, {"Fn::GetAtt": [A, B]}).
func toValue(n *yaml.Node) (any, error) {
	return (&converter{}).value(n, 0)
}

// converter counts the nodes it visits; see maxNodes.
type converter struct{ nodes int }

func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	c.nodes++
	if c.nodes > maxNodes {
		return nil, fmt.Errorf("line %d: more than %d nodes after alias expansion", n.Line, maxNodes)
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nesting deeper than %d", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: alias without anchor", n.Line)
		}
		return c.value(n.Alias, depth+1)
	}

	if fn, ok := shortTags[n.Tag]; ok {
		inner, err := c.intrinsicArg(n, fn, depth)
		if err != nil {
			return nil, err
		}
		return map[string]any{fn: inner}, nil
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return nil, fmt.Errorf("line %d: unsupported tag %s", n.Line, n.Tag)
	}

	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping key is not a scalar", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			val, err := c.value(v, depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			val, err := c.value(item, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

// intrinsicArg converts the argument of a short-form intrinsic. Scalar
// arguments stay strings whatever they look like ("!Ref 5" names a
// resource, it is not a number); "!GetAtt A.B" becomes [A, B] as in the
// long form.
func (c *converter) intrinsicArg(n *yaml.Node, fn string, depth int) (any, error) {
	if n.Kind == yaml.ScalarNode {
		if fn == "Fn::GetAtt" {
			res, attr, ok := strings.Cut(n.Value, ".")
			if !ok {
				return nil, fmt.Errorf("line %d: !GetAtt %q is not Resource.Attribute", n.Line, n.Value)
			}
			return []any{res, attr}, nil
		}
		return n.Value, nil
	}
	untagged := *n
	untagged.Tag = ""
	return c.value(&untagged, depth+1)
}
