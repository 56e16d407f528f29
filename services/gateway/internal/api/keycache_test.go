package api_test

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/api"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/keycache"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// countingVerifier is the real verifier, counting its look-ups.
type countingVerifier struct {
	*apikey.Verifier
	lookUps atomic.Int64
}

func (v *countingVerifier) IdentifyWithLimits(ctx context.Context, key string) (apikey.Identity, quota.Limits, error) {
	v.lookUps.Add(1)
	return v.Verifier.IdentifyWithLimits(ctx, key)
}

type cacheBundle struct {
	limitsBundle
	verifier *countingVerifier
}

// setupKeyCache serves the hook routes with a key cache of one second's
// TTL on the limiter's manual clock.
func setupKeyCache(t *testing.T) cacheBundle {
	t.Helper()
	var v *countingVerifier
	var clock func() time.Time
	b := setupLimits(t, func(d *api.Deps) {
		v = &countingVerifier{Verifier: d.Keys.(*apikey.Verifier)}
		d.Keys = v
		d.KeyCache = keycache.New(time.Second, 100, keycache.WithClock(func() time.Time { return clock() }))
	})
	clock = b.clock.Now
	return cacheBundle{limitsBundle: b, verifier: v}
}

func TestACachedKeyIsNotLookedUpUntilItsTTL(t *testing.T) {
	t.Parallel()
	b := setupKeyCache(t)
	for i := range 3 {
		res := b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody)
		require.Equal(t, http.StatusCreated, res.status)
		require.Equal(t, "100000", res.header.Get("Sundial-HookQuota-Limit"))
		require.Equal(t, []string{strconv.Itoa(i + 1)}, res.header.Values("Sundial-HookQuota-Usage"), "once, the count of the create")
	}
	require.EqualValues(t, 1, b.verifier.lookUps.Load(), "one look-up, then the cache")

	// Revoked behind the cache's back (another replica, the database): the
	// cache answers until its TTL, then the key is looked up and refused.
	prefix, err := apikey.Prefix(b.project.APIKey)
	require.NoError(t, err)
	revoked, err := apikey.Revoke(t.Context(), b.q, prefix)
	require.NoError(t, err)
	require.True(t, revoked)
	require.Equal(t, http.StatusCreated, b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody).status)
	require.EqualValues(t, 1, b.verifier.lookUps.Load())

	b.clock.Advance(time.Second)
	res := b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody)
	require.Equal(t, http.StatusUnauthorized, res.status)
	require.EqualValues(t, 2, b.verifier.lookUps.Load())
	require.Equal(t, http.StatusUnauthorized, b.send(http.MethodPost, "/v1/hooks", b.project.APIKey, hookBody).status)
	require.EqualValues(t, 3, b.verifier.lookUps.Load(), "a refusal is not cached")
}

func TestRefusedKeysAreLookedUpEachTime(t *testing.T) {
	t.Parallel()
	b := setupKeyCache(t)
	other, err := apikey.New()
	require.NoError(t, err)
	for range 2 {
		require.Equal(t, http.StatusUnauthorized, b.send(http.MethodGet, "/v1/hooks?limit=1", other.Plain, "").status)
	}
	require.EqualValues(t, 2, b.verifier.lookUps.Load())

	// Once stored, the same key works at once.
	_, err = apikey.Store(t.Context(), b.q, b.project.ID, "late", other)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, b.send(http.MethodPost, "/v1/hooks", other.Plain, hookBody).status)
}
