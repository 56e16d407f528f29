package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Keys of values stored on the echo.Context.
const (
	keyRequestID = "sundial.requestID"
	keyProjectID = "sundial.projectID"
	keyLimits    = "sundial.limits" // quota.Limits read with the API key
	keyRate      = "sundial.rate"   // quota.RateLimit of a cached API key
	keyQuotaErr  = "sundial.quotaHeadersError"
	keyFault     = "sundial.fault"
	keyStack     = "sundial.panicStack"
)

// Keys of values stored in a request's context.Context, which is all that
// the generated strict handlers pass on to server's methods.
type contextKey int

const (
	ctxProjectID contextKey = iota
	ctxKeyID
	ctxHeaders
)

// HeaderRequestID carries the request's id on every response.
const HeaderRequestID = "X-Request-Id"

// requestID gives each request a fresh id, and a set of response headers
// that Sundial's own code decides (see responseHeaders), starting with the
// id. An id sent by the client is not reused: ids must be unique to be
// useful in logs.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := uuid.NewString()
		c.Set(keyRequestID, id)
		headers := http.Header{HeaderRequestID: {id}}
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), ctxHeaders, headers)))
		res := c.Response()
		res.Before(func() { applyHeaders(res.Header(), headers) })
		return next(c)
	}
}

// responseHeaders returns the headers the request's response will carry
// whatever else sets headers on it: the request id, and what handlers and
// middleware add (quota, rate limit, Retry-After). Names are kept as
// spelled (Sundial-HookQuota-Limit, not Go's canonical Sundial-Hookquota-Limit).
//
// The generated response writers set every header the OpenAPI document
// declares for a response, from fields of the response object that
// handlers leave empty; these headers are applied just before the status
// line is written, replacing any such value, so that neither handlers nor
// error responses have to fill them in.
func responseHeaders(ctx context.Context) http.Header {
	h, ok := ctx.Value(ctxHeaders).(http.Header)
	if !ok {
		return http.Header{} // outside a request (a unit test): nothing to apply
	}
	return h
}

func applyHeaders(dst, managed http.Header) {
	for name, values := range managed {
		delete(dst, textproto.CanonicalMIMEHeaderKey(name))
		dst[name] = values
	}
}

func requestIDOf(c echo.Context) string {
	id, _ := c.Get(keyRequestID).(string)
	return id
}

func projectIDOf(c echo.Context) (uuid.UUID, bool) {
	id, ok := c.Get(keyProjectID).(uuid.UUID)
	return id, ok
}

// withProject records the authenticated project for the access log and for
// the handlers, and the id of the request's API key (the nil UUID when the
// verifier does not tell it): a listener ticket names the key it was
// issued with.
func withProject(c echo.Context, id, keyID uuid.UUID) {
	c.Set(keyProjectID, id)
	ctx := context.WithValue(c.Request().Context(), ctxProjectID, id)
	c.SetRequest(c.Request().WithContext(context.WithValue(ctx, ctxKeyID, keyID)))
}

// keyOf is the id of the request's API key, or the nil UUID.
func keyOf(ctx context.Context) uuid.UUID {
	id, _ := ctx.Value(ctxKeyID).(uuid.UUID)
	return id
}

// projectOf is the project of the request's API key. Every operation of the
// document is authenticated, so it is set whenever a handler runs; the nil
// UUID (no project has it) makes a mistake find nothing rather than
// another project's data.
func projectOf(ctx context.Context) uuid.UUID {
	id, _ := ctx.Value(ctxProjectID).(uuid.UUID)
	return id
}

// route names the matched route for logs and spans, with a fixed name for
// requests no route matched (so that arbitrary paths do not become span names).
func route(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	return "unmatched"
}

// tracing starts a server span per request, continuing the caller's trace
// when the request carries W3C trace context.
func tracing(tracer trace.Tracer) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			ctx := otel.GetTextMapPropagator().Extract(req.Context(), propagation.HeaderCarrier(req.Header))
			ctx, span := tracer.Start(ctx, req.Method+" "+route(c),
				trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					attribute.String("http.request.method", req.Method),
					attribute.String("http.route", route(c)),
					attribute.String("sundial.request_id", requestIDOf(c)),
				))
			defer span.End()
			c.SetRequest(req.WithContext(ctx))
			err := next(c)
			status := c.Response().Status
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			return err
		}
	}
}

// requestDurationBuckets are the bounds of sundial.gateway.request.duration,
// in seconds: an API answer takes milliseconds, a long poll or a slow
// database seconds.
var requestDurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// newRequestDuration makes the histogram accessLog records each request in.
func newRequestDuration(mp metric.MeterProvider) (metric.Float64Histogram, error) {
	h, err := mp.Meter("sundial/gateway").Float64Histogram("sundial.gateway.request.duration",
		metric.WithDescription("Time the API took to answer a request, by method, route and status."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(requestDurationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("request duration histogram: %w", err)
	}
	return h, nil
}

// methodLabel is a request's method as a metric label: the methods the
// API has, or "other", so that clients cannot add label values at will.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// accessLog writes one line per request, and records it in durations by
// method, route (the matched route's pattern, never the path) and status.
// It writes an error response itself (instead of leaving that to echo
// afterwards) so that both record the status the client got. The API key
// is never logged.
func accessLog(log *slog.Logger, durations metric.Float64Histogram) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			durations.Record(c.Request().Context(), time.Since(start).Seconds(), metric.WithAttributes(
				attribute.String("method", methodLabel(c.Request().Method)), attribute.String("route", route(c)),
				attribute.Int("status", status)))
			attrs := []slog.Attr{
				slog.String("method", c.Request().Method),
				slog.String("route", route(c)),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.String("request_id", requestIDOf(c)),
			}
			if id, ok := projectIDOf(c); ok {
				attrs = append(attrs, slog.String("project_id", id.String()))
			}
			level := slog.LevelInfo
			if fault, ok := c.Get(keyFault).(error); ok {
				level = slog.LevelError
				attrs = append(attrs, slog.String("error", faultText(fault)))
			}
			if qerr, ok := c.Get(keyQuotaErr).(error); ok {
				level = max(level, slog.LevelWarn)
				attrs = append(attrs, slog.String("quota_headers_error", qerr.Error()))
			}
			if stack, ok := c.Get(keyStack).(string); ok {
				attrs = append(attrs, slog.String("stack", stack))
			}
			log.LogAttrs(c.Request().Context(), level, "request", attrs...)
			return nil
		}
	}
}

// recoverPanic turns a panic into a 500 and keeps the stack for the access
// log line; the server keeps serving.
func recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r) // net/http's way to abort a response; not a fault
			}
			c.Set(keyStack, string(debug.Stack()))
			err = internal(fmt.Errorf("panic: %v", r))
		}()
		return next(c)
	}
}
