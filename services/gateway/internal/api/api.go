// Package api is the gateway's HTTP interface: the routes of the REST API,
// authentication by API key, the error format, and the middleware every
// request passes through (request id, tracing, access log, panic recovery).
package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Config is what the HTTP layer needs from the service's configuration.
type Config struct {
	// HeaderPrefix names Sundial's own headers (<Prefix>-HookQuota-Limit...).
	HeaderPrefix string
	// MaxDataBytes bounds a hook's data payload.
	MaxDataBytes int
}

// KeyVerifier resolves an API key to its project.
type KeyVerifier interface {
	Verify(ctx context.Context, key string) (uuid.UUID, error)
}

// Hooks stores hooks.
type Hooks interface {
	Create(ctx context.Context, projectID uuid.UUID, n hook.New) (store.Hook, quota.Usage, error)
	Get(ctx context.Context, projectID, id uuid.UUID) (store.Hook, error)
	Delete(ctx context.Context, projectID, id uuid.UUID) error
}

// Deps is everything the API is built from.
type Deps struct {
	Config Config
	Log    *slog.Logger
	Keys   KeyVerifier
	Hooks  Hooks
	// Ready reports whether the service can do its work (the database
	// answers); /readyz calls it.
	Ready func(context.Context) error
	// Tracing makes the server spans; nil means the global provider that
	// telemetry.Setup installs.
	Tracing trace.TracerProvider
}

// readyTimeout bounds a readiness check, so that a hung database makes the
// probe fail rather than hang.
const readyTimeout = 2 * time.Second

type server struct {
	Deps
}

// New returns the API's handler.
func New(d Deps) *echo.Echo {
	s := &server{Deps: d}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	if d.Tracing == nil {
		d.Tracing = otel.GetTracerProvider()
	}
	e.Use(requestID, tracing(d.Tracing.Tracer("github.com/sundial-run/sundial/services/gateway/internal/api")),
		accessLog(d.Log), recoverPanic)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)

	// Authentication is route middleware, not group middleware: echo gives a
	// group with middleware a catch-all route, which would turn a wrong
	// method on a known route into a 404 instead of a 405.
	v1 := e.Group("/v1")
	v1.POST("/hooks", s.createHook, s.authenticate)
	v1.GET("/hooks/:id", s.getHook, s.authenticate)
	v1.DELETE("/hooks/:id", s.deleteHook, s.authenticate)
	return e
}

// envelope wraps every successful response body.
type envelope struct {
	Data any `json:"data"`
}
