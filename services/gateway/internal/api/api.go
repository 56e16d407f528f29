// Package api is the gateway's HTTP interface. The operations of the REST API
// are generated from the OpenAPI document (services/gateway/openapi) into
// package gen, whose strict server calls the methods of server, one file per
// area (hooks.go, attempts.go, list.go, bulk.go, bulkjobs.go, project.go,
// keys.go, channels.go, async.go, sequences.go, orderingkeys.go). This
// package adds what the document does not generate: authentication by API
// key (except on the async answer URLs), strict decoding of request bodies
// (body.go), the error format (errors.go), and the middleware every request
// passes through: request id and Sundial's own response headers, tracing,
// access log, panic recovery.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/auththrottle"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/openapi"
)

// Config is what the HTTP layer needs from the service's configuration.
type Config struct {
	// HeaderPrefix names Sundial's own headers (<Prefix>-HookQuota-Limit...).
	HeaderPrefix string
	// MaxDataBytes bounds a hook's data payload.
	MaxDataBytes int
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (clientaddr.Of); none by default.
	TrustedProxies []netip.Prefix
	// BodyBytesInFlight bounds the request bodies handled at once
	// (admission.go); 0: no bound.
	BodyBytesInFlight int64
}

// KeyVerifier resolves an API key to its project.
type KeyVerifier interface {
	Verify(ctx context.Context, key string) (uuid.UUID, error)
}

// LimitsVerifier is a KeyVerifier that also reads the key's project's
// limits in the same look-up (apikey.Verifier): when Keys is one and a
// LimitsDeps.Reader is set, authentication reads them, and enforceLimits
// uses them instead of reading them again.
type LimitsVerifier interface {
	IdentifyWithLimits(ctx context.Context, key string) (apikey.Identity, quota.Limits, error)
}

// KeyCache remembers valid API keys for a short time (keycache.Cache; a
// nil *keycache.Cache caches nothing). It is consulted only with a
// LimitsVerifier and a LimitsDeps.Reader: a key found there skips the
// look-up, and its project's quota standing is read only for responses
// whose handler does not report it itself (a create does).
type KeyCache interface {
	Get(key string) (keycache.Entry, bool)
	Generation() uint64
	Put(key string, e keycache.Entry, gen uint64)
	Forget(keyID uuid.UUID)
}

// Hooks stores hooks.
type Hooks interface {
	Create(ctx context.Context, projectID uuid.UUID, n hook.New) (hook.Hook, quota.Usage, error)
	CreateAll(ctx context.Context, projectID uuid.UUID, b hook.NewBatch) ([]hook.Hook, quota.Usage, error)
	Get(ctx context.Context, projectID, id uuid.UUID) (hook.Hook, error)
	Delete(ctx context.Context, projectID, id uuid.UUID) error
	GetByKey(ctx context.Context, projectID uuid.UUID, key string) (hook.Hook, error)
	DeleteByKey(ctx context.Context, projectID uuid.UUID, key string) error
}

// Deps is everything the API is built from.
type Deps struct {
	Config Config
	Log    *slog.Logger
	Keys   KeyVerifier
	// KeyCache caches valid keys; nil caches nothing. Revoking a key
	// through the API forgets it at once.
	KeyCache KeyCache
	// AuthThrottle refuses client addresses that failed to authenticate
	// too often; nil throttles nothing.
	AuthThrottle AuthThrottle
	Hooks        Hooks
	// Attempts lists a hook's attempts.
	Attempts AttemptLister
	// Tracing makes the server spans; nil means the global provider that
	// telemetry.Setup installs.
	Tracing trace.TracerProvider
	// Metering makes the request metrics; nil means the global provider.
	Metering metric.MeterProvider

	// What each area needs, declared in the area's own file.
	Async    AsyncDeps
	List     ListDeps
	Bulk     BulkDeps
	Project  ProjectDeps
	KeyMgmt  KeyDeps
	Limits   LimitsDeps
	Channels ChannelDeps
	// Endpoints serves /v1/endpoints (endpoints.go).
	Endpoints EndpointDeps
	// Listener serves /v1/ws/ticket and /v1/ws (listener.go).
	Listener ListenerDeps
	// Sequences serves /v1/sequences (sequences.go).
	Sequences SequenceDeps
	// OrderingKeys serves /v1/ordering-keys (orderingkeys.go).
	OrderingKeys OrderingKeyDeps
	// BulkJobs serves /v1/bulk-jobs (bulkjobs.go).
	BulkJobs BulkJobDeps
}

// bodyOverhead is what a request body may add to the largest data payload:
// the other fields of the request, and the client's whitespace.
const bodyOverhead = 64 << 10

// batchBodyLimit bounds the body of POST /v1/hooks/batch (at least a single
// create's bound): the body is read into memory, and decoded and validated
// there, before anything is stored, so 1,000 hooks of the largest data (1
// GiB by default) cannot be. 16 MiB is 1,000 hooks of about 16 KiB each;
// larger hooks go in smaller batches.
const batchBodyLimit = 16 << 20

// server implements gen.StrictServerInterface. Each area's operations are
// methods of its own embedded type, so that each lives in its own file.
type server struct {
	Deps
	asyncAnswers
	hookList
	bulkActions
	projectSettings
	keyManagement
	channelManagement
	endpointManagement
	listenerTickets
	sequenceManagement
	orderingKeyManagement
	bulkJobManagement

	bodies *bodyBudget // nil: no bound
}

var _ gen.StrictServerInterface = (*server)(nil)

// New returns the API's handler.
func New(d Deps) *echo.Echo {
	if d.Tracing == nil {
		d.Tracing = otel.GetTracerProvider()
	}
	if d.Metering == nil {
		d.Metering = otel.GetMeterProvider()
	}
	if d.KeyCache == nil {
		d.KeyCache = (*keycache.Cache)(nil)
	}
	if d.AuthThrottle == nil {
		d.AuthThrottle = (*auththrottle.Throttle)(nil)
	}
	document, err := openapi.JSON(d.Config.HeaderPrefix)
	if err != nil {
		// The document is embedded at build time and its tests convert it:
		// failing here means a broken build, like a bad regexp.MustCompile.
		panic(fmt.Sprintf("api: %v", err))
	}
	single := int64(d.Config.MaxDataBytes) + bodyOverhead
	var bodies *bodyBudget
	if d.Config.BodyBytesInFlight > 0 {
		bodies = newBodyBudget(d.Config.BodyBytesInFlight, max(single, batchBodyLimit))
	}
	s := &server{
		Deps:                  d,
		bodies:                bodies,
		asyncAnswers:          asyncAnswers{AsyncDeps: d.Async},
		hookList:              hookList{ListDeps: d.List, cfg: d.Config, bodies: bodies},
		bulkActions:           bulkActions{BulkDeps: d.Bulk, cfg: d.Config},
		projectSettings:       projectSettings{ProjectDeps: d.Project, cfg: d.Config},
		keyManagement:         keyManagement{KeyDeps: d.KeyMgmt, cfg: d.Config, cache: d.KeyCache},
		channelManagement:     channelManagement{ChannelDeps: d.Channels, log: d.Log},
		endpointManagement:    endpointManagement{EndpointDeps: d.Endpoints},
		listenerTickets:       listenerTickets{ListenerDeps: d.Listener},
		sequenceManagement:    sequenceManagement{SequenceDeps: d.Sequences},
		orderingKeyManagement: orderingKeyManagement{OrderingKeyDeps: d.OrderingKeys},
		bulkJobManagement:     bulkJobManagement{BulkJobDeps: d.BulkJobs, cfg: d.Config},
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	e.Binder = strictBinder{limit: single, batchLimit: max(single, batchBodyLimit)}
	durations, err := newRequestDuration(d.Metering)
	if err != nil {
		// Only a malformed instrument definition fails, which the tests catch.
		panic(fmt.Sprintf("api: %v", err))
	}
	e.Use(requestID, tracing(d.Tracing.Tracer("github.com/sundial-run/sundial/services/gateway/internal/api")),
		accessLog(d.Log, durations), recoverPanic)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/v1/openapi.json", serveDocument(document))

	// keepQuery: listing validates the raw query string (list.go).
	// keepRequest: a listener ticket's URL may be the request's address
	// (listener.go).
	strict := gen.NewStrictHandler(s, []gen.StrictMiddlewareFunc{keepQuery, keepRequest})
	// checkQuery after authentication, so that its 400 carries the quota
	// and rate-limit headers like any other authenticated answer.
	gen.RegisterHandlersWithBaseURL(routeMiddleware{e: e, use: []echo.MiddlewareFunc{s.authenticate, s.enforceLimits, checkQuery, s.admitBody}}, strict, "/v1")
	if d.Listener.Socket != nil {
		// The ticket is the socket's credential, not an API key.
		e.GET(socketPath, echo.WrapHandler(d.Listener.Socket))
	}
	return e
}

// routeMiddleware registers each generated route with the API's route
// middleware (authentication, then the quota and rate limits, then the
// query string's check). Route middleware, not group middleware: echo
// gives a group with middleware a catch-all route, which would turn a wrong
// method on a known route into a 404 instead of a 405.
type routeMiddleware struct {
	e   *echo.Echo
	use []echo.MiddlewareFunc
}

var _ gen.EchoRouter = routeMiddleware{}

func (r routeMiddleware) add(method, path string, h echo.HandlerFunc, m []echo.MiddlewareFunc) *echo.Route {
	if strings.HasPrefix(path, asyncRoutes) {
		// The ack and nack URLs carry their own credential, a token per
		// delivery (async.go): receivers call them without an API key.
		return r.e.Add(method, path, h, append([]echo.MiddlewareFunc{checkQuery}, m...)...)
	}
	return r.e.Add(method, path, h, append(append([]echo.MiddlewareFunc{}, r.use...), m...)...)
}

func (r routeMiddleware) CONNECT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodConnect, p, h, m)
}

func (r routeMiddleware) DELETE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodDelete, p, h, m)
}

func (r routeMiddleware) GET(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodGet, p, h, m)
}

func (r routeMiddleware) HEAD(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodHead, p, h, m)
}

func (r routeMiddleware) OPTIONS(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodOptions, p, h, m)
}

func (r routeMiddleware) PATCH(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPatch, p, h, m)
}

func (r routeMiddleware) POST(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPost, p, h, m)
}

func (r routeMiddleware) PUT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPut, p, h, m)
}

func (r routeMiddleware) TRACE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodTrace, p, h, m)
}

// serveDocument serves the OpenAPI document, which needs no API key: it is
// what a client reads before it has one.
func serveDocument(document []byte) echo.HandlerFunc {
	return func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, document)
	}
}
