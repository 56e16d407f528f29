package signingkey_test

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/signingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var secretFormat = regexp.MustCompile(`^sdsig_[A-Za-z0-9_-]{43}$`)

type bundle struct {
	ctx     context.Context
	pool    *pgxpool.Pool
	q       *store.Queries
	keys    *signingkey.Service
	project project.Created
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "hooks.example.com")
	require.NoError(t, err)
	return bundle{ctx: t.Context(), pool: pool, q: store.New(pool), keys: signingkey.NewService(pool, secrettest.Keyring()), project: created}
}

func (b bundle) list(t *testing.T) []signingkey.Key {
	t.Helper()
	keys, err := b.keys.List(b.ctx, b.project.ID)
	require.NoError(t, err)
	return keys
}

func (b bundle) stored(t *testing.T) int64 {
	t.Helper()
	n, err := storetest.New(b.pool).CountSigningKeysForTest(b.ctx, b.project.ID)
	require.NoError(t, err)
	return n
}

func (b bundle) dbNow(t *testing.T) time.Time {
	t.Helper()
	now, err := b.q.DatabaseNow(b.ctx)
	require.NoError(t, err)
	return now
}

func TestNewSecretsAreRandom(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 20 {
		s, err := signingkey.New()
		require.NoError(t, err)
		require.Regexp(t, secretFormat, s)
		require.False(t, seen[s])
		seen[s] = true
	}
}

func TestGrace(t *testing.T) {
	t.Parallel()
	secs := func(n int) *int { return &n }
	tests := []struct {
		in   *int
		want time.Duration
		ok   bool
	}{
		{nil, 24 * time.Hour, true},
		{secs(3600), time.Hour, true},
		{secs(604800), 7 * 24 * time.Hour, true},
		{secs(86400), 24 * time.Hour, true},
		{secs(3599), 0, false},
		{secs(604801), 0, false},
		{secs(0), 0, false},
		{secs(-3600), 0, false},
	}
	for _, tt := range tests {
		got, err := signingkey.Grace(tt.in)
		if !tt.ok {
			require.ErrorIs(t, err, signingkey.ErrInvalidGrace, *tt.in)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
}

func TestListShowsTheActiveKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys := b.list(t)
	require.Len(t, keys, 1)
	require.Equal(t, signingkey.StateActive, keys[0].State)
	require.Equal(t, b.project.SigningKey, keys[0].Secret)
	require.Nil(t, keys[0].ExpiresAt)
}

func TestRotateRetiresTheActiveKeyForTheGracePeriod(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.dbNow(t)
	keys, err := b.keys.Rotate(b.ctx, b.project.ID, 2*time.Hour)
	require.NoError(t, err)
	after := b.dbNow(t)

	require.Len(t, keys, 2)
	active, retiring := keys[0], keys[1]
	require.Equal(t, signingkey.StateActive, active.State)
	require.Regexp(t, secretFormat, active.Secret)
	require.NotEqual(t, b.project.SigningKey, active.Secret)
	require.Nil(t, active.ExpiresAt)
	require.Equal(t, signingkey.StateRetiring, retiring.State)
	require.Equal(t, b.project.SigningKey, retiring.Secret)
	require.NotNil(t, retiring.ExpiresAt)
	require.False(t, retiring.ExpiresAt.Before(before.Add(2*time.Hour)), "grace runs from the database's now")
	require.False(t, retiring.ExpiresAt.After(after.Add(2*time.Hour)))

	require.Equal(t, keys, b.list(t), "the list shows the same, active first")
	secret, err := project.ActiveSigningKey(b.ctx, b.q, secrettest.Keyring(), b.project.ID)
	require.NoError(t, err)
	require.Equal(t, active.Secret, secret)
}

func TestRotateRefusesABadGracePeriod(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, grace := range []time.Duration{0, time.Hour - time.Second, 7*24*time.Hour + time.Second} {
		_, err := b.keys.Rotate(b.ctx, b.project.ID, grace)
		require.ErrorIs(t, err, signingkey.ErrInvalidGrace, grace)
	}
	require.Len(t, b.list(t), 1, "nothing rotated")
}

func TestRotatingAgainDropsTheOlderRetiringKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := b.keys.Rotate(b.ctx, b.project.ID, time.Hour)
	require.NoError(t, err)
	second, err := b.keys.Rotate(b.ctx, b.project.ID, time.Hour)
	require.NoError(t, err)

	require.Equal(t, first[0].ID, second[1].ID, "the key the first rotation made retires")
	keys := b.list(t)
	require.Len(t, keys, 2)
	require.Equal(t, second[0].ID, keys[0].ID)
	require.Equal(t, first[0].ID, keys[1].ID)
	require.EqualValues(t, 2, b.stored(t), "the original key is gone")
}

func TestAnExpiredRetiringKeyIsLeftOutThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rotated, err := b.keys.Rotate(b.ctx, b.project.ID, time.Hour)
	require.NoError(t, err)
	require.NoError(t, storetest.New(b.pool).SetSigningKeyExpiryForTest(b.ctx, storetest.SetSigningKeyExpiryForTestParams{ID: rotated[1].ID, OffsetSeconds: -1}))

	keys := b.list(t)
	require.Len(t, keys, 1, "the expired key signs nothing and is not shown")
	require.Equal(t, rotated[0].ID, keys[0].ID)

	_, err = b.keys.Rotate(b.ctx, b.project.ID, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.stored(t), "the next rotation deleted the expired key")
}

func TestRevokeDeletesTheRetiringKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rotated, err := b.keys.Rotate(b.ctx, b.project.ID, time.Hour)
	require.NoError(t, err)
	require.NoError(t, b.keys.Revoke(b.ctx, b.project.ID, rotated[1].ID))
	keys := b.list(t)
	require.Len(t, keys, 1)
	require.Equal(t, rotated[0].ID, keys[0].ID)
	require.EqualValues(t, 1, b.stored(t))

	err = b.keys.Revoke(b.ctx, b.project.ID, rotated[1].ID)
	require.ErrorIs(t, err, postgres.ErrNotFound, "it is gone")
}

func TestRevokeRefusesTheActiveKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	active := b.list(t)[0]
	err := b.keys.Revoke(b.ctx, b.project.ID, active.ID)
	require.ErrorIs(t, err, signingkey.ErrActive)
	require.ErrorContains(t, err, "rotate first")
	require.Equal(t, []signingkey.Key{active}, b.list(t))
}

func TestRevokeFindsOnlyTheProjectsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := project.Create(b.ctx, b.pool, secrettest.Keyring(), "Other", "other.example.com")
	require.NoError(t, err)
	rotated, err := b.keys.Rotate(b.ctx, other.ID, time.Hour)
	require.NoError(t, err)

	for _, id := range []uuid.UUID{rotated[0].ID, rotated[1].ID, uuid.New()} {
		err := b.keys.Revoke(b.ctx, b.project.ID, id)
		require.ErrorIs(t, err, postgres.ErrNotFound, id)
	}
	keys, err := b.keys.List(b.ctx, other.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2, "the other project's keys are untouched")
}

func TestRotateAnUnknownProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.keys.Rotate(b.ctx, uuid.New(), time.Hour)
	require.ErrorIs(t, err, postgres.ErrNotFound)
	err = b.keys.Revoke(b.ctx, uuid.New(), uuid.New())
	require.ErrorIs(t, err, postgres.ErrNotFound)
}

// Concurrent rotations are serialised: each retires the key the previous
// one made, and one active key and one retiring key remain.
func TestConcurrentRotationsLeaveOneActiveKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	original := b.list(t)[0].ID
	results := make([][]signingkey.Key, 8)
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i], errs[i] = b.keys.Rotate(b.ctx, b.project.ID, time.Hour) })
	}
	wg.Wait()

	made := map[uuid.UUID]bool{original: true}
	retired := map[uuid.UUID]bool{}
	for i, r := range results {
		require.NoError(t, errs[i])
		require.Len(t, r, 2)
		made[r[0].ID] = true
		require.False(t, retired[r[1].ID], "a key is retired once")
		retired[r[1].ID] = true
	}
	keys := b.list(t)
	require.Len(t, keys, 2)
	require.Equal(t, signingkey.StateActive, keys[0].State)
	require.Equal(t, signingkey.StateRetiring, keys[1].State)
	require.EqualValues(t, 2, b.stored(t))
	require.False(t, retired[keys[0].ID], "the last key made is active")
	retired[keys[0].ID] = true
	require.Equal(t, made, retired, "the rotations form one chain from the original key")
}
