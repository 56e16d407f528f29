package dashboard

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
)

// ContentSecurityPolicy is the policy of every response (docs/dashboard.md,
// "Security"): no inline script or style anywhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// maxFormBytes bounds the body of a form post.
const maxFormBytes = 64 << 10

// securityHeaders sets the headers every answer carries; static files
// replace Cache-Control with their own.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// withSession puts the session of the cookie, when it is alive, in the
// request's context. Routes decide what its absence means.
func (d *Dashboard) withSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		// Static files are the same for everyone: no session look-up.
		if err != nil || c.Value == "" || strings.HasPrefix(r.URL.Path, Prefix+"/static/") {
			next.ServeHTTP(w, r)
			return
		}
		user, err := d.Accounts.Session(r.Context(), c.Value)
		if errors.Is(err, account.ErrNoSession) {
			clearCookie(w, d.Config.SecureCookie)
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			d.fault(w, r, "session", err)
			return
		}
		projects, err := d.Accounts.Projects(r.Context(), user.ID)
		if err != nil {
			d.fault(w, r, "session", err)
			return
		}
		s := &session{token: c.Value, user: user, projects: projects}
		next.ServeHTTP(w, r.WithContext(withSessionState(r.Context(), s)))
	})
}

// signedIn sends a request without a session to the sign-in page (GET) or
// answers 401.
func signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionFrom(r) != nil {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			Error(w, r, http.StatusUnauthorized, "Please sign in again.")
			return
		}
		http.Redirect(w, r, "/dashboard/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	})
}

// member resolves {project} to the user's membership; a project the user
// is not a member of is a 404, as one that does not exist.
func (d *Dashboard) member(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := uuid.Parse(r.PathValue("project"))
		if err != nil {
			Error(w, r, http.StatusNotFound, "There is no such project.")
			return
		}
		p, err := d.Accounts.Membership(r.Context(), sessionFrom(r).user.ID, id)
		if errors.Is(err, account.ErrNotMember) {
			Error(w, r, http.StatusNotFound, "There is no such project.")
			return
		}
		if err != nil {
			d.fault(w, r, "membership", err)
			return
		}
		next.ServeHTTP(w, r.WithContext(withProject(r.Context(), p)))
	})
}

// RequireRole answers 403 unless the user's role in the request's project
// is at least min. ProjectAction applies it; a page may use it for a route
// it registers otherwise.
func RequireRole(min account.Role, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := ProjectFrom(r)
		if !ok || !p.Role.AtLeast(min) {
			Error(w, r, http.StatusForbidden, "Your role in this project does not allow this.")
			return
		}
		next(w, r)
	}
}

// checkCSRF refuses a state-changing request of a session without the
// session's token (form field or header).
func checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		got := r.Header.Get(CSRFHeader)
		if got == "" {
			var tooLarge *http.MaxBytesError
			if err := r.ParseForm(); errors.As(err, &tooLarge) {
				Error(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf(
					"This form is larger than the dashboard takes (%d KiB): send it through the API instead.", maxFormBytes>>10))
				return
			}
			got = r.PostFormValue(CSRFField)
		}
		want := CSRFToken(r)
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			Error(w, r, http.StatusForbidden, "This form has expired: reload the page and try again.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status of an answer, for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// logged writes one line per request: its path, never its query
// (a set-password link's token is in its query).
func (d *Dashboard) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		level := slog.LevelDebug
		if sw.status >= 500 {
			level = slog.LevelError
		}
		d.Log.Log(r.Context(), level, "dashboard request", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "duration_ms", time.Since(start).Milliseconds())
	})
}

// fault logs a service fault and answers 500.
func (d *Dashboard) fault(w http.ResponseWriter, r *http.Request, what string, err error) {
	d.Log.Error("dashboard fault", "what", what, "error", err)
	Error(w, r, http.StatusInternalServerError, "Something went wrong on our side. Try again in a moment.")
}
