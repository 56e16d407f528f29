package idempotency_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestValidateKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  string
		ok   bool
	}{
		{"a uuid", uuid.NewString(), true},
		{"one character", "a", true},
		{"255 characters", strings.Repeat("k", 255), true},
		{"spaces and punctuation", `order 42: "retry" ~!@#$%^&*()_+{}|<>?`, true},
		{"empty", "", false},
		{"256 characters", strings.Repeat("k", 256), false},
		{"a tab", "a\tb", false},
		{"a newline", "a\nb", false},
		{"DEL", "a\x7fb", false},
		{"NUL", "a\x00b", false},
		{"non-ASCII", "clé", false},
		{"invalid UTF-8", "a\xffb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := idempotency.ValidateKey(tt.key)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, idempotency.ErrInvalidKey)
			}
		})
	}
}

type bundle struct {
	t       *testing.T
	ctx     context.Context
	pool    *pgxpool.Pool
	q       *store.Queries
	project uuid.UUID
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	return bundle{t: t, ctx: t.Context(), pool: pool, q: store.New(pool), project: created.ID}
}

// claim claims key in a transaction of its own and commits.
func (b bundle) claim(projectID uuid.UUID, key string, fingerprint []byte, ttl time.Duration) (uuid.UUID, uuid.UUID, bool, error) {
	b.t.Helper()
	hookID := uuid.New()
	var (
		got    uuid.UUID
		repeat bool
	)
	ids, repeat, err := b.claimAll(projectID, key, fingerprint, []uuid.UUID{hookID}, ttl)
	if len(ids) == 1 {
		got = ids[0]
	}
	return hookID, got, repeat, err
}

// claimAll claims key for hookIDs in a transaction of its own and commits.
func (b bundle) claimAll(projectID uuid.UUID, key string, fingerprint []byte, hookIDs []uuid.UUID, ttl time.Duration) ([]uuid.UUID, bool, error) {
	b.t.Helper()
	var (
		got    []uuid.UUID
		repeat bool
	)
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		got, repeat, err = idempotency.Claim(b.ctx, store.New(tx), projectID, key, fingerprint, hookIDs, ttl)
		return err
	})
	return got, repeat, err
}

// A batch's key names all its hooks, in order.
func TestClaimBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	got, repeat, err := b.claimAll(b.project, "k", fingerprint("a"), ids, idempotency.TTL)
	require.NoError(t, err)
	require.False(t, repeat)
	require.Equal(t, ids, got)
	got, repeat, err = b.claimAll(b.project, "k", fingerprint("a"), []uuid.UUID{uuid.New()}, idempotency.TTL)
	require.NoError(t, err)
	require.True(t, repeat, "the same request again is a repeat")
	require.Equal(t, ids, got, "a repeat gets the first request's hooks in its order")
}

func fingerprint(s string) []byte {
	return bytes.Repeat([]byte(s[:1]), 32)
}

func TestClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, got, repeat, err := b.claim(b.project, "k", fingerprint("a"), idempotency.TTL)
	require.NoError(t, err)
	require.False(t, repeat)
	require.Equal(t, first, got, "a new key is taken for the new hook")

	_, got, repeat, err = b.claim(b.project, "k", fingerprint("a"), idempotency.TTL)
	require.NoError(t, err)
	require.True(t, repeat)
	require.Equal(t, first, got, "a repeat names the first hook")

	_, _, _, err = b.claim(b.project, "k", fingerprint("b"), idempotency.TTL)
	require.ErrorIs(t, err, idempotency.ErrKeyReused)

	_, _, _, err = b.claim(b.project, "K", fingerprint("b"), idempotency.TTL)
	require.NoError(t, err, "keys are case-sensitive")

	other, err := project.Create(b.ctx, b.pool, secrettest.Keyring(), "Other", "example.org")
	require.NoError(t, err)
	second, got, repeat, err := b.claim(other.ID, "k", fingerprint("b"), idempotency.TTL)
	require.NoError(t, err)
	require.False(t, repeat, "each project has its own keys")
	require.Equal(t, second, got)
}

func TestAnExpiredKeyIsTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, _, err := b.claim(b.project, "k", fingerprint("a"), idempotency.TTL)
	require.NoError(t, err)
	// With a time to live of zero every earlier claim has expired.
	hookID, got, repeat, err := b.claim(b.project, "k", fingerprint("b"), 0)
	require.NoError(t, err)
	require.False(t, repeat)
	require.Equal(t, hookID, got)

	_, got, repeat, err = b.claim(b.project, "k", fingerprint("b"), idempotency.TTL)
	require.NoError(t, err)
	require.True(t, repeat)
	require.Equal(t, hookID, got, "the key now names the new hook")
}

func TestAKeyClaimedInARolledBackTransactionIsFree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		_, _, err := idempotency.Claim(b.ctx, store.New(tx), b.project, "k", fingerprint("a"), []uuid.UUID{uuid.New()}, idempotency.TTL)
		require.NoError(t, err)
		return context.Canceled // roll back, as a refused create does
	})
	require.ErrorIs(t, err, context.Canceled)
	_, _, repeat, err := b.claim(b.project, "k", fingerprint("b"), idempotency.TTL)
	require.NoError(t, err)
	require.False(t, repeat)
}

func TestAConcurrentClaimWaitsForTheFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := uuid.New()
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(b.ctx) }()
	_, _, err = idempotency.Claim(b.ctx, store.New(tx), b.project, "k", fingerprint("a"), []uuid.UUID{first}, idempotency.TTL)
	require.NoError(t, err)

	// While the first is open, a claim of the same key waits for it: one
	// that must answer quickly cannot.
	blocked, cancel := context.WithTimeout(b.ctx, 300*time.Millisecond)
	defer cancel()
	err = pgx.BeginFunc(blocked, b.pool, func(tx pgx.Tx) error {
		_, _, err := idempotency.Claim(blocked, store.New(tx), b.project, "k", fingerprint("a"), []uuid.UUID{uuid.New()}, idempotency.TTL)
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	type result struct {
		id     uuid.UUID
		repeat bool
		err    error
	}
	second := make(chan result, 1)
	go func() {
		_, got, repeat, err := b.claim(b.project, "k", fingerprint("a"), idempotency.TTL)
		second <- result{got, repeat, err}
	}()
	require.NoError(t, tx.Commit(b.ctx))
	r := <-second
	require.NoError(t, r.err)
	require.True(t, r.repeat, "after the commit it finds the key held")
	require.Equal(t, first, r.id)
}

func TestSweep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, k := range []string{"a", "b", "c"} {
		_, _, _, err := b.claim(b.project, k, fingerprint("a"), idempotency.TTL)
		require.NoError(t, err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))

	n, err := idempotency.NewSweeper(b.q, log, idempotency.TTL).Sweep(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "no key has expired")
	require.Empty(t, logs.String(), "nothing to say")

	n, err = idempotency.NewSweeper(b.q, log, 0).Sweep(b.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Contains(t, logs.String(), `"deleted":3`)

	_, _, repeat, err := b.claim(b.project, "a", fingerprint("b"), idempotency.TTL)
	require.NoError(t, err)
	require.False(t, repeat, "a swept key is free")
}
