package api

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/pkg/postgres"
)

// Error codes: the machine-readable half of an error response.
// They are the Error schema's enum in the OpenAPI document.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeGone                 = "gone"
	CodeConflict             = "conflict"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeRateLimited          = "rate_limited"
	CodeQuotaExhausted       = "quota_exhausted"
	CodeInternal             = "internal_error"
	CodeNotImplemented       = "not_implemented"
	CodeUnavailable          = "unavailable"
)

// Detail names one field at fault.
type Detail struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is an error response. Handlers return it; handleError writes it.
type Error struct {
	Status  int
	Code    string
	Message string
	Details []Detail
	// Cause is the fault behind a 5xx, logged and never shown.
	Cause error
	// RetryAfter is a 503's Retry-After in seconds (default
	// unavailableRetryAfter).
	RetryAfter string
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Cause }

// faultText is what the access log says of a fault: the cause behind an
// Error too, which its message hides from the client.
func faultText(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return err.Error()
}

func newError(status int, code, message string, details ...Detail) *Error {
	return &Error{Status: status, Code: code, Message: message, Details: details}
}

// internal hides a fault of the service behind a plain 500, except when
// PostgreSQL cannot be reached, or rolled the request's transaction back
// for colliding with another (a deadlock): those are 503s with
// Retry-After (handleError sets it), which tell clients to come back
// rather than that the request is wrong or the service broken. Nothing of
// such a request was written.
func internal(cause error) *Error {
	if postgres.Unavailable(cause) {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "the database is unavailable; retry later", Cause: cause}
	}
	if postgres.Conflicted(cause) {
		return &Error{
			Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Cause: cause, RetryAfter: conflictRetryAfter,
			Message: "the request collided with a concurrent change and nothing of it was written; retry",
		}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal server error", Cause: cause}
}

// unavailableRetryAfter is the Retry-After of a 503: long enough not to
// hammer a database coming back, short enough that clients notice soon.
const unavailableRetryAfter = "5"

// conflictRetryAfter is the Retry-After of a 503 for a transaction rolled
// back by a collision: the other transaction has ended by then.
const conflictRetryAfter = "1"

// notImplemented answers an operation of the document that has no handler
// yet.
func notImplemented(operation string) *Error {
	return newError(http.StatusNotImplemented, CodeNotImplemented, operation+" is not implemented yet")
}

// invalid is a 400 naming the fields at fault; with one detail, the
// message repeats it so that a client showing only "error" says enough.
func invalid(details ...Detail) *Error {
	msg := "invalid request"
	if len(details) == 1 {
		msg += ": " + details[0].Field + ": " + details[0].Message
	} else if len(details) > 1 {
		msg += fmt.Sprintf(": %d fields are invalid", len(details))
	}
	return newError(http.StatusBadRequest, CodeInvalidRequest, msg, details...)
}

// errorBody is the one shape of every error response.
type errorBody struct {
	Error     string   `json:"error"`
	Code      string   `json:"code"`
	Details   []Detail `json:"details,omitempty"`
	RequestID string   `json:"requestId"`
}

// handleError writes err as an error response: echo calls it for errors
// that handlers, middleware and the router return.
func (s *server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := asError(err)
	if e.Status >= 500 {
		c.Set(keyFault, err)
	}
	if e.Status == http.StatusServiceUnavailable {
		retryAfter := e.RetryAfter
		if retryAfter == "" {
			retryAfter = unavailableRetryAfter
		}
		responseHeaders(c.Request().Context()).Set("Retry-After", retryAfter)
	}
	body := errorBody{Error: e.Message, Code: e.Code, Details: e.Details, RequestID: requestIDOf(c)}
	if werr := c.JSON(e.Status, body); werr != nil {
		s.Log.Debug("write error response", "error", werr, "request_id", body.RequestID)
	}
}

// asError turns any error into an Error: the router's 404 and 405 become
// JSON like the rest, and an unexpected error is a fault of the service.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return internal(err)
	}
	switch he.Code {
	case http.StatusBadRequest:
		return parameterError(he)
	case http.StatusNotFound:
		return newError(he.Code, CodeNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return newError(he.Code, CodeMethodNotAllowed, "method not allowed on this route")
	case http.StatusRequestEntityTooLarge:
		return newError(he.Code, CodePayloadTooLarge, "request body too large")
	}
	if he.Code >= 500 {
		return internal(err)
	}
	code := strings.ReplaceAll(strings.ToLower(http.StatusText(he.Code)), " ", "_")
	return newError(he.Code, code, http.StatusText(he.Code))
}

// The generated parameter binding reports a malformed path, query or header
// parameter as an echo.HTTPError 400 whose message names the parameter in
// one of these forms.
var parameterMessages = []*regexp.Regexp{
	regexp.MustCompile(`^Invalid format for parameter (\S+): (.*)$`),
	regexp.MustCompile(`^Query argument (\S+) is required`),
	regexp.MustCompile(`^Header parameter (\S+) is required`),
	regexp.MustCompile(`^Expected one value for (\S+),`),
}

// parameterError names the parameter at fault and what its value must be,
// in words rather than in the parser's.
func parameterError(he *echo.HTTPError) *Error {
	msg, _ := he.Message.(string)
	for _, re := range parameterMessages {
		m := re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		return invalid(Detail{Field: m[1], Message: parameterProblem(msg)})
	}
	return newError(http.StatusBadRequest, CodeInvalidRequest, "invalid request")
}

func parameterProblem(msg string) string {
	switch {
	case strings.Contains(msg, "is required"):
		return "is required"
	case strings.Contains(msg, "Expected one value"):
		return "must be given once"
	case strings.Contains(msg, "ParseInt"), strings.Contains(msg, "ParseFloat"):
		return "must be a number"
	case strings.Contains(msg, "ParseBool"):
		return "must be true or false"
	case strings.Contains(msg, "time"), strings.Contains(msg, "date"):
		return "must be an RFC 3339 date-time, e.g. 2030-01-02T15:04:05Z"
	}
	return "has an invalid value"
}
