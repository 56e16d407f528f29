// Package dashboard serves the web dashboard under /dashboard
// (docs/dashboard.md): server-rendered pages for people who sign in, their
// sessions, the security every page gets (CSP, cross-origin refusal, CSRF
// tokens) and the routing helpers that pages register with.
//
// A page is a handler registered in routes.go with one of:
//
//	d.Page("GET /dashboard/x", h)                             // signed in
//	d.ProjectPage("GET /dashboard/p/{project}/hooks", h)      // and a member
//	d.ProjectAction("POST /dashboard/p/{project}/x", account.Member, h) // and that role, CSRF-checked
//
// and renders with Render(w, r, "hooks.html", data): templates/pages/hooks.html
// defines "title" and "content" inside the layout. UserFrom, ProjectFrom and
// CSRFToken read the request's context.
package dashboard

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Prefix is where the dashboard is mounted.
const Prefix = "/dashboard"

// Config is the dashboard's part of the gateway's configuration.
type Config struct {
	// SecureCookie marks the session cookie Secure (the public URL is https).
	SecureCookie bool
	// TrustedProxies are the peers whose X-Forwarded-For names the client,
	// for the per-address sign-in throttle.
	TrustedProxies []netip.Prefix
	// MaxDataBytes is the largest hook data the API takes, which the
	// create-hook form takes too.
	MaxDataBytes int
}

// UsageReader reads a project's quota use (*store.Queries).
type UsageReader interface {
	GetProjectUsage(ctx context.Context, projectID uuid.UUID) (store.GetProjectUsageRow, error)
}

// Deps are what the dashboard's pages use. Pages added later add theirs.
type Deps struct {
	Config   Config
	Log      *slog.Logger
	Accounts *account.Service
	Usage    UsageReader

	// The overview, hooks, hook and bulk pages, and the create-hook form.
	Figures  FigureReader
	Hooks    HookLister
	Hook     HookGetter
	Creator  HookCreator
	Attempts AttemptLister
	Bulk     BulkService
	// OrderingKeys: the held ordering keys page.
	OrderingKeys OrderingKeyService
	// BulkJobs: the bulk jobs page.
	BulkJobs BulkJobService
	// Admin: the keys, settings, listeners, channels and sequences pages.
	Admin AdminDeps
}

// Dashboard is the http.Handler of everything under /dashboard.
type Dashboard struct {
	Deps
	mux     *http.ServeMux
	handler http.Handler
	// registered is every route routes() registered, for Routes.
	registered []Route
}

// RouteKind is which of the registering helpers a route was registered
// with: who may reach it.
type RouteKind string

// The kinds of route.
const (
	KindPublic        RouteKind = "public"
	KindPage          RouteKind = "page"
	KindProjectPage   RouteKind = "project page"
	KindProjectAction RouteKind = "project action"
)

// Route is a registered route.
type Route struct {
	// Method is the pattern's method; empty when it matches every method.
	Method string
	// Path is the pattern's path with its wildcards ({project}, {id}, ...).
	Path string
	Kind RouteKind
	// MinRole is the least role a KindProjectAction route needs.
	MinRole account.Role
}

// Routes lists every route the dashboard registered, in order. The tests
// walk it (docs/dashboard.md, "How isolation and roles are tested"), so
// that a route added later is walked without being listed twice.
func (d *Dashboard) Routes() []Route { return slices.Clone(d.registered) }

// handle registers h for pattern and records the route for Routes.
func (d *Dashboard) handle(pattern string, kind RouteKind, min account.Role, h http.Handler) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "", pattern
	}
	d.registered = append(d.registered, Route{Method: method, Path: path, Kind: kind, MinRole: min})
	d.mux.Handle(pattern, h)
}

// New returns the dashboard with its routes registered.
func New(d Deps) *Dashboard {
	dash := &Dashboard{Deps: d, mux: http.NewServeMux()}
	dash.routes()
	// Cross-origin state-changing requests are refused before anything
	// else looks at them; safe methods pass through it.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Error(w, r, http.StatusForbidden, "Cross-origin requests are refused.")
	}))
	dash.handler = dash.logged(securityHeaders(cop.Handler(dash.withSession(dash.mux))))
	return dash
}

// ServeHTTP serves a request under /dashboard.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.handler.ServeHTTP(w, r)
}

// Public registers a route open to anyone (sign-in, set-password, static
// files). pattern is a net/http pattern with its method.
func (d *Dashboard) Public(pattern string, h http.HandlerFunc) {
	d.handle(pattern, KindPublic, "", h)
}

// Page registers a route for signed-in users: others are sent to the
// sign-in page. A non-GET route also needs the session's CSRF token.
func (d *Dashboard) Page(pattern string, h http.HandlerFunc) {
	d.handle(pattern, KindPage, "", signedIn(checkCSRF(h)))
}

// ProjectPage registers a route under /dashboard/p/{project}: the user must
// be a member (else 404); ProjectFrom(r) is the project and the user's
// role.
func (d *Dashboard) ProjectPage(pattern string, h http.HandlerFunc) {
	d.handle(pattern, KindProjectPage, "", signedIn(d.member(checkCSRF(h))))
}

// ProjectAction registers a state-changing route under
// /dashboard/p/{project}: a member with at least role min (else 403), with
// the session's CSRF token (else 403).
func (d *Dashboard) ProjectAction(pattern string, min account.Role, h http.HandlerFunc) {
	d.handle(pattern, KindProjectAction, min, signedIn(d.member(checkCSRF(RequireRole(min, h)))))
}
