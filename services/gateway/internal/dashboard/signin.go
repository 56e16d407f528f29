package dashboard

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/clientaddr"
)

// cookieName is the session cookie (docs/dashboard.md).
const cookieName = "sundial_session"

func setCookie(w http.ResponseWriter, token string, secure bool, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: token, Path: Prefix, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(maxAge.Seconds()),
	})
}

func clearCookie(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: Prefix, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1,
	})
}

type signinPage struct {
	Email, Next, Error string
}

// safeNext is where to go after signing in: a dashboard path of this site,
// never another site (//host, /\host).
func safeNext(next string) string {
	if next == Prefix || (strings.HasPrefix(next, Prefix+"/") && !strings.ContainsAny(next, "\\") &&
		!strings.HasPrefix(next, "//")) {
		return next
	}
	return Prefix
}

func (d *Dashboard) signinForm(w http.ResponseWriter, r *http.Request) {
	if sessionFrom(r) != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	Render(w, r, "signin.html", signinPage{Next: safeNext(r.URL.Query().Get("next"))})
}

func (d *Dashboard) signin(w http.ResponseWriter, r *http.Request) {
	email := account.NormalizeEmail(r.PostFormValue("email"))
	page := signinPage{Email: email, Next: safeNext(r.PostFormValue("next"))}
	addr := clientaddr.Of(r, d.Config.TrustedProxies)
	token, user, err := d.Accounts.SignIn(r.Context(), email, r.PostFormValue("password"), addr)
	var throttled *account.ThrottledError
	switch {
	case errors.As(err, &throttled):
		d.Log.Info("dashboard sign-in throttled", "addr", addr)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(throttled.RetryAfter.Seconds()))))
		page.Error = "Too many failed sign-ins. Try again later."
		RenderStatus(w, r, http.StatusTooManyRequests, "signin.html", page)
	case errors.Is(err, account.ErrBadCredentials):
		d.Log.Info("dashboard sign-in failed", "addr", addr)
		page.Error = "Wrong e-mail or password."
		RenderStatus(w, r, http.StatusUnauthorized, "signin.html", page)
	case err != nil:
		d.fault(w, r, "sign in", err)
	default:
		d.Log.Info("dashboard signed in", "user_id", user.ID)
		setCookie(w, token, d.Config.SecureCookie, d.Accounts.SessionAbsolute())
		http.Redirect(w, r, page.Next, http.StatusSeeOther)
	}
}

func (d *Dashboard) signout(w http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r)
	if err := d.Accounts.SignOut(r.Context(), s.token); err != nil {
		d.fault(w, r, "sign out", err)
		return
	}
	d.Log.Info("dashboard signed out", "user_id", s.user.ID)
	clearCookie(w, d.Config.SecureCookie)
	http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
}

func (d *Dashboard) signoutEverywhere(w http.ResponseWriter, r *http.Request) {
	s := sessionFrom(r)
	n, err := d.Accounts.SignOutEverywhere(r.Context(), s.user.ID)
	if err != nil {
		d.fault(w, r, "sign out everywhere", err)
		return
	}
	d.Log.Info("dashboard signed out everywhere", "user_id", s.user.ID, "sessions", n)
	clearCookie(w, d.Config.SecureCookie)
	http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
}

type setPasswordPage struct {
	Token, Email, Error string
	MinLen              int
}

func (d *Dashboard) setPasswordForm(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	user, err := d.Accounts.CheckPasswordLink(r.Context(), token)
	switch {
	case errors.Is(err, account.ErrBadLink):
		RenderStatus(w, r, http.StatusNotFound, "set-password.html", setPasswordPage{Error: err.Error()})
	case err != nil:
		d.fault(w, r, "set-password link", err)
	default:
		Render(w, r, "set-password.html", setPasswordPage{Token: token, Email: user.Email, MinLen: account.MinPasswordLen})
	}
}

func (d *Dashboard) setPassword(w http.ResponseWriter, r *http.Request) {
	token := r.PostFormValue("token")
	session, err := d.Accounts.UsePasswordLink(r.Context(), token, r.PostFormValue("password"))
	switch {
	case errors.Is(err, account.ErrWeakPassword):
		user, linkErr := d.Accounts.CheckPasswordLink(r.Context(), token)
		page := setPasswordPage{Token: token, Email: user.Email, MinLen: account.MinPasswordLen, Error: err.Error()}
		if linkErr != nil {
			page = setPasswordPage{Error: account.ErrBadLink.Error()}
		}
		RenderStatus(w, r, http.StatusBadRequest, "set-password.html", page)
	case errors.Is(err, account.ErrBadLink):
		RenderStatus(w, r, http.StatusNotFound, "set-password.html", setPasswordPage{Error: err.Error()})
	case err != nil:
		d.fault(w, r, "set password", err)
	default:
		d.Log.Info("dashboard password set")
		setCookie(w, session, d.Config.SecureCookie, d.Accounts.SessionAbsolute())
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
	}
}
