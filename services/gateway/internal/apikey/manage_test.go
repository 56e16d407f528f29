package apikey_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, says string
	}{
		{in: "", want: ""},
		{in: "  ci deploy  ", want: "ci deploy"},
		{in: strings.Repeat("é", 100), want: strings.Repeat("é", 100)},
		{in: strings.Repeat("x", 101), says: "at most 100 characters"},
		{in: strings.Repeat("x", 100) + " ", says: "at most 100 characters"}, // counted before trimming
		{in: "tab\there", says: "control characters"},
		{in: "line\nbreak", says: "control characters"},
		{in: "bad\xffutf8", says: "valid UTF-8"},
	}
	for _, tt := range tests {
		got, err := apikey.ValidateName(tt.in)
		if tt.says == "" {
			require.NoError(t, err, tt.in)
			require.Equal(t, tt.want, got)
			continue
		}
		var ne *apikey.NameError
		require.ErrorAs(t, err, &ne, tt.in)
		require.Contains(t, ne.Message, tt.says)
	}
}

func TestCreateShowsTheKeyOnceAndListShowsItsPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := b.keys.Create(b.ctx, b.project.ID, "  deploy bot ")
	require.NoError(t, err)
	require.Regexp(t, keyFormat, created.Plain)
	require.Equal(t, "deploy bot", created.Name)
	require.Equal(t, created.Plain[:12], created.Prefix)
	require.Nil(t, created.LastUsedAt)
	require.Nil(t, created.RevokedAt)

	got, err := b.verifier.Verify(b.ctx, created.Plain)
	require.NoError(t, err)
	require.Equal(t, b.project.ID, got)

	keys, err := b.keys.List(b.ctx, b.project.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2, "the project's first key and the new one")
	require.Equal(t, created.Info.ID, keys[1].ID, "oldest first")
	require.Equal(t, created.Prefix, keys[1].Prefix)
	require.Equal(t, "deploy bot", keys[1].Name)
	require.True(t, strings.HasPrefix(b.project.APIKey, keys[0].Prefix))
	require.Empty(t, keys[0].Name)

	_, err = b.keys.Create(b.ctx, b.project.ID, strings.Repeat("n", 101))
	var ne *apikey.NameError
	require.ErrorAs(t, err, &ne)
}

func TestRevokeByIDRefusesTheKeyAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	second, err := b.keys.Create(b.ctx, b.project.ID, "second")
	require.NoError(t, err)
	require.NoError(t, b.keys.Revoke(b.ctx, b.project.ID, second.Info.ID))
	_, err = b.verifier.Verify(b.ctx, second.Plain)
	require.ErrorIs(t, err, apikey.ErrRevoked)

	keys, err := b.keys.List(b.ctx, b.project.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2, "a revoked key stays listed")
	require.NotNil(t, keys[1].RevokedAt)
	revokedAt := *keys[1].RevokedAt

	require.NoError(t, b.keys.Revoke(b.ctx, b.project.ID, second.Info.ID), "revoking twice succeeds")
	keys, err = b.keys.List(b.ctx, b.project.ID)
	require.NoError(t, err)
	require.Equal(t, revokedAt, *keys[1].RevokedAt, "and keeps the first revocation time")

	_, err = b.verifier.Verify(b.ctx, b.project.APIKey)
	require.NoError(t, err, "the other key still works")
}

func TestRevokeByIDFindsOnlyTheProjectsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := project.Create(b.ctx, b.pool, secrettest.Keyring(), "Other", "other.example.com")
	require.NoError(t, err)
	extra, err := b.keys.Create(b.ctx, other.ID, "extra") // other has two keys: not its last
	require.NoError(t, err)

	err = b.keys.Revoke(b.ctx, b.project.ID, extra.Info.ID)
	require.ErrorIs(t, err, postgres.ErrNotFound, "another project's key")
	err = b.keys.Revoke(b.ctx, b.project.ID, uuid.New())
	require.ErrorIs(t, err, postgres.ErrNotFound, "no such key")
	_, err = b.verifier.Verify(b.ctx, extra.Plain)
	require.NoError(t, err)

	keys, err := b.keys.List(b.ctx, b.project.ID)
	require.NoError(t, err)
	require.Len(t, keys, 1, "another project's keys are not listed")
}

func TestRevokeRefusesTheLastUsableKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys, err := b.keys.List(b.ctx, b.project.ID)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	err = b.keys.Revoke(b.ctx, b.project.ID, keys[0].ID)
	require.ErrorIs(t, err, apikey.ErrLastKey)
	_, err = b.verifier.Verify(b.ctx, b.project.APIKey)
	require.NoError(t, err)
}

func TestConcurrentRevocationsKeepOneKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	second, err := b.keys.Create(b.ctx, b.project.ID, "second")
	require.NoError(t, err)
	keys, err := b.keys.List(b.ctx, b.project.ID)
	require.NoError(t, err)

	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { errs[i] = b.keys.Revoke(b.ctx, b.project.ID, k.ID) })
	}
	wg.Wait()
	var revoked int
	for _, err := range errs {
		if err == nil {
			revoked++
			continue
		}
		require.ErrorIs(t, err, apikey.ErrLastKey)
	}
	require.Equal(t, 1, revoked, "one revoked, the other refused as the last key")
	working := 0
	for _, plain := range []string{b.project.APIKey, second.Plain} {
		if _, err := b.verifier.Verify(b.ctx, plain); err == nil {
			working++
		}
	}
	require.Equal(t, 1, working)
}

func TestIdentifyNamesTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	second, err := b.keys.Create(b.ctx, b.project.ID, "second")
	require.NoError(t, err)
	id, err := b.verifier.Identify(b.ctx, second.Plain)
	require.NoError(t, err)
	require.Equal(t, apikey.Identity{KeyID: second.Info.ID, ProjectID: b.project.ID}, id)
}

func lastUsed(t *testing.T, b bundle, keyID uuid.UUID) *time.Time {
	t.Helper()
	row, err := b.q.GetAPIKey(b.ctx, store.GetAPIKeyParams{ProjectID: b.project.ID, ID: keyID})
	require.NoError(t, err)
	return row.LastUsedAt
}

func TestLastUsedIsRecordedAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := b.keys.Create(b.ctx, b.project.ID, "ci")
	require.NoError(t, err)
	keyID := created.Info.ID
	require.Nil(t, lastUsed(t, b, keyID))

	_, err = b.verifier.Verify(b.ctx, created.Plain)
	require.NoError(t, err)
	b.verifier.Wait()
	first := lastUsed(t, b, keyID)
	require.NotNil(t, first, "the first use is recorded")

	for range 3 {
		_, err = b.verifier.Verify(b.ctx, created.Plain)
		require.NoError(t, err)
	}
	b.verifier.Wait()
	require.Equal(t, *first, *lastUsed(t, b, keyID), "not again within the minute")

	// Two minutes later, by the database clock the record is due again.
	require.NoError(t, storetest.New(b.pool).SetAPIKeyLastUsedForTest(b.ctx, storetest.SetAPIKeyLastUsedForTestParams{ID: keyID, OffsetSeconds: -120}))
	moved := lastUsed(t, b, keyID)
	_, err = b.verifier.Verify(b.ctx, created.Plain)
	require.NoError(t, err)
	b.verifier.Wait()
	require.True(t, lastUsed(t, b, keyID).After(*moved))

	// A refused key records nothing.
	require.NoError(t, b.keys.Revoke(b.ctx, b.project.ID, keyID))
	require.NoError(t, storetest.New(b.pool).SetAPIKeyLastUsedForTest(b.ctx, storetest.SetAPIKeyLastUsedForTestParams{ID: keyID, OffsetSeconds: -120}))
	moved = lastUsed(t, b, keyID)
	_, err = b.verifier.Verify(b.ctx, created.Plain)
	require.ErrorIs(t, err, apikey.ErrRevoked)
	b.verifier.Wait()
	require.Equal(t, *moved, *lastUsed(t, b, keyID))
}

func TestManyConcurrentUsesAreRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := b.keys.Create(b.ctx, b.project.ID, "busy")
	require.NoError(t, err)
	errs := make([]error, 50)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = b.verifier.Verify(b.ctx, created.Plain) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	b.verifier.Wait()
	require.NotNil(t, lastUsed(t, b, created.Info.ID), "recorded although the budget turned some away")
}
