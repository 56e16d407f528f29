package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// apiKeyJSON is the ApiKey resource; key is only in a creation's answer.
type apiKeyJSON struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Prefix     string `json:"prefix"`
	CreatedAt  string `json:"createdAt"`
	LastUsedAt string `json:"lastUsedAt"`
	RevokedAt  string `json:"revokedAt"`
	Key        string `json:"key"`
}

// signingKeyJSON is the SigningKey resource.
type signingKeyJSON struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Key   string `json:"key"`
	// StandardSecret is the key as Standard Webhooks receivers take it.
	StandardSecret string `json:"standardSecret"`
	CreatedAt      string `json:"createdAt"`
	ExpiresAt      string `json:"expiresAt"`
}

func data[T any](t *testing.T, r response, status int) T {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	return decodeStrict[struct {
		Data T `json:"data"`
	}](t, r.body).Data
}

// as sends the request with key instead of the project's own.
func as(key string) func(*http.Request) { return header("X-API-Key", key) }

func (b bundle) apiKeys(mods ...func(*http.Request)) []apiKeyJSON {
	b.t.Helper()
	return data[[]apiKeyJSON](b.t, b.do(http.MethodGet, "/v1/api-keys", nil, mods...), http.StatusOK)
}

func (b bundle) createAPIKey(body string, mods ...func(*http.Request)) apiKeyJSON {
	b.t.Helper()
	return data[apiKeyJSON](b.t, b.do(http.MethodPost, "/v1/api-keys", strings.NewReader(body), mods...), http.StatusCreated)
}

func (b bundle) signingKeys(mods ...func(*http.Request)) []signingKeyJSON {
	b.t.Helper()
	return data[[]signingKeyJSON](b.t, b.do(http.MethodGet, "/v1/signing-keys", nil, mods...), http.StatusOK)
}

func (b bundle) requireDone(r response) {
	b.t.Helper()
	require.Equal(b.t, http.StatusOK, r.status, string(r.body))
	require.JSONEq(b.t, `{"data":{}}`, string(r.body))
}

func TestAPIKeysCreateListAndRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.apiKeys()
	require.Len(t, first, 1)
	require.True(t, strings.HasPrefix(b.creds.APIKey, first[0].Prefix+"_"))
	// Its use is recorded beside the request, not before the answer.
	require.Eventually(t, func() bool { return b.apiKeys()[0].LastUsedAt != "" }, 10*time.Second, 10*time.Millisecond)

	created := b.createAPIKey(`{"name":"deploy bot"}`)
	require.Equal(t, "deploy bot", created.Name)
	require.True(t, strings.HasPrefix(created.Key, created.Prefix+"_"))
	require.Empty(t, created.RevokedAt)

	keys := b.apiKeys(as(created.Key))
	require.Len(t, keys, 2, "the new key works")
	require.Equal(t, created.ID, keys[1].ID)
	for _, k := range keys {
		require.Empty(t, k.Key, "a list never shows a key")
	}

	// A key may revoke itself; its very next request is refused.
	b.requireDone(b.do(http.MethodDelete, "/v1/api-keys/"+first[0].ID, nil))
	b.do(http.MethodGet, "/v1/api-keys", nil).requireError(t, http.StatusUnauthorized, "unauthorized")
	keys = b.apiKeys(as(created.Key))
	require.NotEmpty(t, keys[0].RevokedAt)
	b.requireDone(b.do(http.MethodDelete, "/v1/api-keys/"+first[0].ID, nil, as(created.Key)))

	// The last usable key stays.
	b.do(http.MethodDelete, "/v1/api-keys/"+created.ID, nil, as(created.Key)).
		requireError(t, http.StatusConflict, "conflict")
}

// With the longest cache, a key revoked through the API is refused at once
// by this gateway, although it was cached a moment before.
func TestRevokingThroughTheAPIBeatsTheKeyCache(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) { c.KeyCacheTTL = 10 * time.Second })
	second := b.createAPIKey(`{"name":"second"}`)
	require.Len(t, b.apiKeys(as(second.Key)), 2, "the second key is now cached")
	require.Len(t, b.apiKeys(as(second.Key)), 2)

	b.requireDone(b.do(http.MethodDelete, "/v1/api-keys/"+second.ID, nil))
	e := b.do(http.MethodGet, "/v1/api-keys", nil, as(second.Key)).requireError(t, http.StatusUnauthorized, "unauthorized")
	require.Contains(t, e.Error, "revoked")
	require.Len(t, b.apiKeys(), 2, "the first key still works")

	// A key may revoke itself, cached as it is.
	third := b.createAPIKey(`{"name":"third"}`)
	b.requireDone(b.do(http.MethodDelete, "/v1/api-keys/"+third.ID, nil, as(third.Key)))
	b.do(http.MethodGet, "/v1/api-keys", nil, as(third.Key)).requireError(t, http.StatusUnauthorized, "unauthorized")
}

func TestCreateAPIKeyNameRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Empty(t, b.createAPIKey(`{}`).Name)
	require.Equal(t, "ci", b.createAPIKey(`{"name":"  ci  "}`).Name)
	body := func(name string) *strings.Reader { return strings.NewReader(`{"name":"` + name + `"}`) }
	b.do(http.MethodPost, "/v1/api-keys", body(strings.Repeat("n", 101))).
		requireError(t, http.StatusBadRequest, "invalid_request", "name")
	b.do(http.MethodPost, "/v1/api-keys", body(`tab\there`)).
		requireError(t, http.StatusBadRequest, "invalid_request", "name")
	b.do(http.MethodPost, "/v1/api-keys", strings.NewReader(`{"Name":"x"}`)).
		requireError(t, http.StatusBadRequest, "invalid_request", "Name")
}

func TestRevokeUnknownAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"019a0000-0000-7000-8000-000000000000", "not-a-uuid"} {
		b.do(http.MethodDelete, "/v1/api-keys/"+id, nil).requireError(t, http.StatusNotFound, "not_found")
		b.do(http.MethodDelete, "/v1/signing-keys/"+id, nil).requireError(t, http.StatusNotFound, "not_found")
	}
}

func TestSigningKeysRotateAndRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys := b.signingKeys()
	require.Len(t, keys, 1)
	original := keys[0]
	require.Equal(t, "active", original.State)
	require.Equal(t, b.creds.SigningKey, original.Key)
	require.Empty(t, original.ExpiresAt)

	before := b.dbNow()
	rotated := data[[]signingKeyJSON](t, b.do(http.MethodPost, "/v1/signing-keys/rotate", strings.NewReader(`{"gracePeriodSecs":3600}`)), http.StatusCreated)
	require.Len(t, rotated, 2)
	require.Equal(t, "active", rotated[0].State)
	require.NotEqual(t, original.Key, rotated[0].Key)
	require.Equal(t, "retiring", rotated[1].State)
	require.Equal(t, original.ID, rotated[1].ID)
	expires, err := time.Parse(time.RFC3339Nano, rotated[1].ExpiresAt)
	require.NoError(t, err)
	require.WithinRange(t, expires, before.Add(time.Hour), b.dbNow().Add(time.Hour))
	require.Equal(t, rotated, b.signingKeys())

	b.do(http.MethodDelete, "/v1/signing-keys/"+rotated[0].ID, nil).requireError(t, http.StatusConflict, "conflict")
	b.requireDone(b.do(http.MethodDelete, "/v1/signing-keys/"+rotated[1].ID, nil))
	require.Equal(t, rotated[:1], b.signingKeys())
	b.do(http.MethodDelete, "/v1/signing-keys/"+rotated[1].ID, nil).requireError(t, http.StatusNotFound, "not_found")
}

func TestRotateWithoutABodyUsesTheDefaultGrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.dbNow()
	req := func(body string) response {
		if body == "" {
			return b.do(http.MethodPost, "/v1/signing-keys/rotate", nil)
		}
		return b.do(http.MethodPost, "/v1/signing-keys/rotate", strings.NewReader(body))
	}
	rotated := data[[]signingKeyJSON](t, req(""), http.StatusCreated)
	expires, err := time.Parse(time.RFC3339Nano, rotated[1].ExpiresAt)
	require.NoError(t, err)
	require.WithinRange(t, expires, before.Add(24*time.Hour), b.dbNow().Add(24*time.Hour))

	// Rotating again drops the older retiring key: one retiring key at a time.
	again := data[[]signingKeyJSON](t, req(`{}`), http.StatusCreated)
	require.Equal(t, rotated[0].ID, again[1].ID)
	require.Len(t, b.signingKeys(), 2)

	for _, bad := range []string{`{"gracePeriodSecs":3599}`, `{"gracePeriodSecs":604801}`} {
		req(bad).requireError(t, http.StatusBadRequest, "invalid_request", "gracePeriodSecs")
	}
	req(`{"gracePeriod":3600}`).requireError(t, http.StatusBadRequest, "invalid_request", "gracePeriod")
	require.Equal(t, again, b.signingKeys(), "refused rotations changed nothing")
}

// A second project's key sees only its own keys and cannot touch the
// first project's: their ids answer 404, as unknown ids do.
func TestKeysOfAnotherProjectAreInvisible(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := app.CreateProject(b.ctx, app.Database{URL: b.dbURL, SecretKeys: secrettest.Keys}, "Other", "other.example.com")
	require.NoError(t, err)
	mine := b.apiKeys()
	mySigning := b.signingKeys()
	rotated := data[[]signingKeyJSON](t, b.do(http.MethodPost, "/v1/signing-keys/rotate", nil), http.StatusCreated)
	b.createAPIKey(`{"name":"second"}`) // so that revoking would not be refused as the last key

	theirs := b.apiKeys(as(other.APIKey))
	require.Len(t, theirs, 1)
	require.NotEqual(t, mine[0].ID, theirs[0].ID)
	theirSigning := b.signingKeys(as(other.APIKey))
	require.Len(t, theirSigning, 1)
	require.Equal(t, other.SigningKey, theirSigning[0].Key)

	b.do(http.MethodDelete, "/v1/api-keys/"+mine[0].ID, nil, as(other.APIKey)).
		requireError(t, http.StatusNotFound, "not_found")
	for _, k := range append(mySigning, rotated...) {
		b.do(http.MethodDelete, "/v1/signing-keys/"+k.ID, nil, as(other.APIKey)).
			requireError(t, http.StatusNotFound, "not_found")
	}
	require.Len(t, b.apiKeys(), 2, "the first project's keys still work")
	require.Equal(t, rotated, b.signingKeys())
}
