package page

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// kind is how an element renders in an excerpt or a text.
type kind int

const (
	transparent     kind = iota // its content only
	skipped                     // nothing
	block                       // its content on its own line: no block layout in excerpts
	inline                      // its content in a kept tag (b, em, a href...)
	lineBreak                   // a line break
	image                       // <img src>
	confluenceImage             // <ac:image> with an <ri:url>: an <img src>
	confluenceLink              // <ac:link>: its link body, or the name of its target
)

// kinds classifies the elements that do not render as transparent. Elements
// whose content is code, styling, media or form controls are skipped whole;
// macro parameters are settings, not content.
var kinds = map[string]kind{
	"b": inline, "strong": inline, "i": inline, "em": inline, "u": inline, "code": inline,
	"sub": inline, "sup": inline, "span": inline, "a": inline,

	"br": lineBreak, "img": image, "ac:image": confluenceImage, "ac:link": confluenceLink,

	"p": block, "div": block, "table": block, "thead": block, "tbody": block, "tfoot": block,
	"tr": block, "td": block, "th": block, "caption": block, "ul": block, "ol": block, "li": block,
	"dl": block, "dt": block, "dd": block, "h1": block, "h2": block, "h3": block, "h4": block,
	"h5": block, "h6": block, "blockquote": block, "pre": block, "hr": block, "section": block,
	"article": block, "header": block, "footer": block, "aside": block, "nav": block,
	"figure": block, "figcaption": block, "address": block, "details": block, "summary": block,
	"body": block, "html": block,
	"ac:rich-text-body": block, "ac:plain-text-body": block, "ac:layout": block,
	"ac:layout-section": block, "ac:layout-cell": block, "ac:task-list": block, "ac:task": block,
	"ac:task-body": block,

	"script": skipped, "style": skipped, "template": skipped, "iframe": skipped, "object": skipped,
	"embed": skipped, "svg": skipped, "math": skipped, "canvas": skipped, "audio": skipped,
	"video": skipped, "noscript": skipped, "noembed": skipped, "noframes": skipped,
	"frameset": skipped, "frame": skipped, "select": skipped, "textarea": skipped, "button": skipped,
	"input": skipped, "head": skipped, "title": skipped, "meta": skipped, "link": skipped,
	"base": skipped, "xmp": skipped, "plaintext": skipped, "colgroup": skipped, "col": skipped,
	"ac:parameter": skipped, "ac:placeholder": skipped, "ac:emoticon": skipped,
	"ac:task-id": skipped, "ac:task-status": skipped, "ac:task-uuid": skipped,
}

// kindOf classifies an element. Resource identifiers (ri:page, ri:user...)
// name things and hold no text.
func kindOf(n *html.Node) kind {
	if k, ok := kinds[n.Data]; ok {
		return k
	}
	if strings.HasPrefix(n.Data, "ri:") {
		return skipped
	}
	return transparent
}

// blockOf returns the paragraph around n: its nearest block ancestor, or the
// root of the tree.
func blockOf(n *html.Node) *html.Node {
	a := n.Parent
	for a.Parent != nil && kindOf(a) != block {
		a = a.Parent
	}
	return a
}

// startTag returns the tag that opens inline element n in an excerpt, or ""
// when only its content is kept (a link without a target). Attributes other
// than a link's href are dropped, and so is a link SafeLink refuses; the
// sanitizer then checks the URL again.
func startTag(n *html.Node) string {
	if n.Data != "a" {
		return "<" + n.Data + ">"
	}
	href := strings.TrimSpace(attr(n, "href"))
	if href == "" || !SafeLink(href) {
		return "" // the text stays, the link goes
	}
	return `<a href="` + html.EscapeString(href) + `">`
}

// imageSource returns the URL of an <img> or an <ac:image> when SafeLink
// accepts it; an attachment has no URL an excerpt could use.
func imageSource(n *html.Node) string {
	src := ""
	if n.Data == "img" {
		src = strings.TrimSpace(attr(n, "src"))
	}
	for c := n.FirstChild; c != nil && n.Data != "img"; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "ri:url" {
			src = strings.TrimSpace(attr(c, "ri:value"))
			break
		}
	}
	if src != "" && !SafeLink(src) {
		return ""
	}
	return src
}

// linkLabel returns what an <ac:link> without a link body shows: the name of
// its target.
func linkLabel(n *html.Node) string {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		for _, key := range []string{"ri:content-title", "ri:filename", "ri:space-key", "ri:value"} {
			if v := attr(c, key); v != "" {
				return v
			}
		}
	}
	return ""
}

// hasLinkBody reports whether an <ac:link> carries its own text.
func hasLinkBody(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.Data == "ac:link-body" || c.Data == "ac:plain-text-link-body") {
			return true
		}
	}
	return false
}

// separator is what goes between two pieces of content.
type separator int

const (
	noSeparator separator = iota
	space
	newLine
)

// writer renders content as simplified HTML (inline tags and line breaks)
// and as plain text (lines). White space is collapsed as a browser would; a
// line break is only written between two pieces of content; an inline tag is
// only written once content appears inside it, so that empty tags vanish.
type writer struct {
	withHTML bool
	out      strings.Builder // HTML, unsanitized
	plain    strings.Builder // text, lines separated by '\n'
	open     []openTag       // inline elements being rendered, innermost last
	written  int             // open[:written] have had their start tag written
	sep      separator
	started  bool
}

// openTag is an inline element being rendered.
type openTag struct {
	name string
	tag  string
}

// newWriter returns a writer; without HTML it renders plain text only.
func newWriter(withHTML bool) *writer { return &writer{withHTML: withHTML} }

// words writes text, collapsing its white space.
func (w *writer) words(s string) {
	for s != "" {
		i := strings.IndexFunc(s, isNotSpace)
		if i != 0 {
			w.space()
		}
		if i < 0 {
			return
		}
		s = s[i:]
		j := strings.IndexFunc(s, unicode.IsSpace)
		if j < 0 {
			j = len(s)
		}
		w.word(s[:j])
		s = s[j:]
	}
}

func isNotSpace(r rune) bool { return !unicode.IsSpace(r) }

// word writes s as one piece of content.
func (w *writer) word(s string) {
	if s == "" {
		return
	}
	w.content()
	if w.withHTML {
		w.out.WriteString(html.EscapeString(s))
	}
	w.plain.WriteString(s)
}

// space asks for a space before the next content.
func (w *writer) space() {
	if w.sep == noSeparator {
		w.sep = space
	}
}

// lineBreak asks for a line break before the next content.
func (w *writer) lineBreak() { w.sep = newLine }

// image writes an image; it has no text.
func (w *writer) image(src string) {
	if src == "" || !w.withHTML {
		return
	}
	w.content()
	w.out.WriteString(`<img src="` + html.EscapeString(src) + `">`)
}

// content writes the pending separator and start tags before content.
func (w *writer) content() {
	if w.started && w.sep != noSeparator {
		sep, brk := " ", " "
		if w.sep == newLine {
			sep, brk = "\n", "<br>"
		}
		w.plain.WriteString(sep)
		if w.withHTML {
			w.out.WriteString(brk)
		}
	}
	w.sep = noSeparator
	w.started = true
	for _, o := range w.open[w.written:] {
		w.out.WriteString(o.tag)
	}
	w.written = len(w.open)
}

// start begins inline element name; its tag is written with its first content.
func (w *writer) start(name, tag string) {
	if w.withHTML {
		w.open = append(w.open, openTag{name: name, tag: tag})
	}
}

// end ends the innermost inline element.
func (w *writer) end() {
	if len(w.open) == 0 {
		return
	}
	last := len(w.open) - 1
	if last < w.written {
		w.out.WriteString("</" + w.open[last].name + ">")
		w.written = last
	}
	w.open = w.open[:last]
}

// finish ends every inline element still open.
func (w *writer) finish() {
	for len(w.open) > 0 {
		w.end()
	}
}

// plainText returns the text on one line, white space collapsed.
func (w *writer) plainText() string {
	return strings.Join(strings.Fields(w.plain.String()), " ")
}

// lines returns the non-empty lines of the text, white space collapsed.
func (w *writer) lines() []string {
	var lines []string
	for line := range strings.SplitSeq(w.plain.String(), "\n") {
		if s := strings.Join(strings.Fields(line), " "); s != "" {
			lines = append(lines, s)
		}
	}
	return lines
}

// excerpt returns the rendered HTML sanitized and wrapped in one <p>, or ""
// when nothing visible remains.
func (w *writer) excerpt() string {
	w.finish()
	if !w.started {
		return ""
	}
	s := policy.Sanitize("<p>" + w.out.String() + "</p>")
	if s == "<p></p>" {
		return ""
	}
	return s
}
