package sundial

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// The machine codes of the API's error bodies.
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
	CodeInternalError        = "internal_error"
	CodeNotImplemented       = "not_implemented"
	CodeUnavailable          = "unavailable"
)

// ErrorDetail names one field at fault: a dotted path such as
// retryOverride.minRetries, a query parameter, or a header.
type ErrorDetail struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// APIError is an answer of the API other than 2xx. Use errors.As to get
// it from any method's error.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int `json:"-"`
	// Code is the machine code (CodeInvalidRequest...); empty when the
	// answer was not the API's error body (a proxy's page, say).
	Code string `json:"code"`
	// Message is the human message.
	Message string `json:"error"`
	// Details lists the fields at fault, when fields are at fault.
	Details []ErrorDetail `json:"details,omitempty"`
	// RequestID identifies the request (X-Request-Id): quote it when
	// asking for help.
	RequestID string `json:"requestId"`
	// RetryAfter is the answer's Retry-After, 0 when it had none.
	RetryAfter time.Duration `json:"-"`
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sundial: %d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	b.WriteString(": " + e.Message)
	for i, d := range e.Details {
		sep := "; "
		if i == 0 {
			sep = " ("
		}
		b.WriteString(sep + d.Field + ": " + d.Message)
	}
	if len(e.Details) > 0 {
		b.WriteString(")")
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	return b.String()
}

// Fields returns the names of the fields at fault, in the server's order.
func (e *APIError) Fields() []string {
	out := make([]string, len(e.Details))
	for i, d := range e.Details {
		out[i] = d.Field
	}
	return out
}

// Field returns what the server said of the field name, and whether it
// named that field.
func (e *APIError) Field(name string) (string, bool) {
	for _, d := range e.Details {
		if d.Field == name {
			return d.Message, true
		}
	}
	return "", false
}

// newAPIError reads an error answer. A body that is not the API's error
// (a proxy's or load balancer's page) still gives a readable message.
func newAPIError(resp *response) *APIError {
	e := &APIError{}
	if err := json.Unmarshal(resp.body, e); err != nil || e.Message == "" {
		e = &APIError{Message: http.StatusText(resp.status)}
		if excerpt := excerpt(resp.body, 200); excerpt != "" {
			e.Message += ": " + excerpt
		}
	}
	e.StatusCode = resp.status
	if e.RequestID == "" {
		e.RequestID = resp.header.Get("X-Request-Id")
	}
	e.RetryAfter = parseRetryAfter(resp.header.Get("Retry-After"), time.Now())
	return e
}

// excerpt is the start of b as one line of valid text.
func excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
