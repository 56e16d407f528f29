package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// strictBinder is the echo.Binder of the API: the generated strict handlers
// call Bind with the operation's body type (a struct, from the document or
// a domain package's, bound by go-bindings.overlay.yaml) before calling
// server's method. echo's own binder decodes with encoding/json, which
// accepts unknown fields, names in the wrong case, duplicated names,
// trailing data and invalid UTF-8; this one refuses each with a 400 naming
// the problem (package strictjson), and refuses a body that is not JSON
// (415) or too large (413).
type strictBinder struct {
	// limit is the largest body read, in bytes; batchLimit that of a
	// batch of hooks.
	limit, batchLimit int64
}

// errNoBody is a request without a body. It wraps io.EOF, which the
// generated handlers take to mean "no body" for an operation whose body is
// optional; for the others it is a 400.
var errNoBody = &Error{
	Status: http.StatusBadRequest, Code: CodeInvalidRequest,
	Message: "malformed JSON: the request body is empty; send a JSON object", Cause: io.EOF,
}

func (b strictBinder) Bind(v any, c echo.Context) error {
	// The one body that is any JSON value, not an object of known fields:
	// an async answer's (async.go).
	if raw, ok := v.(*json.RawMessage); ok {
		return bindAnswer(raw, c)
	}
	r := c.Request()
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return errNoBody
	}
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := b.read(c, b.limitOf(v))
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return errNoBody
	}
	if err := strictjson.Decode(body, v); err != nil {
		return decodeError(err)
	}
	return nil
}

func requireJSON(r *http.Request) error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != echo.MIMEApplicationJSON {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	return nil
}

// limitOf is the body limit of the operation whose body v is.
func (b strictBinder) limitOf(v any) int64 {
	if _, ok := v.(*hook.BatchRequest); ok {
		return b.batchLimit
	}
	return b.limit
}

// read reads the body, refusing one over limit before reading it when its
// length is declared, and as soon as it passes the limit when it is not.
func (b strictBinder) read(c echo.Context, limit int64) ([]byte, error) {
	tooLarge := newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
		fmt.Sprintf("request body is larger than %d bytes", limit))
	r := c.Request()
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, tooLarge
	case err != nil:
		return nil, newError(http.StatusBadRequest, CodeInvalidRequest, "could not read the request body")
	}
	return body, nil
}

func decodeError(err error) *Error {
	var de *strictjson.Error
	if !errors.As(err, &de) {
		return newError(http.StatusBadRequest, CodeInvalidRequest, "invalid request body")
	}
	if de.Field == "" {
		return newError(http.StatusBadRequest, CodeInvalidRequest, de.Message)
	}
	return newError(http.StatusBadRequest, CodeInvalidRequest, de.Error(), Detail{Field: de.Field, Message: de.Message})
}
