package apikey_test

import (
	"context"
	"crypto/sha256"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var keyFormat = regexp.MustCompile(`^sdk_[a-z2-7]{8}_[A-Za-z0-9_-]{43}$`)

func TestNewKeyFormatAndHash(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 50 {
		k, err := apikey.New()
		require.NoError(t, err)
		require.Regexp(t, keyFormat, k.Plain)
		require.Equal(t, k.Plain[:12], k.Prefix)
		sum := sha256.Sum256([]byte(k.Plain))
		require.Equal(t, sum[:], k.Hash)
		prefix, err := apikey.Prefix(k.Plain)
		require.NoError(t, err)
		require.Equal(t, k.Prefix, prefix)
		require.True(t, apikey.Matches(k.Plain, k.Hash))
		require.False(t, seen[k.Plain], "keys are random")
		seen[k.Plain] = true
	}
}

func TestPrefixRefusesMalformedKeys(t *testing.T) {
	t.Parallel()
	k, err := apikey.New()
	require.NoError(t, err)
	for _, bad := range []string{
		"",
		"sdk_",
		k.Plain[:len(k.Plain)-1],
		k.Plain + "A",
		"xdk" + k.Plain[3:],
		strings.ToUpper(k.Plain[:12]) + k.Plain[12:],
		k.Plain[:12] + "-" + k.Plain[13:],
		k.Plain[:13] + "!" + k.Plain[14:],
	} {
		_, err := apikey.Prefix(bad)
		require.ErrorIs(t, err, apikey.ErrInvalid, bad)
	}
}

func TestMatchesComparesTheWholeKey(t *testing.T) {
	t.Parallel()
	k, err := apikey.New()
	require.NoError(t, err)
	last := byte('A')
	if k.Plain[len(k.Plain)-1] == last {
		last = 'B'
	}
	other := k.Plain[:len(k.Plain)-1] + string(last)
	require.False(t, apikey.Matches(other, k.Hash))
	require.False(t, apikey.Matches(k.Plain, nil))
	require.False(t, apikey.Matches(k.Plain, k.Hash[:31]))
}

type bundle struct {
	ctx      context.Context
	pool     *pgxpool.Pool
	q        *store.Queries
	verifier *apikey.Verifier
	keys     *apikey.Service
	project  project.Created
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	ctx := t.Context()
	created, err := project.Create(ctx, pool, secrettest.Keyring(), "Acme", "hooks.example.com")
	require.NoError(t, err)
	q := store.New(pool)
	verifier := apikey.NewVerifier(q)
	t.Cleanup(verifier.Wait) // before the pool closes: cleanups run last first
	return bundle{ctx: ctx, pool: pool, q: q, verifier: verifier, keys: apikey.NewService(pool), project: created}
}

func TestVerifyFindsTheProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, err := b.verifier.Verify(b.ctx, b.project.APIKey)
	require.NoError(t, err)
	require.Equal(t, b.project.ID, got)
}

func TestOnlyThePrefixAndHashAreStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	prefix, err := apikey.Prefix(b.project.APIKey)
	require.NoError(t, err)
	row, err := b.q.GetAPIKeyByPrefix(b.ctx, prefix)
	require.NoError(t, err)
	require.Len(t, row.KeyHash, 32)
	require.Equal(t, apikey.Hash(b.project.APIKey), row.KeyHash)
	require.Nil(t, row.RevokedAt)
}

func TestVerifyRefusesWrongKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stranger, err := apikey.New()
	require.NoError(t, err)
	// Right prefix, wrong secret: the row is found and the hash must not match.
	wrongSecret := b.project.APIKey[:13] + stranger.Plain[13:]
	for _, key := range []string{stranger.Plain, wrongSecret, "not-a-key"} {
		_, err := b.verifier.Verify(b.ctx, key)
		require.ErrorIs(t, err, apikey.ErrInvalid, key)
	}
}

func TestVerifyRefusesARevokedKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	prefix, err := apikey.Prefix(b.project.APIKey)
	require.NoError(t, err)
	revoked, err := apikey.Revoke(b.ctx, b.q, prefix)
	require.NoError(t, err)
	require.True(t, revoked)
	_, err = b.verifier.Verify(b.ctx, b.project.APIKey)
	require.ErrorIs(t, err, apikey.ErrRevoked)

	again, err := apikey.Revoke(b.ctx, b.q, prefix)
	require.NoError(t, err)
	require.False(t, again, "revoking twice changes nothing")
}

func TestStoreReportsAPrefixCollision(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k, err := apikey.New()
	require.NoError(t, err)
	_, err = apikey.Store(b.ctx, b.q, b.project.ID, "", k)
	require.NoError(t, err)
	_, err = apikey.Store(b.ctx, b.q, b.project.ID, "", k)
	require.ErrorIs(t, err, postgres.ErrConflict)
	_, err = b.verifier.Verify(b.ctx, k.Plain)
	require.NoError(t, err)
}

// TestIdentifyWithLimitsReadsWhatQuotaReads checks the one-query look-up
// against Verify and quota.Read, for a valid, a wrong and a revoked key.
func TestIdentifyWithLimitsReadsWhatQuotaReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		_, err := quota.Add(b.ctx, store.New(tx), b.project.ID, 3)
		return err
	}))
	require.NoError(t, quota.SetRateLimit(b.ctx, b.q, b.project.ID, quota.RateLimit{PerSecond: 7, Burst: 9}))

	got, limits, err := b.verifier.IdentifyWithLimits(b.ctx, b.project.APIKey)
	require.NoError(t, err)
	require.Equal(t, b.project.ID, got.ProjectID)
	want, err := quota.Read(b.ctx, b.q, b.project.ID)
	require.NoError(t, err)
	require.Equal(t, int64(3), limits.Usage.Used)
	require.Equal(t, 7, limits.RatePerSecond)
	require.Equal(t, 9, limits.RateBurst)
	limits.Usage.Now, want.Usage.Now = time.Time{}, time.Time{} // two reads, two clocks
	require.Equal(t, want, limits)

	stranger, err := apikey.New()
	require.NoError(t, err)
	_, _, err = b.verifier.IdentifyWithLimits(b.ctx, stranger.Plain)
	require.ErrorIs(t, err, apikey.ErrInvalid)
	prefix, err := apikey.Prefix(b.project.APIKey)
	require.NoError(t, err)
	_, err = apikey.Revoke(b.ctx, b.q, prefix)
	require.NoError(t, err)
	_, _, err = b.verifier.IdentifyWithLimits(b.ctx, b.project.APIKey)
	require.ErrorIs(t, err, apikey.ErrRevoked)
}
