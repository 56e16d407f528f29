package app_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestCreateWithPostInUsesTheDatabaseClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.dbNow()
	res := b.post(`{"path":"/hooks/remind?user=42","data":{"user":{"id":42,"name":"Zoë"},"tags":["a","b"]},"postIn":"1h30m"}`)
	after := b.dbNow()
	require.Equal(t, http.StatusCreated, res.status, string(res.body))

	h := res.hook(t)
	id, err := uuid.Parse(h.ID)
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), id.Version())
	require.Equal(t, "/hooks/remind?user=42", h.Path)
	require.Equal(t, "hooks.example.com", h.Domain)
	require.JSONEq(t, `{"user":{"id":42,"name":"Zoë"},"tags":["a","b"]}`, string(h.Data))
	require.Equal(t, "pending", h.Status)
	require.Zero(t, h.Attempts)
	require.Zero(t, h.PostDurationSeconds)
	require.Nil(t, h.RetryOverride)

	postAt, err := time.Parse(time.RFC3339Nano, h.PostAt)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(h.PostAt, "Z"), h.PostAt)
	const in = 90 * time.Minute
	require.False(t, postAt.Before(before.Add(in)), "post_at %s is before the database's now %s + %s", postAt, before, in)
	require.False(t, postAt.After(after.Add(in)), "post_at %s is after the database's now %s + %s", postAt, after, in)

	stored := b.storedHook(h.ID)
	require.Equal(t, stored.PostAt, *stored.RunAt, "a new hook runs at its post_at")
	require.Equal(t, postAt, stored.PostAt.UTC())
	require.Nil(t, stored.RetryOverride)
	for _, ts := range []string{h.CreatedAt, h.UpdatedAt} {
		_, err := time.Parse(time.RFC3339Nano, ts)
		require.NoError(t, err)
		require.True(t, strings.HasSuffix(ts, "Z"), ts)
	}
}

func TestCreateWithPostAtStoresUTC(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.post(`{"path":"/a","data":{},"postAt":"2030-06-01T12:00:00.5+02:00"}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	h := res.hook(t)
	require.Equal(t, "2030-06-01T10:00:00.5Z", h.PostAt)
	stored := b.storedHook(h.ID)
	require.Equal(t, time.Date(2030, 6, 1, 10, 0, 0, 500_000_000, time.UTC), stored.PostAt.UTC())
	require.Equal(t, stored.PostAt, *stored.RunAt)
}

func TestCreateWithAPastPostAtIsDueNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.post(`{"path":"/a","data":{"k":"v"},"postAt":"2001-02-03T04:05:06Z"}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	h := res.hook(t)
	require.Equal(t, "2001-02-03T04:05:06Z", h.PostAt)
	require.Equal(t, "pending", h.Status)
	stored := b.storedHook(h.ID)
	require.False(t, stored.RunAt.After(b.dbNow()), "due by the database clock")
}

func TestCreateWithPostAtLocal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// 02:30 does not exist on 10 March 2030 in New York: it becomes 03:00 EDT.
	res := b.post(`{"path":"/a","data":{},"postAtLocal":"2030-03-10T02:30:00","timezone":"America/New_York"}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	h := res.hook(t)
	require.Equal(t, "2030-03-10T07:00:00Z", h.PostAt)
	// The hook keeps its wall time, for a newer tz database to resolve
	// again, and says which release resolved it.
	require.Equal(t, "2030-03-10T02:30:00", h.PostAtLocal)
	require.Equal(t, "America/New_York", h.Timezone)
	require.Equal(t, calendar.Current().Version, h.Tzdata)
	got := b.do(http.MethodGet, "/v1/hooks/"+h.ID, nil)
	require.Equal(t, http.StatusOK, got.status, string(got.body))
	require.Equal(t, h, got.hook(t))
	// 01:30 happens twice on 3 November 2030: the earlier one, in EDT.
	res = b.post(`{"path":"/a","data":{},"postAtLocal":"2030-11-03T01:30:00","timezone":"America/New_York"}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "2030-11-03T05:30:00Z", res.hook(t).PostAt)
	// A hook scheduled by instant has no wall time.
	res = b.post(`{"path":"/a","data":{},"postAt":"2030-11-03T05:30:00Z"}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Empty(t, res.hook(t).PostAtLocal+res.hook(t).Timezone+res.hook(t).Tzdata)
}

func TestCreateStoresTheRetryOverrideForTheScheduler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.post(`{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":3,"delaySecs":10,"strategy":"exponential","jitter":true}}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	h := res.hook(t)
	want := `{"minRetries":3,"delaySecs":10,"strategy":"exponential","backoffFactor":2.0,"jitter":true}`
	require.JSONEq(t, want, string(h.RetryOverride))
	require.JSONEq(t, want, string(b.storedHook(h.ID).RetryOverride))
}

func TestCreateAcceptsACharsetParameter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.post(`{"path":"/a","data":{},"postIn":"1s"}`, header("Content-Type", "application/json; charset=utf-8"))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := "/" + strings.Repeat("a", 2048)
	tests := []struct {
		name   string
		body   string
		fields []string
	}{
		{"path missing", `{"data":{},"postIn":"1m"}`, []string{"path"}},
		{"path empty", `{"path":"","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path relative", `{"path":"hooks","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with scheme", `{"path":"https://evil.example/x","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path naming a host", `{"path":"//evil.example/x","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with ..", `{"path":"/a/../b","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with encoded ..", `{"path":"/a/%2e%2E/b","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path ending in ..", `{"path":"/a/..","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with a space", `{"path":"/a b","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with a tab", `{"path":"/a\tb","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with a NUL", `{"path":"/a\u0000","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with a non-breaking space", `{"path":"/a\u00a0b","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with a fragment", `{"path":"/a#b","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path with bad escape", `{"path":"/a%zz","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path too long", `{"path":"` + long + `","data":{},"postIn":"1m"}`, []string{"path"}},
		{"path not a string", `{"path":5,"data":{},"postIn":"1m"}`, []string{"path"}},
		{"data missing", `{"path":"/a","postIn":"1m"}`, []string{"data"}},
		{"data null", `{"path":"/a","data":null,"postIn":"1m"}`, []string{"data"}},
		{"data an array", `{"path":"/a","data":[1],"postIn":"1m"}`, []string{"data"}},
		{"data a string", `{"path":"/a","data":"x","postIn":"1m"}`, []string{"data"}},
		{"no schedule", `{"path":"/a","data":{}}`, []string{"postAt"}},
		{"postAt and postIn", `{"path":"/a","data":{},"postAt":"2030-01-01T00:00:00Z","postIn":"1m"}`, []string{"postAt", "postIn"}},
		{"postAt and postAtLocal", `{"path":"/a","data":{},"postAt":"2030-01-01T00:00:00Z","postAtLocal":"2030-01-01T00:00:00","timezone":"UTC"}`, []string{"postAt", "postAtLocal"}},
		{"postAt malformed", `{"path":"/a","data":{},"postAt":"tomorrow"}`, []string{"postAt"}},
		{"postAt without offset", `{"path":"/a","data":{},"postAt":"2030-01-01T00:00:00"}`, []string{"postAt"}},
		{"postAt impossible date", `{"path":"/a","data":{},"postAt":"2030-02-30T00:00:00Z"}`, []string{"postAt"}},
		{"postIn empty", `{"path":"/a","data":{},"postIn":""}`, []string{"postIn"}},
		{"postIn zero", `{"path":"/a","data":{},"postIn":"0s"}`, []string{"postIn"}},
		{"postIn over a year", `{"path":"/a","data":{},"postIn":"365d1s"}`, []string{"postIn"}},
		{"postIn units out of order", `{"path":"/a","data":{},"postIn":"1h1d"}`, []string{"postIn"}},
		{"postIn a number", `{"path":"/a","data":{},"postIn":60}`, []string{"postIn"}},
		{"postAtLocal without timezone", `{"path":"/a","data":{},"postAtLocal":"2030-01-01T09:00:00"}`, []string{"timezone"}},
		{"timezone without postAtLocal", `{"path":"/a","data":{},"postIn":"1m","timezone":"Europe/Paris"}`, []string{"timezone"}},
		{"unknown timezone", `{"path":"/a","data":{},"postAtLocal":"2030-01-01T09:00:00","timezone":"Mars/Olympus_Mons"}`, []string{"timezone"}},
		{"Local is not a zone", `{"path":"/a","data":{},"postAtLocal":"2030-01-01T09:00:00","timezone":"Local"}`, []string{"timezone"}},
		{"postAtLocal with offset", `{"path":"/a","data":{},"postAtLocal":"2030-01-01T09:00:00Z","timezone":"UTC"}`, []string{"postAtLocal"}},
		{"postAtLocal impossible date", `{"path":"/a","data":{},"postAtLocal":"2030-13-01T09:00:00","timezone":"UTC"}`, []string{"postAtLocal"}},
		{"minRetries missing", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"delaySecs":5,"strategy":"fixed"}}`, []string{"retryOverride.minRetries"}},
		{"minRetries 0", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":0,"delaySecs":5,"strategy":"fixed"}}`, []string{"retryOverride.minRetries"}},
		{"minRetries 16", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":16,"delaySecs":5,"strategy":"fixed"}}`, []string{"retryOverride.minRetries"}},
		{"minRetries a string", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":"3","delaySecs":5,"strategy":"fixed"}}`, []string{"retryOverride.minRetries"}},
		{"delaySecs missing", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"strategy":"fixed"}}`, []string{"retryOverride.delaySecs"}},
		{"delaySecs 4", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":4,"strategy":"fixed"}}`, []string{"retryOverride.delaySecs"}},
		{"delaySecs 61", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":61,"strategy":"fixed"}}`, []string{"retryOverride.delaySecs"}},
		{"delaySecs a fraction", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5.5,"strategy":"fixed"}}`, []string{"retryOverride.delaySecs"}},
		{"strategy missing", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5}}`, []string{"retryOverride.strategy"}},
		{"strategy unknown", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5,"strategy":"linear"}}`, []string{"retryOverride.strategy"}},
		{"backoffFactor 1.0", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5,"strategy":"exponential","backoffFactor":1.0}}`, []string{"retryOverride.backoffFactor"}},
		{"backoffFactor 4.1", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5,"strategy":"exponential","backoffFactor":4.1}}`, []string{"retryOverride.backoffFactor"}},
		{"maxDelaySecs 59", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5,"strategy":"exponential","maxDelaySecs":59}}`, []string{"retryOverride.maxDelaySecs"}},
		{"maxDelaySecs 3601", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5,"strategy":"exponential","maxDelaySecs":3601}}`, []string{"retryOverride.maxDelaySecs"}},
		{"jitter a string", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":1,"delaySecs":5,"strategy":"fixed","jitter":"yes"}}`, []string{"retryOverride.jitter"}},
		{"retryOverride empty", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{}}`, []string{"retryOverride.minRetries", "retryOverride.delaySecs", "retryOverride.strategy"}},
		{"several problems at once", `{"path":"a","data":[],"postIn":"0s"}`, []string{"path", "data", "postIn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.post(tt.body)
			res.requireError(t, http.StatusBadRequest, "invalid_request", tt.fields...)
		})
	}
}

func TestCreateDecodesStrictly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name  string
		body  string
		field string // "" when the body as a whole is at fault
		says  string
	}{
		{"unknown field", `{"path":"/a","data":{},"postIn":"1m","colour":"red"}`, "colour", "unknown field"},
		{"field name in the wrong case", `{"path":"/a","data":{},"PostIn":"1m"}`, "PostIn", `did you mean \"postIn\"`},
		{"nested field name in the wrong case", `{"path":"/a","data":{},"postIn":"1m","retryOverride":{"MinRetries":1,"delaySecs":5,"strategy":"fixed"}}`, "retryOverride.MinRetries", "minRetries"},
		{"duplicated field", `{"path":"/a","data":{},"postIn":"1m","path":"/b"}`, "path", "duplicate"},
		{"duplicated key in data", `{"path":"/a","data":{"k":1,"k":2},"postIn":"1m"}`, "data.k", "duplicate"},
		{"trailing data", `{"path":"/a","data":{},"postIn":"1m"} {"again":true}`, "", "after the JSON object"},
		{"invalid UTF-8", "{\"path\":\"/a\",\"data\":{\"name\":\"Zo\xeb\"},\"postIn\":\"1m\"}", "data.name", "UTF-8"},
		{"not an object", `[{"path":"/a"}]`, "", "must be a JSON object"},
		{"malformed", `{"path":"/a",`, "", "malformed JSON"},
		{"empty", ``, "", "malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.post(tt.body)
			var e errorBody
			if tt.field == "" {
				e = res.requireError(t, http.StatusBadRequest, "invalid_request")
			} else {
				e = res.requireError(t, http.StatusBadRequest, "invalid_request", tt.field)
			}
			require.Contains(t, string(res.body), tt.says)
			require.NotEmpty(t, e.Error)
		})
	}
}

func TestCreateRequiresJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"path":"/a","data":{},"postIn":"1m"}`
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "not a media type;;"} {
		res := b.post(body, header("Content-Type", ct))
		res.requireError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
}

func TestCreateRefusesLargeBodies(t *testing.T) {
	t.Parallel()
	const maxData = 1024
	b := setup(t, func(c *app.Config) { c.MaxDataBytes = maxData })
	// exactly n bytes as stored: compacted, and the space jsonb puts after the colon
	data := func(n int) string { return `{"s":"` + strings.Repeat("x", n-9) + `"}` }

	res := b.post(`{"path":"/a","postIn":"1m","data":` + data(maxData) + `}`)
	require.Equal(t, http.StatusCreated, res.status, "data of exactly the maximum is accepted")

	res = b.post(`{"path":"/a","postIn":"1m","data":` + data(maxData+1) + `}`)
	res.requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "data")

	// Indentation does not count against the data limit, only against the body's.
	indented := `{"path":"/a","postIn":"1m","data":{"s":` + strings.Repeat(" ", 10_000) + `"x"}}`
	require.Equal(t, http.StatusCreated, b.post(indented).status)

	huge := `{"path":"/a","postIn":"1m","data":` + data(maxData+64<<10+1) + `}`
	res = b.post(huge)
	res.requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large")

	// Without a Content-Length (chunked), the body is cut off at the limit.
	res = b.do(http.MethodPost, "/v1/hooks", struct{ *strings.Reader }{strings.NewReader(huge)})
	res.requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large")
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"path":"/a","data":{},"postIn":"1m"}`
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	wrongSecret := b.creds.APIKey[:13] + other.APIKey[13:]

	tests := []struct {
		name string
		mods []func(*http.Request)
		says string
	}{
		{"missing key", []func(*http.Request){header("X-API-Key", "")}, "X-API-Key"},
		{"malformed key", []func(*http.Request){header("X-API-Key", "hunter2")}, "invalid API key"},
		{"right prefix, wrong secret", []func(*http.Request){header("X-API-Key", wrongSecret)}, "invalid API key"},
		{"bearer token", []func(*http.Request){header("X-API-Key", ""), header("Authorization", "Bearer "+b.creds.APIKey)}, "send the API key in the X-API-Key header"},
		{"lower-case bearer", []func(*http.Request){header("X-API-Key", ""), header("Authorization", "bearer "+b.creds.APIKey)}, "X-API-Key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				path := "/v1/hooks"
				if method != http.MethodPost {
					path += "/" + uuid.NewString()
				}
				res := b.do(method, path, strings.NewReader(body), tt.mods...)
				e := res.requireError(t, http.StatusUnauthorized, "unauthorized")
				require.Contains(t, e.Error, tt.says)
			}
		})
	}
}

// The key is revoked in the database directly, which a gateway caching
// keys would see only after its cache's TTL: this one caches nothing.
func TestRevokedKeyIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) { c.KeyCacheTTL = 0 })
	body := `{"path":"/a","data":{},"postIn":"1m"}`
	require.Equal(t, http.StatusCreated, b.post(body).status)
	revoked, err := apiKeyRevoke(b)
	require.NoError(t, err)
	require.True(t, revoked)
	e := b.post(body).requireError(t, http.StatusUnauthorized, "unauthorized")
	require.Contains(t, e.Error, "revoked")
}

func TestGetAndDeleteOwnHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.post(`{"path":"/a","data":{"n":1},"postIn":"1h","retryOverride":{"minRetries":2,"delaySecs":5,"strategy":"fixed"}}`)
	require.Equal(t, http.StatusCreated, created.status)
	h := created.hook(t)

	got := b.do(http.MethodGet, "/v1/hooks/"+h.ID, nil)
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, h, got.hook(t))

	deleted := b.do(http.MethodDelete, "/v1/hooks/"+h.ID, nil)
	require.Equal(t, http.StatusOK, deleted.status)
	require.JSONEq(t, `{"data":{}}`, string(deleted.body))

	b.do(http.MethodGet, "/v1/hooks/"+h.ID, nil).requireError(t, http.StatusNotFound, "not_found")
	b.do(http.MethodDelete, "/v1/hooks/"+h.ID, nil).requireError(t, http.StatusNotFound, "not_found")
}

func TestHooksOfAnotherProjectAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.post(`{"path":"/a","data":{},"postIn":"1h"}`).hook(t)
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	asOther := header("X-API-Key", other.APIKey)

	b.do(http.MethodGet, "/v1/hooks/"+h.ID, nil, asOther).requireError(t, http.StatusNotFound, "not_found")
	b.do(http.MethodDelete, "/v1/hooks/"+h.ID, nil, asOther).requireError(t, http.StatusNotFound, "not_found")
	require.Equal(t, http.StatusOK, b.do(http.MethodGet, "/v1/hooks/"+h.ID, nil).status, "the owner still has it")
}

func TestMalformedAndUnknownIDsAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"not-a-uuid", "123", uuid.NewString(), strings.Repeat("z", 36)} {
		b.do(http.MethodGet, "/v1/hooks/"+id, nil).requireError(t, http.StatusNotFound, "not_found")
		b.do(http.MethodDelete, "/v1/hooks/"+id, nil).requireError(t, http.StatusNotFound, "not_found")
	}
}

func TestQuotaHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"path":"/a","data":{},"postIn":"1m"}`
	now := b.dbNow().UTC()
	resets := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for i := 1; i <= 2; i++ {
		res := b.post(body)
		require.Equal(t, http.StatusCreated, res.status)
		require.Equal(t, "100000", res.header.Get("Sundial-HookQuota-Limit"))
		require.Equal(t, strconv.Itoa(i), res.header.Get("Sundial-HookQuota-Usage"))
		require.Equal(t, strconv.Itoa(100000-i), res.header.Get("Sundial-HookQuota-Remaining"))
		require.Equal(t, resets, res.header.Get("Sundial-HookQuota-Resets-At"))
	}
}

func TestQuotaHeadersUseTheConfiguredPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) { c.HeaderPrefix = "Acme" })
	res := b.post(`{"path":"/a","data":{},"postIn":"1m"}`)
	require.Equal(t, http.StatusCreated, res.status)
	require.Equal(t, "1", res.header.Get("Acme-HookQuota-Usage"))
	require.Empty(t, res.header.Get("Sundial-HookQuota-Usage"))
}

func setPlan(b bundle, quota int64, hardCapPercent int32) {
	b.t.Helper()
	err := project.SetPlan(b.ctx, b.q, uuid.MustParse(b.creds.ProjectID), project.Plan{Quota: quota, HardCapPercent: hardCapPercent})
	require.NoError(b.t, err)
}

func TestQuotaIsExhaustedAtTheHardCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setPlan(b, 2, 150) // hard cap: 3 hooks
	body := `{"path":"/a","data":{},"postIn":"1m"}`
	for i, remaining := range []string{"1", "0", "0"} {
		res := b.post(body)
		require.Equal(t, http.StatusCreated, res.status, "hook %d", i+1)
		require.Equal(t, remaining, res.header.Get("Sundial-HookQuota-Remaining"), "never negative")
	}
	for range 2 {
		// The answer's Retry-After counts from the database clock while the
		// request ran: between these two readings.
		before := b.dbNow()
		res := b.post(body)
		after := b.dbNow()
		e := res.requireError(t, http.StatusTooManyRequests, "quota_exhausted")
		require.Contains(t, e.Error, "quota")
		require.Equal(t, "3", res.header.Get("Sundial-HookQuota-Usage"), "the refused hook is not counted")
		require.Equal(t, "0", res.header.Get("Sundial-HookQuota-Remaining"))
		retryAfter, err := strconv.Atoi(res.header.Get("Retry-After"))
		require.NoError(t, err)
		resetsAt, err := time.Parse(time.RFC3339, res.header.Get("Sundial-HookQuota-Resets-At"))
		require.NoError(t, err)
		require.Positive(t, retryAfter)
		require.LessOrEqual(t, retryAfter, int(math.Ceil(resetsAt.Sub(before).Seconds())), "rounded up from the clock at the request")
		require.GreaterOrEqual(t, retryAfter, int(resetsAt.Sub(after).Seconds()))
	}
}

func TestQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setPlan(b, 5, 100)
	statuses := make(chan int, 12)
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			statuses <- b.post(`{"path":"/a","data":{},"postIn":"1m"}`).status
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 5, http.StatusTooManyRequests: 7}, count)
}

func TestEveryResponseHasItsOwnRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := map[string]bool{}
	responses := []response{
		b.post(`{"path":"/a","data":{},"postIn":"1m"}`),
		b.post(`{"path":"/a"}`),
		b.do(http.MethodGet, "/healthz", nil),
		b.do(http.MethodGet, "/nowhere", nil),
		b.do(http.MethodPut, "/v1/hooks", nil),
		b.do(http.MethodGet, "/v1/hooks/x", nil, header("X-API-Key", "")),
	}
	for _, res := range responses {
		id := res.header.Get("X-Request-Id")
		require.False(t, ids[id], "request ids are unique")
		ids[id] = true
	}
	require.Contains(t, b.logs.String(), fmt.Sprintf(`"request_id":%q`, responses[0].header.Get("X-Request-Id")))
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do(http.MethodGet, "/nowhere", nil).requireError(t, http.StatusNotFound, "not_found")
	b.do(http.MethodGet, "/v1/nowhere", nil).requireError(t, http.StatusNotFound, "not_found")
	b.do(http.MethodPost, "/v2/hooks", strings.NewReader(`{}`)).requireError(t, http.StatusNotFound, "not_found")

	res := b.do(http.MethodPut, "/v1/hooks/"+uuid.NewString(), strings.NewReader(`{}`))
	res.requireError(t, http.StatusMethodNotAllowed, "method_not_allowed")
	require.Contains(t, res.header.Get("Allow"), http.MethodGet)
	b.do(http.MethodPut, "/v1/hooks", nil).requireError(t, http.StatusMethodNotAllowed, "method_not_allowed")
	b.do(http.MethodPost, "/healthz", nil).requireError(t, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.post(`{"path":"/a","data":{},"postIn":"1m"}`)
	require.Equal(t, http.StatusCreated, res.status)
	id := res.header.Get("X-Request-Id")
	var line map[string]any
	for _, l := range strings.Split(b.logs.String(), "\n") {
		if strings.Contains(l, id) {
			require.Nil(t, line, "one line per request")
			require.NoError(t, json.Unmarshal([]byte(l), &line))
		}
	}
	require.Equal(t, "request", line["msg"])
	require.Equal(t, "POST", line["method"])
	require.Equal(t, "/v1/hooks", line["route"])
	require.InDelta(t, 201, line["status"], 0)
	require.Equal(t, b.creds.ProjectID, line["project_id"])
	require.Contains(t, line, "duration_ms")
}

// TestCreateRefusesDataPostgreSQLCannotStore checks that valid JSON which
// jsonb cannot hold is the client's to fix (400, naming the member of data
// at fault), not a failed insert (500).
func TestCreateRefusesDataPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name  string
		body  string
		field string
		says  string
	}{
		{"NUL escape", `{"path":"/a","data":{"s":"a\u0000b"},"postIn":"1m"}`, "data.s", `\\u0000`},
		{"lone high surrogate", `{"path":"/a","data":{"s":"\ud800"},"postIn":"1m"}`, "data.s", "surrogate"},
		{"high surrogate then text", `{"path":"/a","data":{"s":"\ud800x"},"postIn":"1m"}`, "data.s", "surrogate"},
		{"lone low surrogate", `{"path":"/a","data":{"s":"\udc00"},"postIn":"1m"}`, "data.s", "surrogate"},
		{"nested in an array", `{"path":"/a","data":{"list":[1,"\ud800"]},"postIn":"1m"}`, "data.list[1]", "surrogate"},
		{"number beyond numeric", `{"path":"/a","data":{"n":1e200000},"postIn":"1m"}`, "data.n", "too large"},
		{"negative number beyond numeric", `{"path":"/a","data":{"n":-1e200000},"postIn":"1m"}`, "data.n", "too large"},
		{"number too precise", `{"path":"/a","data":{"n":1e-20000},"postIn":"1m"}`, "data.n", "too precise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.post(tt.body)
			res.requireError(t, http.StatusBadRequest, "invalid_request", tt.field)
			require.Contains(t, string(res.body), tt.says)
		})
	}
	// A surrogate pair is one character and is stored as sent.
	res := b.post(`{"path":"/a","data":{"s":"\ud83d\ude00","n":1e100},"postIn":"1m"}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.JSONEq(t, `{"s":"😀","n":1e100}`, string(res.hook(t).Data))
}
