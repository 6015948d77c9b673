package page

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/requirement"
	"golang.org/x/net/html"
)

// macroKind tells the macros the parser reads apart.
type macroKind int

const (
	definitionMacro macroKind = iota + 1 // requirement, type DEFINITION
	linkMacro                            // requirement, type LINK
	issueMacro                           // jira with a key
	propertyMacro                        // requirement-property (a column header option)
	statusMacro                          // status lozenge, rendered as its title
)

// macro is what the parser needs from one ac:structured-macro.
type macro struct {
	kind     macroKind
	key      string // requirement key, issue key, or status title
	spaceKey string // LINK: the target's space, "" for the page's space
	serverID string // jira: the integration serviceId, "" when absent
	title    bool   // requirement-property title=true
	ignore   bool   // requirement-property ignore=true
	offset   int    // where the macro starts in the body
}

// issueKeyPattern is the shape of a Jira issue key: project key, '-', number.
var issueKeyPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*-[0-9]+$`)

// maxQuoted bounds how much of a faulty value an error message repeats.
const maxQuoted = 64

// readMacros reads and checks every macro of the page, including those in
// places the parser later skips, so that a faulty macro is never silently
// ignored. Macros the parser has no use for are left out of the map.
func readMacros(t *tree) (map[*html.Node]*macro, error) {
	macros := make(map[*html.Node]*macro)
	for _, mn := range t.macros {
		m, err := readMacro(mn.node)
		if err != nil {
			return nil, invalidAt(t.body, mn.offset, "%s", err)
		}
		if m != nil {
			m.offset = mn.offset
			macros[mn.node] = m
		}
	}
	return macros, nil
}

// readMacro reads one macro; nil, nil for a macro the parser ignores.
func readMacro(n *html.Node) (*macro, error) {
	name := strings.ToLower(strings.TrimSpace(attr(n, "ac:name")))
	params := parameters(n)
	switch name {
	case "requirement":
		return readRequirement(params)
	case "jira":
		return readIssue(params)
	case "requirement-property":
		return &macro{
			kind:   propertyMacro,
			title:  strings.EqualFold(params["title"], "true"),
			ignore: strings.EqualFold(params["ignore"], "true"),
		}, nil
	case "status":
		return &macro{kind: statusMacro, key: params["title"]}, nil
	}
	return nil, nil
}

// readRequirement reads a requirement macro: a definition or a link.
func readRequirement(params map[string]string) (*macro, error) {
	m := &macro{key: params["key"]}
	switch t := strings.ToUpper(params["type"]); t {
	case "", "DEFINITION":
		m.kind = definitionMacro
	case "LINK":
		m.kind = linkMacro
		m.spaceKey = params["spacekey"]
	default:
		return nil, fmt.Errorf("requirement macro with unknown type %q (want DEFINITION or LINK)", clip(t))
	}
	if m.key == "" {
		return nil, errors.New("requirement macro without a key parameter")
	}
	if !requirement.ValidKey(m.key) {
		return nil, fmt.Errorf("invalid requirement key %q: use 1 to 255 letters, digits, '_', '-' or '.'", clip(m.key))
	}
	if m.spaceKey != "" && !requirement.ValidSpaceKey(m.spaceKey) {
		return nil, fmt.Errorf("invalid space key %q in the link to %q: use 1 to 255 letters, digits or '_'",
			clip(m.spaceKey), m.key)
	}
	return m, nil
}

// readIssue reads a jira macro. One without a key (a JQL query or a filter
// shown as a table) links nothing and is ignored.
func readIssue(params map[string]string) (*macro, error) {
	key := params["key"]
	if key == "" {
		return nil, nil
	}
	if len(key) > 255 || !issueKeyPattern.MatchString(key) {
		return nil, fmt.Errorf("invalid issue key %q in a jira macro: want PROJECT-123", clip(key))
	}
	return &macro{kind: issueMacro, key: key, serverID: params["serverid"]}, nil
}

// parameters returns the macro's own parameters (not those of nested
// macros): lower-cased names, trimmed text values; the first of a name wins.
func parameters(n *html.Node) map[string]string {
	params := make(map[string]string, 4)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || c.Data != "ac:parameter" {
			continue
		}
		name := strings.ToLower(strings.TrimSpace(attr(c, "ac:name")))
		if _, ok := params[name]; !ok {
			params[name] = strings.TrimSpace(textContent(c))
		}
	}
	return params
}

// textContent concatenates the text below n.
func textContent(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(textContent(c))
	}
	return b.String()
}

// attr returns the value of n's attribute key ("" when absent).
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// clip shortens a value quoted in an error message.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
