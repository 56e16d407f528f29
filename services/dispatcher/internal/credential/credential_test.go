package credential_test

import (
	"context"
	"encoding/base64"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	pool  *pgxpool.Pool
	store *credential.Store
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	return bundle{pool: pool, store: credential.NewStore(pool, secrettest.Keyring())}
}

func TestStoreGivesActiveKeyFirstThenLiveRetiringKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := fixture.InsertProject(t, b.pool, fixture.Project{
		ActiveKey: "whsec_new",
		Retiring: []fixture.Key{
			{Secret: "whsec_older", ExpiresIn: time.Hour},
			{Secret: "whsec_expired", ExpiresIn: -time.Second},
			{Secret: "whsec_old", ExpiresIn: 2 * time.Hour},
		},
		Authorization: "Bearer token",
	})
	set, err := b.store.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_new", "whsec_old", "whsec_older"}, set.Keys)
	require.Equal(t, "Bearer token", set.Authorization)
}

func TestStoreWithoutRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "whsec_only"})
	set, err := b.store.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_only"}, set.Keys)
	require.Empty(t, set.Authorization)
	require.Zero(t, set.MaxConcurrency, "no cap")
}

func TestStoreGivesTheProjectsConcurrencyCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "whsec_only", MaxConcurrency: 3})
	set, err := b.store.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, 3, set.MaxConcurrency)
}

func TestStoreWithoutAnActiveKeyHasNoKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	none := fixture.InsertProject(t, b.pool, fixture.Project{Authorization: "Basic abc"})
	set, err := b.store.Get(context.Background(), none)
	require.NoError(t, err)
	require.Empty(t, set.Keys)
	require.Equal(t, "Basic abc", set.Authorization)

	// A retiring key alone does not stand in for the active one.
	retiringOnly := fixture.InsertProject(t, b.pool, fixture.Project{Retiring: []fixture.Key{{Secret: "old", ExpiresIn: time.Hour}}})
	set, err = b.store.Get(context.Background(), retiringOnly)
	require.NoError(t, err)
	require.Empty(t, set.Keys)
}

func TestStoreGivesEachProjectItsOwnAsyncSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, err := b.store.Get(context.Background(), fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "a"}))
	require.NoError(t, err)
	two, err := b.store.Get(context.Background(), fixture.InsertProject(t, b.pool, fixture.Project{}))
	require.NoError(t, err)
	require.Len(t, one.AsyncSecret, 32, "opened for every project")
	require.Len(t, two.AsyncSecret, 32, "also without signing keys")
	require.NotEqual(t, one.AsyncSecret, two.AsyncSecret)
}

func TestStoreUnknownProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.Get(context.Background(), uuid.New())
	require.ErrorIs(t, err, postgres.ErrNotFound)
}

// counting counts the loads that reach the database.
type counting struct {
	credential.Loader
	loads atomic.Int32
}

func (c *counting) Get(ctx context.Context, id uuid.UUID) (credential.Set, error) {
	c.loads.Add(1)
	return c.Loader.Get(ctx, id)
}

func TestCacheServesRepeatsWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k1"})
	loader := &counting{Loader: b.store}
	cache := credential.NewCache(loader, time.Hour, 10)
	for range 3 {
		set, err := cache.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, []string{"k1"}, set.Keys)
	}
	require.EqualValues(t, 1, loader.loads.Load())

	// Errors are not cached: a project created later is found.
	missing := uuid.New()
	for range 2 {
		_, err := cache.Get(context.Background(), missing)
		require.ErrorIs(t, err, postgres.ErrNotFound)
	}
	require.EqualValues(t, 3, loader.loads.Load())
}

func TestCacheDisabledLoadsEveryTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "k1"})
	loader := &counting{Loader: b.store}
	cache := credential.NewCache(loader, 0, 10)
	for range 3 {
		_, err := cache.Get(context.Background(), id)
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, loader.loads.Load())
	require.Zero(t, cache.Len())
}

// A dispatcher without the key its project's secrets were sealed with
// fails the load with an error naming the key id, never a secret.
func TestStoreWithoutTheSealingKeyNamesIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "whsec_sealed", Authorization: "Bearer sealed"})
	other, err := secretbox.Parse("other:" + base64.StdEncoding.EncodeToString(make([]byte, secretbox.KeyBytes)))
	require.NoError(t, err)
	_, err = credential.NewStore(b.pool, other).Get(context.Background(), id)
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
	require.ErrorContains(t, err, `key "test"`)
	require.NotContains(t, err.Error(), "whsec_sealed")
	require.NotContains(t, err.Error(), "Bearer sealed")
}
