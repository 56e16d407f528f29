package api

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
)

func bind(t *testing.T, contentType, body string, v any) error {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/signing-keys/rotate", r)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	c := echo.New().NewContext(req, httptest.NewRecorder())
	return strictBinder{limit: 64}.Bind(v, c)
}

func requireAPIError(t *testing.T, err error, status int, code, field string) {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, status, e.Status)
	require.Equal(t, code, e.Code)
	if field == "" {
		require.Empty(t, e.Details)
		return
	}
	require.Len(t, e.Details, 1)
	require.Equal(t, field, e.Details[0].Field)
}

func TestStrictBinder(t *testing.T) {
	t.Parallel()
	var body gen.RotateSigningKeyRequest

	require.NoError(t, bind(t, "application/json; charset=utf-8", `{"gracePeriodSecs":3600}`, &body))
	require.Equal(t, 3600, *body.GracePeriodSecs)

	err := bind(t, "", "", &body)
	require.ErrorIs(t, err, io.EOF, "no body at all: an optional body is absent")
	requireAPIError(t, err, http.StatusBadRequest, CodeInvalidRequest, "")
	require.ErrorIs(t, bind(t, "application/json", "", &body), io.EOF)

	requireAPIError(t, bind(t, "text/plain", `{}`, &body), http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "")
	requireAPIError(t, bind(t, "application/json", `{"gracePeriodSecs":1,"colour":"red"}`, &body),
		http.StatusBadRequest, CodeInvalidRequest, "colour")
	requireAPIError(t, bind(t, "application/json", `{"GracePeriodSecs":1}`, &body),
		http.StatusBadRequest, CodeInvalidRequest, "GracePeriodSecs")
	requireAPIError(t, bind(t, "application/json", `{"gracePeriodSecs":"1"}`, &body),
		http.StatusBadRequest, CodeInvalidRequest, "gracePeriodSecs")
	requireAPIError(t, bind(t, "application/json", `{} {}`, &body), http.StatusBadRequest, CodeInvalidRequest, "")
	requireAPIError(t, bind(t, "application/json", `{"gracePeriodSecs":`+strings.Repeat("1", 100)+`}`, &body),
		http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "")
}

func TestParameterErrorsNameTheParameter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		message, field, says string
	}{
		{`Invalid format for parameter limit: error binding string parameter: strconv.ParseInt: parsing "x": invalid syntax`, "limit", "must be a number"},
		{`Invalid format for parameter postAtBefore: error binding string parameter: parsing time "x" as "2006-01-02T15:04:05Z07:00"`, "postAtBefore", "RFC 3339"},
		{`Query argument cursor is required, but not found`, "cursor", "is required"},
		{`Expected one value for Idempotency-Key, got 2`, "Idempotency-Key", "once"},
	}
	for _, tt := range tests {
		e := asError(echo.NewHTTPError(http.StatusBadRequest, tt.message))
		require.Equal(t, http.StatusBadRequest, e.Status)
		require.Equal(t, CodeInvalidRequest, e.Code)
		require.Equal(t, []Detail{{Field: tt.field, Message: e.Details[0].Message}}, e.Details)
		require.Contains(t, e.Details[0].Message, tt.says)
		require.Contains(t, e.Message, tt.field)
	}
	e := asError(echo.NewHTTPError(http.StatusBadRequest, "something else"))
	require.Equal(t, CodeInvalidRequest, e.Code)
	require.Empty(t, e.Details)
}
