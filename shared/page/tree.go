package page

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// maxDepth bounds element nesting. Real pages stay far below it (a table in
// a layout cell in an expand macro is about 15 levels); the bound keeps the
// recursive walks of hostile input shallow.
const maxDepth = 256

// voidElements never have content, so "<br>" needs no "</br>" (which is
// accepted too, as XHTML writes "<br></br>").
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "param": true, "source": true, "track": true, "wbr": true,
}

// rawTextElements are read by the tokenizer as raw text up to their end tag,
// even when written self-closing, so they always need one.
var rawTextElements = map[string]bool{
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
}

// tree is a page body as a node tree, built with XML nesting rules.
type tree struct {
	root *html.Node
	body string
	// macros are the ac:structured-macro elements, in page order.
	macros []macroNode
}

// macroNode is a macro element and its offset in the body.
type macroNode struct {
	node   *html.Node
	offset int
}

// openElement is an element waiting for its end tag.
type openElement struct {
	node   *html.Node
	offset int
}

// parseTree checks that body is well-formed enough to index and builds its
// tree. It uses the HTML tokenizer (which knows HTML entities and tolerates
// the HTML habits of hand-written pages) but nests elements as XML does:
// every element other than a void one is closed by its own end tag, in order.
// The HTML tree builder is not used on purpose: it would silently repair
// broken markup (and move content out of tables), and it ignores "/>" on
// non-void elements, which storage format uses everywhere (<ri:page .../>).
func parseTree(body string) (*tree, error) {
	if !utf8.ValidString(body) {
		return nil, invalidAt(body, firstInvalidUTF8(body), "storage format is not valid UTF-8")
	}
	if i := strings.IndexByte(body, 0); i >= 0 {
		return nil, invalidAt(body, i, "storage format contains a NUL byte")
	}
	t := &tree{root: &html.Node{Type: html.DocumentNode}, body: body}
	open := []openElement{{node: t.root}}
	z := html.NewTokenizer(strings.NewReader(body))
	z.AllowCDATA(true)
	offset := 0
	for {
		tt := z.Next()
		raw := z.Raw()
		start := offset
		offset += len(raw)
		var err error
		switch tt {
		case html.ErrorToken:
			return t.finish(z.Err(), open, start, len(raw))
		case html.TextToken:
			err = t.text(z, raw, open[len(open)-1].node, start)
		case html.CommentToken:
			err = t.comment(raw, start)
		case html.StartTagToken, html.SelfClosingTagToken:
			open, err = t.start(z.Token(), tt == html.SelfClosingTagToken, open, start)
		case html.EndTagToken:
			open, err = t.end(z.Token().Data, open, start)
		}
		if err != nil {
			return nil, err
		}
	}
}

// finish checks the end of the body.
func (t *tree) finish(err error, open []openElement, offset, rest int) (*tree, error) {
	if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("tokenize storage format: %w", err)
	}
	if rest > 0 {
		return nil, invalidAt(t.body, offset, "malformed storage format: unterminated tag at the end")
	}
	if len(open) > 1 {
		e := open[len(open)-1]
		return nil, invalidAt(t.body, e.offset, "malformed storage format: <%s> is never closed", e.node.Data)
	}
	return t, nil
}

// text adds a text node. CDATA sections keep their content as written; the
// tokenizer would decode entities in them.
func (t *tree) text(z *html.Tokenizer, raw []byte, parent *html.Node, offset int) error {
	var data string
	if s, ok := strings.CutPrefix(string(raw), "<![CDATA["); ok {
		content, closed := strings.CutSuffix(s, "]]>")
		if !closed {
			return invalidAt(t.body, offset, "malformed storage format: unterminated CDATA section")
		}
		data = content
	} else {
		data = string(z.Text())
	}
	parent.AppendChild(&html.Node{Type: html.TextNode, Data: data})
	return nil
}

// comment checks that a comment is terminated; comments are dropped.
func (t *tree) comment(raw []byte, offset int) error {
	s := string(raw)
	if strings.HasPrefix(s, "<!--") && (len(s) < len("<!---->") || !strings.HasSuffix(s, "-->")) {
		return invalidAt(t.body, offset, "malformed storage format: unterminated comment")
	}
	return nil
}

// start adds an element and opens it unless it is void or self-closing.
func (t *tree) start(tok html.Token, selfClosing bool, open []openElement, offset int) ([]openElement, error) {
	n := &html.Node{Type: html.ElementNode, Data: tok.Data, DataAtom: tok.DataAtom, Attr: tok.Attr}
	open[len(open)-1].node.AppendChild(n)
	if n.Data == "ac:structured-macro" {
		t.macros = append(t.macros, macroNode{node: n, offset: offset})
	}
	if voidElements[n.Data] || selfClosing && !rawTextElements[n.Data] {
		return open, nil
	}
	if len(open) > maxDepth {
		return nil, invalidAt(t.body, offset, "malformed storage format: elements nested deeper than %d levels", maxDepth)
	}
	return append(open, openElement{node: n, offset: offset}), nil
}

// end closes the innermost open element, which must be name.
func (t *tree) end(name string, open []openElement, offset int) ([]openElement, error) {
	if voidElements[name] {
		return open, nil
	}
	if len(open) == 1 {
		return nil, invalidAt(t.body, offset, "malformed storage format: </%s> closes no element", name)
	}
	top := open[len(open)-1]
	if top.node.Data != name {
		return nil, invalidAt(t.body, offset, "malformed storage format: </%s> closes <%s> opened at line %d",
			name, top.node.Data, 1+strings.Count(t.body[:top.offset], "\n"))
	}
	return open[:len(open)-1], nil
}

// firstInvalidUTF8 returns the offset of the first invalid byte of s.
func firstInvalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return len(s)
}
