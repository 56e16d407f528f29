package dashboard

import (
	"context"
	"net/http"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
)

type contextKey int

const (
	sessionKey contextKey = iota
	projectKey
)

// session is the signed-in user of a request, with what the layout needs.
type session struct {
	token    string
	user     account.User
	projects []account.Project
}

func withSessionState(ctx context.Context, s *session) context.Context {
	return context.WithValue(ctx, sessionKey, s)
}

func sessionFrom(r *http.Request) *session {
	s, _ := r.Context().Value(sessionKey).(*session)
	return s
}

// ProjectFrom is the project of a /dashboard/p/{project} route, with the
// user's role in it (Project.Role); ok is false on other routes.
func ProjectFrom(r *http.Request) (account.Project, bool) {
	p, ok := r.Context().Value(projectKey).(account.Project)
	return p, ok
}

// CSRFToken is the token every form of a signed-in page carries in the
// hidden field named CSRFField (the layout's {{template "csrf" .}} writes
// it; htmx requests send it in the CSRFHeader header, which the layout
// sets).
func CSRFToken(r *http.Request) string {
	s := sessionFrom(r)
	if s == nil {
		return ""
	}
	return account.CSRFToken(s.token)
}

// The names the CSRF token travels under.
const (
	CSRFField  = "csrf"
	CSRFHeader = "X-Sundial-CSRF"
)

func withProject(ctx context.Context, p account.Project) context.Context {
	return context.WithValue(ctx, projectKey, p)
}
