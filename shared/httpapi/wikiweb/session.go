package wikiweb

// Sessions of the web pages (docs/guide.md, "In a browser"): the
// login form, POST /login (a wiki token for a session cookie), POST
// /logout, and the check every page makes (h.page): a session, or 303 to
// the login with the page as next.

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
)

// pageFunc is the handler of a page: p is the session's principal.
type pageFunc func(w http.ResponseWriter, r *http.Request, p auth.Principal) error

// page wraps a page handler: without a valid session it answers 303 to
// the login form with the page as next (websession.Check); with one, it
// applies the tenant's rate and runs the page, answering its error as an
// HTML page.
func (h *Handler) page(fn pageFunc) httpapi.AnonymousFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := websession.Check(w, r, h.Sessions, h.Limiter)
		if err != nil {
			renderError(w, r, p, err)
			return nil
		}
		if p == nil {
			return nil // answered: 303 to the login
		}
		if err := fn(w, r, *p); err != nil {
			renderError(w, r, p, err)
		}
		return nil
	}
}

// sameOrigin is the CSRF check of the POST routes, besides the SameSite
// cookie: the browser's Origin header (or, when a browser sends none, the
// Referer's origin) must be the wiki's own origin. A POST with neither is
// refused: every browser sends one of them with a form.
func sameOrigin(r *http.Request) bool {
	self := websession.Scheme(r) + "://" + strings.ToLower(r.Host)
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		return strings.EqualFold(o, self)
	}
	ref, err := url.Parse(r.Header.Get("Referer"))
	if err != nil || ref.Host == "" {
		return false
	}
	return strings.EqualFold(ref.Scheme+"://"+ref.Host, self)
}

// safeNext returns next when it is a path on this site ("/requirements/…"),
// else the home page: a login never sends its user to another site.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\t\r\n") || len(next) > 2048 {
		return homePath
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return homePath
	}
	return next
}

type loginPage struct {
	layoutData
	Next    string
	Message string
}

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) error {
	data := &loginPage{layoutData: layoutData{Title: "Sign in"}, Next: safeNext(r.URL.Query().Get("next"))}
	return render(w, r, http.StatusOK, "login", data)
}

// login opens a session for the form's token and answers 303 to next with
// the cookie; a bad token answers the form again with 401.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) error {
	if !sameOrigin(r) {
		renderError(w, r, nil, apperr.Forbiddenf("this form must be sent from the wiki's own pages"))
		return nil
	}
	if err := r.ParseForm(); err != nil {
		renderError(w, r, nil, apperr.Invalidf("malformed form"))
		return nil
	}
	next := safeNext(r.PostForm.Get("next"))
	id, expires, err := h.Sessions.Open(r.Context(), strings.TrimSpace(r.PostForm.Get("token")))
	if err != nil {
		if e := apperr.As(err); e != nil && e.Code == apperr.Unauthorized {
			data := &loginPage{layoutData: layoutData{Title: "Sign in"}, Next: next,
				Message: "This token is not valid for this wiki. Use a wiki user's token."}
			return render(w, r, http.StatusUnauthorized, "login", data)
		}
		renderError(w, r, nil, err)
		return nil
	}
	http.SetCookie(w, websession.Cookie(r, id, expires))
	websession.SecurityHeaders(w.Header())
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// logout ends the session (if any) and answers 303 to the login form with
// the cookie deleted.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) error {
	if !sameOrigin(r) {
		renderError(w, r, nil, apperr.Forbiddenf("this form must be sent from the wiki's own pages"))
		return nil
	}
	if c, err := r.Cookie(websession.CookieName); err == nil {
		if err := h.Sessions.Close(r.Context(), c.Value); err != nil {
			renderError(w, r, nil, err)
			return nil
		}
	}
	http.SetCookie(w, websession.Cleared(r))
	websession.SecurityHeaders(w.Header())
	http.Redirect(w, r, websession.LoginPath, http.StatusSeeOther)
	return nil
}
