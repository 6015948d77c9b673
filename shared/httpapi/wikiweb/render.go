package wikiweb

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/reqtrace.css
var stylesheetCSS []byte

// pages are the page templates, each parsed with templates/layout.html
// (which every page's "content" fills), by file name without .html.
var pages = parsePages()

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{"reqURL": reqURL, "pageURL": pageURL}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := path.Base(n)
		if name == "layout.html" {
			continue
		}
		out[name[:len(name)-len(".html")]] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, n))
	}
	return out
}

// layoutData is what templates/layout.html reads; each page's data embeds
// it.
type layoutData struct {
	Title string
	// User is who is signed in (nil on the login and error pages of an
	// anonymous caller).
	User *auth.Principal
	// Nav is the navigation bar of a page about a space.
	Nav []navItem
	// Stylesheet is the stylesheet's address.
	Stylesheet string
}

func (l *layoutData) layout() *layoutData { return l }

// page is implemented by every page's data (through layoutData).
type pageData interface{ layout() *layoutData }

// render answers a page: the template name filled with data, with the
// security headers. A template that fails is an internal error, answered
// before anything is written.
func render(w http.ResponseWriter, r *http.Request, status int, name string, data pageData) error {
	data.layout().Stylesheet = stylesheetPath
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		return err
	}
	websession.SecurityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return nil
}

type errorPage struct {
	layoutData
	Status  int
	Message string
}

// renderError answers err as an HTML page with the status httpapi maps it
// to and the message a client may see (a fixed one for an unexpected
// error, logged once with the request id).
func renderError(w http.ResponseWriter, r *http.Request, p *auth.Principal, err error) {
	status, message := httpapi.Public(r, err)
	data := &errorPage{layoutData: layoutData{Title: http.StatusText(status), User: p}, Status: status, Message: message}
	if err := render(w, r, status, "error", data); err != nil {
		httpapi.Logger(r.Context()).ErrorContext(r.Context(), "render error page", "error", err.Error())
		websession.SecurityHeaders(w.Header())
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
	}
}

// stylesheet serves the one stylesheet of the pages.
func stylesheet(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(stylesheetCSS)
	return nil
}

// reqURL is the page of a requirement (its genericUrl), at baseline v when
// v > 0.
func reqURL(space, key string, v int) string {
	u := "/requirements/" + url.PathEscape(space) + "/" + url.PathEscape(key)
	if v > 0 {
		u += "?v=" + strconv.Itoa(v)
	}
	return u
}

// pageURL is the page view of a wiki page (a baseline's pageLink).
func pageURL(pageID string) string {
	return pageViewPath + "?pageId=" + url.QueryEscape(pageID)
}
