package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/asyncanswer"
)

// asyncRoutes is the prefix of the ack and nack URLs, which need no API
// key: their token is their credential (routeMiddleware).
const asyncRoutes = "/v1/async/"

// AsyncAnswerer applies a receiver's ack or nack.
type AsyncAnswerer interface {
	Apply(ctx context.Context, a asyncanswer.Answer) (string, error)
}

// AsyncDeps is what the ack and nack URLs need.
type AsyncDeps struct {
	Answers AsyncAnswerer
}

// asyncAnswers implements the Async answers operations.
type asyncAnswers struct {
	AsyncDeps
}

// AckHook acknowledges an async delivery (POST /v1/async/{hookId}/{lease}/{token}/ack).
func (s asyncAnswers) AckHook(ctx context.Context, req gen.AckHookRequestObject) (gen.AckHookResponseObject, error) {
	status, err := s.answer(ctx, asyncanswer.Ack, req.HookId, req.Lease, req.Token, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.AckHook200JSONResponse{AsyncAnsweredJSONResponse: answered(status)}, nil
}

// NackHook rejects an async delivery (POST /v1/async/{hookId}/{lease}/{token}/nack).
func (s asyncAnswers) NackHook(ctx context.Context, req gen.NackHookRequestObject) (gen.NackHookResponseObject, error) {
	status, err := s.answer(ctx, asyncanswer.Nack, req.HookId, req.Lease, req.Token, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.NackHook200JSONResponse{AsyncAnsweredJSONResponse: answered(status)}, nil
}

func answered(status string) gen.AsyncAnsweredJSONResponse {
	var out gen.AsyncAnswerResponse
	out.Data.Status = gen.AsyncAnswerResponseDataStatus(status)
	return gen.AsyncAnsweredJSONResponse{Body: out}
}

var errAnswerNotFound = newError(http.StatusNotFound, CodeNotFound, "no such hook, or this URL is not one Sundial sent")

func (s asyncAnswers) answer(ctx context.Context, kind asyncanswer.Kind, rawID string, lease int64, token string, body *json.RawMessage) (string, error) {
	if s.Answers == nil {
		return "", notImplemented("async answers")
	}
	id, err := uuid.Parse(rawID)
	if err != nil {
		return "", errAnswerNotFound
	}
	a := asyncanswer.Answer{Kind: kind, HookID: id, Lease: lease, Token: token}
	if body != nil {
		a.Body = *body
	}
	status, err := s.Answers.Apply(ctx, a)
	if err != nil {
		return "", answerError(err)
	}
	return status, nil
}

func answerError(err error) error {
	switch {
	case errors.Is(err, asyncanswer.ErrNotFound):
		return errAnswerNotFound
	case errors.Is(err, asyncanswer.ErrStale), errors.Is(err, asyncanswer.ErrNotAsync):
		return newError(http.StatusConflict, CodeConflict, err.Error())
	case errors.Is(err, asyncanswer.ErrExpired):
		return newError(http.StatusGone, CodeGone, err.Error())
	case errors.Is(err, asyncanswer.ErrInvalidBody):
		return invalid(Detail{Field: "body", Message: err.Error()})
	}
	return internal(err)
}

// bindAnswer reads the body of an ack or nack: any JSON value up to
// asyncanswer.MaxBodyBytes, or nothing (io.EOF, which the generated handler
// takes as no body). Receivers call these URLs from all kinds of clients,
// so a body without Content-Type is read as JSON; a Content-Type other
// than JSON is refused like everywhere else in the API.
func bindAnswer(raw *json.RawMessage, c echo.Context) error {
	r := c.Request()
	if r.Header.Get("Content-Type") != "" {
		if err := requireJSON(r); err != nil {
			return err
		}
	}
	tooLarge := newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
		fmt.Sprintf("request body is larger than %d bytes", asyncanswer.MaxBodyBytes),
		Detail{Field: "body", Message: fmt.Sprintf("must be at most %d bytes", asyncanswer.MaxBodyBytes)})
	if r.ContentLength > asyncanswer.MaxBodyBytes {
		return tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, asyncanswer.MaxBodyBytes))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return tooLarge
	case err != nil:
		return newError(http.StatusBadRequest, CodeInvalidRequest, "could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errNoBody
	}
	if !json.Valid(body) {
		return invalid(Detail{Field: "body", Message: "must be JSON (any JSON value), or empty"})
	}
	*raw = body
	return nil
}
