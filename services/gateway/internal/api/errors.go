package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Error codes: the machine-readable half of an error response.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeUnauthorized         = "unauthorized"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeQuotaExhausted       = "quota_exhausted"
	CodeInternal             = "internal_error"
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
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Cause }

func newError(status int, code, message string, details ...Detail) *Error {
	return &Error{Status: status, Code: code, Message: message, Details: details}
}

// internal hides a fault of the service behind a plain 500.
func internal(cause error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal server error", Cause: cause}
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
