package page

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		// Cross-site scripting payloads.
		{"script element", `<p>ok<script>alert(1)</script></p>`, `<p>ok</p>`},
		{"script with odd case and attributes", `<ScRiPt src="https://evil.example/x.js"></ScRiPt>ok`, `<p>ok</p>`},
		{"event handler on img", `<img src="x.png" onerror="alert(1)">`, `<p><img src="x.png"></p>`},
		{"event handler without quotes", `<img src=x onerror=alert(1)//>`, `<p><img src="x"></p>`},
		{"event handler on formatting", `<b onclick="alert(1)" onmouseover=alert(2)>bold</b>`, `<p><b>bold</b></p>`},
		{"javascript: href", `<a href="javascript:alert(1)">click</a>`, `<p>click</p>`},
		{"javascript: href in mixed case", `<a href="JaVaScRiPt:alert(1)">click</a>`, `<p>click</p>`},
		{"javascript: href with entity and tab", `<a href="jav&#x09;ascript&colon;alert(1)">click</a>`, `<p>click</p>`},
		{"javascript: href with leading space", `<a href="  javascript:alert(1)">click</a>`, `<p>click</p>`},
		{"vbscript: href", `<a href="vbscript:msgbox(1)">click</a>`, `<p>click</p>`},
		{"javascript: img src", `<img src="javascript:alert(1)">text`, `<p>text</p>`},
		// Links that leave for another host or scheme however a browser
		// reads them are dropped, their text kept.
		{"protocol-relative href", `<a href="//evil.example/x">x</a>`, `<p>x</p>`},
		{"backslash href", `<a href="/\evil.example">x</a>`, `<p>x</p>`},
		{"encoded backslash href", `<a href="/%5Cevil.example">x</a>`, `<p>x</p>`},
		{"encoded slashes href", `<a href="/%2F/evil.example">x</a>`, `<p>x</p>`},
		{"entity javascript: href", `<a href="jav&#x61;script:alert(1)">x</a>`, `<p>x</p>`},
		{"double-encoded javascript: href", `<a href="jav&amp;#x61;script:alert(1)">x</a>`, `<p>x</p>`},
		{"http without slashes", `<a href="http:evil.example">x</a>`, `<p>x</p>`},
		{"user info", `<a href="https://user@evil.example/">x</a>`, `<p>x</p>`},
		{"protocol-relative img", `<img src="//evil.example/a.png">text`, `<p>text</p>`},
		{"protocol-relative ac:image", `<ac:image><ri:url ri:value="//evil.example/a.png" /></ac:image>text`, `<p>text</p>`},
		{"relative href kept", `<a href="/requirements/DEMO/REQ-1">x</a>`, `<p><a href="/requirements/DEMO/REQ-1">x</a></p>`},
		{"https href kept", `<a href="https://ok.example/p?q=1&amp;r=2">x</a>`, `<p><a href="https://ok.example/p?q=1&amp;r=2">x</a></p>`},
		{"style element", `<style>p { color: red }</style><p>styled</p>`, `<p>styled</p>`},
		{"style attribute", `<p style="background:url(javascript:alert(1))">x <span style="color:red">y</span></p>`, `<p>x <span>y</span></p>`},
		{"svg onload", `<svg onload="alert(1)"><script>alert(2)</script><text>t</text></svg>after`, `<p>after</p>`},
		{"svg inside formatting", `<b><svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>b</b>`, `<p><b>b</b></p>`},
		{"data: img src", `<img src="data:image/png;base64,iVBORw0KGgo=">`, ``},
		{"data: href", `<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">x</a>`, `<p>x</p>`},
		{"iframe", `<iframe src="https://evil.example/"></iframe>text`, `<p>text</p>`},
		{"object and embed", `<object data="x.swf"><embed src="x.swf"></object>text`, `<p>text</p>`},
		{"form controls", `<form action="javascript:alert(1)"><button formaction="javascript:x">b</button><input value="v"></form>`, ``},
		{"meta refresh", `<meta http-equiv="refresh" content="0;url=javascript:alert(1)">text`, `<p>text</p>`},
		{"noscript mutation", `<noscript><p title="</noscript><img src=x onerror=alert(1)>">`, `<p><img src="x">&#34;&gt;</p>`},
		{"math mutation", `<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`, ``},
		{"escaped markup stays text", `<p>a &lt;script&gt;alert(1)&lt;/script&gt; b</p>`, `<p>a &lt;script&gt;alert(1)&lt;/script&gt; b</p>`},
		{"comment", `a<!-- <script>alert(1)</script> -->b`, `<p>ab</p>`},

		// What is kept.
		{"inline formatting", `<p><em>e</em> <u>u</u> <code>c</code> H<sub>2</sub>O x<sup>2</sup> <i>i</i> <strong>s</strong> <b>b</b></p>`,
			`<p><em>e</em> <u>u</u> <code>c</code> H<sub>2</sub>O x<sup>2</sup> <i>i</i> <strong>s</strong> <b>b</b></p>`},
		{"links keep only href", `<a href="https://example.com/a?b=1&c=2" target="_blank" title="t" class="c">ok</a> <a href="/wiki/x">rel</a>`,
			`<p><a href="https://example.com/a?b=1&amp;c=2">ok</a> <a href="/wiki/x">rel</a></p>`},
		{"link without href", `<a name="anchor">text</a>`, `<p>text</p>`},
		{"images keep only src", `<img src="https://example.com/i.png" width="10" alt="a" class="c">`, `<p><img src="https://example.com/i.png"></p>`},
		{"empty formatting vanishes", `a<b></b><em> </em>b`, `<p>a b</p>`},

		// Block layout becomes line breaks.
		{"paragraphs and headings", `<h1>Title</h1><p>one</p><div><p>two</p></div>`, `<p>Title<br>one<br>two</p>`},
		{"lists", `<ul><li>a</li><li>b<ol><li>c</li></ol></li></ul>`, `<p>a<br>b<br>c</p>`},
		{"tables", `<table><tr><th>h</th></tr><tr><td>c1</td><td>c2</td></tr></table>`, `<p>h<br>c1<br>c2</p>`},
		{"breaks are not repeated", `<p>a<br><br></p><p></p><br><p>b</p>`, `<p>a<br>b</p>`},
		{"formatting across blocks", `<b><p>x</p><p>y</p></b>`, `<p><b>x<br>y</b></p>`},
		{"white space collapsed", "<p>  a \n\t b  </p>", `<p>a b</p>`},

		// Macros are shown as readable text.
		{"requirement and jira macros", `See <ac:structured-macro ac:name="requirement"><ac:parameter ac:name="type">LINK</ac:parameter><ac:parameter ac:name="key">REQ-1</ac:parameter></ac:structured-macro> and <ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">PROJ-1</ac:parameter></ac:structured-macro>.`,
			`<p>See REQ-1 and PROJ-1.</p>`},
		{"other macros show their body", `<ac:structured-macro ac:name="info"><ac:parameter ac:name="icon">true</ac:parameter><ac:rich-text-body><p>Note</p></ac:rich-text-body></ac:structured-macro>`,
			`<p>Note</p>`},

		// Nothing visible.
		{"empty", ``, ``},
		{"blank", " \n ", ``},
		{"empty paragraph", `<p>&nbsp;</p>`, ``},
		{"quotes are escaped", `it's "quoted"`, `<p>it&#39;s &#34;quoted&#34;</p>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Sanitize(tt.in)
			if got != tt.want {
				t.Errorf("Sanitize(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if why := unsafeMarkup(got); why != "" {
				t.Errorf("Sanitize(%q) = %q is unsafe: %s", tt.in, got, why)
			}
			if again := Sanitize(got); again != got {
				t.Errorf("Sanitize is not idempotent: %q then %q", got, again)
			}
		})
	}
}

// TestParseExcerptIsSanitized checks that payloads in a description cell do
// not reach the excerpt.
func TestParseExcerptIsSanitized(t *testing.T) {
	t.Parallel()
	payloads := []string{
		`<script>alert(1)</script>`,
		`<img src=x onerror="alert(1)">`,
		`<a href="javascript:alert(1)">x</a>`,
		`<a href="java&#x0A;script:alert(1)">x</a>`,
		`<style>*{display:none}</style>`,
		`<span style="position:fixed">x</span>`,
		`<svg onload="alert(1)"/>`,
		`<svg><script>alert(1)</script></svg>`,
		`<img src="data:image/svg+xml;base64,PHN2Zz4=">`,
		`<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>`,
		`<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>`,
		`<ac:image><ri:url ri:value="javascript:alert(1)" /></ac:image>`,
	}
	for _, payload := range payloads {
		body := table(th("Key", "Text"), tr(def("A"), "<p>safe "+payload+" text</p>"))
		r := mustParse(t, body)
		excerpt := r.Definitions[0].HTMLExcerpt
		if why := unsafeMarkup(excerpt); why != "" {
			t.Errorf("payload %s: excerpt %q is unsafe: %s", payload, excerpt, why)
		}
		if !strings.HasPrefix(excerpt, "<p>safe ") || !strings.HasSuffix(excerpt, " text</p>") {
			t.Errorf("payload %s: excerpt %q lost the text around it", payload, excerpt)
		}
	}
}
