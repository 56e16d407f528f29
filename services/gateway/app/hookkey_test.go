package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func byKey(key string) string {
	return "/v1/hooks/by-key?key=" + url.QueryEscape(key)
}

func TestAKeyReplacesItsPendingHookThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const key = "reminder/user 42"
	first := b.post(`{"path":"/first","data":{},"postIn":"1h","key":"reminder/user 42"}`)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	require.Equal(t, key, first.hook(t).Key)

	second := b.post(`{"path":"/second","data":{},"postIn":"2h","key":"reminder/user 42"}`)
	require.Equal(t, http.StatusCreated, second.status, string(second.body))
	require.NotEqual(t, first.hook(t).ID, second.hook(t).ID)
	b.do(http.MethodGet, "/v1/hooks/"+first.hook(t).ID, nil).requireError(t, http.StatusNotFound, "not_found")

	got := b.do(http.MethodGet, byKey(key), nil)
	require.Equal(t, http.StatusOK, got.status, string(got.body))
	require.Equal(t, second.hook(t), got.hook(t))

	deleted := b.do(http.MethodDelete, byKey(key), nil)
	require.Equal(t, http.StatusOK, deleted.status, string(deleted.body))
	require.JSONEq(t, `{"data":{}}`, string(deleted.body))
	b.do(http.MethodGet, byKey(key), nil).requireError(t, http.StatusNotFound, "not_found")
	b.do(http.MethodDelete, byKey(key), nil).requireError(t, http.StatusNotFound, "not_found")
}

func TestAClaimedHooksKeyIsA409NamingKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.post(`{"path":"/first","data":{},"postIn":"1h","key":"k"}`)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	_, err := b.tq.LeaseHookForTest(b.ctx, uuid.MustParse(first.hook(t).ID))
	require.NoError(t, err)

	e := b.post(`{"path":"/second","data":{},"postIn":"1h","key":"k"}`).requireError(t, http.StatusConflict, "conflict", "key")
	require.Contains(t, e.Error, first.hook(t).ID)
	got := b.do(http.MethodGet, byKey("k"), nil)
	require.Equal(t, first.hook(t).ID, got.hook(t).ID)
}

func TestHookKeyValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.post(`{"path":"/a","data":{},"postIn":"1h","key":""}`).requireError(t, http.StatusBadRequest, "invalid_request", "key")
	b.post(`{"path":"/a","data":{},"postIn":"1h","key":"`+strings.Repeat("k", 256)+`"}`).requireError(t, http.StatusBadRequest, "invalid_request", "key")
	b.post(`{"path":"/a","data":{},"postIn":"1h","key":"caf\u00e9"}`).requireError(t, http.StatusBadRequest, "invalid_request", "key")
	b.do(http.MethodPost, "/v1/hooks/batch", strings.NewReader(`{"hooks":[{"path":"/a","data":{},"postIn":"1h","key":"k"},{"path":"/b","data":{},"postIn":"1h","key":"k"}]}`)).
		requireError(t, http.StatusBadRequest, "invalid_request", "hooks[1].key")
	b.do(http.MethodGet, "/v1/hooks/by-key", nil).requireError(t, http.StatusBadRequest, "invalid_request", "key")
	b.do(http.MethodGet, byKey("tab\there"), nil).requireError(t, http.StatusBadRequest, "invalid_request", "key")
	b.do(http.MethodDelete, byKey(""), nil).requireError(t, http.StatusBadRequest, "invalid_request", "key")
}
