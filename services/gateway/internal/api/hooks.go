package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// bodyOverhead is what a request body may add to the largest data payload:
// the other fields of the request, and the client's whitespace.
const bodyOverhead = 64 << 10

func (s *server) createHook(c echo.Context) error {
	if err := requireJSON(c.Request()); err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	n, err := s.parseHook(body)
	if err != nil {
		return err
	}
	projectID, _ := projectIDOf(c)
	created, usage, err := s.Hooks.Create(c.Request().Context(), projectID, n)
	var exhausted *quota.ExhaustedError
	switch {
	case errors.As(err, &exhausted):
		usage.SetHeaders(c.Response().Header(), s.Config.HeaderPrefix)
		c.Response().Header().Set("Retry-After", strconv.FormatInt(usage.RetryAfter(), 10))
		return newError(http.StatusTooManyRequests, CodeQuotaExhausted,
			fmt.Sprintf("hook quota exhausted for this billing period (%d of %d hooks, hard cap %d); it resets at %s",
				usage.Used, usage.Limit, usage.HardCap, usage.ResetsAt.UTC().Format(time.RFC3339)))
	case err != nil:
		return internal(err)
	}
	usage.SetHeaders(c.Response().Header(), s.Config.HeaderPrefix)
	return c.JSON(http.StatusCreated, envelope{Data: hook.ToView(created)})
}

func requireJSON(r *http.Request) error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	return nil
}

// readBody reads the body, refusing one too large to hold an acceptable
// payload before reading it when its length is declared, and as soon as it
// passes the limit when it is not.
func (s *server) readBody(c echo.Context) ([]byte, error) {
	limit := int64(s.Config.MaxDataBytes) + bodyOverhead
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

// parseHook decodes and validates a POST /v1/hooks body.
func (s *server) parseHook(body []byte) (hook.New, error) {
	var req hook.CreateRequest
	if err := strictjson.Decode(body, &req); err != nil {
		return hook.New{}, decodeError(err)
	}
	n, err := req.Validate(s.Config.MaxDataBytes)
	var (
		invalid  *hook.InvalidError
		tooLarge *hook.TooLargeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return hook.New{}, newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, tooLarge.Error(),
			Detail{Field: "data", Message: fmt.Sprintf("must be at most %d bytes", tooLarge.Max)})
	case errors.As(err, &invalid):
		details := make([]Detail, len(invalid.Problems))
		for i, p := range invalid.Problems {
			details[i] = Detail(p)
		}
		return hook.New{}, newError(http.StatusBadRequest, CodeInvalidRequest, "invalid request: "+invalid.Error(), details...)
	case err != nil:
		return hook.New{}, internal(err)
	}
	return n, nil
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

func (s *server) getHook(c echo.Context) error {
	projectID, _ := projectIDOf(c)
	id, err := hookID(c)
	if err != nil {
		return err
	}
	h, err := s.Hooks.Get(c.Request().Context(), projectID, id)
	if err != nil {
		return hookError(err)
	}
	return c.JSON(http.StatusOK, envelope{Data: hook.ToView(h)})
}

func (s *server) deleteHook(c echo.Context) error {
	projectID, _ := projectIDOf(c)
	id, err := hookID(c)
	if err != nil {
		return err
	}
	if err := s.Hooks.Delete(c.Request().Context(), projectID, id); err != nil {
		return hookError(err)
	}
	return c.JSON(http.StatusOK, envelope{Data: struct{}{}})
}

var errHookNotFound = newError(http.StatusNotFound, CodeNotFound, "hook not found")

// hookID reads the id from the path. A malformed id is a 404 like any id
// that names no hook of this project: there is nothing to find under it.
func hookID(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, errHookNotFound
	}
	return id, nil
}

func hookError(err error) error {
	if errors.Is(err, hook.ErrNotFound) {
		return errHookNotFound
	}
	return internal(err)
}
