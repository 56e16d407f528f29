package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Keys of values stored on the echo.Context.
const (
	keyRequestID = "sundial.requestID"
	keyProjectID = "sundial.projectID"
	keyFault     = "sundial.fault"
	keyStack     = "sundial.panicStack"
)

// HeaderRequestID carries the request's id on every response.
const HeaderRequestID = "X-Request-Id"

// requestID gives each request a fresh id. It is set on the response before
// anything else runs, so that error and panic responses carry it too. An id
// sent by the client is not reused: ids must be unique to be useful in logs.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := uuid.NewString()
		c.Set(keyRequestID, id)
		c.Response().Header().Set(HeaderRequestID, id)
		return next(c)
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

// accessLog writes one line per request. It writes an error response itself
// (instead of leaving that to echo afterwards) so that the line records the
// status the client got. The API key is never logged.
func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			status := c.Response().Status
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
				attrs = append(attrs, slog.String("error", fault.Error()))
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
