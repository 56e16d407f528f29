package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// checkKeys refuses a keyring that does not open the newest signing key
// the database holds (secretbox.CheckStored): started with other keys than
// those that sealed the database, the service would fail at every use of
// a secret. A database without signing keys passes.
func checkKeys(ctx context.Context, pool *pgxpool.Pool, keys *secretbox.Keyring) error {
	row, err := store.New(pool).LatestSigningKeySecret(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", secretbox.EnvVar, err)
	}
	return keys.CheckStored(secretbox.Label(secretbox.SigningKeySecret, row.ID), row.SecretSealed)
}
